# -*- coding: utf-8 -*-
"""_readiness_service: containerd's unit state, its CRI plugins and the
bounded wait, with systemctl and ctr answered by the test (in process).

The module tests run the same code on stand-in commands in PATH; here each
answer is chosen so each verdict, message and timing figure is exact."""

import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import service as svc
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
)

CTR_V1_OK = ('TYPE                            ID    PLATFORMS      STATUS\n'
             'io.containerd.content.v1        content   -          ok\n'
             'io.containerd.grpc.v1           cri       linux/amd64    ok\n')
CTR_V2 = ('TYPE ID PLATFORMS STATUS\n'
          'io.containerd.cri.v1 images - %s\n'
          'io.containerd.cri.v1 runtime linux/amd64 %s\n'
          'io.containerd.grpc.v1 cri - %s\n')


# what systemctl answers on a machine whose init is not systemd (a container without it, a chroot)
NOT_SYSTEMD = 'not-systemd'
NOT_SYSTEMD_ERR = ("System has not been booted with systemd as init system (PID 1). Can't operate.\n"
                   "Failed to connect to bus: Host is down\n")


class Node(object):
    """systemctl show answers from a list of states (the last repeats); ctr from a list of outputs."""

    def __init__(self, states, ctr_outputs=(CTR_V1_OK,)):
        self.states = list(states)
        self.ctr_outputs = list(ctr_outputs)
        self.calls = []
        self.journal = (0, '', '')  # journalctl -o json: one entry a line

    def __call__(self, argv, timeout=30):
        self.calls.append((list(argv), timeout))
        if argv[:2] == ['systemctl', 'show']:
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            if state is None:
                return 1, '', 'Failed to connect to bus'
            if state == NOT_SYSTEMD:
                return 1, '', NOT_SYSTEMD_ERR
            props = argv[3][len('--property='):].split(',')
            return 0, ''.join('%s=%s\n' % (k, state[k]) for k in props if k in state) + 'noise line\n', ''
        if argv[:2] in (['systemctl', 'reset-failed'], ['systemctl', 'start']):
            return 0, '', ''
        if argv[0] == 'journalctl':
            return self.journal
        if argv[1:2] == ['--address']:
            out = self.ctr_outputs.pop(0) if len(self.ctr_outputs) > 1 else self.ctr_outputs[0]
            return (0, out, '') if not isinstance(out, tuple) else out
        raise AssertionError(argv)

    def commands(self, *prefix):
        return [c for c, _t in self.calls if c[:len(prefix)] == list(prefix)]


@pytest.fixture
def node(monkeypatch):
    def make(states, ctr_outputs=(CTR_V1_OK,)):
        n = Node(states, ctr_outputs)
        monkeypatch.setattr(svc, 'run', n)
        return n
    return make


def mono_us(seconds_ago):
    """A systemd monotonic timestamp (µs) of seconds_ago."""
    return str(int((time.monotonic() - seconds_ago) * 1e6))


ACTIVE = dict(ActiveState='active', SubState='running', Result='success', LoadState='loaded', NRestarts='0')


# ---------------------------------------------------------------- systemctl show

def test_systemd_show_reads_each_property_once_and_keeps_equals_in_values(node):
    n = node([dict(ActiveState='active', Environment='A=1 B=2')])
    assert svc.systemd_show('containerd.service', ['ActiveState', 'Environment']) == {
        'ActiveState': 'active', 'Environment': 'A=1 B=2'}
    assert n.calls == [(['systemctl', 'show', 'containerd.service', '--property=ActiveState,Environment'], 15)]
    node([None])
    assert svc.systemd_show('containerd.service', ['ActiveState']) == {}
    node([NOT_SYSTEMD])
    assert svc.systemd_show('containerd.service', ['ActiveState']) == {'LoadState': 'no-systemd'}


def test_unit_state_gives_the_start_in_epoch_seconds(node):
    node([dict(ActiveState='active', ExecMainStartTimestampMonotonic=mono_us(100))])
    state, started = svc.unit_state('containerd.service')
    assert state == 'active'
    assert abs(started - (time.time() - 100)) < 2


def test_a_unit_started_in_the_first_second_after_boot_has_a_start_time(node):
    node([dict(ActiveState='active', ExecMainStartTimestampMonotonic='500000')])
    _state, started = svc.unit_state('containerd.service')
    assert abs(started - (time.time() - time.monotonic() + 0.5)) < 2


@pytest.mark.parametrize('value', ['0', '', 'n/a'])
def test_unit_state_without_a_start_time_says_zero(node, value):
    node([dict(ActiveState='inactive', ExecMainStartTimestampMonotonic=value)])
    assert svc.unit_state('containerd.service') == ('inactive', 0.0)


