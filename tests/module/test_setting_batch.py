# -*- coding: utf-8 -*-
"""containerd_setting's settings option: several keys in one transaction.

The judge is the single-key form, as for containerd_runtime's runtimes: one
call must leave the same bytes and ledger records as one call per key, undo
to the original bytes, and be undone by (or undo) single calls. Real
containerd reads every result (1.6 on the host, 1.7, 2.x).
"""

import glob
import os
import shutil

import pytest

from helpers.common import CONTAINERD_1, assert_containerd_accepts, binary_of, ledger_records, read
from helpers.trees import CDI_DROPIN, DROPIN_MAIN, NODES

KEYS = [dict(key='cri.enable_cdi', value=True),
        dict(key='cri.cdi_spec_dirs', value=['/etc/cdi', '/var/run/cdi']),
        dict(key='images.disable_snapshot_annotations', value=False)]
# containerd 1.6 has no CDI keys (its config dump drops them, so they are refused)
KEYS_16 = [dict(key='images.disable_snapshot_annotations', value=False),
           dict(key='images.snapshotter', value='native'),
           dict(key='cri.default_runtime_name', value='runc')]


# containerd 2.x's own defaults are CDI on with both folders: values that differ
KEYS_2 = [dict(key='cri.enable_cdi', value=False),
          dict(key='cri.cdi_spec_dirs', value=['/etc/cdi']),
          dict(key='images.disable_snapshot_annotations', value=False)]


def keys_for(which):
    return dict(host=KEYS_16, two=KEYS_2).get('two' if which == '2' else which, KEYS)


def single_calls(run_module, path, binary, state_dir, state='present', keys=None):
    changed = []
    for entry in keys or KEYS:
        args = dict(entry) if state == 'present' else dict(key=entry['key'])
        res = run_module('containerd_setting', path=path, owner='gpu', state=state, containerd_bin=binary,
                         state_dir=state_dir, **args)
        changed.append(res['changed'])
    return changed


def absent_keys(keys=None):
    return [dict(key=e['key']) for e in keys or KEYS]


@pytest.mark.parametrize('fixture,which', NODES)
def test_one_call_equals_single_calls_and_undoes_to_the_original(run_module, config, twin, fixture, which):
    binary, keys = binary_of(which), keys_for(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)

    res = run_module('containerd_setting', path=path, owner='gpu', settings=keys, containerd_bin=binary)
    assert res['changed'] and res['file'] == path and res['owner'] == 'gpu'
    assert [s['key'] for s in res['settings']] == [e['key'] for e in keys]
    assert [s['value'] for s in res['settings']] == [e['value'] for e in keys]
    assert all(e['in_effect'] for e in res['effects'])
    assert_containerd_accepts(path, binary)

    assert single_calls(run_module, other, binary, other_state, keys=keys) == [True] * 3
    assert read(path, 'rb') == read(other, 'rb')
    assert ledger_records(run_module.state_dir) == ledger_records(other_state)

    res = run_module('containerd_setting', path=path, owner='gpu', state='absent', settings=absent_keys(keys),
                     containerd_bin=binary)
    assert res['changed'] and read(path, 'rb') == original
    assert ledger_records(run_module.state_dir) == []


@pytest.mark.parametrize('fixture,which', NODES)
def test_each_form_undoes_the_other(run_module, config, twin, fixture, which):
    binary, keys = binary_of(which), keys_for(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)
    run_module('containerd_setting', path=path, owner='gpu', settings=keys, containerd_bin=binary)
    assert single_calls(run_module, path, binary, run_module.state_dir, state='absent', keys=keys) == [True] * 3
    assert read(path, 'rb') == original
    single_calls(run_module, other, binary, other_state, keys=keys)
    res = run_module('containerd_setting', path=other, owner='gpu', state='absent', settings=absent_keys(keys),
                     containerd_bin=binary, state_dir=other_state)
    assert res['changed'] and read(other, 'rb') == original


def test_a_prior_value_comes_back_and_a_second_call_writes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    assert 'enable_cdi = false' in original.decode()  # kubeadm's file sets it: the prior to put back
    ctd17 = dict(containerd_bin=binary_of('1.7'))
    run_module('containerd_setting', path=path, owner='gpu', settings=KEYS, **ctd17)
    assert 'enable_cdi = true' in read(path)
    ledger = glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))[0]
    before = [os.stat(p) for p in (path, ledger)]
    res = run_module('containerd_setting', path=path, owner='gpu', settings=KEYS, **ctd17)
    assert not res['changed']
    for b, a in zip(before, [os.stat(p) for p in (path, ledger)]):
        assert (b.st_ino, b.st_mtime_ns) == (a.st_ino, a.st_mtime_ns)
    res = run_module('containerd_setting', path=path, owner='gpu', state='absent', settings=absent_keys(), **ctd17)
    assert 'plugins.io.containerd.grpc.v1.cri.enable_cdi' in ' '.join(res['restored']).replace('"', ''), res
    assert read(path, 'rb') == original


