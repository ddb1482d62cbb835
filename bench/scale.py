#!/usr/bin/env python
"""Module time on configs of 10, 100, 1,000 and 5,000 runtimes: how the cost grows.

Each config is tests/fixtures/v2_kubeadm.toml with N kubeadm-style runtimes
(a runtime table with 5 keys and an options sub-table, ~330 bytes each).
The task adds `nvidia` inheriting runc's table (copy + BinaryName), the way
Ansible runs a module (`python -m ...containerd_runtime ARGS.json`), with
validate: none and validate: auto (`containerd config dump` on the
candidate); REPS runs each on a fresh copy, median printed, plus the growth
factor per 10x runtimes.  Then an in-process cProfile of the same edit at the
largest size tells where the time goes.

    .venv/bin/python bench/scale.py                 # NG_BENCH_SIZES=10,100,1000,5000 NG_BENCH_REPS=3
"""

import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO, collections_path

SIZES = [int(x) for x in os.environ.get('NG_BENCH_SIZES', '10,100,1000,5000').split(',')]
REPS = int(os.environ.get('NG_BENCH_REPS', '3'))
CRI = 'io.containerd.grpc.v1.cri'
RUNTIME = ('\n        [plugins."{cri}".containerd.runtimes.rt-{i}]\n'
           '          runtime_type = "io.containerd.runc.v2"\n'
           '          runtime_engine = ""\n          runtime_root = ""\n'
           '          privileged_without_host_devices = false\n          base_runtime_spec = ""\n'
           '          [plugins."{cri}".containerd.runtimes.rt-{i}.options]\n'
           '            BinaryName = "/opt/rt-{i}/bin/runtime"\n            SystemdCgroup = true\n')


def config_text(n):
    with open(os.path.join(REPO, 'tests', 'fixtures', 'v2_kubeadm.toml')) as f:
        base = f.read()
    anchor = '            SystemdCgroup = true\n'
    extra = ''.join(RUNTIME.format(cri=CRI, i=i) for i in range(n))
    return base.replace(anchor, anchor + extra, 1)


def run_module(work, text, validate, env):
    path = os.path.join(work, 'config.toml')
    with open(path, 'w') as f:
        f.write(text)
    shutil.rmtree(os.path.join(work, 'state'), ignore_errors=True)
    argfile = os.path.join(work, 'args.json')
    with open(argfile, 'w') as f:
        json.dump({'ANSIBLE_MODULE_ARGS': {
            'path': path, 'name': 'nvidia', 'owner': 'bench', 'state_dir': os.path.join(work, 'state'),
            'options': {'BinaryName': '/usr/bin/nvidia-container-runtime'}, 'validate': validate,
            '_ansible_tmpdir': work, '_ansible_remote_tmp': work, '_ansible_keep_remote_files': False}}, f)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.'
                           'containerd_runtime', argfile], capture_output=True, text=True, env=env, timeout=1800, check=False)
    took = time.monotonic() - start
    res = json.loads(proc.stdout)
    assert res.get('changed') and not res.get('failed'), res.get('msg')
    return took


class Ctx(object):
    containerd_version = (1, 6)
    containerd_bin = None

    def warn(self, msg):
        pass


def profile(text, work):
    """The edit as run_transaction runs it, in process, under cProfile."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import apply_runtime
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree
    path = os.path.join(work, 'config.toml')
    params = dict(name='nvidia', owner='bench', state='present', runtime_type=None, runtime_path=None,
                  options={'BinaryName': '/usr/bin/nvidia-container-runtime'}, settings={}, inherit=None,
                  default=None, force=False)

    def transaction():
        doc = ConfigDocument(path, text)
        apply_runtime(doc, Ledger(os.path.join(work, 'state'), path), Ctx(), params)
        doc.verify()
        check_tree(path, doc.data, (1, 6))
    prof = cProfile.Profile()
    start = time.monotonic()
    prof.runcall(transaction)
    total = time.monotonic() - start
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats('cumulative').print_stats(14)
    stats.sort_stats('tottime').print_stats(8)
    return total, out.getvalue()


def main():
    root = collections_path()
    sys.path.insert(0, root)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get('PYTHONPATH', ''))
    work = tempfile.mkdtemp(prefix='ng-bench-b-')
    rows = []
    try:
        for n in SIZES:
            text = config_text(n)
            none = statistics.median(run_module(work, text, 'none', env) for _unused in range(REPS))
            auto = statistics.median(run_module(work, text, 'auto', env) for _unused in range(REPS))
            rows.append((n, len(text), none, auto))
        load = os.getloadavg()
        print('bench b: containerd_runtime (add nvidia, inheriting runc) on configs of N runtimes, %d runs each, '
              'median; load average %.1f %.1f %.1f on %d CPUs' % (REPS, load[0], load[1], load[2], os.cpu_count()))
        print('%8s %10s %16s %16s %10s' % ('runtimes', 'bytes', 'validate: none', 'validate: auto', 'growth'))
        prev = None
        for n, size, none, auto in rows:
            growth = '' if prev is None else '%.1fx/%.0fx' % (none / prev[1], n / float(prev[0]))
            print('%8d %10d %15.2fs %15.2fs %10s' % (n, size, none, auto, growth))
            prev = (n, none)
        n = SIZES[-1]
        total, report = profile(config_text(n), work)
        print('\nin-process profile of the same edit at %d runtimes (parse, edit, verify, checks): %.2fs' % (n, total))
        print(report)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