def test_unit_state_of_an_unknown_unit(node):
    node([None])
    assert svc.unit_state('nope.service') == ('unknown', 0.0)


def test_seconds_of_a_monotonic_property():
    assert svc._seconds({'X': '1500000'}, 'X') == 1.5
    assert svc._seconds({'X': '0'}, 'X') is None
    assert svc._seconds({'X': ''}, 'X') is None
    assert svc._seconds({}, 'X') is None
    assert svc._seconds({'X': 'later'}, 'X') is None


# ---------------------------------------------------------------- ctr plugins ls

def test_plugins_ls_rows(node):
    lines = CTR_V1_OK.splitlines(True)
    # a stray short line does not end the list; a row without its platforms column is still a row
    n = node([ACTIVE], [lines[0] + 'short line\n' + lines[1] + lines[2] + 'io.containerd.x.v1 y ok\n'])
    rows, why = svc.plugins_ls('/usr/bin/ctr', '/run/c.sock')
    assert why is None
    assert rows == [dict(type='io.containerd.content.v1', id='content', status='ok', plugin='io.containerd.content.v1.content'),
                    dict(type='io.containerd.grpc.v1', id='cri', status='ok', plugin=CRI_V2),
                    dict(type='io.containerd.x.v1', id='y', status='ok', plugin='io.containerd.x.v1.y')]
    assert n.calls == [(['/usr/bin/ctr', '--address', '/run/c.sock', 'plugins', 'ls'], 15)]


def test_plugins_ls_failures_say_why(node):
    assert svc.plugins_ls(None, '/run/c.sock') == (None, 'no ctr binary beside containerd or in PATH')
    node([ACTIVE], [(1, '', 'ctr: connection refused\n')])
    assert svc.plugins_ls('/usr/bin/ctr', '/x') == (None, 'ctr: connection refused')
    node([ACTIVE], [(1, 'only stdout\n', '')])
    assert svc.plugins_ls('/usr/bin/ctr', '/x') == (None, 'only stdout')


def test_three_cri_plugins_when_the_daemon_lists_2x_ones():
    """The live plugin list wins over a version that could not be read or is stale."""
    rows = [dict(type='io.containerd.cri.v1', id='images', status='ok', plugin=CRI_V3_IMAGES)]
    assert svc.cri_plugin_ids((1, 7), rows) == [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]
    assert svc.cri_plugin_ids(None, []) == [CRI_V2]
    assert svc.cri_plugin_ids((2, 1), None) == [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]


def test_cri_status_names_missing_plugins():
    rows = [dict(plugin=CRI_V2, status='ok'), dict(plugin='io.containerd.x.v1.y', status='error')]
    assert svc.cri_status(rows, [CRI_V2, CRI_V3_RUNTIME]) == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'missing'}
    assert svc.cri_status(None, [CRI_V2]) == {CRI_V2: 'missing'}


# ---------------------------------------------------------------- the wait

def test_ready_at_the_first_look_reports_systemds_times(node):
    state = dict(ACTIVE, ExecMainStartTimestampMonotonic=mono_us(10), ActiveEnterTimestampMonotonic=mono_us(8),
                 ActiveExitTimestampMonotonic=mono_us(11))
    node([state])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/run/c.sock', (1, 7), 5)
    assert w['ok'] and w['polls'] == 1
    assert w['msg'].startswith('containerd active, CRI plugins ok after ') and w['msg'].endswith(' s of waiting')
    assert 0 <= float(w['msg'].split(' after ')[1].split()[0]) < 5
    assert w['startup_seconds'] == pytest.approx(2.0, abs=0.01)
    assert w['came_back_seconds'] == pytest.approx(3.0, abs=0.01)   # READY=1 came 3 s after the stop
    assert w['up_for_seconds'] == pytest.approx(10.0, abs=0.5)
    assert w['cri_plugins'] == {CRI_V2: 'ok'}
    assert (w['unit'], w['active_state'], w['sub_state'], w['result'], w['n_restarts']) == \
        ('containerd.service', 'active', 'running', 'success', '0')
    assert not w['start_limit_hit'] and not w['reset_failed_done'] and w['recorded'] is None


