# -*- coding: utf-8 -*-
"""Protect resolution and drift, without a module run."""

import datetime

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    DEFAULT_PROTECT,
    diff_data,
    has_drift,
    protected_drift,
    resolve_protect,
    same_tree,
    tree_drift,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError, Layout

CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
IMG3 = 'io.containerd.cri.v1.images'


@pytest.mark.parametrize('key, v2, v3', [
    ('cri.runtimes.runc', ('plugins', CRI2, 'containerd', 'runtimes', 'runc'),
     ('plugins', CRI3, 'containerd', 'runtimes', 'runc')),
    ('cri.default_runtime_name', ('plugins', CRI2, 'containerd', 'default_runtime_name'),
     ('plugins', CRI3, 'containerd', 'default_runtime_name')),
    ('images.snapshotter', ('plugins', CRI2, 'containerd', 'snapshotter'), ('plugins', IMG3, 'snapshotter')),
    ('images.pinned_images.sandbox', ('plugins', CRI2, 'containerd', 'pinned_images', 'sandbox'),
     ('plugins', IMG3, 'pinned_images', 'sandbox')),
    ('cri.runtimes', ('plugins', CRI2, 'containerd', 'runtimes'), ('plugins', CRI3, 'containerd', 'runtimes')),
    ('cri.runtimes.runc.options.SystemdCgroup',
     ('plugins', CRI2, 'containerd', 'runtimes', 'runc', 'options', 'SystemdCgroup'),
     ('plugins', CRI3, 'containerd', 'runtimes', 'runc', 'options', 'SystemdCgroup')),
    ('cri.runtimes."kata.qemu"', ('plugins', CRI2, 'containerd', 'runtimes', 'kata.qemu'),
     ('plugins', CRI3, 'containerd', 'runtimes', 'kata.qemu')),
    ('cri.enable_cdi', ('plugins', CRI2, 'enable_cdi'), ('plugins', CRI3, 'enable_cdi')),
    ('plugins."io.containerd.grpc.v1.cri".sandbox_image', ('plugins', CRI2, 'sandbox_image'),
     ('plugins', CRI2, 'sandbox_image')),
    ("proxy_plugins.nydus", ('proxy_plugins', 'nydus'), ('proxy_plugins', 'nydus')),
])
def test_resolve_protect_per_version(key, v2, v3):
    assert resolve_protect(Layout(2), key) == v2
    assert resolve_protect(Layout(3), key) == v3
    assert resolve_protect(Layout(4), key) == v3


@pytest.mark.parametrize('bad', ['cri.runtimes.', 'a..b', '"unterminated', ''])
def test_resolve_protect_refuses_garbage(bad):
    with pytest.raises(ConfigError) as exc:
        resolve_protect(Layout(2), bad)
    assert 'protect entry' in str(exc.value)


def test_same_tree_tells_types_apart():
    assert same_tree({'a': [1, {'b': True}]}, {'a': [1, {'b': True}]})
    assert not same_tree({'a': True}, {'a': 1})
    assert not same_tree({'a': 1}, {'a': 1.0})
    assert not same_tree({'a': {}}, {'a': {}, 'b': 1})
    assert not same_tree([1], [1, 2])


def test_diff_reports_tables_once_and_values_with_before_after():
    before = {'version': 2, 'plugins': {CRI2: {'containerd': {
        'default_runtime_name': 'runc',
        'runtimes': {'runc': {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True}}}}}}}
    after = {'version': 2, 'plugins': {CRI2: {'containerd': {
        'default_runtime_name': 'nvidia',
        'runtimes': {'nvidia': {'runtime_type': 'io.containerd.runc.v2', 'options': {'BinaryName': '/x'}}}}}},
        'imports': ['/a.toml']}
    d = diff_data(before, after, file='/etc/c.toml')
    assert [e['key'] for e in d['removed']] == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    assert d['removed'][0]['value'] == {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True}}
    assert d['removed'][0]['file'] == '/etc/c.toml'
    assert d['removed'][0]['path'] == ['plugins', CRI2, 'containerd', 'runtimes', 'runc']
    assert sorted(e['key'] for e in d['added']) == ['imports', 'plugins."%s".containerd.runtimes.nvidia' % CRI2]
    (ch,) = d['changed']
    assert (ch['key'], ch['before'], ch['after']) == (
        'plugins."%s".containerd.default_runtime_name' % CRI2, 'runc', 'nvidia')
    assert diff_data(before, before) == dict(added=[], removed=[], changed=[])


