# -*- coding: utf-8 -*-
"""_readiness_restart in process: the pending decision and the restart
contract, with config dump, systemd, the load test and the wait answered by
the test.  The same contract through the module, real containerd and a
stand-in systemctl is in tests/module/test_containerd_readiness_restart.py."""

import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import restart as rr
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import LoadResult
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.restart import (
    dump_fingerprint,
    pending,
    restart,
)
from helpers.context import FakeContext

DUMP = 'version = 2\nroot = "/var/lib/containerd"\n\n[grpc]\n  address = "/run/k3s/containerd.sock"\n'


def dump_context(dump=(0, DUMP, '')):
    """The context of a readiness run whose one command is containerd's `config dump`, answered with dump."""
    def answer(cmd):
        assert cmd[-2:] == ['config', 'dump'], cmd
        return dump
    return FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=(1, 7), answer=answer)


@pytest.fixture
def node(tmp_path, monkeypatch):
    """A config with one import, a state folder, and systemd saying what the test sets."""
    etc = tmp_path / 'etc'
    etc.mkdir()
    (etc / 'kata.toml').write_text('version = 2\n')
    cfg = etc / 'config.toml'
    cfg.write_text('version = 2\nimports = ["%s"]\n' % (etc / 'kata.toml'))
    unit = {'state': ('active', time.time() + 60)}
    monkeypatch.setattr(rr, 'unit_state', lambda name: unit['state'])

    class N(object):
        path = str(cfg)
        imported = str(etc / 'kata.toml')
        state_dir = str(tmp_path / 'state')

        @staticmethod
        def started(active, when):
            unit['state'] = (active, when)

        def record(self, fingerprint, at):
            p = rr.record_fingerprint(self.state_dir, fingerprint)
            os.utime(p, (at, at))
    return N()


# ---------------------------------------------------------------- the record

def test_fingerprint_leaves_out_trailing_newlines_and_the_imports_line():
    assert dump_fingerprint('version = 2\nimports = ["/b", "/a"]\n[x]\n  y = 1\n\n') == \
        dump_fingerprint('version = 2\nimports = ["/a", "/b"]\n[x]\n  y = 1')
    assert dump_fingerprint('a = 1\n') != dump_fingerprint('a = 2\n')


def test_the_record_is_private(tmp_path):
    state = tmp_path / 'a' / 'state'
    path = rr.record_fingerprint(str(state), 'cd' * 32)
    assert path == str(state / 'containerd-started.sha256')
    assert os.stat(str(state)).st_mode & 0o777 == 0o700 and os.stat(path).st_mode & 0o777 == 0o600
    assert open(path).read() == 'cd' * 32 + '\n'
    rr.record_fingerprint(str(state), 'ef' * 32)   # the folder exists: written again
    assert open(path).read() == 'ef' * 32 + '\n'


def test_the_socket_the_dump_names():
    assert rr.dump_address(DUMP) == '/run/k3s/containerd.sock'
    assert rr.dump_address('version = 2\n') is None
    assert rr.dump_address('not [ toml') is None


# ---------------------------------------------------------------- pending

def test_a_config_dump_refuses_is_pending_and_not_loadable(node):
    ctx = dump_context((1, 'usage...\n', 'containerd: failed to load TOML: ' + 'x' * 500 + ' end\n'))
    d = pending(ctx, node.path, node.state_dir, 'containerd.service')
    assert d == dict(pending=True, dump_ok=False, fingerprint=None,
                     reason='containerd --config %s config dump failed: %s'
                            % (node.path, ('containerd: failed to load TOML: ' + 'x' * 500 + ' end')[-400:]))
    assert ctx.commands == [['/usr/bin/containerd', '--config', node.path, 'config', 'dump']]
    d = pending(dump_context((2, 'only on stdout\n', '')), node.path, node.state_dir, 'containerd.service')
    assert d['reason'].endswith('config dump failed: only on stdout')


def test_without_a_binary_nothing_is_decided_on_the_files(node):
    ctx = dump_context()
    ctx.containerd_bin = None
    d = pending(ctx, node.path, node.state_dir, 'containerd.service')
    assert d['pending'] and not d['dump_ok'] and 'no containerd binary' in d['reason']


