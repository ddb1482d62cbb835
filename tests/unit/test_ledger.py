# -*- coding: utf-8 -*-
"""The ledger: records, stacked priors, crash recovery."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._ledger import (
    Ledger,
    LedgerError,
    ledger_path_for,
)

P = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'default_runtime_name']


def test_path_is_per_config(tmp_path):
    a = ledger_path_for(str(tmp_path), '/etc/containerd/config.toml')
    b = ledger_path_for(str(tmp_path), '/etc/containerd/other.toml')
    assert a != b and a.startswith(str(tmp_path)) and a.endswith('.json')


def test_round_trip_and_mode(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
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
    with pytest.raises(LedgerError, match='format'):
        Ledger.load(str(tmp_path), '/etc/c.toml')


def test_drop_under_forgets_records_inside_a_deleted_table(tmp_path):
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_table('a', 'r', ['t'])
    led.record_key('b', 'r2', ['t', 'k'], None, '1')
    led.record_key('b', 'r3', ['u', 'k'], None, '1')
    led.drop_under(['t'])
    assert [r['path'] for r in led.records] == [['t'], ['u', 'k']]
