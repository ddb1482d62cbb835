# -*- coding: utf-8 -*-
"""The file a crashed run read, told from a rewrite by its identity (_ledger.file_identity): a change of the
file's attributes alone keeps it that file; new bytes or a new file in its place do not."""

import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, file_identity

P = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes', 'kata2']
OLD = b'version = 2\n'


def stopped_before_the_rename(tmp_path):
    """tmp_path/config.toml holding OLD, read by a run that saved its ledger (in tmp_path/state) for new bytes
    and never renamed them into place: its path."""
    path = str(tmp_path / 'config.toml')
    with open(path, 'wb') as f:
        f.write(OLD)
    ledger = Ledger.load(str(tmp_path / 'state'), path)
    ledger.recover(sha256_bytes(OLD), file_identity(path))
    ledger.record_table('k', 'runtime:kata2', P)
    ledger.save(sha256_bytes(OLD + b'[x]\n'))
    return path


def later(path):
    """Times one second after the file's own, so a change of them is seen whatever the clock's granularity."""
    st = os.stat(path)
    return (st.st_atime_ns + 10 ** 9, st.st_mtime_ns + 10 ** 9)


@pytest.mark.parametrize('change', ['chmod', 'link'])
def test_a_change_of_attributes_alone_is_still_the_file_the_run_read(tmp_path, change):
    """chattr -i after a write the immutable file refused changes the inode's change time, as these do."""
    path = stopped_before_the_rename(tmp_path)
    ctime = os.stat(path).st_ctime_ns
    time.sleep(0.05)  # past the kernel's coarse clock tick: the change time moves
    if change == 'chmod':
        os.chmod(path, 0o600)
    else:
        os.link(path, str(tmp_path / 'hard-link'))
    assert os.stat(path).st_ctime_ns != ctime
    ledger = Ledger.load(str(tmp_path / 'state'), path)
    note = ledger.recover(sha256_bytes(OLD), file_identity(path))
    assert note == 'rolled the ledger back: the previous run stopped before its config write'
    assert ledger.records == []


@pytest.mark.parametrize('rewrite', ['in place', 'new file'])
def test_the_old_bytes_written_again_are_not_a_crash(tmp_path, rewrite):
    path = stopped_before_the_rename(tmp_path)
    times = later(path)
    if rewrite == 'in place':
        with open(path, 'wb') as f:
            f.write(OLD)
        os.utime(path, ns=times)
    else:
        with open(path + '.new', 'wb') as f:
            f.write(OLD)
        os.replace(path + '.new', path)
    ledger = Ledger.load(str(tmp_path / 'state'), path)
    assert ledger.recover(sha256_bytes(OLD), file_identity(path)) is None
    assert [r['owner'] for r in ledger.records] == ['k']


def test_a_missing_file_has_no_identity(tmp_path):
    assert file_identity(str(tmp_path / 'nowhere')) is None
