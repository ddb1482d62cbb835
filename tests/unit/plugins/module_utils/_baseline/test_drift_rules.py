# -*- coding: utf-8 -*-
"""_baseline_drift's rules on the inputs test_drift.py does not hold: an empty protect entry,
a CRI key that is no logical name, lists against other types, dates with a time, and a first key or
file that did not change (the ones after it still count)."""

import datetime

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    plain,
    protected_drift,
    resolve_protect,
    same_tree,
    tree_drift,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError, Layout

CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'


@pytest.mark.parametrize('key', ['""', 'cri.""', 'a."".b'])
def test_a_protect_entry_with_an_empty_part_is_refused(key):
    with pytest.raises(ConfigError) as exc:
        resolve_protect(Layout(2), key)
    assert str(exc.value) == 'protect entry %r is empty.' % key


def test_a_cri_key_that_is_no_logical_name_is_under_the_cri_plugin_of_each_version():
    assert resolve_protect(Layout(2), 'cri.sandbox_image') == ('plugins', CRI2, 'sandbox_image')
    assert resolve_protect(Layout(3), 'cri.cni.conf_dir') == ('plugins', CRI3, 'cni', 'conf_dir')


def test_a_list_is_never_the_same_as_another_type_and_is_compared_item_by_item():
    assert not same_tree(['x'], 'x') and not same_tree('x', ['x'])
    assert not same_tree([1, True], [1, 1]) and not same_tree([1], [1, 1])
    assert same_tree([1, [True, 'a']], [1, [True, 'a']])


def test_dates_and_times_become_iso_text():
    when = datetime.datetime(1979, 5, 27, 7, 32, tzinfo=datetime.timezone.utc)
    assert plain({'at': when, 'day': when.date(), 'time': datetime.time(7, 32)}) == {
        'at': '1979-05-27T07:32:00+00:00', 'day': '1979-05-27', 'time': '07:32:00'}


def test_a_file_that_did_not_change_does_not_hide_the_next_files_drift():
    base = {'/a.toml': 'sha-a', '/b.toml': 'sha-b'}
    now = {'/a.toml': 'sha-a', '/b.toml': 'sha-b2'}
    drift = tree_drift(base, now, {'/a.toml': {'x': 1}, '/b.toml': {'y': 1}},
                       {'/a.toml': {'x': 1}, '/b.toml': {'y': 2}})
    assert drift['files']['changed'] == ['/b.toml']
    assert [(c['file'], c['key'], c['before'], c['after']) for c in drift['changed']] == [('/b.toml', 'y', 1, 2)]


def test_a_protected_key_that_did_not_change_does_not_hide_the_next_one():
    layout = Layout(2)
    base = {'plugins': {CRI2: {'containerd': {'default_runtime_name': 'runc', 'snapshotter': 'overlayfs'}}}}
    now = {'plugins': {CRI2: {'containerd': {'default_runtime_name': 'runc', 'snapshotter': 'native'}}}}
    (d,) = protected_drift(['cri.default_runtime_name', 'images.snapshotter'], base, layout, now, layout)
    assert (d['key'], d['change'], d['before'], d['after']) == ('images.snapshotter', 'changed', 'overlayfs', 'native')