def test_one_validation_for_all_keys(run_module, config, workdir):
    path = config('v2_kubeadm.toml')
    log = os.path.join(workdir, 'validations')
    validate = 'sh -c \'echo run >> %s; exec %s --config "$1" config dump >/dev/null\' sh %%s' % (log, CONTAINERD_1)
    assert run_module('containerd_setting', path=path, owner='gpu', settings=KEYS_16, validate=validate)['changed']
    assert read(log).splitlines() == ['run']


def test_check_mode_and_diff_write_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, owner='gpu', settings=KEYS, check=True, diff=True,
                     containerd_bin=binary_of('1.7'))
    assert res['changed'] and 'enable_cdi = true' in res['diff']['after'] and 'cdi_spec_dirs' in res['diff']['after']
    assert read(path, 'rb') == original
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger'))


@pytest.mark.parametrize('entries,args,words', [
    ([dict(key='cri.enable_cdi', value=True), dict(key='cri.enable_cdi', value=False)], {},
     'cri.enable_cdi given more than once'),
    ([dict(key='cri.enable_cdi', value=True), dict(key='cri.cdi_spec_dirs', state='absent')], {},
     'settings: absent: cri.cdi_spec_dirs; present: cri.enable_cdi. One call'),
    ([dict(key='cri.enable_cdi')], {}, 'settings[0] (cri.enable_cdi): state=present needs a value'),
    ([dict(key='cri.enable_cdi', value=True)], dict(key='cri.cdi_spec_dirs'), 'mutually exclusive'),
    ([dict(key='cri.enable_cdi', value=True), dict(key='version', raw=True, value=3)], {},
     'settings[1] (version): '),
    ([dict(key='cri.enable_cdi', value=True), dict(key='cri.no_such_key', value=1)], {}, 'settings[1] (cri.no_such_key): '),
])
def test_refused_inputs_write_nothing(run_module, config, entries, args, words):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, owner='gpu', settings=entries, expect_fail=True, **args)
    assert words in res['msg'], res['msg']
    assert read(path, 'rb') == original
    assert not glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))


def test_keys_in_two_files_go_where_single_calls_put_them(run_module, config, twin):
    """enable_cdi is decided by a drop-in (2.x merges it), cdi_spec_dirs by nobody: each goes where its call puts it."""
    binary = binary_of('2')
    dropin = config(CDI_DROPIN, filename='cdi.toml')
    path = config(DROPIN_MAIN % dropin)
    original, dropin_original = read(path, 'rb'), read(dropin, 'rb')
    other, other_state = twin(path)
    other_dropin = os.path.join(os.path.dirname(other), 'cdi.toml')
    shutil.copyfile(dropin, other_dropin)
    with open(other, 'w') as f:
        f.write(DROPIN_MAIN % other_dropin)
    entries = KEYS[:2]
    res = run_module('containerd_setting', path=path, owner='gpu', settings=entries, containerd_bin=binary)
    assert res['changed'] and sorted(res['files']) == sorted([path, dropin]), res
    assert 'enable_cdi = true' in read(dropin) and 'cdi_spec_dirs' in read(path)
    assert_containerd_accepts(path, binary)
    for entry in entries:
        run_module('containerd_setting', path=other, owner='gpu', containerd_bin=binary, state_dir=other_state,
                   **entry)
    assert read(path) == read(other).replace(other_dropin, dropin)
    assert read(dropin) == read(other_dropin)
    res = run_module('containerd_setting', path=path, owner='gpu', state='absent', settings=absent_keys()[:2],
                     containerd_bin=binary)
    assert res['changed']
    assert read(path, 'rb') == original and read(dropin, 'rb') == dropin_original


@pytest.mark.parametrize('entries,key', [
    ([dict(key='cri.enable_cdi', value=True), dict(key='cri.cdi_spec_dirs')], 'settings[1].value'),
    ([dict(key='cri.enable_cdi', value=True), dict(key='cri.no_such_key', value=1)], 'settings[1]'),
])
def test_a_refusal_names_the_entry_in_its_key(run_module, config, entries, key):
    path = config('v2_kubeadm.toml')
    res = run_module('containerd_setting', path=path, owner='gpu', settings=entries, expect_fail=True)
    assert res['key'] == key, res


def test_an_empty_settings_list_changes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    for state in ('present', 'absent'):
        res = run_module('containerd_setting', path=path, owner='gpu', settings=[], state=state)
        assert not res['changed'] and res['settings'] == [], res
    assert read(path, 'rb') == original