def test_containerd_not_running_is_pending(node):
    node.started('inactive', 0.0)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['pending'] and d['dump_ok']
    assert d['reason'] == 'containerd.service is not running (ActiveState=inactive)'
    assert d['fingerprint'] == dump_fingerprint(DUMP) and d['address'] == '/run/k3s/containerd.sock'
    assert (d['active_state'], d['started']) == ('inactive', 0.0)


def test_started_after_every_file_changed_is_not_pending(node):
    node.started('active', time.time() + 60)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert not d['pending'], d
    assert d['reason'] == 'containerd started after the last change of its config files'
    assert d['walk_errors'] == [] and d['newest_path'] in (node.path, node.imported, os.path.dirname(node.path))


def test_an_import_changed_after_the_start_is_pending(node):
    node.started('active', time.time() - 3600)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['pending']
    assert d['reason'] == ('%s changed after containerd started, and the effective config is not the one nodeguard '
                           'last restarted containerd with' % d['newest_path'])
    assert d['newest'] > time.time() - 60


def test_the_reason_names_the_file_that_changed_last(node):
    node.started('active', time.time() - 3600)
    later = time.time() + 3600
    os.utime(node.imported, (later, later))
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['newest_path'] == node.imported and d['newest'] == later
    assert d['reason'].startswith('%s changed after containerd started' % node.imported)


def test_of_files_changed_at_the_same_moment_the_first_is_named(node, tmp_path):
    node.started('active', time.time() - 3600)
    extra = tmp_path / 'extra.yaml'
    extra.write_text('')
    same = float(int(time.time()) + 7200)
    for p in (node.path, node.imported, str(extra)):
        os.utime(p, (same, same))
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service', extra_files=[str(extra)])
    assert d['newest_path'] == node.path


def test_a_start_at_the_very_moment_of_the_last_change_is_not_after_it(node):
    same = float(int(time.time()) + 7200)
    for p in (node.path, node.imported):
        os.utime(p, (same, same))
    node.started('active', same)
    assert pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_an_extra_file_counts_and_missing_ones_are_skipped(node, tmp_path):
    node.started('active', time.time() + 30)
    later = tmp_path / 'runtime-class.yaml'
    later.write_text('')
    os.utime(str(later), (time.time() + 3600, time.time() + 3600))
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service',
                extra_files=[str(tmp_path / 'gone'), str(later)])
    assert d['pending'] and d['newest_path'] == str(later)
    assert not pending(dump_context(), node.path, node.state_dir, 'containerd.service', extra_files=None)['pending']


def test_the_recorded_fingerprint_decides_when_files_are_newer(node):
    started = time.time() - 3600
    node.started('active', started)
    node.record(dump_fingerprint(DUMP), started + 10)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert not d['pending'], d
    assert d['reason'] == 'the effective config is the one nodeguard last restarted containerd with'
    assert d['recorded'] == dump_fingerprint(DUMP) and d['recorded_at'] == started + 10


def test_a_record_made_exactly_at_the_start_still_counts(node):
    started = float(int(time.time() - 3600))
    node.started('active', started)
    node.record(dump_fingerprint(DUMP), started)
    assert not pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_a_start_after_the_record_voids_it(node):
    started = time.time() - 3600
    node.started('active', started)
    node.record(dump_fingerprint(DUMP), started - 10)
    assert pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_another_fingerprint_or_none_recorded_is_pending(node):
    started = time.time() - 3600
    node.started('active', started)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['pending'] and d['recorded'] is None and d['recorded_at'] == 0.0
    node.record('0' * 64, started + 10)
    assert pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_an_unknown_start_time_leaves_it_to_the_fingerprint(node):
    node.started('active', 0.0)
    assert pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']
    node.record(dump_fingerprint(DUMP), time.time() - 3600)
    assert not pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_an_unreadable_import_leaves_it_to_the_fingerprint(node):
    """An import that cannot be read may have changed unseen: file times do not decide."""
    with open(node.imported, 'w') as f:
        f.write('version = = 2\n')
    node.started('active', time.time() + 60)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['pending'] and d['walk_errors'] and node.imported in d['walk_errors'][0]


def test_a_main_file_only_containerd_can_read_leaves_it_to_the_fingerprint(node):
    with open(node.path, 'w') as f:
        f.write('version = = 2\n')
    node.started('active', time.time() + 60)
    d = pending(dump_context(), node.path, node.state_dir, 'containerd.service')
    assert d['pending'] and len(d['walk_errors']) == 1