def test_ready_after_polling_counts_from_when_the_plugins_were_ok(node):
    state = dict(ACTIVE, ExecMainStartTimestampMonotonic=mono_us(10), ActiveEnterTimestampMonotonic=mono_us(9),
                 ActiveExitTimestampMonotonic=mono_us(11))
    n = node([state], [CTR_V2 % ('ok', 'error', 'ok'), CTR_V2 % ('ok', 'ok', 'skip'), CTR_V2 % ('ok', 'ok', 'ok')])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/run/c.sock', (1, 7), 5, interval=0.01)
    assert w['ok'] and w['polls'] == 3
    assert w['cri_plugins'] == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'ok', CRI_V3_IMAGES: 'ok'}
    # ready when the plugins were seen ok (now), not when systemd said active
    assert w['came_back_seconds'] == pytest.approx(11.0, abs=0.5)
    assert len(n.commands('/usr/bin/ctr')) == 3
    # the second look already counts as waiting for the plugins
    node([state], [CTR_V2 % ('ok', 'error', 'ok'), CTR_V2 % ('ok', 'ok', 'ok')])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/run/c.sock', (1, 7), 5, interval=0.01)
    assert w['polls'] == 2 and w['came_back_seconds'] == pytest.approx(11.0, abs=0.5)


def test_timing_figures_are_in_milliseconds_and_zero_gaps_count(node):
    """systemd's timestamps are in µs; the report keeps ms.  A unit active the moment its process
    started (Type=simple) started up in 0 s; READY=1 in the same µs as the stop came back in 0 s."""
    exec_start = int((time.monotonic() - 10) * 1e6)
    state = dict(ACTIVE, ExecMainStartTimestampMonotonic=str(exec_start),
                 ActiveEnterTimestampMonotonic=str(exec_start + 123456),
                 ActiveExitTimestampMonotonic=str(exec_start - 2345678))
    node([state])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 5)
    assert (w['startup_seconds'], w['came_back_seconds']) == (0.123, 2.469)
    same = dict(ACTIVE, ExecMainStartTimestampMonotonic=str(exec_start), ActiveEnterTimestampMonotonic=str(exec_start),
                ActiveExitTimestampMonotonic=str(exec_start))
    node([same])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 5)
    assert (w['startup_seconds'], w['came_back_seconds']) == (0.0, 0.0)


def test_no_came_back_time_without_a_stop_before_the_start(node):
    state = dict(ACTIVE, ExecMainStartTimestampMonotonic=mono_us(10), ActiveEnterTimestampMonotonic=mono_us(20),
                 ActiveExitTimestampMonotonic=mono_us(5))
    node([state])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 6), 5)
    assert w['ok']
    assert w['startup_seconds'] is None           # entered active before this process started: no start-up figure
    assert w['came_back_seconds'] is None         # the last stop came after the ready time
    assert w['up_for_seconds'] == pytest.approx(10.0, abs=0.5)


def test_no_timing_figures_without_systemds_timestamps(node):
    node([ACTIVE])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 6), 5)
    assert w['ok']
    assert w['startup_seconds'] is None and w['came_back_seconds'] is None and w['up_for_seconds'] is None


def test_start_limit_hit_ends_the_wait_and_says_how_to_clear_it(node):
    n = node([dict(ActiveState='failed', SubState='failed', Result='start-limit-hit')])
    t0 = time.monotonic()
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 30)
    assert time.monotonic() - t0 < 5 and w['polls'] == 1
    assert not w['ok'] and w['start_limit_hit'] and not w['reset_failed_done']
    assert w['msg'] == ("systemd refused to start containerd.service: start-limit-hit (too many restarts in a short "
                        "time); run 'systemctl reset-failed containerd.service' or set node_readiness_reset_failed")
    assert n.commands('systemctl', 'reset-failed') == []


def test_start_limit_hit_while_inactive_counts_too(node):
    node([dict(ActiveState='inactive', Result='start-limit-hit')])
    assert svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 30)['start_limit_hit']


def test_start_limit_hit_is_cleared_once_when_asked(node):
    hit = dict(ActiveState='failed', SubState='failed', Result='start-limit-hit')
    n = node([hit, dict(ACTIVE, Result='success')])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 30, interval=0.01, reset_failed=True)
    assert w['ok'] and w['start_limit_hit'] and w['reset_failed_done'] and w['polls'] == 2
    # each bounded: a systemctl that hangs does not hang the wait
    assert [c for c in n.calls if c[0][:2] in (['systemctl', 'reset-failed'], ['systemctl', 'start'])] == [
        (['systemctl', 'reset-failed', 'containerd.service'], 30),
        (['systemctl', 'start', '--no-block', 'containerd.service'], 30)]


def test_start_limit_hit_again_after_the_reset_is_the_end(node):
    n = node([dict(ActiveState='failed', Result='start-limit-hit')])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 30, interval=0.01, reset_failed=True)
    assert not w['ok'] and w['polls'] == 2
    assert w['msg'] == 'start-limit-hit; reset-failed and start were tried, containerd still not ready'
    assert len(n.commands('systemctl', 'reset-failed')) == 1


