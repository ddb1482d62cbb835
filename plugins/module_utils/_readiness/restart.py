# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The restart contract: restart containerd at most once per change of its effective config, never into a
config it cannot load (containerd_readiness step=pending and step=restart).

decide (``pending``) -> load-test in isolation (``_preflight.load_test``, what
containerd_preflight runs) -> ``systemctl restart`` -> wait for the CRI
plugins, clearing start-limit-hit once -> record the fingerprint of the
config containerd now runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import re
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import atomic_write
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    STATUS_CANNOT_RUN,
    STATUS_OK,
    load_test,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import (
    DEFAULT_ADDRESS,
    run,
    unit_state,
    wait_ready,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.tree import Tree, config_dump, parse_dump
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in

FINGERPRINT_FILE = 'containerd-started.sha256'
IMPORTS_LINE_RE = re.compile(r'(?m)^imports = \[.*\]\n?')


def dump_fingerprint(dump):
    """The effective config's fingerprint as the restart contract records it.

    sha256 of ``config dump`` without trailing newlines and without the
    top-level imports line, whose entries containerd 1.6/1.7 print in a random
    order (measured: three orders in six runs on 1.6.20); the imported tables
    are in the dump anyway, merged.
    """
    text = IMPORTS_LINE_RE.sub('', dump.rstrip('\r\n'))
    return hashlib.sha256(text.encode('utf-8')).hexdigest()


def dump_address(out):
    """The socket the config dump names (grpc.address), or None."""
    dump, _why = parse_dump(out)
    return get_in(dump or {}, ('grpc', 'address'))


def fingerprint_path(state_dir):
    return os.path.join(state_dir, FINGERPRINT_FILE)


def record_fingerprint(state_dir, fingerprint):
    """Write the record, always anew: its time is when containerd was last seen running this config."""
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir, 0o700)
    path = fingerprint_path(state_dir)
    atomic_write(path, (fingerprint + '\n').encode('ascii'), mode=0o600)
    return path


def _newest(files):
    newest, newest_path = 0.0, ''
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        # ctime too: a copy that keeps the old mtime (cp -p) still changes it
        changed = max(st.st_mtime, st.st_ctime)
        if changed > newest:
            newest, newest_path = changed, path
    return newest, newest_path


def pending(ctx, path, state_dir, unit, extra_files=()):
    """Does containerd run the current config?

    No when it is not running. Yes when it started after the last change of
    the config, every file it imports (and the folders of glob imports) and
    the extra files, and every import could be read (whoever restarted it:
    another role's handler in the same play, systemd, an operator). Else yes
    only when the effective config has the fingerprint nodeguard recorded at
    its last restart AND containerd has not started again since that record
    (a run killed between its restart and the record, a manual restart).
    Otherwise a restart is pending. dump_ok says whether the config loads at
    all: when it does not, a restart is pending and the caller refuses it.
    """
    rc, out, err = config_dump(ctx, path)
    result = dict(pending=False, dump_ok=rc == 0, fingerprint=None, reason='')
    if rc != 0:
        # pending, and refused by the caller: the file is not what containerd runs, and it cannot be
        result.update(pending=True, reason='containerd --config %s config dump failed: %s'
                      % (path, (err or out).strip()[-400:]))
        return result
    result['fingerprint'] = dump_fingerprint(out)
    result['address'] = dump_address(out)
    active, started = unit_state(unit)
    result.update(active_state=active, started=started)
    if active != 'active':
        result.update(pending=True, reason='%s is not running (ActiveState=%s)' % (unit, active))
        return result
    tree = Tree(path, ctx.containerd_version)
    walk_errors = list(tree.errors) + ([tree.parse_error] if tree.parse_error and os.path.exists(path) else [])
    newest, newest_path = _newest(tree.watched_files() + list(extra_files or []))
    result.update(newest=newest, newest_path=newest_path, walk_errors=walk_errors)
    # File times decide only when every import could be read (an unreadable
    # drop-in may have changed unseen); the fingerprint decides otherwise.
    if started > 0 and started > newest and not walk_errors:
        result['reason'] = 'containerd started after the last change of its config files'
        return result
    fp_path = fingerprint_path(state_dir)
    try:
        with open(fp_path) as fh:
            recorded = fh.read().strip()
        recorded_at = os.stat(fp_path).st_mtime
    except (IOError, OSError):
        recorded, recorded_at = None, 0.0
    result.update(recorded=recorded, recorded_at=recorded_at)
    if recorded is not None and recorded_at >= started and recorded == result['fingerprint']:
        result['reason'] = 'the effective config is the one nodeguard last restarted containerd with'
        return result
    result.update(pending=True, reason='%s changed after containerd started, and the effective config is not the one '
                  'nodeguard last restarted containerd with' % (newest_path or path))
    return result


