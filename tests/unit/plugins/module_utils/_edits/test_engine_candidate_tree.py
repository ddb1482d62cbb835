# -*- coding: utf-8 -*-
"""The candidate containerd is asked about is the tree as it will be read in
place: a config.toml that imports itself (NVIDIA's v1.17.8 installer writes
one) reads its candidate there, not the live file, and a drop-in imported
by another drop-in is read as its candidate, not as it is on disk.

The module runs in this process; the real containerd 2.1's config dump
confirms each change (a candidate that still read the old file would show
the old value, and the write would be refused as having no effect).
"""

import tomllib

import pytest

from helpers.common import CONTAINERD_2, assert_containerd_accepts, fixture_text, read
from helpers.engine import IMAGES, node_from_fixture, setting


@pytest.fixture
def self_importing(tmp_path):
    """2.1's default config.toml importing itself."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    return node_from_fixture(tmp_path, 'v3_default.toml',
                             lambda text, path: text.replace('imports = []', 'imports = ["%s"]' % path, 1))


@pytest.fixture
def nested(tmp_path):
    """config.toml importing 10-outer.toml, which imports 20-inner.toml: the inner one decides the snapshotter."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    inner = etc / 'conf.d' / '20-inner.toml'
    inner.write_text("version = 3\n%s  snapshotter = 'overlayfs'\n" % IMAGES)
    outer = etc / 'conf.d' / '10-outer.toml'
    outer.write_text("version = 3\nimports = [\"%s\"]\n%s  disable_snapshot_annotations = true\n" % (inner, IMAGES))
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml').replace('imports = []', 'imports = ["%s"]' % outer, 1))
    return dict(path=str(path), outer=str(outer), inner=str(inner), state=str(tmp_path / 'state'),
                tmp=str(tmp_path))


def snapshotter_in_effect(path):
    dump = tomllib.loads(assert_containerd_accepts(path, CONTAINERD_2))
    return dump['plugins']['io.containerd.cri.v1.images']['snapshotter']


def test_a_change_to_a_config_that_imports_itself_is_confirmed_on_its_candidate(self_importing, capsys):
    res = setting(self_importing, capsys, key='images.snapshotter', value='native')
    assert 'failed' not in res, res['msg']
    assert res['changed'] and res['file'] == self_importing['path'] and res['validated'] == 'config dump'
    assert [(e['file'], e['in_effect']) for e in res['effects']] == [(self_importing['path'], True)]
    assert snapshotter_in_effect(self_importing['path']) == 'native'
    assert 'imports = ["%s"]' % self_importing['path'] in read(self_importing['path'])


def test_a_change_to_a_drop_in_another_drop_in_imports_is_confirmed_on_its_candidate(nested, capsys):
    outer_before = read(nested['outer'])
    res = setting(nested, capsys, key='images.snapshotter', value='native')
    assert 'failed' not in res, res['msg']
    assert res['changed'] and res['file'] == nested['inner'] and res['validated'] == 'config dump'
    assert [(e['file'], e['in_effect']) for e in res['effects']] == [(nested['inner'], True)]
    assert "snapshotter = 'native'" in read(nested['inner']) and read(nested['outer']) == outer_before
    assert snapshotter_in_effect(nested['path']) == 'native'