def test_a_failed_unit_without_start_limit_hit_is_waited_for(node):
    n = node([dict(ActiveState='failed', SubState='failed', Result='exit-code')])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 0.3, interval=0.05, reset_failed=True)
    assert not w['ok'] and not w['start_limit_hit'] and w['polls'] > 1
    assert w['msg'] == ('containerd not active within 0.3 s (ActiveState=failed SubState=failed Result=exit-code)')
    assert n.commands('systemctl', 'reset-failed') == []


def test_an_unknown_unit_is_named(node):
    node([dict(ActiveState='inactive', LoadState='not-found')])
    w = svc.wait_ready('nope.service', '/usr/bin/ctr', '/s', (1, 7), 0.1, interval=0.05)
    assert w['msg'] == 'unit nope.service not found'


def test_an_unknown_unit_ends_the_wait_at_once(node):
    # a wrong unit name does not appear by waiting: said at once, not after the whole timeout
    node([dict(ActiveState='inactive', LoadState='not-found')])
    w = svc.wait_ready('nope.service', '/usr/bin/ctr', '/s', (1, 7), 30, interval=0.01)
    assert (w['ok'], w['polls'], w['msg']) == (False, 1, 'unit nope.service not found')
    assert w['waited_seconds'] < 5


def test_a_machine_without_systemd_ends_the_wait_at_once_saying_so(node):
    node([NOT_SYSTEMD])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 30, interval=0.01)
    assert (w['ok'], w['polls']) == (False, 1) and w['waited_seconds'] < 5
    assert w['msg'] == ('systemd is not running on this node (systemctl: System has not been booted with systemd): '
                        'containerd.service cannot be started or waited for')


def test_a_systemctl_that_fails_otherwise_is_waited_out(node):
    # a bus that does not answer for a moment (systemd re-executing) is not the end of the wait
    node([None, None, ACTIVE])
    w = svc.wait_ready('containerd.service', '/usr/bin/ctr', '/s', (1, 7), 30, interval=0.01)
    assert w['ok'] and w['polls'] == 3


def test_active_but_cri_not_ok_names_the_plugins(node):
    node([ACTIVE], [CTR_V2 % ('ok', 'error', 'ok')])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (2, 1), 0.2, interval=0.05)
    assert not w['ok']
    assert w['msg'] == ('containerd active but CRI plugins not ok within 0.2 s: io.containerd.cri.v1.images=ok, '
                        'io.containerd.cri.v1.runtime=error, io.containerd.grpc.v1.cri=ok')


def test_active_without_a_plugin_list_says_why(node):
    node([ACTIVE], [(1, '', 'ctr: dial unix /s: connect: no such file or directory')])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (2, 1), 0.2, interval=0.05)
    assert w['cri_plugins'] == {}
    assert w['msg'] == ('containerd active but CRI plugins not ok within 0.2 s: no plugin list (ctr: dial unix /s: '
                        'connect: no such file or directory)')
    node([ACTIVE], [''])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (2, 1), 0.1, interval=0.05)
    assert w['msg'].endswith('within 0.1 s: io.containerd.cri.v1.images=missing, io.containerd.cri.v1.runtime=missing, '
                             'io.containerd.grpc.v1.cri=missing')


def test_the_wait_is_bounded(node):
    node([dict(ActiveState='activating', SubState='start', Result='success')])
    t0 = time.monotonic()
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 0.5)   # polled every 0.1 s by default
    took = time.monotonic() - t0
    assert 0.5 <= took < 3 and 3 <= w['polls'] <= 7
    assert w['waited_seconds'] == pytest.approx(took, abs=0.1)


# ------------------------------------------------------------------ the wait's own timing figures
class WaitClock(object):
    """svc's time module: monotonic() gives the readings in turn."""

    def __init__(self, *readings):
        self.readings = list(readings)

    def monotonic(self):
        return self.readings.pop(0)

    sleep = staticmethod(time.sleep)


def test_up_for_and_waited_seconds_are_in_milliseconds(node, monkeypatch):
    """Started at 990 s (systemd's µs), the wait began at 1000 s, the plugins were ok at 1000.5 s and
    the report was made at 1000.56789 s."""
    clock = WaitClock(1000.0, 1000.5, 1000.56789)
    monkeypatch.setattr(svc, 'time', clock)
    node([dict(ACTIVE, ExecMainStartTimestampMonotonic='990000000')])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 5)
    assert w['ok'] and w['polls'] == 1 and clock.readings == []
    assert w['up_for_seconds'] == 10.568
    assert w['waited_seconds'] == 0.568
    assert w['msg'] == 'containerd active, CRI plugins ok after 0.57 s of waiting'
