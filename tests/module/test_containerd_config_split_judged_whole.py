# -*- coding: utf-8 -*-
"""containerd_config on a tree whose drop-in holds the whole CRI table (NVIDIA's toolkit 1.18+ on
containerd 1.6): a call whose settings make its own new runtime the default goes to that drop-in as one
write, judged whole; a set refused as a whole writes nothing, in check mode and in the run alike."""

import os

import pytest

from helpers.common import CONTAINERD_1, read
from helpers.trees import V2_IMPORTING_MAIN

DROPIN = '''version = 2

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]

    [plugins."io.containerd.grpc.v1.cri".containerd]
      default_runtime_name = "nvidia"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
          runtime_type = "io.containerd.runc.v2"
'''
KATA = [dict(name='kata', runtime_type='io.containerd.kata.v2')]


@pytest.fixture
def nvidia_tree(config, workdir):
    confd = os.path.join(workdir, 'etc', 'conf.d')
    os.makedirs(confd)
    dropin = os.path.join(confd, '99-nvidia.toml')
    with open(dropin, 'w') as f:
        f.write(DROPIN)
    return config(V2_IMPORTING_MAIN % (confd + '/*.toml')), dropin


def _settings(default):
    return [dict(key='images.disable_snapshot_annotations', value=False),
            dict(key='cri.default_runtime_name', value=default)]


def test_a_new_default_runtime_and_its_table_go_to_the_drop_in_in_one_write(run_module, nvidia_tree):
    path, dropin = nvidia_tree
    args = dict(path=path, owner='coco', containerd_bin=CONTAINERD_1, settings=_settings('kata'), runtimes=KATA)
    preview = run_module('containerd_config', check=True, **args)
    assert preview['changed'] and read(dropin) == DROPIN
    res = run_module('containerd_config', **args)
    assert res['changed'] and res['file'] == dropin and res['validated'] == 'config dump'
    text = read(dropin)
    assert 'default_runtime_name = "kata"' in text and 'runtimes.kata]' in text
    assert 'disable_snapshot_annotations = false' in text
    assert not run_module('containerd_config', **args)['changed']
    gone = run_module('containerd_config', state='absent', **args)
    assert gone['changed'] and read(dropin) == DROPIN


@pytest.mark.parametrize('check', [True, False], ids=['check mode', 'run'])
def test_a_set_refused_as_a_whole_writes_none_of_its_parts(run_module, nvidia_tree, check):
    path, dropin = nvidia_tree
    main = read(path)
    res = run_module('containerd_config', check=check, expect_fail=True, path=path, owner='coco',
                     containerd_bin=CONTAINERD_1, settings=_settings('nope'))
    assert "default_runtime_name is 'nope'" in res['msg'] and 'Already written' not in res['msg'], res['msg']
    assert read(dropin) == DROPIN and read(path) == main
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger'))
