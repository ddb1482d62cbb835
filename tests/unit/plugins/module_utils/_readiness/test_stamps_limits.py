# -*- coding: utf-8 -*-
"""The edges of probe_reuse_seconds: a stamp exactly as old as allowed, one written this very second, a limit
below one second, and what a file of the fingerprint looks like when it cannot be stat'ed."""

import json
import os
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import stamps

FP = dict((key, key * 3) for key, _what in stamps.PARTS)


def passed(name):
    return {name: dict(kind='start', ok=True, rc=0, seconds=0.4)}


def write_stamp(state_dir, name, age):
    """A stamps file holding one passing probe of handler name, age seconds old, with fingerprint FP."""
    path = stamps.stamps_path(state_dir)
    os.makedirs(os.path.dirname(path))
    stamp = dict(time=time.time() - age, fingerprint=dict(FP), kind='start', rc=0, seconds=0.4)
    with open(path, 'w') as fh:
        json.dump(dict(format=stamps.STAMP_FORMAT, handlers={name: stamp}), fh)


def recorder(state_dir, max_age, daemon_answers=True):
    found = stamps.ProbeStamps(state_dir, max_age)
    found.daemon_answers = daemon_answers
    found.fingerprints = dict(runc=dict(FP))
    return found


def test_a_stamp_exactly_as_old_as_allowed_stands_in():
    now = 10000.0
    assert stamps.reuse_verdict(dict(time=now - 60, fingerprint=dict(FP)), FP, now, 60) == (60.0, None)


def test_a_stamp_of_this_very_instant_stands_in():
    now = 10000.0
    assert stamps.reuse_verdict(dict(time=now, fingerprint=dict(FP)), FP, now, 60) == (0.0, None)


def test_a_limit_below_one_second_still_reuses():
    now = 10000.0
    assert stamps.reuse_verdict(dict(time=now - 0.25, fingerprint=dict(FP)), FP, now, 0.5) == (0.25, None)


def test_a_limit_below_one_second_reads_the_stamps_and_reuses_a_young_one(tmp_path):
    state = str(tmp_path / 'state')
    write_stamp(state, 'runc', 0.0)
    found = recorder(state, 0.9)
    res = found.reused(dict(name='runc'), {})
    assert res is not None and res['reused'] is True and found.why_not['runc'] is None, found.why_not


def test_a_limit_below_one_second_still_waits_for_the_cri_plugin(tmp_path):
    state = str(tmp_path / 'state')
    write_stamp(state, 'runc', 0.0)
    found = recorder(state, 0.9, daemon_answers=False)
    assert found.reused(dict(name='runc'), {}) is None
    assert found.why_not['runc'] == 'the CRI plugin check did not pass'


def test_a_limit_below_one_second_records_a_pass_and_says_why_the_probe_ran(tmp_path):
    state = str(tmp_path / 'state')
    found = recorder(state, 0.5)
    assert found.active
    found.why_not['runc'] = 'no stamp of an earlier passing probe'
    results = passed('runc')
    found.note(results)
    assert results['runc']['not_reused'] == 'no stamp of an earlier passing probe'
    assert found.save(False, None) == stamps.stamps_path(state)
    assert sorted(stamps.load_stamps(state)) == ['runc']


def test_the_age_of_a_reused_probe_is_given_to_a_tenth_of_a_second(tmp_path):
    state = str(tmp_path / 'state')
    write_stamp(state, 'runc', 5.03)
    res = recorder(state, 60).reused(dict(name='runc'), {})
    assert res['age_seconds'] == round(res['age_seconds'], 1) and 5.0 <= res['age_seconds'] <= 5.1, res


def test_a_file_behind_a_non_folder_is_unreadable_with_its_errno(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    path = str(blocker / 'runc')
    assert stamps.file_state(path) == [path, 'unreadable (errno 20)']  # ENOTDIR
    assert stamps.file_state(str(tmp_path / 'none')) == [str(tmp_path / 'none'), 'missing']
