# -*- coding: utf-8 -*-
"""_readiness_drift called directly: which ledger records and operator paths account
for a drifted key, and what the readiness report says about the rest.

tests/module/test_containerd_readiness.py covers the GPU report's cases end to
end; these pin the matching rules (a recorded path accounts only for itself
and what is under it), the record kinds that account for nothing, and the
report's text for each kind of entry.
"""

import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import drift as _readiness_drift
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.drift import (
    OPERATOR,
    _flatten,
    evaluate_drift,
    parse_key_path,
)

CONFIG = '/etc/containerd/config.toml'
CRI = ['plugins', 'io.containerd.grpc.v1.cri']
RUNC = CRI + ['containerd', 'runtimes', 'runc']
RUNC_PATH = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'


def write_ledger(state_dir, records, config=CONFIG):
    path = ledger_path_for(str(state_dir), config)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as fh:
        json.dump({'format': 1, 'config': config, 'records': records}, fh)


def runc_changed(before_opts, after_opts):
    return {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'changed',
            'before': {'runtime_type': 'io.containerd.runc.v2', 'options': before_opts},
            'after': {'runtime_type': 'io.containerd.runc.v2', 'options': after_opts}}


def drift(state_dir, items, accounted=()):
    return evaluate_drift({'protected_drift': items}, str(state_dir), [CONFIG], list(accounted), 'default')


def record(owner, path, kind='setting', seq=1):
    return {'owner': owner, 'kind': kind, 'path': path, 'prior': None, 'value': '"x"', 'seq': seq}


# ------------------------------------------------------------------ what accounts for a key
def test_a_record_of_a_neighbour_key_accounts_for_nothing(tmp_path):
    # Root drifted; the ledger records BinaryName and SystemdCgroup of the same table (sorting on both sides)
    write_ledger(tmp_path, [record('gpu', RUNC + ['options', 'BinaryName']),
                            record('gpu', RUNC + ['options', 'SystemdCgroup'], seq=2)])
    res = drift(tmp_path, [runc_changed({}, {'Root': '/x'})])
    assert res['status'] == 'fail' and res['unaccounted'][0]['keys'] == [RUNC_PATH + '.options.Root']


def test_a_record_of_a_table_accounts_for_the_keys_under_it(tmp_path):
    write_ledger(tmp_path, [record('gpu', RUNC + ['options'], kind='table')])
    res = drift(tmp_path, [runc_changed({}, {'BinaryName': '/x', 'Root': '/r'})])
    assert res['status'] == 'pass'
    assert res['accounted'] == [dict(path=RUNC_PATH, change='changed', by='gpu')]


def test_a_setting_record_accounts_and_a_released_one_does_not(tmp_path):
    # the owner's undone change first (released), then its live record of the key
    write_ledger(tmp_path, [record('gpu', RUNC + ['options', 'BinaryName'], kind='released'),
                            record('gpu', RUNC + ['options', 'BinaryName'], kind='setting', seq=2)])
    res = drift(tmp_path, [runc_changed({}, {'BinaryName': '/x'})])
    assert res['accounted'] == [dict(path=RUNC_PATH, change='changed', by='gpu')], res
    write_ledger(tmp_path, [record('gpu', RUNC + ['options', 'BinaryName'], kind='released')])
    assert drift(tmp_path, [runc_changed({}, {'BinaryName': '/x'})])['status'] == 'fail'


def test_operator_paths_account_only_for_themselves_and_below(tmp_path):
    items = [runc_changed({}, {'BinaryName': '/x'})]
    for near in (RUNC_PATH + '.options.Root', RUNC_PATH + '.options.ShimCgroup', RUNC_PATH + '.options.A'):
        res = drift(tmp_path, items, accounted=[near])
        assert res['status'] == 'fail', near
    res = drift(tmp_path, items, accounted=[RUNC_PATH + '.options'])
    assert res['status'] == 'pass' and res['accounted'][0]['by'] == OPERATOR
    res = drift(tmp_path, items, accounted=[RUNC + ['options', 'BinaryName']])  # a list works as well
    assert res['status'] == 'pass'


# ------------------------------------------------------------------ the report
def test_the_reason_names_inner_keys_only_when_they_are_not_the_entry_itself(tmp_path):
    removed = {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'removed', 'before': {'a': 1},
               'after': None}
    res = drift(tmp_path, [removed])
    assert res['reason'] == "protected keys drifted from baseline 'default': %s removed" % RUNC_PATH
    res = drift(tmp_path, [runc_changed({'Root': '/a'}, {'Root': '/b'})])
    assert res['reason'] == ("protected keys drifted from baseline 'default': %s changed (%s.options.Root)"
                             % (RUNC_PATH, RUNC_PATH))


def test_an_entry_without_a_path_is_reported_whole_and_the_next_still_judged(tmp_path):
    odd = {'zeta': 1, 'alpha': 2}
    res = drift(tmp_path, [odd, {'key': 'k', 'path': RUNC_PATH, 'change': 'removed', 'before': 1, 'after': None}])
    assert res['unaccounted'][0] == dict(path='{"alpha": 2, "zeta": 1}', change='changed', by=None)
    assert res['unaccounted'][1]['path'] == RUNC_PATH and res['unaccounted'][1]['change'] == 'removed'
    assert res['reason'] == ("protected keys drifted from baseline 'default': {\"alpha\": 2, \"zeta\": 1} changed; "
                             "%s removed" % RUNC_PATH)


def test_a_change_is_named_by_its_kind_when_it_has_no_change_field(tmp_path):
    res = drift(tmp_path, [{'path': RUNC_PATH, 'kind': 'added', 'before': None, 'after': 1}])
    assert res['unaccounted'][0]['change'] == 'added'


def test_the_grouped_form_is_flattened_with_each_kind():
    items = {'changed': [{'path': 'a.b', 'before': 1, 'after': 2}], 'removed': ['c.d', {'path': 'e', 'kind': 'x'}]}
    assert _flatten(items) == [dict(path='a.b', before=1, after=2, kind='changed'), dict(path='c.d', kind='removed'),
                               dict(path='e', kind='x')]
    assert _flatten([{'path': 'a'}]) == [{'path': 'a'}]


def test_key_paths_from_lists_strings_and_nonsense():
    assert parse_key_path(['a', 1]) == ['a', '1']
    assert parse_key_path(' plugins."io.containerd.grpc.v1.cri".x ') == CRI + ['x']
    for bad in (None, 5, '', '   ', 'a..b', 'a."b'):
        assert parse_key_path(bad) is None, bad


# ------------------------------------------------------------------ the check itself
def test_a_failed_check_fails_the_result_and_a_passed_one_does_not(monkeypatch):
    seen = []

    def fake_run_state(module, state, store, name, path, load_test=None, ctx=None):
        seen.append((state, path, load_test, ctx))
        return dict(protected_drift=[]), name == 'bad'

    monkeypatch.setattr(_readiness_drift, 'run_state', fake_run_state)
    caller = object()
    assert _readiness_drift.baseline_check(None, 'config.toml', None, 'bad', ctx=caller)['failed'] is True
    assert 'failed' not in _readiness_drift.baseline_check(None, 'config.toml', None, 'good')
    # the readiness run's Context is passed on: containerd's --version is not asked twice
    assert seen[0] == ('check', os.path.abspath('config.toml'), False, caller)
    assert seen[1][3] is None
