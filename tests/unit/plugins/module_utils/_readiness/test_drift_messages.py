# -*- coding: utf-8 -*-
"""_readiness_drift.evaluate_drift: the check's verdict when containerd_baseline
gave no drift list (no baseline is a skip, anything else a failure) and the
pass reason's count of changes the owners or the operator account for."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.drift import evaluate_drift

RUNC = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'


def judge(tmp_path, result, accounted=()):
    return evaluate_drift(result, str(tmp_path), ['/etc/containerd/config.toml'], list(accounted), 'pre-gpu')


def test_no_baseline_is_a_skip_other_failures_fail(tmp_path):
    assert judge(tmp_path, {'msg': 'there is no baseline pre-gpu in /var/lib/nodeguard'}) == dict(
        status='skip', reason='there is no baseline pre-gpu in /var/lib/nodeguard', unaccounted=[], accounted=[])
    assert judge(tmp_path, {'msg': 'could not lock the store within 30 seconds'})['status'] == 'fail'
    assert judge(tmp_path, {'failed': True}) == dict(
        status='fail', reason='containerd_baseline check returned no protected_drift', unaccounted=[], accounted=[])


def test_the_pass_reason_counts_accounted_changes(tmp_path):
    assert judge(tmp_path, {'protected_drift': []})['reason'] == \
        "no unaccounted drift of protected keys against baseline 'pre-gpu'"
    res = judge(tmp_path, {'protected_drift': [{'path': RUNC, 'change': 'removed'}]}, accounted=[RUNC])
    assert res['status'] == 'pass'
    assert res['reason'] == ("no unaccounted drift of protected keys against baseline 'pre-gpu' "
                             "(1 change(s) recorded by owners in the ledger)")
