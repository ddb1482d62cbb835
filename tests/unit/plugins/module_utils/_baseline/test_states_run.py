# -*- coding: utf-8 -*-
"""run_state of containerd_baseline (_baseline_states.run_state): state absent, a store that is not
there yet, and failures that are not ConfigError (a clear message, never a traceback on stdout)."""

import os

from helpers.baseline import Node


def test_absent_without_a_baseline_changes_nothing(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(state='absent')
    assert (r['changed'], r['removed']) == (False, False)
    assert r['baseline'] == os.path.join(node.store, 'default')


def test_absent_in_check_mode_says_it_would_remove_and_keeps_the_baseline(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    taken = node.run()
    r = node.run(state='absent', check=True)
    assert (r['changed'], r['removed']) == (True, True)
    assert os.path.isdir(taken['snapshot'])
    gone = node.run(state='absent')
    assert (gone['changed'], gone['removed']) == (True, True)
    assert not os.path.exists(os.path.join(node.store, 'default'))


def test_check_mode_on_a_store_that_does_not_exist_yet_makes_nothing(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(check=True)
    assert r['changed'] is True and r['snapshot'] is None and r['files'] == []
    assert not os.path.exists(node.store)


def test_check_without_a_store_folder_says_to_take_a_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(state='check', expect_fail=True)
    assert r['msg'] == ("there is no baseline 'default' in %s (the folder does not exist). Fix: take one first "
                        "with state: snapshot." % node.store)
    assert not os.path.exists(node.store)


def test_check_of_a_name_never_taken_in_an_existing_store_says_to_take_one(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run(name='other')
    r = node.run(state='check', expect_fail=True)
    assert r['msg'] == ("there is no baseline 'default' in %s. Fix: take one first with state: snapshot."
                        % node.store)


def test_an_os_error_is_a_clear_failure_naming_the_config(tmp_path, capsys):
    # a config path that is a loop of links: os.stat fails with ELOOP, which no rule of the store expects
    node = Node(tmp_path, capsys, text=None)
    os.symlink(node.path, node.path)
    r = node.run(expect_fail=True)
    assert r['msg'].startswith('containerd_baseline failed on %s: ' % node.path)
    assert 'Too many levels of symbolic links' in r['msg']


def test_a_name_taken_for_another_config_is_refused_for_this_one(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    other = node.write('v2_flat.toml', os.path.join(node.etc, 'other.toml'))
    for state in ('snapshot', 'check', 'repair', 'restore'):
        r = node.run(state=state, path=other, expect_fail=True)
        assert r['msg'] == ("baseline 'default' in %s was taken of %s, not %s. Nothing was changed. Fix: use another "
                            "name for this config." % (node.store, node.path, other)), state


def test_a_negative_keep_is_refused_before_anything_is_read(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(keep=-1, expect_fail=True)
    assert r['msg'] == 'keep must be 0 or more, got -1' and not os.path.exists(node.store)
