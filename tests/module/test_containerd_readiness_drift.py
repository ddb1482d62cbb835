# -*- coding: utf-8 -*-
"""containerd_readiness step=check computes the baseline_drift check itself (one module call).

The node_readiness role used to call containerd_baseline state=check and
hand its registered result to containerd_readiness (drift_result). The module
now runs that comparison in its own run, with containerd_baseline's code. For
each case below, against a real containerd, the report of the one call must
be the report of the two calls (both are run and compared), and the drift
check must say what the case is: no baseline (skip), a baseline with no drift
(pass), drift an owner's ledger records (pass, accounted by that owner),
drift nobody accounts for (fail, naming the key), a damaged baseline (fail,
naming the damage).
"""

import json
import os

import pytest

from helpers.common import CONTAINERD_2
from helpers.readiness import check

# the real containerd on a private socket (a fixture), and one readiness call on it

BASELINE = 'ready-test'
# when each check ran and how long it waited: not part of what must be equal
TIMING = ('came_back_seconds', 'startup_seconds', 'waited_seconds')


def _comparable(report):
    out = dict(report)
    out.pop('by_name', None)
    out['containerd'] = dict((k, v) for k, v in report['containerd'].items() if k not in TIMING)
    return out


def two_calls(run_module, n, store, baseline_fails):
    """The former role: containerd_baseline state=check (failed_when: false), its result into the readiness check."""
    res = run_module('containerd_baseline', expect_fail=baseline_fails, state='check', name=BASELINE, store=store,
                     path=n['config'], containerd_bin=n['binary'], env=n['env'])
    return check(run_module, n, check_drift=True, fail=False, drift_result=res, baseline_name=BASELINE)[1]


def one_call(run_module, n, store):
    return check(run_module, n, check_drift=True, fail=False, baseline_name=BASELINE, baseline_store=store)[1]


def same_report(run_module, n, store, baseline_fails=True):
    """The drift check's entry and report of the one call, after proving them equal to the two calls'."""
    before = two_calls(run_module, n, store, baseline_fails)
    after = one_call(run_module, n, store)
    assert _comparable(after) == _comparable(before), json.dumps(dict(one=after['drift'], two=before['drift']),
                                                                 indent=1)
    return after['by_name']['baseline_drift'], after


@pytest.fixture
def store(workdir):
    return os.path.join(workdir, 'baselines')


def snapshot(run_module, n, store):
    return run_module('containerd_baseline', state='snapshot', name=BASELINE, store=store, path=n['config'],
                      containerd_bin=n['binary'], env=n['env'])


def test_no_baseline_skips(run_module, readiness_node, store):
    n = readiness_node()
    entry, report = same_report(run_module, n, store)
    assert entry['status'] == 'skip' and not entry['required'], entry
    assert 'there is no baseline %r' % BASELINE in entry['reason']
    assert report['ok']


@pytest.mark.parametrize('binary,version', [
    pytest.param(None, 2, id='containerd-1.6'),
    pytest.param(CONTAINERD_2, 3, id='containerd-2.1'),
])
def test_baseline_without_drift_passes(run_module, readiness_node, store, binary, version):
    n = readiness_node(binary, version=version) if binary else readiness_node()
    snapshot(run_module, n, store)
    entry, report = same_report(run_module, n, store, baseline_fails=False)
    assert entry == dict(name='baseline_drift', status='pass', required=True,
                         reason='no unaccounted drift of protected keys against baseline %r' % BASELINE)
    assert report['drift'] == dict(status='pass', reason=entry['reason'], unaccounted=[], accounted=[])


def test_drift_an_owner_recorded_is_accounted(run_module, readiness_node, store):
    n = readiness_node()
    snapshot(run_module, n, store)
    # an install role's change of a protected key (the default runtime), recorded in the ledger
    run_module('containerd_runtime', name='nvidia', state='present', default=True, owner='gpu_toolkit',
               options={'BinaryName': '/usr/bin/true'}, path=n['config'], containerd_bin=n['binary'], env=n['env'])
    entry, report = same_report(run_module, n, store)
    assert entry['status'] == 'pass' and '1 change(s) recorded by owners in the ledger' in entry['reason'], entry
    assert report['drift']['accounted'] == [dict(
        path='plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name', change='added', by='gpu_toolkit')]


def test_unaccounted_drift_fails_naming_the_key(run_module, readiness_node, store):
    n = readiness_node()
    snapshot(run_module, n, store)
    with open(n['config'], 'a') as f:   # by hand: no ledger record
        f.write('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
    entry, report = same_report(run_module, n, store)
    assert entry['status'] == 'fail' and entry['required'], entry
    assert entry['reason'].startswith("protected keys drifted from baseline %r: " % BASELINE), entry
    assert entry['reason'].endswith(
        'containerd.runtimes.runc changed (plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options)'), entry
    assert report['failed'] == ['baseline_drift'] and not report['ok']


def test_damaged_baseline_fails(run_module, readiness_node, store):
    n = readiness_node()
    taken = snapshot(run_module, n, store)
    with open(os.path.join(taken['snapshot'], 'manifest.json'), 'w') as f:
        f.write('{"format": ')
    entry, report = same_report(run_module, n, store)
    assert entry['status'] == 'fail' and entry['required'], entry
    assert 'the manifest of baseline' in entry['reason'] and 'is damaged' in entry['reason'], entry
    assert not report['ok']


def test_a_given_result_wins(run_module, readiness_node, store):
    """drift_result still decides when given: the module does not compare on its own then."""
    n = readiness_node()
    snapshot(run_module, n, store)
    with open(n['config'], 'a') as f:
        f.write('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
    entry = check(run_module, n, check_drift=True, fail=False, baseline_name=BASELINE, baseline_store=store,
                  drift_result={'changed': False, 'protected_drift': []})[1]['by_name']['baseline_drift']
    assert entry['status'] == 'pass', entry


def test_the_drift_check_starts_no_second_containerd(run_module, readiness_node, store, workdir):
    """The running containerd is the readiness check's load test: the drift check asks only for a config dump.

    Every call of the containerd binary the module makes is logged by a
    wrapper (with ctr beside it, as on a node, so a load test could run): a
    ``--version`` or a ``config dump``, never a daemon started on the file.
    """
    n = readiness_node()
    snapshot(run_module, n, store)
    bin_dir = os.path.join(workdir, 'logged-bin')
    os.makedirs(bin_dir)
    calls = os.path.join(workdir, 'containerd-calls')
    wrapper = os.path.join(bin_dir, 'containerd')
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\nprintf "%%s\\n" "$*" >> %s\nexec %s "$@"\n' % (calls, n['binary']))
    os.chmod(wrapper, 0o755)
    os.symlink(os.path.join(os.path.dirname(n['binary']), 'ctr'), os.path.join(bin_dir, 'ctr'))
    report = check(run_module, dict(n, binary=wrapper), check_drift=True, fail=False, baseline_name=BASELINE,
                   baseline_store=store)[1]
    assert report['by_name']['baseline_drift']['status'] == 'pass', report['by_name']['baseline_drift']
    with open(calls) as f:
        logged = f.read().splitlines()
    assert any(line.endswith('config dump') for line in logged), logged
    started = [line for line in logged if not (line.endswith('config dump') or line in ('--version', '-v'))]
    assert started == [], started
    # the drift check runs in the readiness run's Context: containerd's version and the dump of the config
    # are asked once per module run
    assert logged.count('--version') == 1, logged
    assert len([line for line in logged if line.endswith('config dump')]) == 1, logged
