# -*- coding: utf-8 -*-
"""A drop-in that imports a file that is gone: containerd_imports names it and the fix that removes it.

containerd refuses to start on such a tree whichever file holds the entry.
containerd_imports edits the imports of one file, config.toml unless
``edit_in`` names a drop-in: asked to prune or remove an entry that a drop-in
holds, it fails naming that drop-in and the call that works, and that call
leaves a tree the real containerd 1.6 loads.
"""

import os

from helpers.common import CONTAINERD_1, config_dump, read
from helpers.trees import V2_IMPORTING_MAIN

NYDUS = '''version = 2
imports = ["%s", "%s"]

[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''


def tree(workdir):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    path = os.path.join(etc, 'config.toml')
    dropin = os.path.join(etc, 'conf.d', '50-nydus.toml')
    gone = os.path.join(etc, 'gone.toml')
    with open(path, 'w') as f:
        f.write(V2_IMPORTING_MAIN % (etc + '/conf.d/*.toml'))
    with open(dropin, 'w') as f:
        f.write(NYDUS % (gone, gone))
    return path, dropin, gone


def test_a_dangling_import_of_a_dropin_is_reported_and_its_named_fix_removes_it(run_module, workdir):
    path, dropin, gone = tree(workdir)
    rc, _out, err = config_dump(path, CONTAINERD_1)
    assert rc != 0 and gone in err
    texts = (read(path), read(dropin))
    args = dict(path=path, containerd_bin=CONTAINERD_1)

    # a run that changes nothing says where the entry is
    res = run_module('containerd_imports', imports=[], **args)
    assert not res['changed'] and res['missing'] == [gone]
    assert res['missing_in'] == [dict(file=dropin, entry=gone)]
    assert any(dropin in w and 'edit_in: %s' % dropin in w for w in res['warnings'])

    # asked to prune it, or to remove it, the task fails naming the drop-in and the call that works
    for extra in (dict(prune_missing=True), dict(imports=[gone], state='absent')):
        call = dict(dict(imports=[], **args), **extra)
        res = run_module('containerd_imports', expect_fail=True, **call)
        assert dropin in res['msg'] and 'edit_in: %s' % dropin in res['msg'] and 'Nothing was written' in res['msg']
        assert res['missing_in'] == [dict(file=dropin, entry=gone)]
        assert (read(path), read(dropin)) == texts

    # another change of config.toml is refused by the check, which names the same fix
    other = os.path.join(os.path.dirname(path), 'other.toml')
    with open(other, 'w') as f:
        f.write('version = 2\n')
    res = run_module('containerd_imports', imports=[other], expect_fail=True, **args)
    assert 'edit_in: %s' % dropin in res['msg'] and (read(path), read(dropin)) == texts

    # the named fix
    res = run_module('containerd_imports', imports=[], prune_missing=True, edit_in=dropin, **args)
    assert res['changed'] and res['file'] == dropin and res['pruned'] == [gone] and res['missing'] == []
    assert read(path) == texts[0]
    rc, out, err = config_dump(path, CONTAINERD_1)
    assert rc == 0 and dropin in out, err[-2000:]
    again = run_module('containerd_imports', imports=[], prune_missing=True, **args)
    assert not again['changed'] and again['missing'] == [] and again['missing_in'] == []
