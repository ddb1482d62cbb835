# -*- coding: utf-8 -*-
"""A removed record makes the ledger dirty, so the engine saves it even when the config's bytes stay."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger


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
