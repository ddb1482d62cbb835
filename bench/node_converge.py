#!/usr/bin/env python
"""Restarts and CRI downtime of a full converge on a podman node.

(c) A full gpu_toolkit + coco converge (playbooks/site.yml) must restart
    containerd exactly once, and a re-run zero times: counted from the node's
    own journal ("Started containerd" lines of the containerd unit between
    the start and the end of each converge).
(d) CRI downtime per converge: a poller inside the node runs
    `ctr plugins ls` back to back and logs whether the CRI plugin
    (io.containerd.grpc.v1 cri) is `ok`; the downtime of a restart is from
    the journal's "Stopping containerd" to the first poll that started after
    systemd's "Starting containerd" (so it reached the new daemon) and saw the
    CRI plugin ok (the poll resolution, one ctr call, is printed).

The node: localhost/ng-node:bookworm (tests/images/build.sh), booted like the
Molecule platforms (systemd as PID 1, --network none), prepared with
molecule/coco/prepare.yml (the shared stand-ins for the NVIDIA runtime and
the kata payload), then converged twice with playbooks/site.yml.

    .venv/bin/python bench/node_converge.py      # NG_BENCH_IMAGE=localhost/ng-node:ctd21 for containerd 2.1
                                                 # NG_BENCH_ROUNDS=3: converge, re-run, then 2 x
                                                 #   (uninstall, converge) for more restart samples
                                                 # NG_BENCH_KEEP=1 keeps the node

Prints "PENDING: <why>" and exits 0 when podman, the image, site.yml or the
roles are not there yet.
"""

import os
import shutil
import statistics
import sys
import tempfile
import time

from _node import Node, prerequisites, sh

IMAGE = os.environ.get('NG_BENCH_IMAGE', 'localhost/ng-node:bookworm')
NAME = 'ng-bench-converge-%d' % os.getpid()
KEEP = os.environ.get('NG_BENCH_KEEP') == '1'
ROUNDS = int(os.environ.get('NG_BENCH_ROUNDS', '3'))

POLLER = r'''#!/bin/sh
# log "<epoch> <1|0>": is the CRI plugin loaded (ok)?
echo $$ > /run/ng-cri-poll.pid
while :; do
  t=$(date +%s.%N)
  if ctr --timeout 2s plugins ls 2>/dev/null | grep -Eq 'io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*ok'; then
    echo "$t 1"
  else
    echo "$t 0"
  fi
done >> /run/ng-cri-poll.log
'''


def polls(node):
    out = node.run('cat', '/run/ng-cri-poll.log').stdout
    rows = []
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            rows.append((float(parts[0]), parts[1] == '1'))
    return rows


def downtimes(events, rows, start, end):
    """Each restart in [start, end): (downtime, poll gap).

    downtime: from the journal's "Stopping containerd" (the restart begins) to
    the first poll that started after systemd's "Starting containerd" (the old
    daemon is gone, so an answer is the new one's) and found the CRI plugin ok.
    poll gap: from the last ok poll before "Stopping" to that first ok poll.
    """
    out = []
    for t, msg in events:
        if start <= t < end and msg.startswith('Stopping containerd'):
            gone = [te for te, m in events if te >= t and m.startswith('Starting containerd')]
            after = [pt for pt, ok in rows if gone and pt > gone[0] and ok]
            before = [pt for pt, ok in rows if pt <= t and ok]
            out.append((after[0] - t if after else None,
                        after[0] - before[-1] if after and before else None))
    return out


def fmt(downs):
    if not downs:
        return 'no restart'
    return ', '.join('%.3fs (poll gap %.3fs)' % d if d[0] is not None else 'never back' for d in downs)


def main():
    prerequisites('bench c/d (restarts, CRI downtime)', IMAGE)
    node = Node(NAME, IMAGE, tempfile.mkdtemp(prefix='ng-bench-node-'))
    try:
        node.prepare()
        with open(os.path.join(node.work, 'poll.sh'), 'w') as f:
            f.write(POLLER)
        sh(['podman', 'cp', os.path.join(node.work, 'poll.sh'), NAME + ':/run/ng-cri-poll.sh'])
        node.run('sh', '-c', 'nohup sh /run/ng-cri-poll.sh >/dev/null 2>&1 &')
        time.sleep(2)
        # (label, extra vars, restarts wanted): install, re-run, then ROUNDS-1 x (uninstall, install)
        steps = [('converge', [], 1), ('re-run', [], 0)]
        for _round in range(ROUNDS - 1):
            steps += [('uninstall', ['-e', 'gpu_toolkit_state=absent', '-e', 'coco_state=absent'], 1),
                      ('converge', [], 1)]
        marks = [node.clock()]
        runs = []
        for label, extra, want in steps:
            wall, recap, _tasks = node.playbook('playbooks/site.yml', extra)
            marks.append(node.clock())
            runs.append((label, want, wall, [recap.get('changed')]))
        time.sleep(1)
        pid = node.run('cat', '/run/ng-cri-poll.pid').stdout.strip()
        if pid.isdigit():
            node.run('kill', pid)
        events = node.journal(marks[0])
        rows = polls(node)
    finally:
        if not KEEP:
            node.remove()
    started = [t for t, m in events if m.startswith('Started containerd')]
    gaps = [b[0] - a[0] for a, b in zip(rows, rows[1:])]
    print('bench c: gpu_toolkit + coco converges (playbooks/site.yml) on %s; containerd restarts counted from the '
          'node\'s journal' % IMAGE)
    ok = True
    all_downs = []
    for i, (label, want, wall, changed) in enumerate(runs):
        n = len([t for t in started if marks[i] <= t < marks[i + 1]])
        downs = downtimes(events, rows, marks[i], marks[i + 1])
        all_downs += [d[0] for d in downs if d[0] is not None]
        ok = ok and n == want and all(d[0] is not None for d in downs)
        print('  %-10s %d restart(s) (want %d), %5.1fs, changed tasks %s; CRI downtime: %s'
              % (label, n, want, wall, changed, fmt(downs)))
    summary = 'no restart'
    if all_downs:
        summary = 'median %.3fs, max %.3fs over %d restarts' % (
            statistics.median(all_downs), max(all_downs), len(all_downs))
    print('bench d: CRI downtime per restart (journal "Stopping containerd" -> first `ctr plugins ls` of the new '
          'daemon with the CRI plugin ok): %s; poll interval p50 %.3fs max %.3fs over %d polls'
          % (summary, statistics.median(gaps) if gaps else 0, max(gaps) if gaps else 0, len(rows)))
    print('  result: %s (ansible log: %s)' % ('as promised' if ok else 'NOT as promised', node.log))
    if ok and not KEEP:
        shutil.rmtree(node.work, ignore_errors=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
