# -*- coding: utf-8 -*-
"""The ledger: records, stacked priors, crash recovery."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import (
    Ledger,
    LedgerError,
    ledger_path_for,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes

P = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'default_runtime_name']


def test_path_is_per_config(tmp_path):
    a = ledger_path_for(str(tmp_path), '/etc/containerd/config.toml')
    b = ledger_path_for(str(tmp_path), '/etc/containerd/other.toml')
    assert a != b and a.startswith(str(tmp_path)) and a.endswith('.json')


def test_round_trip_and_mode(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    assert led.dirty is False and led.records == []     # a fresh ledger has nothing to write
    led.record_table('gpu', 'runtime:nvidia', ['a', 'b'])
    led.record_key('gpu', 'runtime:nvidia', P, '"runc"', '"nvidia"')
    led.save('sha-new')
    again = Ledger.load(str(tmp_path), '/etc/c.toml')
    assert [r['kind'] for r in again.records] == ['table', 'key']
    assert oct(os.stat(again.path).st_mode & 0o777) == '0o600'


def test_first_prior_is_kept_when_owner_changes_value_again(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('gpu', 'r', P, '"runc"', '"nvidia"')
    led.record_key('gpu', 'r', P, '"nvidia"', '"nvidia-cdi"')
    (rec,) = led.select(owner='gpu')
    assert rec['prior'] == '"runc"' and rec['value'] == '"nvidia-cdi"'


def test_stacked_priors_hand_over(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    a = led.record_key('a', 'r', P, '"runc"', '"x"')
    b = led.record_key('b', 'r', P, '"x"', '"y"')
    assert led.release_key(a) == ('handover', None)
    assert b['prior'] == '"runc"'
    assert led.release_key(b) == ('restore', '"runc"')
    assert led.records == []


def test_recover_rolls_back_when_config_write_never_happened(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('a', 'r', P, None, '"x"')
    led.save('sha-1')          # config written: file now has sha-1
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('b', 'r', P, '"x"', '"y"')
    led.save('sha-2')          # ... but the process died before the rename
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    assert led.recover('sha-1') is not None
    assert [r['owner'] for r in led.records] == ['a']


def test_recover_keeps_records_after_a_foreign_rewrite(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('a', 'r', P, None, '"x"')
    led.save('sha-1')
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    assert led.recover('sha-foreign') is None
    assert len(led.records) == 1


def test_damaged_ledger_is_reported(tmp_path):
    path = ledger_path_for(str(tmp_path), '/etc/c.toml')
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
        f.write('{not json')
    with pytest.raises(LedgerError, match='damaged'):
        Ledger.load(str(tmp_path), '/etc/c.toml')
    with open(path, 'w') as f:
        json.dump({'format': 99}, f)
    # the message names the format found, and the file
    with pytest.raises(LedgerError, match=r'damaged \(format 99\)'):
        Ledger.load(str(tmp_path), '/etc/c.toml')
    for wrong in (0, '1'):
        with open(path, 'w') as f:
            json.dump({'format': wrong, 'records': []}, f)
        with pytest.raises(LedgerError, match=r'damaged \(format %r\)' % wrong):
            Ledger.load(str(tmp_path), '/etc/c.toml')


def test_drop_under_forgets_records_inside_a_deleted_table(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_table('a', 'r', ['t'])
    led.record_key('b', 'r2', ['t', 'k'], None, '1')
    led.record_key('b', 'r3', ['u', 'k'], None, '1')
    led.save('sha-1')
    led.drop_under(['v'])                   # nothing inside: nothing to write
    assert led.dirty is False
    led.drop_under(['t'])
    assert [r['path'] for r in led.records] == [['t'], ['u', 'k']]
    assert led.dirty is True


def _mixed_ledger(tmp_path):
    """Records whose owners, resources, kinds and paths sort on both sides of the one asked for,
    and sit in the list both before and after the matching records."""
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    for owner, resource, path in (('z', 'r-z', ['z']), ('m', 'r-m', ['m']), ('a', 'r-a', ['a']),
                                  ('m', 'r-m2', ['m', 'k']), ('b', 'r-b', ['b'])):
        led.record_table(owner, resource, path)
        led.record_key(owner, resource, path + ['key'], None, '"v-%s"' % owner)
    return led


@pytest.mark.parametrize('query, expected', [
    ({'owner': 'm'}, [('m', 'r-m', 'table'), ('m', 'r-m', 'key'), ('m', 'r-m2', 'table'), ('m', 'r-m2', 'key')]),
    ({'resource': 'r-m'}, [('m', 'r-m', 'table'), ('m', 'r-m', 'key')]),
    ({'kind': 'key', 'owner': 'b'}, [('b', 'r-b', 'key')]),
    ({'kind': 'table'}, [('z', 'r-z', 'table'), ('m', 'r-m', 'table'), ('a', 'r-a', 'table'),
                         ('m', 'r-m2', 'table'), ('b', 'r-b', 'table')]),
    ({'path': ('m', 'key')}, [('m', 'r-m', 'key')]),
    ({'path': ['m', 'k']}, [('m', 'r-m2', 'table')]),
    ({'owner': 'a', 'kind': 'table', 'path': ['a']}, [('a', 'r-a', 'table')]),
    ({'owner': 'n'}, []),
])
def test_select_matches_each_field_exactly(tmp_path, query, expected):
    got = [(r['owner'], r['resource'], r['kind']) for r in _mixed_ledger(tmp_path).select(**query)]
    assert got == expected


def test_owners_of_table_and_key_stack(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    for owner in ('z', 'a', 'm'):
        led.record_table(owner, 'r', ['t'])
        led.record_key(owner, 'r', P, None, '"%s"' % owner)
    assert led.owners_of_table(['t']) == ['a', 'm', 'z']
    assert [r['owner'] for r in led.key_stack(P)] == ['z', 'a', 'm']


def test_recording_the_same_value_again_changes_nothing(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('gpu', 'r', P, '"runc"', '"nvidia"')
    led.save('sha-1')
    assert led.dirty is False
    before = json.dumps(led.records, sort_keys=True)
    led.record_key('gpu', 'r', P, '"nvidia"', ''.join(['"nvi', 'dia"']))   # equal, not the same object
    # nothing to write: the engine saves the ledger only when it is dirty
    assert led.dirty is False
    assert json.dumps(led.records, sort_keys=True) == before
    led.record_key('gpu', 'r', P, '"nvidia"', '"nvidia-cdi"')
    assert led.dirty is True


def test_save_creates_the_ledger_folder_once(tmp_path):
    led = Ledger.load(str(tmp_path / 'state'), '/etc/c.toml')
    led.record_table('a', 'r', ['t'])
    led.save('sha-1')
    assert os.path.isfile(led.path) and not led.dirty
    # the ledger's folder is private: it says what every owner changed
    assert oct(os.stat(os.path.dirname(led.path)).st_mode & 0o777) == '0o700'
    led.record_table('b', 'r', ['t'])
    led.save('sha-2')          # the folder exists now: no error
    assert [r['owner'] for r in Ledger.load(str(tmp_path / 'state'), '/etc/c.toml').records] == ['a', 'b']


@pytest.mark.parametrize('identity_now, rolled_back', [
    ([10, 100], True),     # the very file the crashed run read: its ledger write is undone
    ([11, 200], False),    # the old bytes written again since (new inode, later ctime): records stay
    ([9, 50], False),
    ([10, 101], False),    # same inode, rewritten in place
])
def test_recover_tells_a_crash_from_a_rewrite_by_file_identity(tmp_path, identity_now, rolled_back):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.recover('sha-0', [10, 100])
    led.record_key('a', 'r', P, None, '"x"')
    led.save('sha-1')      # the ledger says sha-1 ... but the config rename never happened
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    note = led.recover('sha-0', identity_now)
    assert (note is not None) is rolled_back
    assert len(led.records) == (0 if rolled_back else 1)


def test_an_owner_changing_its_value_to_one_that_sorts_lower_is_recorded(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('gpu', 'r', P, '"runc"', '"nvidia"')
    led.save('sha-1')
    led.record_key('gpu', 'r', P, '"nvidia"', '"cdi"')
    (rec,) = led.select(owner='gpu')
    assert rec['value'] == '"cdi"' and rec['prior'] == '"runc"' and led.dirty is True


def test_leaving_first_hands_the_prior_to_the_next_owner_not_the_last(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    a = led.record_key('a', 'r', P, '"runc"', '"x"')
    b = led.record_key('b', 'r', P, '"x"', '"y"')
    c = led.record_key('c', 'r', P, '"y"', '"z"')
    assert led.release_key(a) == ('handover', None)
    assert (b['prior'], c['prior']) == ('"runc"', '"y"')


# ------------------------------------------------------------------ a removed record makes the ledger dirty
def test_a_removed_record_is_saved(tmp_path):
    state, path = str(tmp_path / 'state'), str(tmp_path / 'config.toml')
    ledger = Ledger.load(state, path)
    ledger.record_table('gpu', 'runtime:nvidia', ('plugins', 'x', 'nvidia'))
    ledger.save(sha256_bytes(b''))
    ledger = Ledger.load(state, path)
    assert not ledger.dirty and len(ledger.records) == 1
    ledger.remove(ledger.records[0])
    assert ledger.dirty
    ledger.save(sha256_bytes(b''))
    assert Ledger.load(state, path).records == []
