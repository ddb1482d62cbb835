#!/usr/bin/env python
"""What the real-load preflight costs next to `containerd config dump`, per containerd.

For each real containerd on this machine (Debian's 1.6, build/containerd17's
1.7, build/containerd2's 2.1), on a kubeadm-style config of its version
(runc with SystemdCgroup, plus an nvidia runtime), REPS rounds of, interleaved:

  dump        `containerd --config FILE config dump` (the engine's validate: auto)
  load test   _preflight.load_test: the daemon started in its sandbox until the
              plugin list (ctr) is read, killed, private folder removed
  load (log)  the same with the plugin list read from containerd's log (no ctr)

Printed per binary and way: wall time p50 / max, and peak RSS (the dump's from
wait4; the daemon's VmHWM, sampled every 10 ms from /proc while it runs),
then the ratios load / dump.  Fails only when a verdict is wrong (dump refuses
the config or the load test is not ok).

    .venv/bin/python bench/preflight_cost.py      # NG_BENCH_REPS=7
"""

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from _common import REPO, collections_path

REPS = int(os.environ.get('NG_BENCH_REPS', '7'))
BINARIES = [('1.6', shutil.which('containerd')),
            ('1.7', os.path.join(REPO, 'build', 'containerd17', 'usr', 'bin', 'containerd')),
            ('2.1', os.path.join(REPO, 'build', 'containerd2', 'usr', 'bin', 'containerd'))]

V2 = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
  SystemdCgroup = true
'''
V3 = V2.replace('version = 2', 'version = 3').replace('io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.runtime')


def dump(binary, path):
    start = time.monotonic()
    proc = subprocess.Popen([binary, '--config', path, 'config', 'dump'], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _pid, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    assert proc.returncode == 0, proc.stderr.read()
    return took, usage.ru_maxrss * 1024


class HwmSampler(threading.Thread):
    """Peak VmHWM of the processes whose command line names a folder under parent."""

    def __init__(self, parent):
        super().__init__(daemon=True)
        self.parent = parent.encode()
        self.peak = 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            for pid in os.listdir('/proc'):
                if not pid.isdigit():
                    continue
                try:
                    with open('/proc/%s/cmdline' % pid, 'rb') as f:
                        argv = f.read().split(b'\0')
                    # the daemon itself (unshare and sh name the folder too, in the script)
                    if not argv[0].endswith(b'/containerd') or not any(self.parent in a for a in argv):
                        continue
                    with open('/proc/%s/status' % pid) as f:
                        for line in f:
                            if line.startswith('VmHWM:'):
                                self.peak = max(self.peak, int(line.split()[1]) * 1024)
                except OSError:
                    pass
            time.sleep(0.01)


def load(binary, path, ctr):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test
    parent = tempfile.mkdtemp(prefix='ng-bench-pf-')
    sampler = HwmSampler(parent)
    sampler.start()
    try:
        start = time.monotonic()
        res = load_test(binary, path, workdir=parent, ctr=None if ctr else False)
        took = time.monotonic() - start
    finally:
        sampler.stop.set()
        sampler.join()
        leftover = os.listdir(parent)
        shutil.rmtree(parent, ignore_errors=True)
    assert res.ok, res.errors
    assert not leftover, leftover
    return took, sampler.peak


def fmt_mb(n):
    return '%6.1f MB' % (n / 1e6) if n else '     n/a'


def main():
    sys.path.insert(0, collections_path())
    if os.geteuid() != 0:
        sys.exit('bench/preflight_cost.py: the load test needs root')
    work = tempfile.mkdtemp(prefix='ng-bench-pf-cfg-')
    rows = []
    try:
        for version, binary in BINARIES:
            if not binary or not os.access(binary, os.X_OK):
                print('containerd %s: not on this machine (make deps), skipped' % version)
                continue
            path = os.path.join(work, 'config-%s.toml' % version)
            with open(path, 'w') as f:
                f.write(V3 if version.startswith('2') else V2)
            runs = {'dump': [], 'load test': [], 'load (log)': []}
            for _rep in range(REPS):
                runs['dump'].append(dump(binary, path))
                runs['load test'].append(load(binary, path, True))
                runs['load (log)'].append(load(binary, path, False))
            rows.append((version, runs))
        la = os.getloadavg()
        print('preflight cost: `config dump` vs the real-load test, %d rounds interleaved; load average %.1f %.1f %.1f '
              'on %d CPUs' % (REPS, la[0], la[1], la[2], os.cpu_count()))
        print('%-11s %-11s %9s %9s %11s %14s' % ('containerd', 'way', 'p50', 'max', 'peak RSS', 'p50 vs dump'))
        for version, runs in rows:
            base = statistics.median(t for t, _m in runs['dump'])
            for way in ('dump', 'load test', 'load (log)'):
                times = [t for t, _m in runs[way]]
                p50 = statistics.median(times)
                peak = max(m for _t, m in runs[way])
                print('%-11s %-11s %8.3fs %8.3fs %11s %13.1fx' % (version, way, p50, max(times), fmt_mb(peak), p50 / base))
        self_usage = resource.getrusage(resource.RUSAGE_SELF)
        print('(this script itself: peak RSS %.1f MB)' % (self_usage.ru_maxrss / 1024.0))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    main()