def restart(ctx, opts, check_mode):
    """The whole contract in one call; returns (restart fact, decision, preflight report or None).

    opts: path, state_dir, unit, restart_files, force, preflight, preflight_timeout, timeout, ctr, address.
    The restart fact is what the role publishes as ``nodeguard_restart``.
    """
    decision = pending(ctx, opts['path'], opts['state_dir'], opts['unit'], opts['restart_files'])
    began = time.monotonic()
    needed = bool(opts['force'] or decision['pending'])
    fact = dict(restarted=False, needed=needed, refused=False, reason=decision['reason'], cri_ok=False, wait={},
                seconds=0)
    preflight = None
    if needed and not decision['dump_ok']:
        fact['refused'] = True
    elif needed and opts['preflight']:
        # config dump accepts configs whose CRI plugin then fails in the daemon: start the node's
        # containerd on the file in isolation first; the running containerd is not touched
        res = load_test(ctx.containerd_bin, opts['path'], run_command=ctx.run_command,
                        timeout=opts['preflight_timeout'])
        preflight = dict(status=res.status, msg=res.message(), errors=res.errors, seconds=res.seconds,
                         required=res.required)
        if res.status == STATUS_CANNOT_RUN:
            ctx.warn('the load test of %s could not run (%s); containerd is restarted on config dump\'s word alone.'
                     % (opts['path'], res.message()))
        elif res.status != STATUS_OK:
            fact.update(refused=True, reason=res.message())
    if not needed or fact['refused'] or check_mode:
        return fact, decision, preflight
    # blocking, as systemd_service state=restarted; a refused start (start-limit-hit) is handled by the wait
    # a failed wait quotes the unit's journal since this restart (not the stopped containerd's farewell):
    # the cause in its own words
    _rc, stopped_pid, _err = run(['systemctl', 'show', opts['unit'], '--property=MainPID', '--value'], timeout=15)
    stopped_pid = stopped_pid.strip()
    restarted_at = time.time()
    rc, out, err = run(['systemctl', 'restart', opts['unit']], timeout=max(opts['timeout'], 30) + 60)
    wait = wait_ready(opts['unit'], opts['ctr'], opts['address'] or decision.get('address') or DEFAULT_ADDRESS,
                      ctx.containerd_version, opts['timeout'], reset_failed=True, journal_since=restarted_at - 1,
                      journal_skip_pid=stopped_pid if stopped_pid.isdigit() and stopped_pid != '0' else None)
    wait['restart_rc'] = rc
    if rc != 0:
        wait['restart_error'] = (err or out).strip()[-400:]
    if wait['ok'] and decision['fingerprint']:
        # only now: a record always describes a containerd that ran that config
        wait['recorded'] = record_fingerprint(opts['state_dir'], decision['fingerprint'])
    fact.update(restarted=True, cri_ok=wait['ok'], wait=wait, seconds=round(time.monotonic() - began, 2))
    if not wait['ok']:
        # as for a refusal: the reason says what went wrong (the fleet report shows it), the journal why
        fact.update(reason='%s; containerd did not come back: %s' % (decision['reason'], wait['msg']),
                    journal=wait['journal'])
    return fact, decision, preflight
