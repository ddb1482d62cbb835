# -*- coding: utf-8 -*-
"""containerd_config release_all: an uninstall that releases exactly what the ledgers record for its owner.

The judge is the uninstall that names each entry (what gpu_toolkit did
before, reading the ledger with containerd_info first): the same bytes, the
same ledger, another owner's changes kept, and nothing at all in check mode.
Real containerd reads every result.
"""

import json

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read
from helpers.trees import CDI_DROPIN, DROPIN_MAIN, NODES

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

NVIDIA = dict(name='nvidia', options={'BinaryName': '/usr/bin/nvidia-container-runtime'}, default=True)
RUNC = dict(name='runc', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})
# keys every containerd of the matrix knows (1.6 drops the CDI keys)
SETTINGS = [dict(key='images.disable_snapshot_annotations', value=False),
            dict(key='images.snapshotter', value='native')]
CDI = [dict(key='cri.enable_cdi', value=True)]


def gpu_install(run_module, path, binary, **extra):
    return run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary,
                      runtimes=[RUNC, NVIDIA], settings=SETTINGS, **extra)


def release(run_module, path, binary, **extra):
    return run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, state='absent',
                      release_all=True, **extra)


def ledger_records(run_module, path):
    with open(ledger_path_for(run_module.state_dir, path)) as f:
        return json.load(f)['records']


@pytest.mark.parametrize('fixture,which', NODES)
def test_release_all_undoes_the_owners_records_and_keeps_another_owners(run_module, config, fixture, which):
    """gpu adds nvidia as the default, BinaryName in runc and two CRI keys; ops adds crun. release_all of gpu
    (nothing named) leaves exactly ops' file; ops' own release_all then gives back the original bytes."""
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    crun = dict(name='crun', runtime_type='io.containerd.runc.v2', options={'BinaryName': '/usr/bin/crun'})
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary, runtimes=[crun])
    ops_only = read(path, 'rb')
    ops_ledger = ledger_records(run_module, path)
    assert gpu_install(run_module, path, binary)['changed']
    assert "default_runtime_name = 'nvidia'" in read(path).replace('"', "'")

    checked = release(run_module, path, binary, check=True)
    assert checked['changed'] and read(path, 'rb') != ops_only, 'check mode must write nothing'
    gone = release(run_module, path, binary)
    # the prior default is back (a fixture without the key: containerd's own default, runc)
    assert gone['changed'] and gone['default_runtime_name'] in (None, 'runc'), gone['default_runtime_name']
    # the runtime gpu made the default first (its records come after runc's): the prior default is back first
    assert [r['name'] for r in gone['runtimes']] == ['nvidia', 'runc']
    assert gone['released']['tables'] == ['nvidia'] and sorted(gone['released']['runtimes']) == ['nvidia', 'runc']
    assert len(gone['released']['settings']) == 2 and gone['released']['imports'] == []
    assert checked['released'] == gone['released']
    assert read(path, 'rb') == ops_only
    # beside ops' records, only gpu's mark that it undid its change to runc (a table it did not create)
    left = ledger_records(run_module, path)
    assert [r for r in left if r['owner'] == 'ops'] == ops_ledger
    assert [(r['kind'], r['resource']) for r in left if r['owner'] == 'gpu'] == [('released', 'runtime:runc')]
    assert_containerd_accepts(path, binary)

    again = release(run_module, path, binary)
    assert not again['changed'] and again['released'] == dict(runtimes=[], tables=[], settings=[], imports=[])
    ops = run_module('containerd_config', path=path, owner='ops', containerd_bin=binary, state='absent',
                     release_all=True)
    assert ops['released']['tables'] == ['crun'] and read(path, 'rb') == original


def test_release_all_equals_naming_each_entry(run_module, config, twin):
    """The same install on two twins; one uninstall names every entry as the role did, the other releases all."""
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    other, other_state = twin(path)
    gpu_install(run_module, path, binary)
    gpu_install(run_module, other, binary, state_dir=other_state)
    named = run_module('containerd_config', path=other, owner='gpu', containerd_bin=binary, state='absent',
                       state_dir=other_state, runtimes=[dict(name='nvidia'), dict(name='runc')],
                       settings=[dict(key=s['key']) for s in SETTINGS])
    released = release(run_module, path, binary)
    assert named['changed'] and released['changed']
    assert read(path, 'rb') == read(other, 'rb')
    with open(ledger_path_for(other_state, other)) as f:
        assert ledger_records(run_module, path) == json.load(f)['records']


def test_release_all_finds_the_records_of_a_drop_in(run_module, config):
    """On containerd 2.x a drop-in decides enable_cdi, so the install wrote it there (with that file's ledger):
    release_all finds the record in the drop-in's ledger and both files get their bytes back."""
    binary = binary_of('2')
    dropin = config(CDI_DROPIN, filename='cdi.toml')
    path = config(DROPIN_MAIN % dropin)
    original, dropin_original = read(path, 'rb'), read(dropin, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, settings=CDI,
                     runtimes=[dict(name='nvidia', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})])
    assert 'enable_cdi = true' in read(dropin), res
    installed, dropin_installed = read(path, 'rb'), read(dropin, 'rb')
    # check mode previews both files' undo (gpu_toolkit's uninstall in --check --diff) and writes nothing
    preview = release(run_module, path, binary, check=True, diff=True)
    assert preview['changed'] and sorted(preview['files']) == sorted([path, dropin]), preview
    assert read(path, 'rb') == installed and read(dropin, 'rb') == dropin_installed
    gone = release(run_module, path, binary, diff=True)
    assert gone['changed'] and gone['released']['tables'] == ['nvidia'] and len(gone['released']['settings']) == 1
    assert read(path, 'rb') == original and read(dropin, 'rb') == dropin_original
    assert preview['diff'] == gone['diff'] and preview['released'] == gone['released']


def test_release_all_with_state_present_is_refused(run_module, config):
    path = config('v2_debian_stock.toml')
    before = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary_of('host'),
                     release_all=True, runtimes=[NVIDIA], expect_fail=True)
    assert 'release_all' in res['msg'] and 'state: absent' in res['msg'] and 'Nothing was written' in res['msg']
    assert read(path, 'rb') == before


def test_release_all_with_nothing_recorded_changes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    before = read(path, 'rb')
    res = release(run_module, path, binary_of('1.7'))
    assert not res['changed'] and res['released'] == dict(runtimes=[], tables=[], settings=[], imports=[])
    assert read(path, 'rb') == before
