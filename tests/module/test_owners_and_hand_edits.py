# -*- coding: utf-8 -*-
"""Ownership across owners and hand edits, through the modules.

1. An owner's undo never overwrites a value someone changed since: the
   operator's value stays, with a warning.
2. A second owner's edits to a runtime another owner created: B's uninstall
   gives back A's bytes, A's then the original.
3. Record order after owners come and go on one key: the original comes back
   whatever the order, also when a record number could be reused.

Every file is judged by the real containerd (1.6 for version 2, 2.1 for
version 3) and compared byte for byte.
"""

import json
import os

import pytest
import tomlkit

from helpers.common import CONTAINERD_17, assert_containerd_accepts, read

V2_IMAGES = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')
V3_IMAGES = ('plugins', 'io.containerd.cri.v1.images')
RUNTIMES = {'v2_kubeadm.toml': ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes'),
            'v3_default.toml': ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes')}
IMAGES = {'v2_kubeadm.toml': V2_IMAGES, 'v3_default.toml': V3_IMAGES}
FIXTURES = sorted(RUNTIMES)


def value_at(path, where):
    cur = tomlkit.parse(read(path)).unwrap()
    for part in where:
        if not isinstance(cur, dict) or part not in cur:
            return None
        cur = cur[part]
    return cur


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def hand_edit(path, old, new):
    """What an operator does with an editor: one line changed, nothing else."""
    text = read(path)
    assert text.count(old) == 1, (old, text)
    write(path, text.replace(old, new))


def ledger_records(state_dir):
    folder = os.path.join(state_dir, 'ledger')
    out = []
    for name in os.listdir(folder):
        with open(os.path.join(folder, name)) as f:
            out.extend(json.load(f)['records'])
    return out


def owned(state_dir):
    """Records that still say an owner changed something ('released' only marks an undo already done)."""
    return [r for r in ledger_records(state_dir) if r['kind'] != 'released']


def snapshotter_line(fixture, value):
    quote = "'" if fixture.startswith('v3') else '"'
    return 'snapshotter = %s%s%s' % (quote, value, quote)


# ------------------------------------------------------------------ an undo never overwrites a value changed since
@pytest.mark.parametrize('fixture', FIXTURES)
def test_undo_keeps_a_value_the_operator_changed_since(run_module, config, fixture):
    path = config(fixture)
    run_module('containerd_setting', path=path, key='images.snapshotter', value='nydus', owner='coco')
    assert value_at(path, IMAGES[fixture] + ('snapshotter',)) == 'nydus'
    hand_edit(path, snapshotter_line(fixture, 'nydus'), snapshotter_line(fixture, 'native'))
    edited = read(path, 'rb')

    res = run_module('containerd_setting', path=path, key='images.snapshotter', owner='coco', state='absent')
    # the operator's value stays, the file is not touched, and the owner is told why
    assert read(path, 'rb') == edited
    assert value_at(path, IMAGES[fixture] + ('snapshotter',)) == 'native'
    assert not res['changed'] and res['restored'] == []
    warned = [w for w in res['warnings'] if 'someone else changed it since' in w]
    assert len(warned) == 1 and 'snapshotter' in warned[0] and 'coco' in warned[0]
    # and the owner's record is gone: a second uninstall has nothing to do
    assert [r for r in ledger_records(run_module.state_dir) if r['owner'] == 'coco'] == []
    again = run_module('containerd_setting', path=path, key='images.snapshotter', owner='coco', state='absent')
    assert not again['changed']
    assert [w for w in again['warnings'] if 'no ledger record' not in w] == []
    assert read(path, 'rb') == edited
    assert_containerd_accepts(path)


@pytest.mark.parametrize('fixture', FIXTURES)
def test_undo_of_a_runc_option_keeps_the_operators_value(run_module, config, fixture):
    """The same on a runtime nobody created: the toolkit's BinaryName changed by hand."""
    path = config(fixture)
    quote = "'" if fixture.startswith('v3') else '"'
    run_module('containerd_runtime', path=path, name='runc', owner='gpu',
               options={'BinaryName': '/usr/bin/nvidia-container-runtime'})
    line = 'BinaryName = %s/usr/bin/nvidia-container-runtime%s' % (quote, quote)
    hand_edit(path, line, 'BinaryName = %s/opt/ops/runc-wrapper%s' % (quote, quote))
    edited = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='runc', owner='gpu', state='absent')
    assert read(path, 'rb') == edited
    assert value_at(path, RUNTIMES[fixture] + ('runc', 'options', 'BinaryName')) == '/opt/ops/runc-wrapper'
    assert len(res['kept']) == 1 and res['kept'][0].endswith('runc.options.BinaryName'), res['kept']
    assert any('someone else changed it since' in w and 'BinaryName' in w for w in res['warnings'])
    assert_containerd_accepts(path)
    assert [r for r in ledger_records(run_module.state_dir) if r['owner'] == 'gpu' and r['kind'] != 'released'] == []


