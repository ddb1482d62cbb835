# -*- coding: utf-8 -*-
"""_baseline's Store and Tree rules the mutation run of 05fad31 found untested: a missing config counts
as the same tree again, the files a result lists name their stored copies, keep larger than the number
of older snapshots prunes none, and cleaning a store folder that is not there is no error."""

import os

from baseline_inproc import Node

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import Store, read_tree


def test_a_config_missing_then_and_now_is_the_same_tree_and_no_new_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=None)
    assert read_tree(node.path).config_missing is True
    first = node.run()
    again = node.run(overwrite=True)
    assert not again['changed'] and again['snapshot'] == first['snapshot']
    node.write('v2_kubeadm.toml')
    assert read_tree(node.path).config_missing is False
    taken = node.run(overwrite=True)
    assert taken['changed'] and not node.run(overwrite=True)['changed']
    assert len(node.snapshots()) == 2


def test_the_files_of_a_result_name_their_stored_copies(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run()
    (f,) = r['files']
    assert (f['path'], f['role']) == (node.path, 'config')
    assert f['stored'].startswith(r['snapshot'] + os.sep)
    with open(f['stored'], 'rb') as copy:
        assert copy.read() == node.read(mode='rb')
    assert node.run(state='check')['files'] == r['files']


def test_keep_beyond_the_older_snapshots_prunes_none(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write('v2_flat.toml')
    node.run(overwrite=True)
    node.write('v2_kubeadm.toml')
    last = node.run(overwrite=True, keep=5)
    assert last['pruned'] == [] and len(node.snapshots()) == 3
    same = node.run(overwrite=True, keep=2)
    assert not same['changed'] and same['pruned'] == [] and len(node.snapshots()) == 3


def test_cleaning_a_store_folder_that_does_not_exist_is_no_error(tmp_path):
    store = Store(str(tmp_path / 'store'), 'default')
    assert store.clean_temps() is None
    assert not os.path.exists(store.folder)
