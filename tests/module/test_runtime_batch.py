# -*- coding: utf-8 -*-
"""containerd_runtime's runtimes option: several runtimes in one transaction.

The judge is the single-runtime form: one call with four kata handlers must
leave the same bytes and the same ledger records as four calls, undo to the
original bytes, and be undone by (or undo) single calls. Real containerd
reads every result (1.6 on the host, 1.7, 2.x).
"""

import glob
import os
import shutil

import pytest

from helpers.common import CONTAINERD_1, assert_containerd_accepts, binary_of, ledger_records, read
from helpers.trees import DROPIN_MAIN, KATA_DROPIN, NODES

KATA = '/opt/kata/bin/containerd-shim-kata-v2'


def kata(shim, **extra):
    entry = dict(name='kata-' + shim, runtime_type='io.containerd.kata-%s.v2' % shim, runtime_path=KATA,
                 inherit='none',
                 settings={'privileged_without_host_devices': True, 'pod_annotations': ['io.katacontainers.*']},
                 options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration-%s.toml' % shim})
    entry.update(extra)
    return entry


HANDLERS = [kata(s) for s in ('qemu', 'qemu-tdx', 'qemu-snp', 'clh')]
NAMES = [h['name'] for h in HANDLERS]


def single_calls(run_module, path, binary, state_dir, state='present', **common):
    changed = []
    for handler in HANDLERS:
        args = dict(handler) if state == 'present' else dict(name=handler['name'])
        res = run_module('containerd_runtime', path=path, owner='coco', state=state, containerd_bin=binary,
                         state_dir=state_dir, **dict(args, **common))
        changed.append(res['changed'])
    return changed


@pytest.mark.parametrize('fixture,which', NODES)
def test_one_call_equals_four_calls_and_undoes_to_the_original(run_module, config, twin, fixture, which):
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)

    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS, containerd_bin=binary)
    assert res['changed'] and res['created']
    assert [r['name'] for r in res['runtimes']] == NAMES
    assert all(r['created'] and r['state'] == 'present' for r in res['runtimes'])
    assert res['runtimes'][0]['runtime']['options']['ConfigPath'].endswith('configuration-qemu.toml')
    assert 'runtime' not in res
    assert res['owner'] == 'coco' and res['file'] == path
    assert_containerd_accepts(path, binary)

    assert single_calls(run_module, other, binary, other_state) == [True] * 4
    # the same text, and the same owner records (so each form undoes the other)
    assert read(path, 'rb') == read(other, 'rb')
    assert ledger_records(run_module.state_dir) == ledger_records(other_state)

    res = run_module('containerd_runtime', path=path, owner='coco', state='absent',
                     runtimes=[dict(name=n) for n in NAMES], containerd_bin=binary)
    assert res['changed'] and res['removed']
    assert all(r['removed'] and r['runtime'] is None for r in res['runtimes'])
    assert read(path, 'rb') == original
    assert ledger_records(run_module.state_dir) == []
    assert_containerd_accepts(path, binary)


@pytest.mark.parametrize('fixture,which', NODES)
def test_each_form_undoes_the_other(run_module, config, twin, fixture, which):
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)

    # one call installs, single calls uninstall
    run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS, containerd_bin=binary)
    assert single_calls(run_module, path, binary, run_module.state_dir, state='absent') == [True] * 4
    assert read(path, 'rb') == original

    # single calls install, one call uninstalls
    single_calls(run_module, other, binary, other_state)
    res = run_module('containerd_runtime', path=other, owner='coco', state='absent', runtimes=[dict(name=n) for n in NAMES],
                     containerd_bin=binary, state_dir=other_state)
    assert res['changed']
    assert read(other, 'rb') == original


