#!/usr/bin/env python
"""One edit task through ansible-playbook: nodeguard.containerd.containerd_runtime
versus ansible.builtin.lineinfile making a comparable one-line change.

The change: add `BinaryName = "/usr/bin/nvidia-container-runtime"` to the runc
runtime's options table (what the NVIDIA toolkit does when its runtime name is
runc), on a copy of tests/fixtures/v2_kubeadm.toml, local connection.

Four variants, run interleaved (so machine load hits them alike), each
REPS times on a fresh copy of the file:
  nodeguard  validate: auto  (built-in checks + `containerd config dump` on the candidate)
  nodeguard  validate: none  (built-in checks only)
  lineinfile validate: 'containerd --config %s config dump'
  lineinfile (no validate)
Measured: the wall time of the whole `ansible-playbook` run, and the task's own
time from the ansible.posix.json callback. Printed: medians and ratios
nodeguard / lineinfile at equal validation.

    .venv/bin/python bench/playbook_vs_lineinfile.py            # NG_BENCH_REPS=7 by default
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime

from _common import REPO, collections_path

REPS = int(os.environ.get('NG_BENCH_REPS', '7'))
FIXTURE = os.path.join(REPO, 'tests', 'fixtures', 'v2_kubeadm.toml')
NV = '/usr/bin/nvidia-container-runtime'
CONTAINERD = shutil.which('containerd') or '/usr/bin/containerd'


def ansible_playbook():
    for cand in (os.path.join(REPO, '.venv', 'bin', 'ansible-playbook'),
                 os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), shutil.which('ansible-playbook')):
        if cand and os.access(cand, os.X_OK):
            return cand
    sys.exit('ansible-playbook not found (run make deps)')


def task(variant, path, state_dir):
    if variant.startswith('nodeguard'):
        return {'name': 'edit', 'nodeguard.containerd.containerd_runtime': {
            'path': path, 'name': 'runc', 'owner': 'bench', 'state_dir': state_dir,
            'options': {'BinaryName': NV}, 'validate': 'auto' if variant.endswith('validate') else 'none'}}
    args = {'path': path, 'insertafter': r'^\s*\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.runc\.options\]',
            'line': '            BinaryName = "%s"' % NV}
    if variant.endswith('validate'):
        args['validate'] = '%s --config %%s config dump' % CONTAINERD
    return {'name': 'edit', 'ansible.builtin.lineinfile': args}


def run(variant, work, pb_bin, env):
    path = os.path.join(work, 'config.toml')
    state_dir = os.path.join(work, 'state')
    shutil.copy(FIXTURE, path)
    shutil.rmtree(state_dir, ignore_errors=True)
    playbook = os.path.join(work, 'play.yml')
    with open(playbook, 'w') as f:
        json.dump([{'hosts': 'localhost', 'gather_facts': False, 'tasks': [task(variant, path, state_dir)]}], f)
    start = time.monotonic()
    proc = subprocess.run([pb_bin, '-i', 'localhost,', '-c', 'local', playbook], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    wall = time.monotonic() - start
    if proc.returncode:
        sys.exit('%s failed:\n%s\n%s' % (variant, proc.stdout[-3000:], proc.stderr[-3000:]))
    out = json.loads(proc.stdout)
    t = out['plays'][0]['tasks'][0]
    res = t['hosts']['localhost']
    assert res.get('changed'), (variant, res)
    d = t['task']['duration']
    took = (datetime.fromisoformat(d['end'].replace('Z', '+00:00'))
            - datetime.fromisoformat(d['start'].replace('Z', '+00:00'))).total_seconds()
    with open(path) as f:
        text = f.read()
    assert text.count('BinaryName = "%s"' % NV) == 1, variant
    dump = subprocess.run([CONTAINERD, '--config', path, 'config', 'dump'], capture_output=True, text=True, check=False)
    assert dump.returncode == 0 and 'BinaryName = "%s"' % NV in dump.stdout, variant
    return wall, took


def main():
    pb_bin = ansible_playbook()
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_STDOUT_CALLBACK='ansible.posix.json',
               ANSIBLE_LOAD_CALLBACK_PLUGINS='1', ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0', ANSIBLE_NOCOLOR='1')
    env.pop('ANSIBLE_CONFIG', None)
    variants = ['nodeguard+validate', 'nodeguard', 'lineinfile+validate', 'lineinfile']
    work = tempfile.mkdtemp(prefix='ng-bench-a-')
    results = dict((v, ([], [])) for v in variants)
    try:
        run('lineinfile', work, pb_bin, env)   # warm-up (caches, pyc)
        run('nodeguard', work, pb_bin, env)
        for rep in range(REPS):
            order = variants[rep % 4:] + variants[:rep % 4]
            for v in order:
                wall, took = run(v, work, pb_bin, env)
                results[v][0].append(wall)
                results[v][1].append(took)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = os.getloadavg()
    print('bench a: one edit task through ansible-playbook (local connection), %d runs each, interleaved; '
          'load average %.1f %.1f %.1f on %d CPUs' % (REPS, load[0], load[1], load[2], os.cpu_count()))
    print('%-22s %14s %14s' % ('variant', 'playbook p50', 'task p50'))
    med = {}
    for v in variants:
        med[v] = (statistics.median(results[v][0]), statistics.median(results[v][1]))
        print('%-22s %13.2fs %13.3fs' % (v, med[v][0], med[v][1]))
    for ours, theirs in (('nodeguard+validate', 'lineinfile+validate'), ('nodeguard', 'lineinfile')):
        print('ratio %-19s / %-20s playbook %.2fx   task %.2fx'
              % (ours, theirs, med[ours][0] / med[theirs][0], med[ours][1] / med[theirs][1]))
    print('cost of validation: nodeguard +%.3fs per task, lineinfile +%.3fs per task'
          % (med['nodeguard+validate'][1] - med['nodeguard'][1], med['lineinfile+validate'][1] - med['lineinfile'][1]))


if __name__ == '__main__':
    main()
