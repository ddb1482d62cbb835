# -*- coding: utf-8 -*-
"""_payload's zstd reading, in process: the decompressed stream as a seekable file for tarfile (forward seeks read
ahead, a backward seek replays the last bytes or starts again), hard links read back, the zstd program's processes ended,
a damaged archive named, and the layout of a kata payload recognised. Archives are made with the real zstd."""

import io
import os
import subprocess

import pytest

from helpers.common import make_tar
from helpers.kata_payload import cut_short
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import kata_payload as _payload
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import (
    PayloadError,
    ZstdStream,
    describe_layout,
    install,
    read_members,
)

BIG = os.urandom(3 << 20)  # more than a few CHUNKs, so seeks cross reads


def zst(tmp_path, members):
    plain = make_tar(tmp_path / 'p.tar', members, 'w')
    subprocess.run(['zstd', '-q', '--rm', plain, '-o', plain + '.zst'], check=True)
    return plain + '.zst'


MEMBERS = [('opt/kata/bin/a', 'file', b'alpha\n', 0o755), ('opt/kata/bin/big', 'file', BIG, 0o644),
           ('opt/kata/bin/b', 'hard', 'opt/kata/bin/a', 0o755),
           ('opt/kata/share/x', 'link', '../bin/a', 0o777)]


def test_members_read_in_any_order_through_the_zstd_program(tmp_path):
    archive = zst(tmp_path, MEMBERS)
    assert _payload.zstd_opener(archive)[1] == _payload.find_zstd()
    tar, entries = read_members(archive, 'opt/kata')
    try:
        by_rel = dict((e['rel'], e) for e in entries)
        # big after a, then a again (the hard link b reads a's data: a backward seek)
        assert tar.extractfile(by_rel['bin/big']['member']).read() == BIG
        assert tar.extractfile(by_rel['bin/b']['member']).read() == b'alpha\n'
        assert tar.extractfile(by_rel['bin/a']['member']).read() == b'alpha\n'
        assert by_rel['share/x'] == dict(rel='share/x', type='link', target='../bin/a')
    finally:
        tar.close()
    # the decompressor of the last pass is gone with the tar
    proc = tar.stream.raw._stream._proc
    assert proc.returncode is not None


def test_the_stream_seeks_forward_by_reading_and_back_by_replaying_or_starting_again(monkeypatch):
    opened = []

    class Source(object):
        def __init__(self):
            self.data = io.BytesIO(bytes(range(256)) * 4)
            opened.append(self)

        def read(self, n):
            return self.data.read(n)

        def close(self):
            pass

    stream = ZstdStream(Source)
    assert stream.seek(300) == 300 and stream.read(2) == bytes([44, 45]) and len(opened) == 1
    # back within what was read lately: replayed, no new decompression (a member compared, then written)
    assert stream.seek(10) == 10 and stream.read(1) == bytes([10]) and len(opened) == 1
    assert stream.seek(5, io.SEEK_CUR) == 16 and stream.read(286) == bytes(range(16, 256)) + bytes(range(46))
    assert stream.read(3) == bytes([46, 47, 48]) and len(opened) == 1  # from the source again, in order
    # further back than the window: started again
    monkeypatch.setattr(_payload, 'REWIND_BYTES', 64)
    stream = ZstdStream(Source)
    assert stream.seek(300) == 300 and stream.seek(10) == 10 and stream.read(1) == bytes([10])
    assert len(opened) == 3
    with pytest.raises(io.UnsupportedOperation):
        stream.seek(0, io.SEEK_END)
    # past the end: stays at the end, as a short read would
    assert stream.seek(5000) == 1024


def test_a_damaged_archive_is_named(tmp_path):
    path = zst(tmp_path, MEMBERS)
    cut_short(path)
    with pytest.raises(PayloadError) as err:
        read_members(path, 'opt/kata')
    assert str(err.value).startswith('cannot read the payload archive %s' % path)


def test_install_from_zstd_equals_install_from_gzip(tmp_path):
    results = []
    for name, archive in (('gz', make_tar(tmp_path / 'p.tar.gz', MEMBERS)), ('zst', zst(tmp_path, MEMBERS))):
        params = dict(archive=archive, dest=str(tmp_path / name / 'opt' / 'kata'), root='opt/kata',
                      manifest=str(tmp_path / name / 'm.json'), require=['bin/b'])
        res = install(params, False)
        results.append((sorted(res['installed']), res['layout']))
        with open(os.path.join(params['dest'], 'bin', 'big'), 'rb') as f:
            assert f.read() == BIG
    assert results[0] == results[1]


def test_layouts_are_told_apart():
    three = ['bin/containerd-shim-kata-v2', 'share/defaults/kata-containers/configuration-qemu.toml',
             'share/defaults/kata-containers/configuration.toml']
    four = three + ['runtime-rs/bin/containerd-shim-kata-v2',
                    'share/defaults/kata-containers/runtime-rs/configuration-dragonball.toml']
    assert describe_layout(three) == dict(go=dict(shim='bin/containerd-shim-kata-v2', configurations=['qemu']),
                                          rs=dict(shim=None, configurations=[]))
    assert describe_layout(four)['rs'] == dict(shim='runtime-rs/bin/containerd-shim-kata-v2',
                                               configurations=['dragonball'])


def test_files_changed_in_place_are_compared_and_written_in_one_pass(tmp_path, monkeypatch):
    members = [('opt/kata/bin/%s' % n, 'file', os.urandom(3 << 19), 0o644) for n in 'abc']
    archive = zst(tmp_path, members)
    params = dict(archive=archive, dest=str(tmp_path / 'opt' / 'kata'), root='opt/kata',
                  manifest=str(tmp_path / 'm.json'), require=[])
    install(params, False)
    for name in 'abc':  # the same size, other bytes at the end: each is read whole to see it differs, then written
        with open(os.path.join(params['dest'], 'bin', name), 'r+b') as f:
            f.seek(-7, os.SEEK_END)
            f.write(b'changed')
    opens = []
    real = _payload.zstd_opener

    def counting(path):
        opener, what = real(path)
        return (lambda: opens.append(1) or opener()), what

    monkeypatch.setattr(_payload, 'zstd_opener', counting)
    res = install(params, False)
    assert sorted(res['updated']) == ['bin/a', 'bin/b', 'bin/c']
    for name, _kind, data, _mode in members:
        with open(os.path.join(params['dest'], 'bin', os.path.basename(name)), 'rb') as f:
            assert f.read() == data
    # the member list, then at most one pass over the data: no decompression again per changed file
    # (a small archive fits the rewind window whole: one pass does both)
    assert len(opens) <= 2, len(opens)


def test_an_empty_path_entry_never_runs_a_zstd_from_the_working_folder(tmp_path, monkeypatch):
    fake = tmp_path / 'zstd'
    fake.write_text('#!/bin/sh\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PATH', os.pathsep)
    assert _payload.find_zstd() is None
    monkeypatch.setenv('PATH', str(tmp_path))
    assert _payload.find_zstd() == str(fake)
