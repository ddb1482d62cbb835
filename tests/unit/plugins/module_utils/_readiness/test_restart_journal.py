# -*- coding: utf-8 -*-
"""A restart whose containerd does not come back says why in the unit's own words: the journal since just before
the restart, without the lines of the containerd the restart stopped.

A stand-in systemctl (first in PATH) runs a real containerd 1.6 on a private socket as systemd runs the unit
(helpers.readiness.StandinUnit); the next start fails when its ExecStart is swapped for a script that refuses.
journalctl is a stand-in that answers, as journalctl does, the entries at or after --since, the last -n of them;
the entries are the test's, placed around the moment of the restart (restart's clock reads a fixed epoch)."""

import json
import os
import subprocess
import sys
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import restart as rr
from helpers.common import CONTAINERD_1
from helpers.context import FakeContext
from helpers.readiness import StandinUnit, standin_units

RESTARTED_AT = 1800000000.0
CTR = os.path.join(os.path.dirname(CONTAINERD_1 or '/usr/bin/containerd'), 'ctr')
REFUSING_START = '#!/bin/sh\necho "site-check: /dev/nvidia0 is missing" >&2\nexit 1\n'
JOURNALCTL = r'''#!%(python)s
import json, os, sys
HERE = os.path.dirname(os.path.abspath(__file__))
args = sys.argv[1:]
with open(os.path.join(HERE, 'journalctl-calls.log'), 'a') as f:
    f.write(json.dumps(args) + '\n')
with open(os.path.join(HERE, 'journal.json')) as f:
    entries = json.load(f)
since = float(args[args.index('--since') + 1].lstrip('@')) * 1e6 if '--since' in args else 0
n = int(args[args.index('-n') + 1])
for entry in [e for e in entries if int(e['__REALTIME_TIMESTAMP']) >= since][-n:]:
    print(json.dumps(entry))
'''


class Clock(object):
    """restart's time module: the epoch fixed at RESTARTED_AT, the monotonic clock the real one."""

    @staticmethod
    def time():
        return RESTARTED_AT

    @staticmethod
    def monotonic():
        return time.monotonic()


def entry(seconds, who, pid, message):
    """A journal entry seconds after the restart."""
    return dict(__REALTIME_TIMESTAMP=str(int((RESTARTED_AT + seconds) * 1e6)), SYSLOG_IDENTIFIER=who, _PID=str(pid),
                MESSAGE=message)


@pytest.fixture
def unit(tmp_path, monkeypatch):
    """A stand-in unit of a real containerd (not started yet) with its config, and journalctl beside systemctl."""
    if CONTAINERD_1 is None:
        pytest.fail('no containerd binary: run `make deps`', pytrace=False)
    monkeypatch.setattr(rr, 'time', Clock)
    with standin_units('ng-rj-', StandinUnit) as make:
        u = make()
        cfg = os.path.join(u.base, 'config.toml')
        with open(cfg, 'w') as f:
            f.write('version = 2\nroot = "{b}/root"\nstate = "{b}/state"\n[grpc]\n  address = "{a}"\n'
                    '[plugins."io.containerd.internal.v1.opt"]\n  path = "{b}/opt"\n'
                    '[plugins."io.containerd.grpc.v1.cri"]\n  disable_tcp_service = true\n'
                    '  stream_server_port = "0"\n'.format(b=u.base, a=u.address))
        u.unit['config'] = cfg
        u.save()
        with open(os.path.join(u.bin_dir, 'journalctl'), 'w') as f:
            f.write(JOURNALCTL % dict(python=sys.executable))
        os.chmod(os.path.join(u.bin_dir, 'journalctl'), 0o755)
        monkeypatch.setenv('PATH', u.env['PATH'])
        yield u


def refuse_next_start(u):
    script = os.path.join(u.base, 'refusing-start')
    with open(script, 'w') as f:
        f.write(REFUSING_START)
    os.chmod(script, 0o755)
    u.unit = u.info()   # as systemctl left it: the running containerd's pid is what a restart stops
    u.unit['binary'] = script
    u.save()


