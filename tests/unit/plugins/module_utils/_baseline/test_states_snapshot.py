# -*- coding: utf-8 -*-
"""state: snapshot of containerd_baseline (_baseline_states.do_snapshot), in process.

What a snapshot stores and when it takes a new one: check mode, an existing
baseline without overwrite, the same tree again (only pruning), a change of
mode or of include_imports, the ledger's copy and whether it agrees with the
config, the containerd that took it, and the warnings it gives.  The module
tests (tests/module/test_containerd_baseline.py) cover the common paths end
to end; these pin the rules they do not reach.
"""

import hashlib
import json
import os

from helpers.baseline import BROKEN, Node, manifest_of, stub_containerd

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for


def sha(data):
    return hashlib.sha256(data).hexdigest()


def test_check_mode_lists_what_a_new_snapshot_would_store_and_writes_nothing(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    first = node.run()
    node.write('v2_flat.toml')
    preview = node.run(check=True, overwrite=True, protect=['images.snapshotter'])
    assert preview['changed'] is True
    # the current baseline is still the one shown, and nothing new was stored
    assert preview['snapshot'] == first['snapshot'] and node.snapshots() == [os.path.basename(first['snapshot'])]
    assert preview['files'] == [dict(path=node.path, role='config', sha256=sha(node.read(mode='rb')))]
    # the effective values it would record: the protect list, then the default keys
    keys = ['images.snapshotter', 'cri.runtimes.runc', 'cri.default_runtime_name']
    assert [r['key'] for r in preview['effective']] == keys
    assert preview['problems'] == [] and preview['validated']['checked'] == ['built-in checks']


def test_an_existing_baseline_is_kept_when_the_config_changed_and_overwrite_is_false(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    first = node.run()
    node.write('v2_flat.toml')
    again = node.run()
    assert again['changed'] is False and again['snapshot'] == first['snapshot']
    assert again['msg'] == "baseline 'default' exists already (taken %s); overwrite: true replaces it" % (
        first['created'])
    assert node.snapshots() == [os.path.basename(first['snapshot'])]


def test_the_same_tree_again_only_prunes_and_check_mode_prunes_nothing(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write('v2_flat.toml')
    node.run(overwrite=True)
    node.write('v2_kubeadm.toml')
    last = node.run(overwrite=True)
    assert len(node.snapshots()) == 3
    # the config is the current baseline's: no new snapshot; keep: 0 is only a prune
    preview = node.run(check=True, overwrite=True, keep=0)
    assert preview['changed'] is False and 'pruned' not in preview and len(node.snapshots()) == 3
    same = node.run(overwrite=True, keep=0)
    assert same['changed'] is True and same['snapshot'] == last['snapshot']
    assert len(same['pruned']) == 2 and node.snapshots() == [os.path.basename(last['snapshot'])]
    quiet = node.run(overwrite=True, keep=0)
    assert quiet['changed'] is False and quiet['pruned'] == []


def test_a_new_mode_alone_makes_a_new_snapshot_that_records_it(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    os.chmod(node.path, 0o644)
    first = node.run()
    os.chmod(node.path, 0o600)
    second = node.run(overwrite=True)
    assert second['changed'] and second['snapshot'] != first['snapshot']
    assert [f['mode'] for f in second['files']] == ['0600']
    assert second['files'][0]['sha256'] == first['files'][0]['sha256']


def test_switching_include_imports_makes_a_new_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    first = node.run(include_imports=True)
    second = node.run(include_imports=False, overwrite=True)
    assert second['changed'] and second['snapshot'] != first['snapshot']
    assert manifest_of(second)['include_imports'] is False
    assert not node.run(include_imports=False, overwrite=True)['changed']


def _write_ledger(node, config_sha):
    lpath = ledger_path_for(node.state_dir, node.path)
    os.makedirs(os.path.dirname(lpath))
    raw = json.dumps(dict(format=1, config=node.path, config_sha256=config_sha, records=[])).encode('utf-8')
    with open(lpath, 'wb') as f:
        f.write(raw)
    return lpath, raw


def test_the_ledger_is_copied_and_said_to_agree_with_the_config_it_describes(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    lpath, raw = _write_ledger(node, sha(node.read(mode='rb')))
    m = manifest_of(node.run())
    assert m['ledger'] == dict(path=lpath, sha256=sha(raw), in_sync=True, stored='ledger.json')
    with open(os.path.join(node.store, 'default', m['id'], 'ledger.json'), 'rb') as f:
        assert f.read() == raw


def test_a_ledger_of_another_config_state_or_not_json_is_out_of_sync(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    lpath, _raw = _write_ledger(node, sha(b'some other config'))
    first = node.run()
    assert manifest_of(first)['ledger']['in_sync'] is False
    with open(lpath, 'wb') as f:
        f.write(b'{"records": [')
    node.write(node.read() + '# edited\n')
    second = node.run(overwrite=True)
    assert manifest_of(second)['ledger']['in_sync'] is False
    assert manifest_of(second)['ledger']['sha256'] == sha(b'{"records": [')


def test_no_ledger_is_recorded_as_none(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    m = manifest_of(node.run())
    assert m['ledger'] is None
    assert not os.path.exists(os.path.join(node.store, 'default', m['id'], 'ledger.json'))


def test_the_manifest_says_what_was_taken(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(protect=['images.snapshotter'])
    m = manifest_of(r)
    assert m['format'] == 1 and m['name'] == 'default' and m['config'] == node.path
    assert m['config_missing'] is False and m['include_imports'] is True and m['config_version'] == 2
    assert m['broken'] is False and m['problems'] == [] and m['missing_imports'] == [] and m['globs'] == []
    assert m['created'].endswith('Z') and abs(m['created_unix'] - os.stat(r['snapshot']).st_mtime) < 60
    # the effective values: the node's containerd (1.6) and the keys asked for, then the default ones
    assert m['effective']['containerd'] == [1, 6]
    keys = ['images.snapshotter', 'cri.runtimes.runc', 'cri.default_runtime_name']
    assert [v['key'] for v in m['effective']['values']] == keys
    # validate: none asks containerd for no dump: none is stored, and none is said to be missing
    assert 'dump' not in m['effective'] and r['warnings'] == []


def test_the_default_keys_are_recorded_once_when_the_protect_list_names_them(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run(protect=['cri.default_runtime_name', 'images.snapshotter'])
    assert [v['key'] for v in r['effective']] == ['cri.default_runtime_name', 'images.snapshotter',
                                                  'cri.runtimes.runc']


def test_the_containerd_that_took_it_is_its_first_version_word(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path)
    m = manifest_of(node.run(containerd_bin=binary))
    assert m['containerd'] == dict(binary=binary, version='1.6.99',
                                   output='containerd github.com/containerd/containerd v1.6.99 1.6.99+build')
    assert m['effective']['containerd'] == [1, 6]


def test_a_containerd_whose_version_cannot_be_read_is_recorded_without_one(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_rc=1)
    m = manifest_of(node.run(containerd_bin=binary))
    assert m['containerd'] == dict(binary=binary, version=None, output=None)
    assert m['effective']['containerd'] is None


def test_the_config_dump_is_stored_with_the_baseline(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path)
    r = node.run(containerd_bin=binary, validate='auto')
    m = manifest_of(r)
    stored = os.path.join(node.store, 'default', m['id'], 'effective.toml')
    with open(stored, 'rb') as f:
        raw = f.read()
    assert raw == node.read(mode='rb')   # the stand-in dumps the file itself
    assert m['effective']['dump'] == dict(stored='effective.toml', sha256=sha(raw))
    assert not any('holds no effective values' in w for w in r['warnings'])


def test_a_dump_that_cannot_be_read_is_said_and_none_is_stored(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, dump='this is [[ not toml')
    r = node.run(containerd_bin=binary, validate='auto')
    m = manifest_of(r)
    assert 'dump' not in m['effective']
    assert not os.path.exists(os.path.join(node.store, 'default', m['id'], 'effective.toml'))
    (warning,) = [w for w in r['warnings'] if 'holds no effective values' in w]
    assert warning.startswith('%s: the baseline holds no effective values from containerd itself (' % node.path)
    assert 'the config dump could not be read' in warning


def test_a_load_test_that_cannot_run_is_said_and_the_snapshot_is_taken(tmp_path, capsys):
    # the stand-in's --version fails: the load test cannot even start, so it judges nothing
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_rc=1)
    r = node.run(containerd_bin=binary, validate='auto', load_test=True)
    assert r['changed'] and r['problems'] == []
    (note,) = [n for n in r['validated']['notes'] if n.startswith('load test could not run')]
    assert ['%s: %s; the result was judged without it' % (node.path, note)] == [
        w for w in r['warnings'] if 'judged without it' in w]


def test_a_version_3_config_is_no_baseline_for_containerd_1(tmp_path, capsys):
    node = Node(tmp_path, capsys, text='v3_default.toml')
    r = node.run(containerd_bin='/usr/bin/containerd', expect_fail=True)
    assert r['msg'].startswith('containerd would not load %s, so no snapshot was taken' % node.path)
    (problem,) = r['problems']
    assert 'version = 3' in problem and 'Nothing was written' not in problem
    assert not os.path.exists(os.path.join(node.store, 'default', 'current'))


def test_a_version_word_right_after_the_name_is_taken(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_out='containerd 1.7.24 4f03e3d')
    assert manifest_of(node.run(containerd_bin=binary))['containerd']['version'] == '1.7.24'


def test_a_snapshot_waits_for_the_configs_lock_and_stores_nothing(tmp_path, capsys):
    import fcntl
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import lock_path_for
    node = Node(tmp_path, capsys)
    fd = os.open(lock_path_for(node.path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        r = node.run(lock_timeout=0.3, expect_fail=True)
    finally:
        os.close(fd)
    assert lock_path_for(node.path) in r['msg']
    assert not os.path.exists(os.path.join(node.store, 'default', 'current'))


def test_a_config_whose_folder_is_missing_is_recorded_as_missing(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=None)
    node.path = os.path.join(node.tmp, 'nowhere', 'config.toml')
    r = node.run()
    assert r['changed'] and r['config_missing'] and r['files'] == []
    assert r['warnings'] == ["%s does not exist: baseline 'default' records that it was missing" % node.path]
    assert not os.path.exists(os.path.dirname(node.path))


def test_a_new_dropin_makes_a_new_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    first = node.run()
    dropin = node.write('version = 2\n', os.path.join(conf_d, '10-new.toml'))
    second = node.run(overwrite=True)
    assert second['changed'] and second['snapshot'] != first['snapshot']
    assert [f['path'] for f in second['files']] == [node.path, dropin]


def test_a_config_that_is_not_toml_is_no_baseline(tmp_path, capsys):
    node = Node(tmp_path, capsys, text='version = 2\nimports = [ , ]\n')
    r = node.run(expect_fail=True)
    assert 'not valid TOML' in r['msg']
    assert r['msg'].endswith('. A baseline must be a config containerd can load, so no snapshot was taken. Fix: '
                             'repair the file first (or put back an older baseline with state: restore).')
    assert not os.path.exists(os.path.join(node.store, 'default', 'current'))


def test_a_bad_protect_entry_fails_before_containerd_is_asked(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    calls = os.path.join(node.tmp, 'calls')
    binary = os.path.join(node.tmp, 'containerd')
    with open(binary, 'w') as f:
        f.write('#!/bin/sh\necho "$@" >> %s\nif [ "$1" = "--version" ]; then echo containerd x v1.6.99 y; exit 0; fi\n'
                'cat "$2"\n' % calls)
    os.chmod(binary, 0o755)
    r = node.run(containerd_bin=binary, validate='auto', protect=['cri.runtimes.""'], expect_fail=True)
    assert r['msg'] == 'protect entry \'cri.runtimes.""\' is empty.'
    asked = open(calls).read() if os.path.exists(calls) else ''
    assert 'config dump' not in asked


def test_a_broken_config_is_taken_only_with_allow_broken_and_each_problem_is_said(tmp_path, capsys):
    node = Node(tmp_path, capsys, text='version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                                       '  default_runtime_name = "crun"\n')
    refused = node.run(expect_fail=True)
    assert refused['msg'].startswith('containerd would not load %s, so no snapshot was taken' % node.path)
    assert refused['msg'].endswith('to record this tree anyway, with its problems, set allow_broken: true.')
    r = node.run(allow_broken=True)
    assert r['changed'] and r['problems'] and manifest_of(r)['broken'] is True
    assert ["baseline 'default' was taken of a config that would not load (allow_broken: true): %s" % p
            for p in r['problems']] == [w for w in r['warnings'] if w.startswith("baseline 'default' was taken")]


# ------------------------------------------------------------------ snapshot
def test_a_bad_protect_entry_fails_even_when_the_tree_is_the_baselines_already(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    first = node.run()
    r = node.run(overwrite=True, protect=['cri.runtimes.runc', 'a.""'], expect_fail=True)
    assert r['msg'] == 'protect entry \'a.""\' is empty.'
    assert node.snapshots() == [os.path.basename(first['snapshot'])]


def test_a_broken_baseline_warns_once_for_each_of_its_problems(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=BROKEN)
    r = node.run(allow_broken=True)
    assert r['changed'] and len(r['problems']) >= 1 and manifest_of(r)['problems'] == r['problems']
    taken = [w for w in r['warnings'] if w.startswith("baseline 'default' was taken")]
    assert taken == ["baseline 'default' was taken of a config that would not load (allow_broken: true): %s" % p
                     for p in r['problems']]


def test_keep_0_is_allowed_and_keeps_only_the_current_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run(keep=0)
    node.write('v2_flat.toml')
    last = node.run(overwrite=True, keep=0)
    assert last['changed'] and len(last['pruned']) == 1
    assert node.snapshots() == [os.path.basename(last['snapshot'])]


def test_the_version_of_the_containerd_option_is_the_baselines_when_the_binary_does_not_say_it(tmp_path, capsys):
    # the binary cannot tell its version: containerd_version stands in, and the snapshot records it as the
    # containerd that took it (manifest containerd.version stays unknown), so its dump is compared again
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_rc=1)
    args = dict(containerd_bin=binary, containerd_version='1.7', validate='auto')
    m = manifest_of(node.run(**args))
    assert m['containerd']['version'] is None and m['effective']['containerd'] == [1, 7]
    node.write(node.read().replace('snapshotter = "overlayfs"', 'snapshotter = "native"'))
    r = node.run(state='check', protect=['images.snapshotter'], expect_fail=True, **args)
    (d,) = r['effective_drift']
    assert (d['before'], d['after'], d['compared']) == ('overlayfs', 'native', 'config dump')