def test_second_call_changes_and_writes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS)
    ledger = glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))[0]
    before = os.stat(path), os.stat(ledger), read(path, 'rb')
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS)
    assert not res['changed'] and not res['created']
    assert not any(r['created'] for r in res['runtimes'])
    after = os.stat(path), os.stat(ledger), read(path, 'rb')
    for b, a in zip(before[:2], after[:2]):
        assert (b.st_ino, b.st_mtime_ns) == (a.st_ino, a.st_mtime_ns)
    assert before[2] == after[2]

    run_module('containerd_runtime', path=path, owner='coco', state='absent', runtimes=[dict(name=n) for n in NAMES])
    before = os.stat(path)
    res = run_module('containerd_runtime', path=path, owner='coco', state='absent',
                     runtimes=[dict(name=n) for n in NAMES])
    assert not res['changed'] and not res['removed']
    assert (os.stat(path).st_ino, os.stat(path).st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_one_validation_for_all_runtimes(run_module, config, workdir):
    path = config('v2_kubeadm.toml')
    log = os.path.join(workdir, 'validations')
    validate = 'sh -c \'echo run >> %s; exec %s --config "$1" config dump >/dev/null\' sh %%s' % (log, CONTAINERD_1)
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS, validate=validate)
    assert res['changed']
    assert read(log).splitlines() == ['run']


@pytest.mark.parametrize('bad,named', [
    (dict(name='kata bad'), "runtimes[2] (kata bad): "),
    (dict(name='kata-x', options={'Config"Path': 'x'}), 'runtimes[2] (kata-x): '),
    (dict(name='kata-x', settings={'runtime_type': 'x'}), 'runtimes[2] (kata-x): '),
    (dict(name='kata-x', inherit='nosuch'), 'runtimes[2] (kata-x): '),
])
def test_one_invalid_entry_writes_nothing_and_is_named(run_module, config, bad, named):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    entries = HANDLERS[:2] + [bad] + HANDLERS[2:]
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=entries, expect_fail=True)
    assert res['msg'].startswith(named), res['msg']
    assert 'Fix:' in res['msg']
    assert read(path, 'rb') == original
    assert not glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))


def test_containerd_refusal_writes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    # containerd 1.6 cannot load a runtime whose options is not a table
    entries = HANDLERS[:1] + [dict(name='kata-x', settings={'sandbox_mode': ['not', 'a', 'string']})]
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=entries, expect_fail=True)
    assert 'Nothing was written' in res['msg'] and path in res['msg']
    assert read(path, 'rb') == original
    assert not glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))


def test_check_mode_and_diff_write_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS, check=True, diff=True)
    assert res['changed'] and res['created']
    assert all('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]' % n in res['diff']['after']
               for n in NAMES)
    assert res['diff']['before'] == original.decode()
    assert read(path, 'rb') == original
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger'))


@pytest.mark.parametrize('entries,args,words', [
    ([dict(name='kata-a'), dict(name='kata-a')], {}, 'kata-a given more than once'),
    ([dict(name='kata-a'), dict(name='kata-b', state='absent')], {}, 'runtimes: absent: kata-b; present: kata-a. One call'),
    ([dict(name='kata-a')], dict(name='kata-b'), 'mutually exclusive'),
    ([dict(name='kata-a')], dict(options={'ConfigPath': 'x'}), 'mutually exclusive'),
])
def test_refused_inputs(run_module, config, entries, args, words):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=entries, expect_fail=True, **args)
    assert words in res['msg'], res['msg']
    assert read(path, 'rb') == original


def test_runtimes_in_two_files_go_where_single_calls_put_them(run_module, config, twin, workdir):
    """kata-qemu lives in a drop-in, the others nowhere yet: each goes where its single call writes it."""
    binary = binary_of('2')
    dropin = config(KATA_DROPIN, filename='kata.toml')
    path = config(DROPIN_MAIN % dropin)
    original, dropin_original = read(path, 'rb'), read(dropin, 'rb')
    other, other_state = twin(path)
    other_dropin = os.path.join(os.path.dirname(other), 'kata.toml')
    shutil.copyfile(dropin, other_dropin)
    with open(other, 'w') as f:
        f.write(DROPIN_MAIN % other_dropin)

    res = run_module('containerd_runtime', path=path, owner='coco', runtimes=HANDLERS)
    assert res['changed'] and [r['name'] for r in res['runtimes']] == NAMES
    assert sorted(res['files']) == sorted([path, dropin])
    assert 'kata-qemu-tdx' in read(path) and 'ConfigPath' in read(dropin)
    assert_containerd_accepts(path, binary)
    single_calls(run_module, other, binary, other_state)
    assert read(path) == read(other).replace(other_dropin, dropin)
    assert read(dropin) == read(other_dropin)

    res = run_module('containerd_runtime', path=path, owner='coco', state='absent', runtimes=[dict(name=n) for n in NAMES])
    assert res['changed']
    assert read(path, 'rb') == original and read(dropin, 'rb') == dropin_original
