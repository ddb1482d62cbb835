# -*- coding: utf-8 -*-
"""The baseline's effective values in state: check (_baseline_states.baseline_records, effective_now).

A key the snapshot did not record is read from the baseline's stored files
(a mirror of them: the paths reported are the node's, not the mirror's); the
stored config dump is compared only when the same containerd minor took the
baseline, otherwise nodeguard's model is.  Two containerd versions in one
test are stand-ins (helpers.baseline.stub_containerd): --version
is theirs, config dump prints the file.
"""

import os

from helpers.baseline import Node, manifest_of, stub_containerd


def _with_snapshotter(node, name):
    node.write(node.read().replace('snapshotter = "overlayfs"', 'snapshotter = "%s"' % name))


def test_a_key_the_snapshot_did_not_record_is_read_from_the_stored_files(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    m = manifest_of(node.run())   # records the default keys only
    assert 'images.snapshotter' not in [v['key'] for v in m['effective']['values']]
    _with_snapshotter(node, 'native')
    r = node.run(state='check', protect=['images.snapshotter', 'cri.default_runtime_name'], expect_fail=True)
    (d,) = r['effective_drift']
    assert (d['key'], d['change'], d['before'], d['after']) == ('images.snapshotter', 'changed', 'overlayfs', 'native')
    # where the baseline's value came from: the node's config.toml (the mirror's path never shows)
    assert d['before_file'] == node.path and d['file'] == node.path and d['compared'] == 'model'
    assert "the baseline ran 'overlayfs' from %s" % node.path in d['why']


def test_a_key_the_snapshot_did_not_record_is_read_from_the_stored_dump_too(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path)
    node.run(containerd_bin=binary, validate='auto')
    _with_snapshotter(node, 'native')
    r = node.run(state='check', containerd_bin=binary, validate='auto', protect=['images.snapshotter'],
                 expect_fail=True)
    (d,) = r['effective_drift']
    # the stored dump holds the baseline's value: compared on what containerd showed, by the same minor
    assert (d['before'], d['after'], d['compared']) == ('overlayfs', 'native', 'config dump')


def test_the_dump_is_compared_only_against_a_baseline_of_the_same_containerd_minor(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    c17 = stub_containerd(tmp_path, version_out='containerd github.com/containerd/containerd v1.7.99 x')
    os.makedirs(str(tmp_path / 'c16'))
    c16 = stub_containerd(tmp_path / 'c16')
    assert manifest_of(node.run(containerd_bin=c17, validate='auto'))['effective']['containerd'] == [1, 7]
    _with_snapshotter(node, 'native')
    args = dict(state='check', validate='auto', protect=['images.snapshotter'], expect_fail=True)
    (same,) = node.run(containerd_bin=c17, **args)['effective_drift']
    (other,) = node.run(containerd_bin=c16, **args)['effective_drift']
    assert same['compared'] == 'config dump'
    assert other['compared'] == 'model'
    assert 'containerd 1.6 now runs images.snapshotter' in other['why']


def test_a_config_that_appeared_since_a_baseline_without_one_has_no_effective_drift(tmp_path, capsys):
    # the baseline has no config to read effective values from: the drift is the file and its keys
    node = Node(tmp_path, capsys, text=None)
    node.run()
    node.write('v2_kubeadm.toml')
    r = node.run(state='check', expect_fail=True)
    assert r['effective_drift'] == []
    assert r['drift']['files']['added'] == [node.path]
    assert sorted((e['key'], e['change']) for e in r['protected_drift']) == [
        ('cri.default_runtime_name', 'added'), ('cri.runtimes.runc', 'added')]
    assert r['msg'].startswith('protected keys drifted in %s' % node.path)


def test_a_key_the_snapshot_did_not_record_is_read_with_the_containerd_that_took_it(tmp_path, capsys):
    # containerd 2.x merges a drop-in into config.toml's CRI table; 1.x replaces the table with the drop-in's.
    # The baseline was taken on 2.1: its snapshotter was config.toml's; this 1.6 node runs none.
    node = Node(tmp_path, capsys)
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    node.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
               '  runtime_type = "io.containerd.kata.v2"\n', os.path.join(conf_d, '50-kata.toml'))
    c21 = stub_containerd(tmp_path, version_out='containerd github.com/containerd/containerd/v2 v2.1.99 x')
    node.run(containerd_bin=c21)
    r = node.run(state='check', containerd_bin='/usr/bin/containerd', protect=['images.snapshotter'],
                 expect_fail=True)
    (d,) = r['effective_drift']
    assert (d['key'], d['change'], d['before'], d['before_file']) == ('images.snapshotter', 'removed', 'overlayfs',
                                                                      node.path)


def test_a_damaged_dump_copy_does_not_matter_while_every_key_asked_was_recorded(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    m = manifest_of(node.run(containerd_bin=stub_containerd(tmp_path), validate='auto'))
    with open(os.path.join(node.store, 'default', m['id'], 'effective.toml'), 'a') as f:
        f.write('# damaged\n')
    r = node.run(state='check')
    assert r['effective_drift'] == [] and r['problems'] == []
    # a key that was not recorded needs the dump copy: the damage is named
    bad = node.run(state='check', protect=['images.snapshotter'], expect_fail=True)
    assert 'config dump copy in baseline' in bad['msg'] and 'checksum mismatch' in bad['msg']
