# -*- coding: utf-8 -*-
"""A relative glob in `imports` is read by containerd 1.7 and 2.x against the importing file's folder and by 1.6
against its working folder, /: the load test's sandbox copies the files of both readings, once each."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.sandbox import expand_entry, read_tree


def _layout(tmp_path):
    """An importing file in etc/ and a relative glob that matches files from etc/ and from /."""
    etc = tmp_path / 'etc'
    from_root = tmp_path / 'rel.d'   # what the entry names from /
    entry = os.path.relpath(str(from_root), '/') + '/*.toml'
    beside = etc / os.path.dirname(entry)   # what the entry names from etc/
    for folder in (from_root, beside):
        folder.mkdir(parents=True)
    for name in ('10.toml', '20.toml'):
        (from_root / name).write_text('version = 2\n')
        (beside / name).write_text('version = 2\n')
    (from_root / 'notes.txt').write_text('')
    main = etc / 'config.toml'
    main.write_text('version = 2\nimports = ["%s"]\n' % entry)
    beside_files = [str(beside / '10.toml'), str(beside / '20.toml')]
    return main, entry, beside_files, [str(from_root / '10.toml'), str(from_root / '20.toml')]


def test_a_relative_glob_is_expanded_against_the_importing_folder_and_against_root(tmp_path):
    main, entry, beside, from_root = _layout(tmp_path)
    assert expand_entry(entry, str(main)) == beside + from_root


def test_every_file_of_both_readings_is_in_the_tree_once(tmp_path):
    main, _entry, beside, from_root = _layout(tmp_path)
    assert [path for path, _raw in read_tree(str(main))] == [str(main)] + beside + from_root


def test_an_absolute_glob_is_expanded_once(tmp_path):
    main, _entry, _beside, from_root = _layout(tmp_path)
    assert expand_entry(str(tmp_path / 'rel.d' / '*.toml'), str(main)) == from_root


def test_a_relative_plain_file_is_read_beside_the_importing_file_only(tmp_path):
    main, _entry, _beside, _from_root = _layout(tmp_path)
    assert expand_entry('x.toml', str(main)) == [str(main.parent / 'x.toml')]
