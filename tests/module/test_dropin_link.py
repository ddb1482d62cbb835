# -*- coding: utf-8 -*-
"""A drop-in that is a symbolic link (a shared file linked into /etc/containerd/conf.d, say).

nodeguard never writes through a link unless follow: true, drop-ins as for
config.toml: without it the edit is refused and the link stays a link; with
it the target is replaced atomically in its own folder, its ledger is named
after the target, and every reader (release_all, containerd_info's owned,
the uninstall) finds the records there. Real containerd 2.x reads each
result.
"""

import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read
from helpers.trees import CDI_DROPIN, DROPIN_MAIN

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

CDI = [dict(key='cri.enable_cdi', value=True)]


@pytest.fixture
def linked_tree(workdir, config):
    """config.toml importing etc/cdi.toml, a link to shared/cdi.toml (which decides enable_cdi on 2.x)."""
    shared = os.path.join(workdir, 'shared')
    os.makedirs(shared)
    real = os.path.join(shared, 'cdi.toml')
    with open(real, 'w') as f:
        f.write(CDI_DROPIN)
    os.makedirs(os.path.join(workdir, 'etc'), exist_ok=True)
    link = os.path.join(workdir, 'etc', 'cdi.toml')
    os.symlink(real, link)
    return config(DROPIN_MAIN % link), link, real


def test_an_edit_of_a_linked_drop_in_is_refused_without_follow(run_module, linked_tree):
    path, link, real = linked_tree
    before, real_before = read(path, 'rb'), read(real, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary_of('2'), settings=CDI,
                     expect_fail=True)
    assert link in res['msg'] and real in res['msg'] and 'follow: true' in res['msg'], res['msg']
    assert os.path.islink(link) and os.readlink(link) == real
    assert read(path, 'rb') == before and read(real, 'rb') == real_before


def test_follow_writes_the_target_and_every_reader_finds_its_ledger(run_module, linked_tree):
    path, link, real = linked_tree
    binary = binary_of('2')
    original, real_original = read(path, 'rb'), read(real, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, settings=CDI, follow=True)
    assert res['changed'] and os.path.islink(link) and os.readlink(link) == real, 'the link must stay a link'
    assert 'enable_cdi = true' in read(real) and read(path, 'rb') == original
    assert os.path.exists(ledger_path_for(run_module.state_dir, real))
    assert not os.path.exists(ledger_path_for(run_module.state_dir, link))
    assert not [n for n in os.listdir(os.path.dirname(link)) if 'cdi.toml' in n and n != 'cdi.toml'], \
        'the drop-in is locked and written beside its target, not beside the link'
    assert_containerd_accepts(path, binary)

    owned = run_module('containerd_info', path=path, owner='gpu', dump=False, containerd_bin=binary)['owned']
    assert owned['settings'] == ['plugins."io.containerd.cri.v1.runtime".enable_cdi'], owned

    again = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, settings=CDI, follow=True)
    assert not again['changed']

    gone = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, state='absent',
                      release_all=True, follow=True)
    assert gone['changed'] and len(gone['released']['settings']) == 1, gone
    assert os.path.islink(link) and read(real, 'rb') == real_original and read(path, 'rb') == original