# ---------------------------------------------------------------- restart

class Daemon(object):
    """systemctl restart, the wait and the load test, as the test says."""

    def __init__(self, monkeypatch, wait_ok=True, restart_rc=0, load='ok'):
        self.calls, self.waits, self.loads = [], [], []
        self.wait_ok, self.restart_rc, self.load = wait_ok, restart_rc, load
        monkeypatch.setattr(rr, 'run', self.run)
        monkeypatch.setattr(rr, 'wait_ready', self.wait_ready)
        monkeypatch.setattr(rr, 'load_test', self.load_test)

    def run(self, argv, timeout=30):
        self.calls.append((argv, timeout))
        return (self.restart_rc, 'out: ' + 'o' * 500, '') if self.restart_rc else (0, '', '')

    def wait_ready(self, unit, ctr, address, version, timeout, reset_failed=False, journal_since=None,
                   journal_skip_pid=None):
        self.waits.append(dict(unit=unit, ctr=ctr, address=address, version=version, timeout=timeout,
                               reset_failed=reset_failed))
        self.journal_since = journal_since
        journal = [] if self.wait_ok else ['sh[7]: ExecStartPre says no']
        return dict(ok=self.wait_ok, msg='waited', recorded=None, journal=journal)

    def load_test(self, binary, path, run_command=None, timeout=None):
        self.loads.append((binary, path, timeout))
        res = LoadResult(path, binary)
        res.status = self.load
        res.seconds = 0.5
        if self.load != 'ok':
            res.errors = ['%s: containerd 1.7 starts, but its plugin cri failed to load' % path]
        return res


def opts(node, **kw):
    o = dict(path=node.path, state_dir=node.state_dir, unit='containerd.service', restart_files=[], force=False,
             preflight=False, preflight_timeout=20, timeout=5, ctr='/usr/bin/ctr', address=None)
    o.update(kw)
    return o


def test_nothing_pending_nothing_done(node, monkeypatch):
    d = Daemon(monkeypatch)
    fact, decision, preflight = restart(dump_context(), opts(node, preflight=True), False)
    assert fact == dict(restarted=False, needed=False, refused=False, reason=decision['reason'], cri_ok=False,
                        wait={}, seconds=0)
    assert preflight is None and d.calls == [] and d.loads == []


def test_pending_restarts_waits_and_records(node, monkeypatch):
    node.started('active', time.time() - 3600)
    d = Daemon(monkeypatch)
    fact, decision, preflight = restart(dump_context(), opts(node, timeout=45), False)
    assert decision['pending'] and fact['needed'] and fact['restarted'] and fact['cri_ok'] and not fact['refused']
    # the stopped containerd's pid first: its farewell lines are no cause of a failed start
    assert d.calls == [(['systemctl', 'show', 'containerd.service', '--property=MainPID', '--value'], 15),
                       (['systemctl', 'restart', 'containerd.service'], 105)]
    assert d.waits == [dict(unit='containerd.service', ctr='/usr/bin/ctr', address='/run/k3s/containerd.sock',
                            version=(1, 7), timeout=45, reset_failed=True)]
    assert fact['wait']['restart_rc'] == 0 and 'restart_error' not in fact['wait']
    assert fact['wait']['recorded'] == os.path.join(node.state_dir, 'containerd-started.sha256')
    assert open(fact['wait']['recorded']).read().strip() == decision['fingerprint']
    assert 0 <= fact['seconds'] < 5 and preflight is None
    # the next decision: containerd runs what was recorded
    assert not pending(dump_context(), node.path, node.state_dir, 'containerd.service')['pending']


def test_the_restart_call_is_bounded_by_at_least_90_seconds(node, monkeypatch):
    node.started('active', time.time() - 3600)
    d = Daemon(monkeypatch)
    restart(dump_context(), opts(node, timeout=5), False)
    assert d.calls[-1] == (['systemctl', 'restart', 'containerd.service'], 90)


def test_the_socket_given_wins_then_the_dumps_then_the_default(node, monkeypatch):
    node.started('active', time.time() - 3600)
    d = Daemon(monkeypatch)
    restart(dump_context(), opts(node, address='/run/mine.sock'), False)
    restart(dump_context((0, 'version = 2\n', '')), opts(node), False)
    assert [w['address'] for w in d.waits] == ['/run/mine.sock', '/run/containerd/containerd.sock']


