# -*- coding: utf-8 -*-
"""Where the atomic write puts its temporary file and which folder it flushes: the target's own."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import atomic as _atomic


def test_the_temporary_file_is_made_in_the_targets_folder(tmp_path, monkeypatch):
    folder = tmp_path / 'etc'
    folder.mkdir()
    elsewhere = tmp_path / 'cwd'
    elsewhere.mkdir()
    monkeypatch.chdir(str(elsewhere))
    tmp = _atomic.write_temp(str(folder / 'config.toml'), b'version = 2\n')
    assert os.path.dirname(tmp) == str(folder)
    assert os.listdir(str(elsewhere)) == []


def test_the_rename_flushes_the_targets_folder(tmp_path, monkeypatch):
    flushed = []
    monkeypatch.setattr(_atomic, 'fsync_dir', flushed.append)
    path = str(tmp_path / 'config.toml')
    _atomic.atomic_write(path, b'version = 2\n')
    assert flushed == [str(tmp_path)]
    with open(path, 'rb') as f:
        assert f.read() == b'version = 2\n'
