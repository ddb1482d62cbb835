# -*- coding: utf-8 -*-
"""containerd_config baseline: the baseline of the tree taken before the call's first write, once.

The judge is containerd_baseline state=snapshot itself: the same files,
manifest and stored ledger. The snapshot starts the node's containerd on the
tree (its load test), so run these under the heavy lock. A small lock_timeout
makes a config lock taken twice by one run fail fast instead of passing.
"""

import json
import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read
from helpers.trees import DROPIN_MAIN, KATA_DROPIN

NVIDIA = dict(name='nvidia', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})
CRUN = dict(name='crun', options={'BinaryName': '/usr/bin/crun'})


def install(run_module, path, binary, store, runtimes=(NVIDIA,), **extra):
    return run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, runtimes=list(runtimes),
                      baseline=dict(name='default', store=store), lock_timeout=3, **extra)


def fresh_tree(config, workdir, which, text):
    """The containerd binary of which, the config written from text (a fixture's name or the text) and its bytes,
    and a store that is not there yet."""
    binary = binary_of(which)
    path = config(text)
    return binary, path, read(path, 'rb'), os.path.join(workdir, 'baselines')


def snapshot_files(snapshot):
    """Every file of a snapshot folder (relative path -> bytes), manifest.json as JSON without what differs
    between two snapshots of the same tree (the time, the id, the load test's duration)."""
    out = {}
    for root, _dirs, files in os.walk(snapshot):
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, snapshot)] = read(path, 'rb')
    manifest = json.loads(out.pop('manifest.json'))
    for key in ('created', 'created_unix', 'id'):
        manifest.pop(key)
    manifest['effective']['validated']['load_test'].pop('seconds')
    return out, manifest


def test_the_baseline_is_taken_before_the_first_write_then_left_alone(run_module, config, workdir):
    binary, path, original, store = fresh_tree(config, workdir, '1.7', 'v2_kubeadm.toml')
    first = install(run_module, path, binary, store)
    assert first['changed'] and read(path, 'rb') != original
    base = first['baseline']
    assert base['taken'] is True and base['name'] == 'default' and base['store'] == store
    assert base['folder'] == os.path.join(store, 'default') and base['created']
    assert os.path.realpath(os.path.join(base['folder'], 'current')) == base['snapshot']
    # the tree as it was before the call wrote anything
    assert read(os.path.join(base['snapshot'], 'files', '000-config.toml'), 'rb') == original
    taken = sorted(os.listdir(base['folder']))

    again = install(run_module, path, binary, store)
    assert not again['changed'] and again['baseline'] == dict(base, taken=False)
    changed = install(run_module, path, binary, store, runtimes=[NVIDIA, CRUN])
    assert changed['changed'] and changed['baseline'] == dict(base, taken=False)
    assert sorted(os.listdir(base['folder'])) == taken


def test_check_mode_takes_no_baseline_and_says_it_would(run_module, config, workdir):
    binary, path, original, store = fresh_tree(config, workdir, 'host', 'v2_debian_stock.toml')
    preview = install(run_module, path, binary, store, check=True)
    assert preview['changed'] and preview['baseline']['taken'] is True and preview['baseline']['snapshot'] is None
    assert not os.path.exists(store) and read(path, 'rb') == original
    real = install(run_module, path, binary, store)
    assert real['baseline']['taken'] and real['baseline']['snapshot']
    # the baseline exists now: check mode says it is left alone
    later = install(run_module, path, binary, store, runtimes=[NVIDIA, CRUN], check=True)
    assert later['changed'] and later['baseline'] == dict(real['baseline'], taken=False)


def test_a_refused_tree_takes_no_baseline_and_writes_nothing(run_module, config, workdir):
    """A config containerd will not load: containerd_baseline's own refusal, and nothing of the call written."""
    binary, path, original, store = fresh_tree(
        config, workdir, 'host', 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "crun"\n')
    res = install(run_module, path, binary, store, expect_fail=True)
    msg = res['msg']
    assert msg.startswith('baseline default: containerd would not load %s' % path) and 'Nothing was written' in msg
    assert res['key'] == 'baseline' and read(path, 'rb') == original
    assert not os.path.exists(os.path.join(store, 'default', 'current'))
    # the fixes apply from containerd_config: containerd_baseline's own options are named as that module's
    assert msg.endswith(
        'Fix: repair the config first, or put back an older baseline with nodeguard.containerd.containerd_baseline '
        'state=restore (or the playbook playbooks/restore.yml); to record this tree anyway, with its problems, take '
        'the baseline with nodeguard.containerd.containerd_baseline state=snapshot, allow_broken=true (name default, '
        'store %s) before this call, which then leaves it alone.' % store), msg
    assert 'set allow_broken: true' not in msg and 'with state: restore' not in msg
    # the problem is quoted whole, its own fix too (which applies here as well)
    assert "default_runtime_name is 'crun'" in msg and 'Fix: define the runtime, or point default_runtime_name at ' \
        'one of: runc. Nothing was written. Fix: repair the config first' in msg
    # the way the fix says: containerd_baseline takes the broken tree, then the call leaves that baseline alone
    # (here the call itself repairs the tree: it adds the runtime the default names)
    taken = run_module('containerd_baseline', path=path, containerd_bin=binary, name='default', store=store,
                       allow_broken=True)
    assert taken['changed']
    repaired = install(run_module, path, binary, store, runtimes=[CRUN])
    assert repaired['changed'] and repaired['baseline']['taken'] is False
    assert repaired['baseline']['snapshot'] == taken['snapshot']
    assert_containerd_accepts(path, binary)


def test_a_file_that_does_not_parse_takes_no_baseline_with_fixes_that_apply_here(run_module, config, workdir):
    binary, path, original, store = fresh_tree(config, workdir, 'host', 'version = 2\n[plugins\n')
    res = install(run_module, path, binary, store, expect_fail=True)
    msg = res['msg']
    assert msg.startswith('baseline default: ') and path in msg and res['key'] == 'baseline', msg
    assert msg.endswith('so no snapshot was taken. Nothing was written. Fix: repair the config first, or put back '
                        'an older baseline with nodeguard.containerd.containerd_baseline state=restore (or the playbook '
                        'playbooks/restore.yml).'), msg
    assert 'allow_broken' not in msg and read(path, 'rb') == original


@pytest.mark.parametrize('tree,which', [('v2_kubeadm.toml', '1.7'), ('dropin', '2')])
def test_the_baseline_equals_containerd_baseline_s_snapshot(run_module, config, workdir, tree, which):
    """containerd_baseline state=snapshot into one store, containerd_config's baseline into another, of the
    same tree (with another owner's ledger, and a drop-in on 2.x): the same files, manifest and ledger."""
    binary = binary_of(which)
    path = config(DROPIN_MAIN % config(KATA_DROPIN, filename='kata.toml') if tree == 'dropin' else tree)
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary, runtimes=[CRUN])
    theirs = run_module('containerd_baseline', path=path, containerd_bin=binary, name='default',
                        store=os.path.join(workdir, 'by-baseline'))
    ours = install(run_module, path, binary, os.path.join(workdir, 'by-config'))
    assert theirs['changed'] and ours['baseline']['taken']
    files, manifest = snapshot_files(ours['baseline']['snapshot'])
    assert (files, manifest) == snapshot_files(theirs['snapshot'])
    assert manifest['ledger']['in_sync'] and len(manifest['files']) == (2 if tree == 'dropin' else 1)
