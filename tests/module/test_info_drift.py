# -*- coding: utf-8 -*-
"""containerd_info's drift facts (_info.drift_facts) where test_containerd_info.py's hand edit does not reach:
a change outside the protected keys, and a config.toml that is gone or no longer comparable since the snapshot."""

import os

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_2, read

MOD = 'containerd_info'


def snapshot(run_module, workdir, path, **args):
    store = os.path.join(workdir, 'baselines')
    res = run_module('containerd_baseline', path=path, state='snapshot', store=store, load_test=False,
                     containerd_bin=CONTAINERD_1, **args)
    assert res['changed']
    return store


def test_a_change_outside_the_protected_keys_is_drift_of_the_tree_only(run_module, workdir, config):
    path = config('v2_kubeadm.toml')
    store = snapshot(run_module, workdir, path)
    text = read(path).replace('root = "/var/lib/containerd"', 'root = "/srv/containerd"')
    with open(path, 'w') as f:
        f.write(text)
    drift = run_module(MOD, path=path, containerd_bin=CONTAINERD_1, baseline='default', baseline_store=store)['drift']
    assert drift['drifted'] is True and drift['error'] is None
    assert drift['effective_drift'] == [] and drift['protected_drift'] == []
    assert [c['key'] for c in drift['tree']['changed']] == ['root']


@pytest.mark.parametrize('how', ['removed', 'emptied'])
def test_a_config_that_cannot_be_compared_any_more_has_drifted_and_says_why(run_module, workdir, config, how):
    """Gone, or emptied (containerd would read it as version 1): drifted, with the reason and no effective view."""
    path = config('v2_kubeadm.toml')
    store = snapshot(run_module, workdir, path)
    if how == 'removed':
        os.unlink(path)
    else:
        open(path, 'w').close()
    res = run_module(MOD, path=path, containerd_bin=CONTAINERD_1, baseline='default', baseline_store=store)
    drift = res['drift']
    assert drift['drifted'] is True and drift['error'] and path in drift['error']
    assert drift['effective'] is None and drift['effective_drift'] is None


def test_the_same_files_run_by_another_containerd_have_drifted_in_effect_only(run_module, workdir, config):
    """containerd 1.6 at the snapshot: the drop-in's CRI table replaced config.toml's (no runc table);
    containerd 2.1 now deep-merges the same files: config.toml's runc is back. No file changed."""
    conf_d = os.path.join(workdir, 'etc', 'conf.d')
    os.makedirs(conf_d)
    with open(os.path.join(conf_d, 'cdi.toml'), 'w') as f:
        f.write('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')
    path = config('version = 2\nimports = ["%s/*.toml"]\n'
                  '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                  'runtime_type = "io.containerd.runc.v2"\n'
                  '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nSystemdCgroup = true\n'
                  % conf_d)
    store = snapshot(run_module, workdir, path, allow_broken=True)  # 1.6 loses runc: nodeguard calls it broken
    drift = run_module(MOD, path=path, containerd_bin=CONTAINERD_2, baseline='default', baseline_store=store)['drift']
    assert not has_tree_drift(drift['tree']) and drift['protected_drift'] == []
    assert [e['key'] for e in drift['effective_drift']] == ['cri.runtimes.runc'] and drift['drifted'] is True


def has_tree_drift(tree):
    return any(tree.get(k) for k in ('added', 'removed', 'changed')) or any((tree.get('files') or {}).values())