@pytest.mark.parametrize('fixture', FIXTURES)
def test_a_hand_edit_that_only_changes_quoting_is_not_a_change(run_module, config, fixture):
    """Same value, other quotes: still the owner's value, so the undo restores the original."""
    path = config(fixture)
    original = read(path, 'rb')
    run_module('containerd_setting', path=path, key='images.snapshotter', value='nydus', owner='coco')
    line = snapshotter_line(fixture, 'nydus')
    other = line.replace("'", '"') if "'" in line else line.replace('"', "'")
    hand_edit(path, line, other)
    res = run_module('containerd_setting', path=path, key='images.snapshotter', owner='coco', state='absent')
    assert res['changed'] and res['warnings'] == []
    assert read(path, 'rb') == original


# ------------------------------------------------------------------ a second owner on a runtime another owner created
@pytest.mark.parametrize('fixture', FIXTURES)
def test_second_owner_on_a_runtime_another_owner_created(run_module, config, fixture):
    path = config(fixture)
    original = read(path, 'rb')
    kata = RUNTIMES[fixture] + ('kata',)
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', inherit='none',
                     runtime_type='io.containerd.kata.v2',
                     options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration.toml'})
    assert res['created']
    after_a = read(path, 'rb')
    # B changes a key A wrote, adds one A did not, and adds an option
    res = run_module('containerd_runtime', path=path, name='kata', owner='ops', runtime_type='io.containerd.kata-qemu.v2',
                     settings={'privileged_without_host_devices': True}, options={'ConfigPath': '/etc/kata/ops.toml'})
    assert res['changed'] and not res['created']
    assert value_at(path, kata + ('runtime_type',)) == 'io.containerd.kata-qemu.v2'
    assert value_at(path, kata + ('privileged_without_host_devices',)) is True
    assert value_at(path, kata + ('options', 'ConfigPath')) == '/etc/kata/ops.toml'
    assert_containerd_accepts(path)
    # B cannot delete A's runtime, it only undoes its own keys
    res = run_module('containerd_runtime', path=path, name='kata', owner='ops', state='absent')
    assert res['changed'] and not res['removed'] and res['warnings'] == []
    assert read(path, 'rb') == after_a
    # a second uninstall of B is a no-op
    res = run_module('containerd_runtime', path=path, name='kata', owner='ops', state='absent')
    assert not res['changed'] and read(path, 'rb') == after_a
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', state='absent')
    assert res['removed']
    assert read(path, 'rb') == original
    assert owned(run_module.state_dir) == []
    assert_containerd_accepts(path)


@pytest.mark.parametrize('fixture', FIXTURES)
def test_creator_leaving_first_removes_its_runtime_and_says_whose_keys_go(run_module, config, fixture):
    path = config(fixture)
    original = read(path, 'rb')
    run_module('containerd_runtime', path=path, name='kata', owner='coco', inherit='none',
               runtime_type='io.containerd.kata.v2')
    run_module('containerd_runtime', path=path, name='kata', owner='ops', settings={'privileged_without_host_devices': True})
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', state='absent')
    assert res['removed']
    assert any('ops changed' in w and 'privileged_without_host_devices' in w and 'coco created' in w
               for w in res['warnings'])
    assert read(path, 'rb') == original
    # nothing of ops' is left to undo, and its uninstall does not fail or touch the file
    assert owned(run_module.state_dir) == []
    res = run_module('containerd_runtime', path=path, name='kata', owner='ops', state='absent')
    assert not res['changed'] and read(path, 'rb') == original


