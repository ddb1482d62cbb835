# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The baseline_drift check: protected drift that neither the ledger nor the operator accounts for.

The drift itself is containerd_baseline state=check's result: passed in
(a registered result), or computed in this run by the same code
(``_baseline_states.run_state``), which saves a module call per check.
What owners recorded comes from the ledgers of the config tree, read by
the engine (``_info.ledger_facts`` over ``_ledger.Ledger``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.states import run_state
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import ledger_facts
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    dotted_path,
    parse_dotted_key,
)

OPERATOR = 'node_readiness_drift_accounted'
_NO_BASELINE = re.compile(r'no baseline|not found|does not exist|missing baseline', re.I)


def baseline_check(module, path, store, name, ctx=None):
    """containerd_baseline state=check of baseline store/name against path, as that module would return it.

    The module's own parameters stand in for its options (lock_timeout,
    validate, containerd_bin, containerd_version); protect keeps
    containerd_baseline's default. No load test: the drift is read from the
    file and containerd's ``config dump`` of it, and the readiness checks ask
    the running containerd itself (containerd_active, cri_plugin), so starting
    a second one on the file would cost its start-up and tell the report
    nothing. A failed check is a result too.
    """
    # ctx: the readiness run's own (containerd's --version, run once, is asked again here)
    result, failed = run_state(module, 'check', store, name, os.path.abspath(path), load_test=False, ctx=ctx)
    if failed:
        result['failed'] = True
    return result


def parse_key_path(value):
    """A key path as a list: from a list, or a dotted TOML key string; None when it is neither."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        return [str(p) for p in parse_dotted_key(value.strip())]
    except TomlLayoutError:
        return None


def leaf_diffs(before, after, prefix):
    """Key paths (lists) whose values differ between two tables."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from leaf_diffs(before.get(key), after.get(key), prefix + [str(key)])
    elif before != after:
        yield list(prefix)


def _flatten(items):
    if not isinstance(items, dict):  # the list containerd_baseline returns
        return list(items)
    flat = []  # {"changed": [...], "removed": [...]} style
    for kind, entries in items.items():
        for entry in entries or []:
            flat.append(dict(entry, kind=entry.get('kind', kind)) if isinstance(entry, dict)
                        else dict(path=entry, kind=kind))
    return flat


def ledger_paths(state_dir, files):
    """(key path, owner) of every record in the ledgers of these files; an undone change accounts for nothing."""
    out = []
    ledgers, _problems = ledger_facts(state_dir, files)
    for item in ledgers:
        for owner, records in item['records_by_owner'].items():
            for rec in records:
                if rec.get('kind') == 'released':
                    continue
                path = parse_key_path(rec.get('path'))
                if path:
                    out.append((path, owner))
    return out


def evaluate_drift(result, state_dir, files, accounted_paths, baseline_name):
    """The check's {status, reason, unaccounted, accounted}, or None when no drift result was given."""
    if not result:
        return None
    if isinstance(result, str):
        result = json.loads(result)
    items = result.get('protected_drift')
    if items is None:
        msg = result.get('msg') or 'containerd_baseline check returned no protected_drift'
        return dict(status='skip' if _NO_BASELINE.search(msg) else 'fail', reason=msg, unaccounted=[], accounted=[])
    recorded = ledger_paths(state_dir, files)
    operator = [p for p in (parse_key_path(x) for x in (accounted_paths or [])) if p]
    accounted, unaccounted = [], []
    for item in _flatten(items):
        entry = item if isinstance(item, dict) else dict(path=item)
        path = parse_key_path(entry.get('path') or entry.get('key'))
        change = entry.get('change') or entry.get('kind') or 'changed'
        label = dotted_path(path) if path else json.dumps(entry, sort_keys=True)
        if not path:
            unaccounted.append(dict(path=label, change=change, by=None))
            continue
        # the keys that really differ inside the protected table
        leaves = list(leaf_diffs(entry.get('before'), entry.get('after'), path)) if change == 'changed' else [path]
        owners, uncovered = set(), []
        for leaf in leaves or [path]:
            by = next((owner or 'ledger' for lp, owner in recorded if leaf[:len(lp)] == lp), None)
            if by is None and any(leaf[:len(op)] == op for op in operator):
                by = OPERATOR
            if by is None:
                uncovered.append(dotted_path(leaf))
            else:
                owners.add(by)
        if uncovered:
            unaccounted.append(dict(path=label, change=change, by=None, keys=uncovered))
        else:
            accounted.append(dict(path=label, change=change, by=', '.join(sorted(owners))))
    if unaccounted:
        reason = 'protected keys drifted from baseline %r: %s' % (baseline_name, '; '.join(
            '%s %s%s' % (u['path'], u['change'],
                         (' (' + ', '.join(u['keys']) + ')') if u.get('keys') and u['keys'] != [u['path']] else '')
            for u in unaccounted))
        return dict(status='fail', reason=reason, unaccounted=unaccounted, accounted=accounted)
    reason = 'no unaccounted drift of protected keys against baseline %r' % baseline_name
    if accounted:
        reason += ' (%d change(s) recorded by owners in the ledger)' % len(accounted)
    return dict(status='pass', reason=reason, unaccounted=[], accounted=accounted)
