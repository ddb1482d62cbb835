# -*- coding: utf-8 -*-
"""_readiness_drift.leaf_diffs: which keys really differ inside a changed
protected table, when a table was replaced by a value (or a value by a table)."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.drift import evaluate_drift, leaf_diffs

RUNC = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes', 'runc']


def test_inner_keys_that_differ_are_the_leaves():
    before = {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True, 'Root': '/r'}}
    after = {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': False, 'Root': '/r'}, 'x': 1}
    assert list(leaf_diffs(before, after, RUNC)) == [RUNC + ['options', 'SystemdCgroup'], RUNC + ['x']]


def test_a_table_replaced_by_a_value_differs_as_a_whole():
    assert list(leaf_diffs({'SystemdCgroup': True}, 'systemd', RUNC + ['options'])) == [RUNC + ['options']]
    assert list(leaf_diffs('systemd', {'SystemdCgroup': True}, RUNC + ['options'])) == [RUNC + ['options']]
    assert list(leaf_diffs({'a': 1}, {'a': 1}, RUNC)) == []


def test_such_a_change_is_reported_by_its_path(tmp_path):
    item = {'path': 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc', 'change': 'changed',
            'before': {'runtime_type': 'io.containerd.runc.v2'}, 'after': 'broken'}
    res = evaluate_drift({'protected_drift': [item]}, str(tmp_path), ['/etc/containerd/config.toml'], [], 'default')
    assert res['status'] == 'fail'
    assert res['unaccounted'] == [dict(path=item['path'], change='changed', by=None, keys=[item['path']])]