def write_journal(u, entries):
    with open(os.path.join(u.bin_dir, 'journal.json'), 'w') as f:
        json.dump(entries, f)


def journalctl_calls(u):
    path = os.path.join(u.bin_dir, 'journalctl-calls.log')
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f]


def forced_restart(u, timeout=1):
    """restart with force (the decision on the real config dump), as step=restart calls it."""
    def run(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    ctx = FakeContext(containerd_bin=CONTAINERD_1, containerd_version=(1, 6), answer=run, module=None)
    opts = dict(path=u.unit['config'], state_dir=u.state_dir, unit='containerd', restart_files=[], force=True,
                preflight=False, preflight_timeout=20, timeout=timeout, ctr=CTR, address=None)
    fact, decision, _preflight = rr.restart(ctx, opts, False)
    assert decision['dump_ok'] and fact['restarted'], fact
    return fact, decision


def test_a_restart_that_does_not_come_back_quotes_the_journal_since_just_before_it(unit):
    res = unit.ctl('start', 'containerd')
    assert res.returncode == 0, res.stderr + unit.daemon_log()
    stopped = unit.info()['pid']
    write_journal(unit, [
        entry(-1.5, 'sh', 300, 'site-check: ok'),                      # the start before: not this restart's
        entry(-0.5, 'systemd', 1, 'Stopping containerd.service - containerd container runtime...'),
        entry(0.1, 'containerd', stopped, 'received signal terminated, shutting down'),
        entry(0.6, 'sh', 412, 'site-check: /dev/nvidia0 is missing'),
        entry(1.2, 'systemd', 1, 'containerd.service: Control process exited, code=exited, status=1/FAILURE'),
    ])
    refuse_next_start(unit)
    fact, decision = forced_restart(unit)
    assert not fact['cri_ok'] and fact['wait']['restart_rc'] == 1
    assert fact['journal'] == fact['wait']['journal'] == [
        'systemd[1]: Stopping containerd.service - containerd container runtime...',
        'sh[412]: site-check: /dev/nvidia0 is missing',
        'systemd[1]: containerd.service: Control process exited, code=exited, status=1/FAILURE']
    assert fact['reason'] == '%s; containerd did not come back: %s' % (decision['reason'], fact['wait']['msg'])
    assert fact['reason'].endswith('; journal of containerd: sh[412]: site-check: /dev/nvidia0 is missing | '
                                   'systemd[1]: containerd.service: Control process exited, code=exited, '
                                   'status=1/FAILURE')
    # twice the lines: the stopped containerd's own do not shorten the tail
    assert journalctl_calls(unit) == [['-u', 'containerd', '-o', 'json', '--no-pager', '-n', '30',
                                       '--since', '@1799999999.000000']]


def test_without_a_containerd_to_stop_no_line_is_left_out(unit):
    write_journal(unit, [entry(0.6, 'sh', 412, 'site-check: /dev/nvidia0 is missing')])
    refuse_next_start(unit)
    fact, _decision = forced_restart(unit)
    assert fact['journal'] == ['sh[412]: site-check: /dev/nvidia0 is missing']
    # systemd names no main process (MainPID=0): just the lines the wait keeps are asked for
    assert journalctl_calls(unit) == [['-u', 'containerd', '-o', 'json', '--no-pager', '-n', '15',
                                       '--since', '@1799999999.000000']]


def test_a_restart_that_comes_back_reads_no_journal(unit):
    res = unit.ctl('start', 'containerd')
    assert res.returncode == 0, res.stderr + unit.daemon_log()
    stopped = unit.info()['pid']
    fact, decision = forced_restart(unit, timeout=30)
    assert fact['cri_ok'] and fact['wait']['ok'] and unit.info()['pid'] != stopped
    assert fact['reason'] == decision['reason'] and 'journal' not in fact and fact['wait']['journal'] == []
    assert journalctl_calls(unit) == []
