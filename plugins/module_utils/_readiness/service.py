# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd as a running service: its systemd unit and its CRI plugins (containerd_readiness).

``systemctl show`` for the unit's state and start time, ``ctr plugins ls`` for
the CRI plugins, and the bounded wait until both are good, with systemd's
start-limit-hit cleared at most once. The CRI plugin ids per containerd
version are the engine's (``_preflight.required_for``). When containerd does
not come back, the wait names the cause in the unit's own words: the last
lines of its journal (a failing ExecStartPre, containerd's own error).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import journal_entries
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import required_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import run_bounded

DEFAULT_ADDRESS = '/run/containerd/containerd.sock'
WAIT_PROPS = ('ActiveState', 'SubState', 'Result', 'LoadState', 'NRestarts', 'ExecMainStartTimestampMonotonic',
              'ActiveEnterTimestampMonotonic', 'ActiveExitTimestampMonotonic')


def run(argv, timeout=30):
    """(rc, stdout, stderr) of a command that may hang (ctr on a dead socket, kubectl): 124 after timeout."""
    return run_bounded(list(argv), timeout)


# what systemctl says on a machine whose init is not systemd: no unit can start there, however long one waits
NO_SYSTEMD = 'not been booted with systemd'


def systemd_show(unit, props):
    """The unit's properties; {} when systemctl fails, {'LoadState': 'no-systemd'} when systemd is not init."""
    rc, out, err = run(['systemctl', 'show', unit, '--property=' + ','.join(props)], timeout=15)
    result = {}
    if rc == 0:
        for line in out.splitlines():
            if '=' in line:
                key, value = line.split('=', 1)
                result[key] = value
    elif NO_SYSTEMD in (err or ''):
        result['LoadState'] = 'no-systemd'
    return result


def unit_state(unit):
    """(ActiveState, when the unit's main process started in epoch seconds or 0.0).

    The start comes from ExecMainStartTimestampMonotonic, which every systemd
    has, against this machine's monotonic clock (containers share the host's).
    """
    state = systemd_show(unit, ['ActiveState', 'ExecMainStartTimestampMonotonic'])
    try:
        mono = int(state.get('ExecMainStartTimestampMonotonic') or 0) / 1e6
    except ValueError:
        mono = 0.0
    started = time.time() - (time.monotonic() - mono) if mono > 0 else 0.0
    return state.get('ActiveState') or 'unknown', started


BOOT_ID = '/proc/sys/kernel/random/boot_id'


def main_process(unit):
    """containerd as a process: {pid, started (ExecMainStartTimestampMonotonic, microseconds), boot (this boot's
    id)}, or None when systemd names no running main process or the boot id cannot be read. Any restart of the
    unit changes it, and so does a reboot."""
    state = systemd_show(unit, ['MainPID', 'ExecMainStartTimestampMonotonic'])
    pid, started = state.get('MainPID', ''), state.get('ExecMainStartTimestampMonotonic', '')
    if not (pid.isdigit() and int(pid) > 0 and started.isdigit() and int(started) > 0):
        return None
    try:
        with open(BOOT_ID) as fh:
            boot = fh.read().strip()
    except (IOError, OSError):
        return None
    return dict(pid=int(pid), started=int(started), boot=boot) if boot else None


# lines of the unit's journal kept in a failed wait's report, and how many of them its message quotes
JOURNAL_LINES = 15
JOURNAL_IN_MSG = 6


def _journal_line(entry):
    """One journal entry as 'identifier[pid]: message' (MESSAGE is a list of bytes when it is not UTF-8)."""
    message = entry.get('MESSAGE', '')
    if isinstance(message, list):
        message = bytearray(b for b in message if isinstance(b, int) and 0 <= b < 256).decode('utf-8', 'replace')
    who = entry.get('SYSLOG_IDENTIFIER') or entry.get('_COMM') or '?'
    pid = entry.get('SYSLOG_PID') or entry.get('_PID')
    return ('%s[%s]: %s' % (who, pid, message) if pid else '%s: %s' % (who, message)).strip()[:300]


def journal_tail(unit, since=None, lines=JOURNAL_LINES, skip_pid=None):
    """(last lines of the unit's journal, error or None): its processes' output (ExecStartPre, containerd)
    and systemd's own lines about it; since (epoch seconds) leaves out what came before, skip_pid the lines
    of that process (the containerd a restart stopped)."""
    argv = ['journalctl', '-u', unit, '-o', 'json', '--no-pager', '-n', str(lines * 2 if skip_pid else lines)]
    if since:
        argv += ['--since', '@%.6f' % since]
    rc, out, err = run(argv, timeout=15)
    if rc != 0:
        return [], 'journalctl -u %s failed (rc=%s): %s' % (unit, rc, (err or out).strip()[-300:])
    tail = [_journal_line(entry) for entry in journal_entries(out)
            if not (skip_pid and str(entry.get('_PID')) == str(skip_pid))]
    return [line for line in tail if line][-lines:], None


def telling_lines(journal, limit=JOURNAL_IN_MSG):
    """The journal lines a message quotes, in their order: the unit's own processes' last words (ExecStartPre,
    containerd) and systemd's last lines on how they ended; systemd's routine lines (scheduled restart, a
    skipped modprobe) only when there is nothing else."""
    own = [i for i, line in enumerate(journal) if not line.startswith(('systemd[', '('))]
    ended = [i for i, line in enumerate(journal) if line.startswith('systemd[')
             and ('exited' in line or 'Failed' in line or 'start-limit' in line)]
    chosen = sorted(set(own[-(limit - 2):] + ended[-2:]))
    return [journal[i] for i in chosen] if chosen else journal[-limit:]


def plugins_ls(ctr, address):
    """([{type, id, status, plugin}], None) from ``ctr plugins ls``, or (None, why not)."""
    if not ctr:
        return None, 'no ctr binary beside containerd or in PATH'
    rc, out, err = run([ctr, '--address', address, 'plugins', 'ls'], timeout=15)
    if rc != 0:
        return None, (err or out).strip()
    rows = []
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 3:
            continue
        rows.append(dict(type=cols[0], id=cols[1], status=cols[-1], plugin=cols[0] + '.' + cols[1]))
    return rows, None


def cri_plugin_ids(version, rows):
    """The CRI plugins this containerd must run: the engine's list for its version (2.x's also when listed)."""
    if any(r['type'] == 'io.containerd.cri.v1' for r in rows or []):
        version = (2, 0)
    return required_for(version)


def cri_status(rows, ids):
    found = dict((row['plugin'], row['status']) for row in rows or [] if row['plugin'] in ids)
    return dict((pid, found.get(pid, 'missing')) for pid in ids)


def _seconds(state, prop):
    try:
        value = int(state.get(prop, '0') or 0) / 1e6
    except ValueError:
        return None
    return value or None


def _why_not_ready(unit, timeout, state, cri, plugin_error, start_limit_hit, reset_done):
    """The message of a wait that ended without containerd ready (its last unit state and CRI plugins)."""
    if start_limit_hit:
        if reset_done:
            return 'start-limit-hit; reset-failed and start were tried, containerd still not ready'
        return ("systemd refused to start %s: start-limit-hit (too many restarts in a short time); "
                "run 'systemctl reset-failed %s' or set node_readiness_reset_failed" % (unit, unit))
    if state.get('LoadState') == 'not-found':
        return 'unit %s not found' % unit
    if state.get('LoadState') == 'no-systemd':
        return ('systemd is not running on this node (systemctl: System has not been booted with systemd): %s '
                'cannot be started or waited for' % unit)
    if state.get('ActiveState') != 'active':
        return 'containerd not active within %s s (ActiveState=%s SubState=%s Result=%s)' % (
            timeout, state.get('ActiveState'), state.get('SubState'), state.get('Result'))
    return 'containerd active but CRI plugins not ok within %s s: %s%s' % (
        timeout, ', '.join('%s=%s' % kv for kv in sorted(cri.items())) or 'no plugin list',
        (' (' + plugin_error + ')') if plugin_error else '')


def wait_ready(unit, ctr, address, version, timeout, interval=0.1, reset_failed=False, journal_since=None,
               journal_skip_pid=None):
    """Wait (bounded) until the unit is active and its CRI plugins ok; the report of containerd_readiness step=wait.

    systemd's start-limit-hit ends the wait, unless reset_failed: then
    ``systemctl reset-failed`` and one start, once. A failed wait carries the
    unit's last journal lines (since journal_since, epoch seconds, when
    given) in ``journal`` and quotes the last of them in ``msg``.
    """
    start = time.monotonic()
    deadline = start + timeout
    polls = 0
    first_ok = None
    reset_done = start_limit_hit = False
    state, cri, plugin_error = {}, {}, None
    while True:
        polls += 1
        state = systemd_show(unit, WAIT_PROPS)
        if state.get('ActiveState') == 'active':
            rows, plugin_error = plugins_ls(ctr, address)
            cri = cri_status(rows, cri_plugin_ids(version, rows)) if rows is not None else {}
            if rows is not None and cri and all(v == 'ok' for v in cri.values()):
                first_ok = time.monotonic()
                break
        if state.get('Result') == 'start-limit-hit' and state.get('ActiveState') in ('failed', 'inactive'):
            start_limit_hit = True
            if reset_failed and not reset_done:
                run(['systemctl', 'reset-failed', unit], timeout=30)
                run(['systemctl', 'start', '--no-block', unit], timeout=30)
                reset_done = True
                continue
            break
        # no such unit, or no systemd: nothing the wait could see would change that
        if state.get('LoadState') in ('not-found', 'no-systemd'):
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(interval)

    now = time.monotonic()
    exec_start = _seconds(state, 'ExecMainStartTimestampMonotonic')
    active_enter = _seconds(state, 'ActiveEnterTimestampMonotonic')
    active_exit = _seconds(state, 'ActiveExitTimestampMonotonic')
    startup = came_back = up_for = None
    if first_ok is not None:
        if exec_start and active_enter and active_enter >= exec_start:
            startup = round(active_enter - exec_start, 3)
        # ready: when systemd saw READY=1, or later when we had to wait for the CRI plugins ourselves
        ready = first_ok if polls > 1 else (active_enter or first_ok)
        if active_exit and ready >= active_exit:
            came_back = round(ready - active_exit, 3)
        if exec_start:
            up_for = round(now - exec_start, 3)
    ok = first_ok is not None
    if ok:
        msg = 'containerd active, CRI plugins ok after %.2f s of waiting' % (now - start)
    else:
        msg = _why_not_ready(unit, timeout, state, cri, plugin_error, start_limit_hit, reset_done)
    journal, journal_error = ([], None) if ok else journal_tail(unit, journal_since, skip_pid=journal_skip_pid)
    if journal:
        msg += '; journal of %s: %s' % (unit, ' | '.join(telling_lines(journal)))
    elif journal_error:
        msg += '; %s' % journal_error
    return dict(ok=ok, msg=msg, unit=unit, active_state=state.get('ActiveState'), sub_state=state.get('SubState'),
                result=state.get('Result'), n_restarts=state.get('NRestarts'), start_limit_hit=start_limit_hit,
                reset_failed_done=reset_done, waited_seconds=round(now - start, 3), polls=polls,
                came_back_seconds=came_back, startup_seconds=startup, up_for_seconds=up_for, cri_plugins=cri,
                recorded=None, journal=journal, journal_error=journal_error)
