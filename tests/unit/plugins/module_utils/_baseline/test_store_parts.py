# -*- coding: utf-8 -*-
"""The baseline store's small rules called directly (_baseline): each case was a surviving mutant."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    _write_flushed,
    glob_match,
    read_tree,
)


@pytest.mark.parametrize('pattern, path, matches', [
    ('/etc/containerd/conf.d/*.toml', '/etc/containerd/conf.d/a.toml', True),
    ('/etc/containerd/*/x.toml', '/etc/containerd/conf.d', False),       # the pattern is longer than the path
    ('/etc/containerd/*.toml', '/etc/containerd/conf.d/a.toml', False),  # the path is longer than the pattern
    ('/etc/containerd/conf.d/*.toml', '/etc/containerd/conf.d/.hidden.toml', False),
    # glob.glob finds no hidden file for a pattern that does not start with "." (fnmatch alone would match)
    ('/etc/containerd/conf.d/[.]hidden.toml', '/etc/containerd/conf.d/.hidden.toml', False),
    ('/etc/containerd/conf.d/.hidden.toml', '/etc/containerd/conf.d/.hidden.toml', True),
])
def test_glob_match_as_glob_finds(pattern, path, matches):
    assert glob_match(pattern, path) is matches


def test_a_stored_file_is_never_written_over(tmp_path):
    target = str(tmp_path / 'stored')
    _write_flushed(target, b'one')
    with pytest.raises(OSError):
        _write_flushed(target, b'two')
    assert open(target, 'rb').read() == b'one'


def test_a_file_listed_before_a_glob_that_matches_it_too_does_not_hide_the_next_match(tmp_path):
    folder = tmp_path / 'conf.d'
    folder.mkdir()
    for name in ('a.toml', 'b.toml'):
        (folder / name).write_text('version = 2\n')
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\nimports = ["%s", "%s"]\n' % (folder / 'a.toml', folder / '*.toml'))
    tree = read_tree(str(config), True)
    assert sorted(os.path.basename(f.path) for f in tree.files) == ['a.toml', 'b.toml', 'config.toml']
    assert tree.missing == []
