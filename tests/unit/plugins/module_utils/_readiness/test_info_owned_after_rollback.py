# -*- coding: utf-8 -*-
"""containerd_info's owned and ledgers read each ledger by one rule, the engine's: a ledger whose run stopped
before its config write is rolled back for both, and one whose config was written since is kept by both."""

import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import CRI_V2
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, file_identity
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import ledger_facts, owned_facts

V16 = (1, 6)
TEXT = b'version = 2\n'
KATA2 = ['plugins', CRI_V2, 'containerd', 'runtimes', 'kata2']


def file_and_ledger(tmp_path, name):
    """tmp_path/name holding TEXT, the state folder and the file's ledger: (state, path, ledger)."""
    path = str(tmp_path / name)
    with open(path, 'wb') as f:
        f.write(TEXT)
    state = str(tmp_path / 'state')
    return state, path, Ledger.load(state, path)


@pytest.fixture
def stopped(tmp_path):
    """config.toml, and its ledger as a run left it that saved the ledger and never renamed its config."""
    state, path, ledger = file_and_ledger(tmp_path, 'config.toml')
    ledger.recover(sha256_bytes(TEXT), file_identity(path))
    ledger.record_table('k', 'runtime:kata2', KATA2)
    ledger.save(sha256_bytes(TEXT + b'[kata2]\n'))
    return state, path


def both(state, path):
    [item], problems = ledger_facts(state, [path])
    assert problems == []
    return owned_facts(state, path, 'k', {}, V16)['runtimes'], sorted(item['records_by_owner']), item['note']


def test_a_run_that_stopped_before_its_config_write_owns_nothing_in_either(stopped):
    state, path = stopped
    ctime = os.stat(path).st_ctime_ns
    time.sleep(0.05)  # past the kernel's coarse clock tick: the change time moves
    os.chmod(path, 0o600)  # attributes changed since (as chattr -i after the refused rename): the same file
    assert os.stat(path).st_ctime_ns != ctime
    assert both(state, path) == ([], [], 'rolled the ledger back: the previous run stopped before its config write')


def test_a_config_written_again_since_keeps_the_records_in_either(stopped):
    state, path = stopped
    with open(path + '.new', 'wb') as f:
        f.write(TEXT)
    os.replace(path + '.new', path)  # the old bytes put back by hand (sed -i): not a crash
    assert both(state, path) == (['kata2'], ['k'], None)


def test_the_bytes_a_drop_in_took_over_are_not_shown(tmp_path):
    state, path, ledger = file_and_ledger(tmp_path, 'site.toml')
    ledger.add({'owner': 'coco', 'resource': 'file:' + path, 'kind': 'file',
                'replaced': dict(base64='c2VjcmV0', sha256='ab', mode=0o640, uid=0, gid=0)})
    ledger.save(sha256_bytes(TEXT))
    [item], _problems = ledger_facts(state, [path])
    [rec] = item['records_by_owner']['coco']
    assert rec['replaced'] == dict(sha256='ab', mode=0o640, uid=0, gid=0)
    assert 'base64' in Ledger.load(state, path).records[0]['replaced']  # only the report leaves them out
