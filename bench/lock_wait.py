#!/usr/bin/env python
"""Waiting for the config lock under contention: kernel wait versus polling.

N worker processes each take the lock of one config K times, hold it for
H ms (a module's edit) and then work G ms outside it, the way N nodeguard
tasks on one node would.
Two ways to wait, run interleaved, REPS rounds each:

  polling   flock LOCK_NB, sleep 10 ms doubling to 200 ms (nodeguard's earlier wait)
  kernel    _atomic.FileLock: a blocking flock bounded by an alarm (now)

Printed per way: wall time for all N*K edits, lock utilisation (time held /
wall: idle gaps are time nobody held the lock while someone waited), wait
p50 / p95 / max, how much later the last worker finished than the first
(starvation), and the ratios polling / kernel. The script fails only when
a worker did not finish or two workers held the lock at once.

    .venv/bin/python bench/lock_wait.py     # NG_BENCH_WORKERS=8 NG_BENCH_EDITS=25 NG_BENCH_HOLD_MS=20 NG_BENCH_GAP_MS=30 NG_BENCH_REPS=3
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from _common import collections_path

WORKERS = int(os.environ.get('NG_BENCH_WORKERS', '8'))
EDITS = int(os.environ.get('NG_BENCH_EDITS', '25'))
HOLD_MS = float(os.environ.get('NG_BENCH_HOLD_MS', '20'))
GAP_MS = float(os.environ.get('NG_BENCH_GAP_MS', '30'))
REPS = int(os.environ.get('NG_BENCH_REPS', '3'))

WORKER = r'''
import errno, fcntl, json, os, sys, time
way, path, edits, hold, gap, start_at, collections = sys.argv[1:8]
sys.path.insert(0, collections)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import FileLock, lock_path_for


def polling_acquire(lock_file):
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    delay = 0.01
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


while time.time() < float(start_at):
    time.sleep(0.001)
spans, waits = [], []
for _ in range(int(edits)):
    t0 = time.time()
    if way == 'polling':
        fd = polling_acquire(lock_path_for(path))
    else:
        lock = FileLock(path, 600).acquire()
    t1 = time.time()
    time.sleep(float(hold) / 1000.0)
    t2 = time.time()
    if way == 'polling':
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    else:
        lock.release()
    waits.append(t1 - t0)
    spans.append((t1, t2))
    time.sleep(float(gap) / 1000.0)  # the task's work outside the lock
print(json.dumps({"waits": waits, "spans": spans}))
'''


def one_round(way, folder):
    path = os.path.join(folder, 'config.toml')
    start_at = time.time() + 0.5
    argv = [sys.executable, '-c', WORKER, way, path, str(EDITS), str(HOLD_MS), str(GAP_MS), repr(start_at),
            collections_path()]
    procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, universal_newlines=True) for dummy in range(WORKERS)]
    results = []
    for p in procs:
        out, _err = p.communicate(timeout=600)
        if p.returncode != 0:
            sys.exit('a %s worker failed (rc %s)' % (way, p.returncode))
        results.append(json.loads(out))
    spans = sorted(s for r in results for s in r['spans'])
    for (a0, a1), (b0, dummy) in zip(spans, spans[1:]):
        if b0 < a1 - 1e-4:
            sys.exit('FAILED: two %s workers held the lock at once (%.6f < %.6f)' % (way, b0, a1))
    wall = spans[-1][1] - start_at
    held = sum(b - a for a, b in spans)
    waits = sorted(w for r in results for w in r['waits'])
    finish = [r['spans'][-1][1] for r in results]
    return dict(wall=wall, util=held / wall, spread=max(finish) - min(finish), p50=waits[len(waits) // 2], p95=waits[int(len(waits) * 0.95)],
                max=waits[-1])


def main():
    load = os.getloadavg()[0]
    print('lock wait: %d workers x %d edits, each holding the lock %.0f ms then working %.0f ms outside it; '
          '%d rounds per way, interleaved; load %.1f' % (WORKERS, EDITS, HOLD_MS, GAP_MS, REPS, load))
    rounds = {'polling': [], 'kernel': []}
    with tempfile.TemporaryDirectory(prefix='ng-bench-lock-') as folder:
        for dummy in range(REPS):
            for way in ('polling', 'kernel'):
                rounds[way].append(one_round(way, folder))
    med = {way: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for way, rs in rounds.items()}
    header = ('way', 'wall s', 'utilisation', 'p50 s', 'p95 s', 'max s', 'finish spread')
    print('%-8s %9s %12s %9s %9s %9s %14s' % header)
    for way in ('polling', 'kernel'):
        m = med[way]
        row = (way, m['wall'], 100 * m['util'], m['p50'], m['p95'], m['max'], m['spread'])
        print('%-8s %9.2f %11.0f%% %9.3f %9.3f %9.3f %13.2fs' % row)
    p, k = med['polling'], med['kernel']
    ratios = (p['wall'] / k['wall'], p['max'] / k['max'], p['spread'] / max(k['spread'], 1e-3),
              100 * p['util'], 100 * k['util'])
    print('ratios polling/kernel (medians): wall %.2fx, max wait %.2fx, finish spread %.2fx; '
          'utilisation %.0f%% -> %.0f%%' % ratios)


if __name__ == '__main__':
    main()
