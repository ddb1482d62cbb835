# -*- coding: utf-8 -*-
"""The node's zstd program behind a .tar.zst payload: its own words when it cannot decompress, its exit status
when it has none (killed), ended at once when the reader stops half way, and a node without any zstd reader told
what to install before anything is written. Archives and decompression use the real zstd."""

import os
import signal
import subprocess
import sys

import pytest

from helpers.common import make_tar
from helpers.kata_payload import cut_short
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import kata_payload as _payload
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import (
    CHUNK,
    PayloadError,
    install,
    read_members,
)

pytestmark = pytest.mark.skipif(_payload.tarfile_reads_zstd(), reason="this Python's tarfile reads zstd itself")

# random bytes do not compress: the decompressed stream is as long as the archive, far more than a pipe holds
BIG = os.urandom(6 << 20)


def zst(tmp_path, data=BIG):
    plain = make_tar(tmp_path / 'p.tar', [('opt/kata/bin/big', 'file', data, 0o644)], 'w')
    subprocess.run(['zstd', '-q', '--rm', plain, '-o', plain + '.zst'], check=True)
    return plain + '.zst'


def program_stream(archive):
    opener, what = _payload.zstd_opener(archive)
    assert what == _payload.find_zstd()  # the program, not the zstandard package
    return opener()


def test_a_truncated_archive_fails_with_zstd_s_own_words(tmp_path):
    path = zst(tmp_path)
    cut_short(path)
    with pytest.raises(PayloadError) as err:
        read_members(path, 'opt/kata')
    # zstd fails and says why; that is the error, not tarfile's guess at a short stream
    said = subprocess.run(['zstd', '-dcq', '--', path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, check=False)
    assert said.returncode != 0 and said.stderr.strip()
    assert str(err.value) == 'cannot read the payload archive %s: zstd cannot decompress %s: %s' % (
        path, path, said.stderr.strip())


def test_a_zstd_killed_without_a_word_is_named_by_its_exit_status(tmp_path):
    path = zst(tmp_path)
    stream = program_stream(path)
    try:
        os.kill(stream._proc.pid, signal.SIGKILL)  # as the OOM killer would
        with pytest.raises(IOError) as err:
            while stream.read(CHUNK):
                pass
        assert str(err.value) == 'zstd cannot decompress %s: exit -%d' % (path, signal.SIGKILL)
    finally:
        stream.close()


def test_a_stream_closed_half_way_ends_its_zstd_at_once(tmp_path):
    stream = program_stream(zst(tmp_path))
    assert len(stream.read(4096)) == 4096
    proc = stream._proc
    assert proc.poll() is None  # blocked on the full pipe: most of the archive is still to come
    stream.close()
    # killed, not left to find the closed pipe on its next write
    assert proc.returncode == -signal.SIGKILL


def test_a_stream_read_to_its_end_leaves_zstd_s_success_alone(tmp_path):
    stream = program_stream(zst(tmp_path, b'small\n'))
    while stream.read(CHUNK):
        pass
    proc = stream._proc
    stream.close()
    assert proc.returncode == 0


def test_a_node_without_a_zstd_reader_is_told_what_to_install_and_nothing_is_written(tmp_path, monkeypatch):
    archive = zst(tmp_path, b'x\n')
    empty = tmp_path / 'empty-bin'
    empty.mkdir()
    monkeypatch.setenv('PATH', str(empty))
    monkeypatch.setitem(sys.modules, 'zstandard', None)  # the import fails, as where the package is missing
    params = dict(archive=archive, dest=str(tmp_path / 'opt' / 'kata'), root='opt/kata',
                  manifest=str(tmp_path / 'state' / 'm.json'), require=[])
    with pytest.raises(PayloadError) as err:
        install(params, False)
    assert str(err.value) == (
        "the payload archive %s is zstd-compressed (.tar.zst, as kata ships since 3.21) and this node cannot read "
        "zstd: Python %d.%d's tarfile reads it only from 3.14, the zstandard package is not installed and there is "
        "no zstd program in PATH. Nothing was written. %s" % (archive, sys.version_info.major,
                                                              sys.version_info.minor, _payload.ZSTD_FIX))
    assert not os.path.exists(params['dest']) and not os.path.exists(params['manifest'])