def test_diff_descends_through_super_tables_and_makes_values_json_safe():
    before = {}
    after = {'plugins': {CRI2: {'containerd': {'runtimes': {'kata': {'runtime_type': 'k'}}}}},
             'when': datetime.date(2024, 1, 2)}
    d = diff_data(before, after)
    assert sorted(e['key'] for e in d['added']) == ['plugins."%s".containerd.runtimes.kata' % CRI2, 'when']
    assert [e['value'] for e in d['added'] if e['key'] == 'when'] == ['2024-01-02']
    # a type change is a change, not a table diff
    d = diff_data({'a': {'b': 1}}, {'a': 'x'})
    assert d['changed'][0]['before'] == {'b': 1} and d['changed'][0]['after'] == 'x'


def test_tree_drift_by_file():
    base = {'/c.toml': 'h1', '/d/50-kata.toml': 'h2'}
    cur = {'/c.toml': 'h1x', '/d/99-nv.toml': 'h3'}
    base_data = {'/c.toml': {'version': 2, 'a': 1},
                 '/d/50-kata.toml': {'version': 2, 'plugins': {CRI2: {'containerd': {'runtimes': {'kata': {'x': 1}}}}}}}
    cur_data = {'/c.toml': {'version': 2, 'a': 2}, '/d/99-nv.toml': {'version': 2, 'proxy_plugins': {'n': {'t': 's'}}}}
    d = tree_drift(base, cur, base_data, cur_data)
    assert d['files'] == dict(added=['/d/99-nv.toml'], removed=['/d/50-kata.toml'], changed=['/c.toml'])
    assert [(e['key'], e['file']) for e in d['removed']] == [
        ('plugins."%s".containerd.runtimes.kata' % CRI2, '/d/50-kata.toml')]
    assert [(e['key'], e['file']) for e in d['added']] == [('proxy_plugins.n', '/d/99-nv.toml')]
    assert [e['key'] for e in d['changed']] == ['a']
    assert has_drift(d)
    same = tree_drift(base, base, base_data, base_data)
    assert not has_drift(same)


def test_protected_drift_across_versions():
    v2 = {'version': 2, 'plugins': {CRI2: {'containerd': {'default_runtime_name': 'runc',
                                                          'runtimes': {'runc': {'runtime_type': 'r'}}}}}}
    v3 = {'version': 3, 'plugins': {CRI3: {'containerd': {'default_runtime_name': 'runc',
                                                          'runtimes': {'runc': {'runtime_type': 'r'}}}}}}
    # a file migrated from version 2 to 3 with the same meaning has no protected drift
    assert protected_drift(DEFAULT_PROTECT, v2, Layout(2), v3, Layout(3)) == []
    v3['plugins'][CRI3]['containerd']['default_runtime_name'] = 'nvidia'
    del v3['plugins'][CRI3]['containerd']['runtimes']['runc']
    out = protected_drift(DEFAULT_PROTECT, v2, Layout(2), v3, Layout(3))
    assert [(e['key'], e['change'], e['before'], e['after']) for e in out] == [
        ('cri.runtimes.runc', 'removed', {'runtime_type': 'r'}, None),
        ('cri.default_runtime_name', 'changed', 'runc', 'nvidia')]
    assert out[0]['path'] == 'plugins."%s".containerd.runtimes.runc' % CRI3
    # a protected key that did not exist in the baseline and does now was added
    out = protected_drift(['cri.enable_cdi'], v2, Layout(2), {'plugins': {CRI2: {'enable_cdi': True}}}, Layout(2))
    assert out[0]['change'] == 'added'


def test_a_changed_file_is_found_whichever_way_its_checksums_sort():
    base = {'/c.toml': 'h9', '/d.toml': 'h1'}
    cur = {'/c.toml': 'h1', '/d.toml': 'h9'}
    data = {'/c.toml': {'version': 2, 'a': 1}, '/d.toml': {'version': 2, 'b': 1}}
    later = {'/c.toml': {'version': 2, 'a': 2}, '/d.toml': {'version': 2, 'b': 2}}
    d = tree_drift(base, cur, data, later)
    assert d['files']['changed'] == ['/c.toml', '/d.toml']
    assert [e['key'] for e in d['changed']] == ['a', 'b']


@pytest.mark.parametrize('kind', ['added', 'removed', 'changed'])
def test_any_one_kind_of_drift_is_drift(kind):
    drift = dict(added=[], removed=[], changed=[], files=dict(added=[], removed=[], changed=[]))
    drift[kind] = [dict(key='a')]
    assert has_drift(drift)
    drift = dict(added=[], removed=[], changed=[], files=dict(added=[], removed=[], changed=[]))
    drift['files'][kind] = ['/etc/containerd/conf.d/x.toml']
    assert has_drift(drift)


def test_a_protect_key_of_another_top_level_table_is_taken_as_written():
    for version in (2, 3):
        assert resolve_protect(Layout(version), 'cgroup.path') == ('cgroup', 'path')
        assert resolve_protect(Layout(version), 'debug.level') == ('debug', 'level')
