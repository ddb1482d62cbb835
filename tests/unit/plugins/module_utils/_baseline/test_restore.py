# -*- coding: utf-8 -*-
"""state: restore (_baseline_restore) on the edges the module tests do not reach, run in process.

A folder where the config should be, a config folder that is gone, a drop-in
folder that is gone, an owner changed behind nodeguard's back, a ledger
folder that is gone, a baseline copy that is no config (a store written by
hand: a snapshot never stores one), a version 3 baseline on containerd 1.x,
and a ledger copy that is not JSON.
"""

import json
import os
import shutil
import stat

import pytest

from helpers.baseline import Node, hand_made_baseline, manifest_of, stub_containerd

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.restore import ledger_for_restore
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for
import subprocess


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_config_folder_that_is_gone_is_made_again(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    good = node.read(mode='rb')
    node.run()
    shutil.rmtree(node.etc)
    preview = node.run(state='restore', check=True)
    assert preview['changed'] and not os.path.exists(node.etc)   # check mode makes no folder
    r = node.run(state='restore')
    assert r['changed'] and r['created_files'] == [node.path]
    assert node.read(mode='rb') == good and _mode(node.etc) == 0o755


def _tree_with_a_dropin(node):
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    dropin = node.write('version = 2\n[metrics]\n  grpc_histogram = true\n', os.path.join(conf_d, '10-metrics.toml'))
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    return conf_d, dropin


def test_a_dropin_folder_that_is_gone_is_made_again_and_the_dropin_put_back(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    conf_d, dropin = _tree_with_a_dropin(node)
    os.chmod(dropin, 0o640)
    text = node.read(dropin)
    node.run()
    shutil.rmtree(conf_d)
    r = node.run(state='restore')
    assert r['restored'] == [dropin] and r['created_files'] == [dropin]
    assert node.read(dropin) == text and _mode(dropin) == 0o640 and _mode(conf_d) == 0o755


def test_a_folder_where_a_baseline_file_was_is_not_replaced(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    _conf_d, dropin = _tree_with_a_dropin(node)
    good = node.read()
    node.run()
    # config.toml no longer imports the drop-in, and a folder now stands where the drop-in was
    node.write(node.read().replace(good[good.index('imports'):good.index(']\n') + 2], ''))
    edited = node.read()
    os.unlink(dropin)
    os.mkdir(dropin)
    r = node.run(state='restore', expect_fail=True)
    assert r['msg'] == ('%s is not a regular file (a folder?); nodeguard will not replace it. Nothing was written. '
                        'Fix: move it aside, then run again.' % dropin)
    assert os.path.isdir(dropin) and node.read() == edited


def test_an_owner_changed_behind_nodeguards_back_is_put_back(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    os.chown(node.path, 0, 0)
    os.chmod(node.path, 0o640)
    node.run()
    os.chown(node.path, 4242, 4343)
    os.chmod(node.path, 0o666)
    r = node.run(state='restore')
    assert r['changed'] and r['restored'] == [node.path] and r['created_files'] == []
    st = os.stat(node.path)
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o640, 0, 0)
    assert not node.run(state='restore')['changed']


def test_a_mode_asked_for_is_applied_after_the_restore(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    os.chmod(node.path, 0o644)
    node.run()
    r = node.run(state='restore', mode='0600')
    assert r['changed'] and _mode(node.path) == 0o600
    # then the baseline's mode is what a restore without the option puts back
    assert node.run(state='restore')['changed'] and _mode(node.path) == 0o644


def test_a_ledger_whose_folder_is_gone_is_put_back_in_a_private_folder(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    lpath = ledger_path_for(node.state_dir, node.path)
    os.makedirs(os.path.dirname(lpath))
    sha = __import__('hashlib').sha256(node.read(mode='rb')).hexdigest()
    raw = json.dumps(dict(format=1, config=node.path, config_sha256=sha, records=[])).encode('utf-8')
    with open(lpath, 'wb') as f:
        f.write(raw)
    assert manifest_of(node.run())['ledger']['in_sync']
    shutil.rmtree(node.state_dir)
    r = node.run(state='restore')
    assert r['changed'] and r['ledger'] == 'restored' and r['restored'] == []
    with open(lpath, 'rb') as f:
        assert f.read() == raw
    assert _mode(os.path.dirname(lpath)) == 0o700 and _mode(lpath) == 0o600


def test_a_baseline_copy_that_is_not_toml_is_refused(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    before = node.read(mode='rb')
    hand_made_baseline(node, b'version = 2\n[plugins\n')
    r = node.run(state='restore', expect_fail=True)
    assert r['msg'].startswith('refusing to restore %s: the baseline copy %s' % (node.path, node.path))
    assert 'The baseline itself is broken' in r['msg']
    assert node.read(mode='rb') == before


def test_a_baseline_copy_nodeguard_cannot_read_as_a_config_is_refused(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    before = node.read(mode='rb')
    hand_made_baseline(node, b'version = 1\n')
    r = node.run(state='restore', expect_fail=True)
    assert r['msg'].startswith('refusing to restore %s: in the baseline copy, %s declares version = 1'
                               % (node.path, node.path))
    assert r['msg'].endswith('or repair the file by hand.')
    assert node.read(mode='rb') == before


def test_a_version_3_baseline_is_refused_on_a_containerd_1_node(tmp_path, capsys):
    node = Node(tmp_path, capsys, text='v3_default.toml')
    c21 = stub_containerd(tmp_path, version_out='containerd github.com/containerd/containerd/v2 v2.1.9 x')
    node.run(containerd_bin=c21)
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore', containerd_bin='/usr/bin/containerd', expect_fail=True)
    assert r['msg'].startswith('refusing to restore %s: with the baseline\'s files in place the config would not '
                               'load.' % node.path)
    assert 'version = 3' in r['msg'] and r['check_errors']
    assert node.read().endswith('# edited\n')


def test_a_ledger_copy_that_is_not_json_is_put_back_as_it_is():
    assert ledger_for_restore(b'{"records": [', 'abc') == b'{"records": ['
    assert ledger_for_restore(None, 'abc') is None


def test_a_symbolic_mode_is_applied_after_the_restore(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    os.chmod(node.path, 0o644)
    node.run()
    r = node.run(state='restore', mode='a+x')
    assert r['changed'] and r['restored'] == [node.path] and _mode(node.path) == 0o755  # as mode: '0755' would
    # the symbolic mode applies to the mode the restore puts back: a second run and its check mode change nothing
    assert not node.run(state='restore', mode='a+x', _ansible_check_mode=True)['changed']
    again = node.run(state='restore', mode='a+x')
    assert not again['changed'] and _mode(node.path) == 0o755, again


def _owned_dropin(node, name, ledger=None, kind='file', age=60):
    """A drop-in a nodeguard owner wrote (its own ledger holds a file record), newer than the baseline
    (age seconds after the store was made; negative: older)."""
    path = node.write('version = 2\n', os.path.join(node.etc, 'conf.d', name))
    lpath = ledger_path_for(node.state_dir, path)
    os.makedirs(os.path.dirname(lpath), exist_ok=True)
    with open(lpath, 'w') as f:
        f.write(ledger if ledger is not None else json.dumps(
            dict(format=1, config=path, records=[dict(kind=kind, owner='coco', path=[], seq=1)])))
    if age is not None:
        when = os.stat(node.store).st_mtime + age
        os.utime(path, (when, when))
    return path


def _imports_conf_d(node):
    os.makedirs(os.path.join(node.etc, 'conf.d'), exist_ok=True)
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % node.etc))


def test_a_dropin_whose_own_ledger_is_damaged_is_kept_and_the_next_one_still_goes(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run()
    _imports_conf_d(node)
    kept = _owned_dropin(node, '10-damaged.toml', ledger='{"format": 1, "records": [')
    gone = _owned_dropin(node, '20-coco.toml')
    r = node.run(state='restore')
    assert r['removed_files'] == [gone] and not os.path.exists(gone) and os.path.exists(kept)
    assert node.read() == good


@pytest.mark.parametrize('broken', ['folder', 'loop'])
def test_a_current_tree_that_cannot_be_read_removes_nothing_and_the_restore_goes_on(tmp_path, capsys, broken):
    # a baseline taken without its imports reads only config.toml; the drop-ins now are not readable
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run(include_imports=False)
    _imports_conf_d(node)
    owned = _owned_dropin(node, '20-coco.toml')
    bad = os.path.join(node.etc, 'conf.d', '10-bad.toml')
    if broken == 'folder':
        os.mkdir(bad)
    else:
        os.symlink(bad, bad)
    r = node.run(state='restore')
    assert r['changed'] and r['removed_files'] == [] and os.path.exists(owned)
    assert node.read() == good


def test_a_restore_waits_for_the_configs_lock(tmp_path, capsys):
    import fcntl
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import lock_path_for
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read() + '# edited\n')
    fd = os.open(lock_path_for(node.path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = node.run(state='restore', lock_timeout=0.3, expect_fail=True)
    finally:
        os.close(fd)
    assert lock_path_for(node.path) in r['msg']
    assert node.read().endswith('# edited\n')


BROKEN_DEFAULT = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "crun"\n'


def test_a_broken_baseline_is_refused_even_when_the_files_already_match(tmp_path, capsys):
    # the default names a runtime nobody defines: containerd's CRI would not start; the file is the
    # baseline's already, and the restore still says so (in check mode too) instead of "nothing to do"
    node = Node(tmp_path, capsys, text=BROKEN_DEFAULT)
    hand_made_baseline(node, BROKEN_DEFAULT.encode('utf-8'))
    for check in (True, False):
        r = node.run(state='restore', check=check, expect_fail=True)
        assert r['msg'].startswith('refusing to restore %s: with the baseline\'s files in place the config would '
                                   'not load.' % node.path)
        assert 'crun' in r['msg']


def test_a_dropin_that_is_a_link_is_restored_through_the_link(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    target = node.write('version = 2\n[metrics]\n  grpc_histogram = true\n', os.path.join(node.tmp, 'shared.toml'))
    link = os.path.join(conf_d, '10-shared.toml')
    os.symlink(target, link)
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    good = node.read(target)
    node.run()
    node.write(good.replace('true', 'false'), target)
    r = node.run(state='restore')
    assert r['restored'] == [target]
    assert os.path.islink(link) and os.readlink(link) == target and node.read(target) == good


def test_diff_mode_shows_each_file_before_and_after(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    _conf_d, dropin = _tree_with_a_dropin(node)
    good, dropin_text = node.read(), node.read(dropin)
    node.run()
    node.write(good + '# edited\n')
    os.unlink(dropin)
    r = node.run(state='restore', diff=True)
    by_after = dict((d['after_header'], d) for d in r['diff'])
    assert by_after['%s (baseline)' % node.path] == dict(
        before=good + '# edited\n', after=good, before_header='%s (before)' % node.path,
        after_header='%s (baseline)' % node.path)
    assert by_after['%s (baseline)' % dropin] == dict(
        before='', after=dropin_text, before_header='%s (absent)' % dropin, after_header='%s (baseline)' % dropin)


def _in_sync_ledger(node):
    import hashlib
    lpath = ledger_path_for(node.state_dir, node.path)
    os.makedirs(os.path.dirname(lpath), exist_ok=True)
    raw = json.dumps(dict(format=1, config=node.path, config_sha256=hashlib.sha256(node.read(mode='rb')).hexdigest(),
                          records=[])).encode('utf-8')
    with open(lpath, 'wb') as f:
        f.write(raw)
    return lpath, raw


def test_a_ledger_that_already_matches_is_left_alone(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    lpath, raw = _in_sync_ledger(node)
    node.run()
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore')
    assert r['changed'] and r['ledger'] is None and r['restored'] == [node.path]
    with open(lpath, 'rb') as f:
        assert f.read() == raw
    again = node.run(state='restore')
    assert not again['changed'] and again['ledger'] is None and 'diff' not in again


def test_a_ledger_written_since_a_baseline_without_one_is_removed(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    lpath, _raw = _in_sync_ledger(node)
    r = node.run(state='restore')
    assert r['changed'] and r['ledger'] == 'removed' and r['restored'] == []
    assert not os.path.exists(lpath)


def test_a_dropin_imported_now_but_not_in_the_baseline_is_named_and_left(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    conf_d, _dropin = _tree_with_a_dropin(node)
    good = node.read()
    node.run()
    # an owner's drop-in written since: the restored config.toml still imports it, so it stays
    extra = _owned_dropin(node, '20-extra.toml')
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore')
    assert r['restored'] == [node.path] and r['removed_files'] == [] and os.path.exists(extra)
    assert node.read() == good
    assert ("%s is imported by %s (entry %r) but was not in baseline default; it was left as it is and containerd "
            "will load it." % (extra, node.path, '%s/*.toml' % conf_d)) in r['warnings']


def test_only_a_newer_dropin_whose_own_ledger_names_a_writer_goes(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run()
    _imports_conf_d(node)
    older = _owned_dropin(node, '10-adopted.toml', age=-3600)        # on disk before the baseline
    setting = _owned_dropin(node, '20-setting.toml', kind='setting')  # a record, but not of the file
    written = _owned_dropin(node, '30-written.toml')
    r = node.run(state='restore')
    assert r['removed_files'] == [written] and not os.path.exists(written)
    assert os.path.exists(older) and os.path.exists(setting) and node.read() == good
    # backup: false (the default) leaves no copy of what went
    assert 'backup_files' not in r and [n for n in os.listdir(os.path.dirname(written)) if n.startswith('30-')] == []


def test_an_owners_dropin_the_baseline_holds_is_put_back_not_removed(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    _imports_conf_d(node)
    dropin = _owned_dropin(node, '10-coco.toml', age=None)
    text = node.read(dropin)
    node.run()
    node.write(text + '# changed by its owner\n', dropin)
    os.utime(dropin, (os.stat(node.store).st_mtime + 60,) * 2)
    r = node.run(state='restore')
    assert r['restored'] == [dropin] and r['removed_files'] == [] and node.read(dropin) == text


def test_an_owners_dropin_that_is_a_link_is_never_removed(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    _imports_conf_d(node)
    target = _owned_dropin(node, '10-coco.toml')
    os.rename(target, os.path.join(node.tmp, 'coco.toml'))
    os.symlink(os.path.join(node.tmp, 'coco.toml'), target)
    r = node.run(state='restore')
    assert r['removed_files'] == [] and os.path.islink(target)


def test_the_restored_tree_is_judged_by_the_nodes_containerd(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path)
    node.run()
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore', containerd_bin=binary, validate='auto')
    assert r['validated']['checked'] == ['built-in checks', 'config dump']


# validate: auto, and a validate command (which does not replace the config dump)
@pytest.mark.parametrize('validate', ['auto', '/bin/true %s'])
def test_a_baseline_the_nodes_containerd_cannot_dump_is_refused(tmp_path, capsys, validate):
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read() + '# edited\n')
    binary = os.path.join(node.tmp, 'containerd')
    with open(binary, 'w') as f:
        f.write('#!/bin/sh\nif [ "$1" = "--version" ]; then echo containerd x v1.6.99 y; exit 0; fi\n'
                'echo "failed to load TOML: boom" >&2\nexit 1\n')
    os.chmod(binary, 0o755)
    r = node.run(state='restore', containerd_bin=binary, validate=validate, expect_fail=True)
    assert 'config dump' in r['msg'] and 'boom' in r['msg'] and node.read().endswith('# edited\n')


def test_bytes_put_back_keep_the_owner_the_baseline_recorded(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    os.chown(node.path, 4242, 4343)
    good = node.read()
    node.run()
    os.unlink(node.path)
    node.write(good + '# rewritten by root\n')
    assert os.stat(node.path).st_uid == 0
    r = node.run(state='restore')
    assert r['restored'] == [node.path] and node.read() == good
    st = os.stat(node.path)
    assert (st.st_uid, st.st_gid) == (4242, 4343)


def test_backups_are_made_of_what_is_replaced_or_removed_and_not_of_what_is_created(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    dropin = node.write('version = 2\n[metrics]\n  grpc_histogram = true\n', os.path.join(conf_d, '10-metrics.toml'))
    good = node.read()
    node.write(good.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % dropin))
    node.run()
    # since: an owner's drop-in imported too, the metrics drop-in deleted
    gone = _owned_dropin(node, '30-written.toml')
    node.write(node.read().replace('imports = ["%s"]' % dropin, 'imports = ["%s", "%s"]' % (dropin, gone)))
    os.unlink(dropin)
    r = node.run(state='restore', backup=True)
    assert sorted(r['restored']) == sorted([node.path, dropin]) and r['removed_files'] == [gone]
    (config_backup,) = [b for b in r['backup_files'] if b.startswith(node.path + '.')]
    (gone_backup,) = [b for b in r['backup_files'] if b.startswith(gone + '.')]
    assert r['backup_file'] == config_backup and len(r['backup_files']) == 2   # the drop-in was created: none
    assert gone in node.read(config_backup) and node.read(gone_backup) == 'version = 2\n'


def test_a_file_owned_by_root_stays_roots_and_an_owner_alone_is_put_back(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run()
    node.write(good + '# edited\n')
    node.run(state='restore')
    st = os.stat(node.path)
    assert (st.st_uid, st.st_gid) == (0, 0) and node.read() == good
    os.chown(node.path, 4242, 0)   # the user only
    r = node.run(state='restore')
    assert r['changed'] and os.stat(node.path).st_uid == 0


def test_a_baseline_of_a_missing_config_has_nothing_to_restore(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=None)
    taken = node.run()
    node.write('v2_kubeadm.toml')
    r = node.run(state='restore', expect_fail=True)
    assert r['msg'] == ('baseline %s recorded that %s did not exist when it was taken, so there is nothing to '
                        'restore. Nothing was written. Fix: take a snapshot of a working config (overwrite: true).'
                        % (taken['snapshot'], node.path))


def test_a_writer_that_ignores_the_lock_makes_the_restore_start_over_on_its_content(tmp_path, capsys, monkeypatch):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline import restore as _baseline_restore
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run()
    node.write(good + '# edited\n')
    real_check = _baseline_restore.RestoreTransaction.check
    calls = []

    def check_then_someone_writes(self):
        real_check(self)
        calls.append(1)
        if len(calls) == 1:   # between open and commit, once
            node.write(good + '# written by a tool that takes no lock\n')

    monkeypatch.setattr(_baseline_restore.RestoreTransaction, 'check', check_then_someone_writes)
    r = node.run(state='restore')
    assert len(calls) == 2 and r['changed'] and node.read() == good


def test_a_dropin_last_written_when_the_baseline_was_taken_is_not_newer_and_stays(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    taken = node.run()['snapshot']
    _imports_conf_d(node)
    same_time = _owned_dropin(node, '10-coco.toml', age=None)
    at = os.stat(taken).st_mtime_ns
    os.utime(same_time, ns=(at, at))
    r = node.run(state='restore')
    assert r['removed_files'] == [] and os.path.exists(same_time)


def test_validate_none_asks_containerd_nothing_about_the_restored_tree(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore', containerd_bin=stub_containerd(tmp_path), validate='none')
    assert r['validated']['checked'] == ['built-in checks']
    assert any(n.startswith('validate: none') for n in r['validated']['notes'])


def test_a_restore_says_what_containerd_ran_before_it_and_only_of_a_config_it_could_read(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    good = node.read()
    node.run()
    node.write(good.replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    r = node.run(state='restore')
    (d,) = r['effective_drift']
    assert d['key'] == 'cri.runtimes.runc' and d['change'] == 'changed' and node.read() == good
    # a config that lost its version line cannot be read as containerd would: no effective drift, still restored
    node.write(good.replace('version = 2\n', ''))
    r = node.run(state='restore')
    assert 'effective_drift' not in r and r['restored'] == [node.path] and node.read() == good


def test_a_symbolic_mode_that_is_not_valid_is_refused_naming_the_option_and_nothing_is_written(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read() + '# edited\n')
    r = node.run(state='restore', mode='a+q', expect_fail=True)
    assert r['msg'].startswith('mode: ') and 'Nothing was written' in r['msg'] and 'u=rw,g=r,o=r' in r['msg'], r
    assert node.read().endswith('# edited\n')


# ------------------------------------------------------------------ restore: file attributes in check mode
def _flags(path):
    return subprocess.check_output(['lsattr', '-d', path]).decode().split()[0]


def test_check_mode_restore_says_it_would_set_a_file_attribute_as_the_real_run_does(tmp_path, capsys):
    # the file is the baseline's byte for byte: only its attributes differ (chattr +A, which the file's owner
    # may set), and check mode must predict the real run's change
    scratch = tmp_path / 'scratch'
    scratch.write_text('x')
    if subprocess.call(['chattr', '+A', str(scratch)], stderr=subprocess.DEVNULL):
        pytest.skip('the filesystem of %s has no attribute A' % tmp_path)
    node = Node(tmp_path, capsys)
    node.run()
    preview = node.run(state='restore', check=True, attributes='+A')
    assert preview['changed'] is True and 'A' not in _flags(node.path)
    real = node.run(state='restore', attributes='+A')
    assert real['changed'] is True and 'A' in _flags(node.path)
    # nothing left to change: check mode says so
    assert node.run(state='restore', check=True)['changed'] is False
