# -*- coding: utf-8 -*-
"""Probe containers run side by side: their start-up times do not add up,
each result stays with its handler, and every container is cleaned up.

A stand-in ctr (a shell script) records each call and sleeps in `run`; the
probes through real containerd and runc are in tests/module and Molecule's
readiness scenario."""

import time

from ansible_collections.nodeguard.containerd.plugins.module_utils import _readiness_probe
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness_probe import run_probes

FAKE_CTR = '''#!/bin/sh
log=%s
echo "start $* $(date +%%s.%%N)" >> "$log"
case "$*" in
  *" run "*) sleep %s;;
esac
echo "end $*" >> "$log"
case "$*" in
  *" run "*probe-bad*) echo "bad handler" >&2; exit 3;;
esac
exit 0
'''


def fake_ctr(tmp_path, sleep):
    log = tmp_path / 'calls'
    ctr = tmp_path / 'ctr'
    ctr.write_text(FAKE_CTR % (log, sleep))
    ctr.chmod(0o755)
    return str(ctr), log


def probe(ctr, name):
    pid = 'probe-%s' % name
    return name, [ctr, '--address', '/run/x.sock', '-n', 'k8s.io', 'run', '--rm', 'img', pid, 'true'], pid


def test_probes_run_side_by_side_and_keep_their_results(tmp_path):
    ctr, log = fake_ctr(tmp_path, 1.0)
    names = ['runc', 'nvidia', 'bad', 'kata-qemu']
    start = time.monotonic()
    res = run_probes([probe(ctr, n) for n in names], timeout=30)
    wall = time.monotonic() - start
    assert sorted(res) == sorted(names)
    assert [res[n]['ok'] for n in names] == [True, True, False, True]
    assert res['bad']['rc'] == 3 and 'bad handler' in res['bad']['stderr']
    assert all(r['seconds'] >= 1.0 for r in res.values())
    # four one-second probes one after the other take four seconds
    assert wall < 3.0, wall
    calls = log.read_text().splitlines()
    # each container deleted afterwards, whatever happened
    for n in names:
        assert any(c.startswith('start ') and 'containers delete probe-%s' % n in c for c in calls), calls
        assert any(c.startswith('start ') and 'tasks delete -f probe-%s' % n in c for c in calls), calls


def test_at_most_four_at_once(tmp_path, monkeypatch):
    ctr, log = fake_ctr(tmp_path, 0.6)
    names = ['h%d' % i for i in range(6)]
    monkeypatch.setattr(_readiness_probe, 'MAX_PARALLEL_PROBES', 4)
    res = run_probes([probe(ctr, n) for n in names], timeout=30)
    assert sorted(res) == sorted(names) and all(r['ok'] for r in res.values())
    running, most = 0, 0
    for line in log.read_text().splitlines():
        if ' run ' in line:
            running += 1 if line.startswith('start ') else -1
            most = max(most, running)
    assert most == 4


def test_no_probes_no_threads():
    assert run_probes([], timeout=1) == {}