def test_a_failed_restart_is_reported_and_not_recorded(node, monkeypatch):
    node.started('active', time.time() - 3600)
    Daemon(monkeypatch, wait_ok=False, restart_rc=1)
    fact, _decision, _pf = restart(dump_context(), opts(node), False)
    assert fact['restarted'] and not fact['cri_ok']
    assert fact['wait']['restart_rc'] == 1 and fact['wait']['restart_error'] == ('out: ' + 'o' * 500)[-400:]
    assert 'recorded' not in fact['wait'] or fact['wait']['recorded'] is None
    assert not os.path.exists(os.path.join(node.state_dir, 'containerd-started.sha256'))


def test_force_restarts_without_a_change(node, monkeypatch):
    d = Daemon(monkeypatch)
    fact, decision, _pf = restart(dump_context(), opts(node, force=True), False)
    assert not decision['pending'] and fact['needed'] and fact['restarted']
    assert [c[0][1] for c in d.calls].count('restart') == 1


def test_a_config_containerd_cannot_load_is_refused_untouched(node, monkeypatch):
    d = Daemon(monkeypatch)
    fact, decision, preflight = restart(dump_context((1, '', 'bad toml')), opts(node, preflight=True), False)
    assert fact['refused'] and fact['needed'] and not fact['restarted']
    assert fact['reason'] == decision['reason'] and 'bad toml' in fact['reason']
    assert d.calls == [] and d.loads == [] and preflight is None


def test_the_load_test_refuses_what_config_dump_accepts(node, monkeypatch):
    node.started('active', time.time() - 3600)
    d = Daemon(monkeypatch, load='failed')
    fact, _decision, preflight = restart(dump_context(), opts(node, preflight=True, preflight_timeout=33), False)
    assert fact['refused'] and not fact['restarted'] and d.calls == []
    assert fact['reason'] == '%s: containerd 1.7 starts, but its plugin cri failed to load' % node.path
    assert d.loads == [('/usr/bin/containerd', node.path, 33)]
    assert preflight == dict(status='failed', msg=fact['reason'], errors=[fact['reason']], seconds=0.5, required={})


def test_a_load_test_that_passes_or_cannot_run_lets_the_restart_go(node, monkeypatch):
    node.started('active', time.time() - 3600)
    Daemon(monkeypatch, load='ok')
    ctx = dump_context()
    fact, _d, preflight = restart(ctx, opts(node, preflight=True), False)
    assert fact['restarted'] and preflight['status'] == 'ok' and ctx.warnings == []
    Daemon(monkeypatch, load='cannot_run')
    ctx = dump_context()
    fact, _d, preflight = restart(ctx, opts(node, preflight=True, force=True), False)
    assert fact['restarted'] and not fact['refused'] and preflight['status'] == 'cannot_run'
    assert ctx.warnings == ["the load test of %s could not run (%s: containerd 1.7 starts, but its plugin cri failed "
                            "to load); containerd is restarted on config dump's word alone." % (node.path, node.path)]


def test_check_mode_decides_and_load_tests_but_never_restarts(node, monkeypatch):
    node.started('active', time.time() - 3600)
    d = Daemon(monkeypatch)
    fact, decision, preflight = restart(dump_context(), opts(node, preflight=True), True)
    assert decision['pending'] and fact['needed'] and not fact['restarted'] and not fact['refused']
    assert preflight['status'] == 'ok' and d.calls == [] and d.waits == []
    assert not os.path.exists(node.state_dir)


# ------------------------------------------------------------------ the restart's timing figures
class RestartClock(object):
    """rr's time module: monotonic() gives the readings in turn."""

    def __init__(self, *readings):
        self.readings = list(readings)

    def monotonic(self):
        return self.readings.pop(0)

    def time(self):
        return 1800000000.0


def test_the_restart_seconds_are_in_hundredths(node, monkeypatch):
    node.started('active', time.time() - 3600)
    Daemon(monkeypatch)
    clock = RestartClock(500.0, 501.23456)
    monkeypatch.setattr(rr, 'time', clock)
    fact, decision, _preflight = rr.restart(dump_context(), opts(node), False)
    assert decision['pending'] and fact['restarted'] and fact['cri_ok'] and clock.readings == []
    assert fact['seconds'] == 1.23
