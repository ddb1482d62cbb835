# -*- coding: utf-8 -*-
"""containerd_config has none of the single modules' escape hatches: its edits
run with containerd_imports' prune_missing and allow_plugin_override off and
containerd_runtime's force off, whatever the call holds.
"""

import os

from helpers.common import binary_of, read

KATA = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
        '  runtime_type = "io.containerd.kata.v2"\n')
RUNC = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'


def test_a_dangling_import_someone_else_left_is_not_pruned(run_module, config):
    path = config('v2_debian_stock.toml')
    etc = os.path.dirname(path)
    gone = os.path.join(etc, 'gone.toml')
    with_gone = read(path).replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % gone)
    with open(path, 'w') as f:
        f.write(with_gone)
    nydus = os.path.join(etc, 'nydus.toml')
    with open(nydus, 'w') as f:
        f.write('version = 2\n')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'),
                     imports=[nydus], expect_fail=True)
    # the call does not remove that entry to make the file load: it refuses, naming it
    assert gone in res['msg'] and 'Nothing was written' in res['msg'], res['msg']
    assert read(path) == with_gone


def test_an_import_of_a_file_on_disk_that_replaces_the_cri_table_is_refused_by_the_imports_edit(run_module, config):
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    kata = os.path.join(os.path.dirname(path), 'kata.toml')
    with open(kata, 'w') as f:
        f.write(KATA)
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'),
                     imports=[kata], expect_fail=True)
    assert res['msg'].startswith('%s: refusing to import %s: on containerd 1.' % (path, kata)), res['msg']
    assert res['key'] == 'imports'
    assert read(path, 'rb') == original


def test_a_tree_that_already_replaces_a_plugin_table_is_not_written(run_module, config):
    # ops imported a drop-in carrying the whole CRI table (allow_plugin_override: true), losing cni: as
    # containerd_setting, containerd_config writes nothing more into that tree
    path = config('v2_debian_stock.toml')
    kata = os.path.join(os.path.dirname(path), 'kata.toml')
    with open(kata, 'w') as f:
        f.write(KATA + RUNC)
    run_module('containerd_imports', path=path, owner='ops', imports=[kata], allow_plugin_override=True,
               containerd_bin=binary_of('host'))
    before = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'), expect_fail=True,
                     settings=[dict(key='plugins."io.containerd.internal.v1.opt".path', raw=True, value='/opt/x')])
    assert res['msg'].startswith('refusing to write %s: the new config would not load.' % path), res['msg']
    assert 'cni would be lost' in res['msg']
    assert read(path, 'rb') == before


def test_an_uninstall_never_forces_the_removal_of_another_owner_s_runtime(run_module, config):
    path = config('v2_kubeadm.toml')
    crun = dict(name='crun', runtime_type='io.containerd.runc.v2', options={'BinaryName': '/usr/bin/crun'})
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary_of('host'), runtimes=[crun])
    before = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'), state='absent',
                     runtimes=[dict(name='crun')], expect_fail=True)
    assert 'runtime crun was not added by owner coco (created by: ops)' in res['msg'], res['msg']
    assert read(path, 'rb') == before