# ------------------------------------------------------------------ record order after owners come and go
STEPS = [('a', 'nydus'), ('b', 'native'), ('a', None), ('c', 'zfs'), ('b', None), ('c', None)]


@pytest.mark.parametrize('fixture', FIXTURES)
def test_owners_come_and_go_on_one_key(run_module, config, fixture):
    """a sets, b sets, a leaves, c sets, b leaves, c leaves: the original bytes come back.

    After a leaves, c's record must be numbered above b's: were a number reused,
    b's leaving would take c's value for a hand edit and lose the original.
    """
    path = config(fixture)
    original = read(path, 'rb')
    where = IMAGES[fixture] + ('snapshotter',)
    expected = ['nydus', 'native', 'native', 'zfs', 'zfs', 'overlayfs']
    for (owner, value), want in zip(STEPS, expected):
        if value is None:
            res = run_module('containerd_setting', path=path, key='images.snapshotter', owner=owner, state='absent')
        else:
            res = run_module('containerd_setting', path=path, key='images.snapshotter', value=value, owner=owner)
        assert res['warnings'] == [], (owner, value, res['warnings'])
        assert value_at(path, where) == want, (owner, value)
        records = ledger_records(run_module.state_dir)
        seqs = [r['seq'] for r in records]
        assert len(seqs) == len(set(seqs)), records
    assert read(path, 'rb') == original
    assert ledger_records(run_module.state_dir) == []
    assert_containerd_accepts(path)


def test_three_owners_on_a_runc_option_any_order(run_module, config):
    """The same stack on a key of a runtime nobody created, leaving in the order they came."""
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    where = RUNTIMES['v2_kubeadm.toml'] + ('runc', 'options', 'BinaryName')
    for owner in ('a', 'b', 'c'):
        run_module('containerd_runtime', path=path, name='runc', owner=owner, options={'BinaryName': '/bin/' + owner})
    assert value_at(path, where) == '/bin/c'
    for owner, left in (('a', '/bin/c'), ('b', '/bin/c'), ('c', None)):
        res = run_module('containerd_runtime', path=path, name='runc', owner=owner, state='absent')
        assert res['warnings'] == []
        assert value_at(path, where) == left
    assert read(path, 'rb') == original


# ------------------------------------------------------------------ two owners of one setting
V2_CRI = 'io.containerd.grpc.v1.cri'


def cri(path, plugin=V2_CRI):
    return tomlkit.parse(read(path)).unwrap().get('plugins', {}).get(plugin, {})


def test_same_value_from_two_owners_survives_the_first_leaving(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu', containerd_bin=CONTAINERD_17)
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='coco', containerd_bin=CONTAINERD_17)
    assert not res['changed']
    run_module('containerd_setting', path=path, key='cri.enable_cdi', owner='gpu', state='absent', containerd_bin=CONTAINERD_17)
    assert cri(path)['enable_cdi'] is True, 'coco still needs enable_cdi'
    run_module('containerd_setting', path=path, key='cri.enable_cdi', owner='coco', state='absent', containerd_bin=CONTAINERD_17)
    assert read(path, 'rb') == original


def test_owner_setting_again_after_another_keeps_the_original(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    key = 'plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads'
    for owner, value in (('a', 1), ('b', 2), ('a', 3)):
        run_module('containerd_setting', path=path, key=key, raw=True, value=value, owner=owner)
    run_module('containerd_setting', path=path, key=key, raw=True, owner='a', state='absent')
    assert cri(path)['max_concurrent_downloads'] == 2, 'b set 2 after a; a leaving gives back b\'s value'
    run_module('containerd_setting', path=path, key=key, raw=True, owner='b', state='absent')
    assert read(path, 'rb') == original
