# -*- coding: utf-8 -*-
"""containerd_setting: one key, resolved per config version, undoable."""

import pytest
import tomlkit

from helpers.common import CONTAINERD_17, assert_containerd_accepts, read


def data(path):
    return tomlkit.parse(read(path)).unwrap()


@pytest.mark.parametrize('fixture,key,where,value', [
    ('v2_kubeadm.toml', 'cri.enable_cdi', ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi'), True),
    ('v3_default.toml', 'cri.enable_cdi', ('plugins', 'io.containerd.cri.v1.runtime', 'enable_cdi'), False),
    ('v2_kubeadm.toml', 'images.disable_snapshot_annotations',
     ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'disable_snapshot_annotations'), False),
    ('v3_default.toml', 'images.disable_snapshot_annotations',
     ('plugins', 'io.containerd.cri.v1.images', 'disable_snapshot_annotations'), False),
    ('v2_kubeadm.toml', 'cri.cdi_spec_dirs', ('plugins', 'io.containerd.grpc.v1.cri', 'cdi_spec_dirs'),
     ['/etc/cdi', '/var/run/cdi']),
    ('v3_default.toml', 'images.snapshotter', ('plugins', 'io.containerd.cri.v1.images', 'snapshotter'), 'nydus'),
    ('v2_flat.toml', 'cri.enable_cdi', ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi'), True),
])
def test_logical_key_set_and_restore(run_module, config, fixture, key, where, value):
    path = config(fixture)
    original = read(path, 'rb')
    # CDI arrived in containerd 1.7: 1.6 drops the keys (refused as not in effect, tested elsewhere)
    extra = {}
    if 'cdi' in key and fixture.startswith('v2'):
        assert CONTAINERD_17, 'run make deps'
        extra = dict(containerd_bin=CONTAINERD_17)
    res = run_module('containerd_setting', path=path, key=key, value=value, owner='gpu_toolkit', **extra)
    assert res['changed'] and res['key_path'] == list(where) and res['value'] == value
    got = data(path)
    for part in where:
        got = got[part]
    assert got == value
    assert_containerd_accepts(path)
    again = run_module('containerd_setting', path=path, key=key, value=value, owner='gpu_toolkit', **extra)
    assert not again['changed']
    res = run_module('containerd_setting', path=path, key=key, owner='gpu_toolkit', state='absent', **extra)
    assert res['changed']
    assert read(path, 'rb') == original


def test_literal_quotes_kept_on_v3(run_module, config):
    path = config('v3_default.toml')
    run_module('containerd_setting', path=path, key='images.snapshotter', value='nydus', owner='coco')
    assert "snapshotter = 'nydus'" in read(path)


def test_raw_key(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, raw=True, owner='t', value=6,
                     key='plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads')
    assert res['changed'] and data(path)['plugins']['io.containerd.grpc.v1.cri']['max_concurrent_downloads'] == 6
    assert_containerd_accepts(path)
    run_module('containerd_setting', path=path, raw=True, owner='t', state='absent',
               key='plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads')
    assert read(path, 'rb') == original


def test_absent_leaves_keys_of_others_alone(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', owner='nobody', state='absent')
    assert not res['changed'] and read(path, 'rb') == original


def test_bad_keys_are_refused(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, key='cri.no_such_key', value=1, expect_fail=True)
    assert 'unknown logical key' in res['msg'] and 'cri.enable_cdi' in res['msg']
    res = run_module('containerd_setting', path=path, key='plugins."unterminated', raw=True, value=1,
                     expect_fail=True)
    assert 'not a dotted TOML key' in res['msg'] and path in res['msg']
    res = run_module('containerd_setting', path=path, key='version', raw=True, value=3, expect_fail=True)
    assert 'cannot be managed' in res['msg']
    res = run_module('containerd_setting', path=path, key='plugins."io.containerd.grpc.v1.cri".containerd',
                     raw=True, value=1, expect_fail=True)
    assert 'is a table' in res['msg']
    assert read(path, 'rb') == original


def test_creates_missing_section_and_removes_it_again(run_module, config):
    """A v3 file without an images plugin table: the section is created, and removed on undo."""
    text = ("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
            "  runtime_type = 'io.containerd.runc.v2'\n")
    path = config(text)
    run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations', value=False,
               owner='coco')
    assert "[plugins.'io.containerd.cri.v1.images']" in read(path)
    assert_containerd_accepts(path)
    run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations', owner='coco',
               state='absent')
    assert read(path) == text


# ------------------------------------------------------------------ a file that holds only its version
V2_CRI = 'io.containerd.grpc.v1.cri'


def cri(path, plugin=V2_CRI):
    return tomlkit.parse(read(path)).unwrap().get('plugins', {}).get(plugin, {})


def test_setting_on_a_bare_version_file_round_trips(run_module, config):
    path = config('version = 2\n')
    run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu', containerd_bin=CONTAINERD_17)
    assert cri(path)['enable_cdi'] is True
    run_module('containerd_setting', path=path, key='cri.enable_cdi', owner='gpu', state='absent', containerd_bin=CONTAINERD_17)
    assert read(path) == 'version = 2\n'
