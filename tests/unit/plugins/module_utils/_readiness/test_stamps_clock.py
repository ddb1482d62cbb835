# -*- coding: utf-8 -*-
"""How old a stamp is: by the monotonic clock when the stamp has its reading (the boot is part of the
fingerprint), so a wall clock set back does not make a stamp younger; by the wall clock for a stamp without one;
and a stamp whose times are no numbers, NaN or infinite only means that the probe runs again."""

import json
import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import stamps

FP = dict((key, key * 3) for key, _what in stamps.PARTS)
NOW, MONO = 1.7e9, 5000.0
CANNOT_BE_READ = 'the stamp cannot be read'


def stamp(**times):
    return dict(fingerprint=dict(FP), **times)


@pytest.mark.parametrize('value', [float('nan'), float('inf'), float('-inf'), 'x', '1700000000', None, True, [1],
                                   10 ** 400, 1e300],
                         ids=['nan', 'inf', '-inf', 'text', 'digits', 'null', 'bool', 'list', 'huge-int', 'year-1e292'])
def test_a_stamp_whose_time_is_no_finite_number_cannot_be_read(value):
    assert stamps.reuse_verdict(stamp(time=value), FP, NOW, 60) == (None, CANNOT_BE_READ)
    assert stamps.reuse_verdict(stamp(time=value, mono=MONO - 10), FP, NOW, 60, MONO) == (None, CANNOT_BE_READ)


@pytest.mark.parametrize('value', [float('nan'), float('inf'), float('-inf'), 'x', None, False, 10 ** 400],
                         ids=['nan', 'inf', '-inf', 'text', 'null', 'bool', 'huge-int'])
def test_a_stamp_whose_monotonic_time_is_no_finite_number_cannot_be_read(value):
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=value), FP, NOW, 60, MONO) == (None, CANNOT_BE_READ)


def test_a_monotonic_time_so_far_back_that_the_age_overflows_cannot_be_read():
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=-1.7e308), FP, NOW, 60, 1.7e308) == (None, CANNOT_BE_READ)


def test_a_wall_clock_set_back_does_not_stretch_the_reuse_window():
    # passed 50 s ago by the monotonic clock; the wall clock was set back 40 s since, it says 10 s
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=MONO - 50), FP, NOW, 30, MONO) == (
        None, 'the probe passed 50 s ago, more than probe_reuse_seconds=30')
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=MONO - 50), FP, NOW, 60, MONO) == (50.0, None)
    # set back more than the stamp's age: the stamp is in the wall clock's future, the monotonic clock knows better
    assert stamps.reuse_verdict(stamp(time=NOW + 100, mono=MONO - 20), FP, NOW, 60, MONO) == (20.0, None)


def test_the_wall_clock_still_counts_when_it_says_older():
    """CLOCK_MONOTONIC stands still while the node is suspended: the older age of the two is taken."""
    assert stamps.reuse_verdict(stamp(time=NOW - 500, mono=MONO - 20), FP, NOW, 60, MONO) == (
        None, 'the probe passed 500 s ago, more than probe_reuse_seconds=60')


def test_a_monotonic_time_ahead_of_the_clock_is_from_the_future():
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=MONO + 1), FP, NOW, 60, MONO) == (
        None, 'the stamp is from the future (its monotonic time is ahead of the clock)')


def test_a_stamp_without_a_monotonic_time_is_judged_by_the_wall_clock():
    assert stamps.reuse_verdict(stamp(time=NOW - 10), FP, NOW, 60, MONO) == (10.0, None)
    assert stamps.reuse_verdict(stamp(time=NOW - 100), FP, NOW, 60, MONO)[1] == (
        'the probe passed 100 s ago, more than probe_reuse_seconds=60')
    assert stamps.reuse_verdict(stamp(time=NOW + 5), FP, NOW, 60, MONO)[1] == (
        'the stamp is from the future (the clock was set back)')


def test_a_changed_fingerprint_is_named_before_the_times():
    changed = dict(FP, probe='other')
    assert stamps.reuse_verdict(stamp(time=NOW - 10, mono=MONO + 1), changed, NOW, 60, MONO) == (
        None, 'changed since the probe passed: the probe command line')


# ------------------------------------------------------------------ through the stamps file
def write_stamp(state_dir, **times):
    path = stamps.stamps_path(state_dir)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    entry = dict(stamp(**times), kind='start', rc=0, seconds=0.4)
    with open(path, 'w') as fh:
        json.dump(dict(format=stamps.STAMP_FORMAT, handlers=dict(runc=entry)), fh)  # NaN as JSON's NaN


def reused(state_dir):
    found = stamps.ProbeStamps(state_dir, 60)
    found.daemon_answers = True
    found.fingerprints = dict(runc=dict(FP))
    return found.reused(dict(name='runc'), {}), found.why_not['runc']


@pytest.mark.parametrize('value', [float('nan'), float('inf'), 1e300])
def test_a_stamps_file_with_an_odd_time_probes_again(tmp_path, value):
    write_stamp(str(tmp_path), time=value)
    assert reused(str(tmp_path)) == (None, CANNOT_BE_READ)


def test_a_pass_is_stamped_with_both_clocks(tmp_path):
    found = stamps.ProbeStamps(str(tmp_path), 60)
    found.fingerprints = dict(runc=dict(FP))
    before = time.monotonic()
    found.note({'runc': dict(kind='start', ok=True, rc=0, seconds=0.4)})
    found.save(False, None)
    saved = stamps.load_stamps(str(tmp_path))['runc']
    assert before <= saved['mono'] <= time.monotonic() and abs(saved['time'] - time.time()) < 60


def test_a_stamp_older_by_the_monotonic_clock_is_not_reused(tmp_path):
    write_stamp(str(tmp_path), time=time.time() - 5, mono=time.monotonic() - 100)
    assert reused(str(tmp_path)) == (None, 'the probe passed 100 s ago, more than probe_reuse_seconds=60')


def test_a_stamp_from_before_a_wall_clock_set_back_is_reused_by_its_monotonic_age(tmp_path):
    write_stamp(str(tmp_path), time=time.time() + 3600, mono=time.monotonic() - 5)
    res, why = reused(str(tmp_path))
    assert why is None and res['reused'] is True and 5.0 <= res['age_seconds'] < 60, res


def test_a_stamp_of_an_older_version_is_reused_by_its_wall_clock_age(tmp_path):
    write_stamp(str(tmp_path), time=time.time() - 5)
    res, why = reused(str(tmp_path))
    assert why is None and 5.0 <= res['age_seconds'] < 60, res
    write_stamp(str(tmp_path), time=time.time() + 3600)
    assert reused(str(tmp_path)) == (None, 'the stamp is from the future (the clock was set back)')
