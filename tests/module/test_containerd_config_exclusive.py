# -*- coding: utf-8 -*-
"""containerd_config exclusive: an install that releases what its owner recorded and the call no longer names.

The judge is what separate calls give (an install of only what is named, on a
twin of the node) and the original bytes after the uninstall; real containerd
reads every result. A call that changes nothing must not write or validate:
a containerd_bin wrapper logs each command the module runs.
"""

import json
import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read
from helpers.trees import CDI_DROPIN, DROPIN_MAIN, NODES

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

BIN = '/usr/bin/nvidia-container-runtime'
NVIDIA = dict(name='nvidia', options={'BinaryName': BIN})
CDI = dict(name='nvidia-cdi', options={'BinaryName': BIN + '.cdi'})
ANNOTATIONS = dict(key='images.disable_snapshot_annotations', value=False)
SNAPSHOTTER = dict(key='images.snapshotter', value='native')
NOTHING = dict(runtimes=[], tables=[], settings=[], imports=[])


def gpu(run_module, path, binary, runtimes, settings=(), **extra):
    extra.setdefault('exclusive', True)
    return run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, runtimes=list(runtimes),
                      settings=list(settings), **extra)


def records(path, state_dir):
    with open(ledger_path_for(state_dir, path)) as f:
        return json.load(f)['records']


def without_seq(record):
    return dict((k, v) for k, v in record.items() if k != 'seq')


def logging_containerd(workdir, real):
    """(a containerd that logs each command line before it runs the real one, the log)."""
    log = os.path.join(workdir, 'containerd-calls.log')
    wrapper = os.path.join(workdir, 'containerd')
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\necho "$*" >> %s\nexec %s "$@"\n' % (log, real))
    os.chmod(wrapper, 0o755)
    return wrapper, log


@pytest.mark.parametrize('fixture,which', NODES)
def test_exclusive_releases_what_the_call_no_longer_names(run_module, config, twin, fixture, which):
    """install(nvidia, nvidia-cdi, two keys) -> install(nvidia, one key) exclusive gives the bytes and ledger of
    install(nvidia, one key) alone; the uninstall then gives back the original bytes."""
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)
    first = gpu(run_module, path, binary, [NVIDIA, CDI], [ANNOTATIONS, SNAPSHOTTER])
    assert first['changed'] and first['released'] == NOTHING
    second = gpu(run_module, path, binary, [NVIDIA], [ANNOTATIONS])
    assert second['changed']
    assert second['released']['runtimes'] == ['nvidia-cdi'] and second['released']['tables'] == ['nvidia-cdi']
    assert len(second['released']['settings']) == 1 and 'snapshotter' in second['released']['settings'][0]
    assert second['released']['imports'] == [] and second['validated'] and not second['warnings']
    alone = gpu(run_module, other, binary, [NVIDIA], [ANNOTATIONS], state_dir=other_state, exclusive=False)
    assert alone['changed']
    assert read(path, 'rb') == read(other, 'rb')
    # the same records (their sequence numbers count every record ever made)
    assert [without_seq(r) for r in records(path, run_module.state_dir)] == \
        [without_seq(r) for r in records(other, other_state)]
    assert_containerd_accepts(path, binary)

    gone = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, state='absent',
                      release_all=True)
    assert gone['changed'] and gone['released']['runtimes'] == ['nvidia'] and gone['released']['settings']
    assert read(path, 'rb') == original


def test_a_key_named_by_its_logical_name_is_not_released(run_module, config):
    """The ledger holds the file's dotted path; a call naming the logical key (or the raw key in another
    spelling) names the same key: nothing to release, nothing written."""
    binary = binary_of('host')
    path = config('v2_kubeadm.toml')
    gpu(run_module, path, binary, [], [ANNOTATIONS])
    installed = read(path, 'rb')
    again = gpu(run_module, path, binary, [], [ANNOTATIONS])
    assert not again['changed'] and again['released'] == NOTHING
    raw = gpu(run_module, path, binary, [], [dict(key="plugins.'io.containerd.grpc.v1.cri'.containerd"
                                                      ".disable_snapshot_annotations", value=False, raw=True)])
    assert not raw['changed'] and raw['released'] == NOTHING and read(path, 'rb') == installed


@pytest.mark.parametrize('fixture,which', NODES)
def test_a_default_change_is_undone_when_the_call_stops_asking_for_it(run_module, config, fixture, which):
    binary = binary_of(which)
    path = config(fixture)
    before = gpu(run_module, path, binary, [dict(NVIDIA, default=True)])
    assert before['default_runtime_name'] == 'nvidia'
    after = gpu(run_module, path, binary, [NVIDIA])
    # the prior default is back (a fixture without the key: containerd's own default, runc)
    assert after['changed'] and after['default_runtime_name'] in (None, 'runc'), after
    assert after['released'] == dict(runtimes=['nvidia'], tables=[], settings=[], imports=[])
    dump = assert_containerd_accepts(path, binary).replace("'", '"')
    assert 'default_runtime_name = "runc"' in dump and 'runtimes.nvidia' in dump
    assert not [r for r in records(path, run_module.state_dir) if r.get('path', [''])[-1:] == ['default_runtime_name']]
    again = gpu(run_module, path, binary, [NVIDIA])
    assert not again['changed'] and again['released'] == NOTHING


def test_another_owner_s_changes_are_untouched(run_module, config):
    binary = binary_of('1.7')
    path = config('v2_kubeadm.toml')
    crun = dict(name='crun', options={'BinaryName': '/usr/bin/crun'})
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary, runtimes=[crun],
               settings=[SNAPSHOTTER])
    ops_only = read(path, 'rb')
    ops_records = [r for r in records(path, run_module.state_dir) if r['owner'] == 'ops']
    gpu(run_module, path, binary, [NVIDIA, CDI], [ANNOTATIONS])
    kept = gpu(run_module, path, binary, [NVIDIA])
    assert kept['released']['runtimes'] == ['nvidia-cdi'] and len(kept['released']['settings']) == 1
    assert 'crun' in read(path) and "snapshotter = 'native'" in read(path).replace('"', "'")
    assert [r for r in records(path, run_module.state_dir) if r['owner'] == 'ops'] == ops_records
    # nothing named at all: every change of gpu goes, ops' file is left
    emptied = gpu(run_module, path, binary, [])
    assert emptied['changed'] and emptied['released']['runtimes'] == ['nvidia'] and read(path, 'rb') == ops_only
    assert_containerd_accepts(path, binary)


def test_a_call_that_changes_nothing_writes_and_validates_nothing(run_module, config, workdir):
    binary, log = logging_containerd(workdir, binary_of('host'))
    path = config('v2_debian_stock.toml')
    gpu(run_module, path, binary, [NVIDIA, CDI], [ANNOTATIONS])
    assert gpu(run_module, path, binary, [NVIDIA], [ANNOTATIONS])['released']['runtimes'] == ['nvidia-cdi']
    ledger = ledger_path_for(run_module.state_dir, path)
    before = (read(path, 'rb'), os.stat(path).st_mtime_ns, read(ledger, 'rb'), os.stat(ledger).st_mtime_ns)
    os.remove(log)
    same = gpu(run_module, path, binary, [NVIDIA], [ANNOTATIONS])
    assert not same['changed'] and same['released'] == NOTHING and 'validated' not in same
    assert (read(path, 'rb'), os.stat(path).st_mtime_ns, read(ledger, 'rb'), os.stat(ledger).st_mtime_ns) == before
    assert 'config dump' not in read(log), read(log)


def test_check_mode_writes_nothing_and_reports_both_transactions(run_module, config):
    binary = binary_of('1.7')
    path = config('v2_kubeadm.toml')
    gpu(run_module, path, binary, [NVIDIA, CDI], [SNAPSHOTTER])
    installed = read(path, 'rb')
    ledger = ledger_path_for(run_module.state_dir, path)
    ledger_bytes = read(ledger, 'rb')
    # the install adds a key, the release takes away a runtime and a key: two previews of config.toml
    preview = gpu(run_module, path, binary, [NVIDIA], [ANNOTATIONS], check=True, diff=True)
    assert preview['changed'] and len(preview['diff']) == 2, preview.get('diff')
    assert 'disable_snapshot_annotations' in preview['diff'][0]['after']
    assert 'nvidia-cdi' in preview['diff'][1]['before'] and 'nvidia-cdi' not in preview['diff'][1]['after']
    assert read(path, 'rb') == installed and read(ledger, 'rb') == ledger_bytes
    # a release alone: one preview
    only = gpu(run_module, path, binary, [NVIDIA], [SNAPSHOTTER], check=True, diff=True)
    assert only['changed'] and len(only['diff']) == 1 and only['released']['runtimes'] == ['nvidia-cdi']
    assert read(path, 'rb') == installed and read(ledger, 'rb') == ledger_bytes
    done = gpu(run_module, path, binary, [NVIDIA], [ANNOTATIONS], diff=True)
    assert done['released'] == preview['released'] and len(done['diff']) == 2
    assert done['diff'][1]['after'] == read(path)


def test_a_key_recorded_in_a_drop_in_is_released_there(run_module, config):
    """On containerd 2.x a drop-in decides enable_cdi, so the install wrote it there, with that file's ledger:
    the release finds it there (previewed there in check mode) and the drop-in gets its bytes back."""
    binary = binary_of('2')
    dropin = config(CDI_DROPIN, filename='cdi.toml')
    path = config(DROPIN_MAIN % dropin)
    dropin_original = read(dropin, 'rb')
    gpu(run_module, path, binary, [NVIDIA], [dict(key='cri.enable_cdi', value=True)])
    assert 'enable_cdi = true' in read(dropin)
    installed = read(path, 'rb')
    preview = gpu(run_module, path, binary, [NVIDIA], check=True, diff=True)
    assert preview['changed'] and [d['after_header'] for d in preview['diff']] == ['%s (after)' % dropin]
    assert read(dropin) != dropin_original.decode() and read(path, 'rb') == installed
    done = gpu(run_module, path, binary, [NVIDIA], diff=True)
    assert done['changed'] and done['released'] == preview['released'] and len(done['released']['settings']) == 1
    assert done['file'] == dropin and done['diff'] == preview['diff'] and not done['warnings']
    assert read(dropin, 'rb') == dropin_original and read(path, 'rb') == installed
    assert_containerd_accepts(path, binary)


def test_exclusive_with_state_absent_is_refused(run_module, config):
    path = config('v2_debian_stock.toml')
    before = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary_of('host'), state='absent',
                     exclusive=True, runtimes=[dict(name='nvidia')], expect_fail=True)
    assert 'exclusive' in res['msg'] and 'state: present' in res['msg'] and 'Nothing was written' in res['msg']
    assert res['key'] == 'exclusive' and read(path, 'rb') == before
    assert not os.path.exists(ledger_path_for(run_module.state_dir, path))


def made_default_by_ops(run_module, path, binary, name):
    """Another owner makes name the CRI default (as a hand edit would, it is not gpu's change to undo)."""
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary,
               settings=[dict(key='cri.default_runtime_name', value=name)])


@pytest.mark.parametrize('check', [False, True])
def test_a_released_runtime_another_owner_made_the_default_is_refused_before_anything_is_written(
        run_module, config, check):
    """The release would refuse it after the install: it is refused first, naming exclusive and fixes that
    apply (not force, which exclusive never sets, nor the index of an entry the call did not give)."""
    binary = binary_of('1.7')
    path = config('v2_kubeadm.toml')
    gpu(run_module, path, binary, [NVIDIA])
    made_default_by_ops(run_module, path, binary, 'nvidia')
    ledger = ledger_path_for(run_module.state_dir, path)
    before = (read(path, 'rb'), read(ledger, 'rb'))
    res = gpu(run_module, path, binary, [CDI], check=check, expect_fail=True)
    msg = res['msg']
    assert msg.startswith('%s: exclusive: true releases runtime nvidia' % path), msg
    assert 'set by ops' in msg and 'Nothing was written' in msg and 'Already written' not in msg
    assert 'make another runtime the default first' in msg and 'naming it in runtimes' in msg
    assert 'force' not in msg and 'runtimes[' not in msg and res['key'] == 'exclusive'
    assert (read(path, 'rb'), read(ledger, 'rb')) == before and 'nvidia-cdi' not in read(path)
    # either fix lets the same call through
    kept = gpu(run_module, path, binary, [NVIDIA, CDI])
    assert kept['changed'] and kept['released'] == NOTHING and 'nvidia-cdi' in read(path)
    assert_containerd_accepts(path, binary)


def test_a_refusal_the_release_finds_after_the_install_says_what_was_written(run_module, config):
    """ops made nvidia the default, then gpu set the same key: the release undoes gpu's setting first, so
    whether nvidia is still the default is known only then. The refusal names exclusive and the fixes, and
    the install's file as written."""
    binary = binary_of('1.7')
    path = config('v2_kubeadm.toml')
    gpu(run_module, path, binary, [NVIDIA])
    made_default_by_ops(run_module, path, binary, 'nvidia')
    gpu(run_module, path, binary, [NVIDIA], [dict(key='cri.default_runtime_name', value='nvidia')])
    res = gpu(run_module, path, binary, [CDI], expect_fail=True)
    msg = res['msg']
    assert msg.startswith('%s: exclusive: true releases runtime nvidia' % path), msg
    assert 'set by ops' in msg and 'make another runtime the default first' in msg and 'naming it in runtimes' in msg
    assert 'the install' in msg and 'force' not in msg and 'runtimes[' not in msg and res['key'] == 'exclusive'
    assert res['written'] == [path] and 'nvidia-cdi' in read(path) and 'Nothing was written' not in msg
    assert_containerd_accepts(path, binary)
    # the fix, then the same call finishes the release
    run_module('containerd_config', path=path, owner='ops', containerd_bin=binary, state='absent',
               release_all=True)
    done = gpu(run_module, path, binary, [CDI])
    assert done['changed'] and done['released']['runtimes'] == ['nvidia'] and 'runtimes.nvidia]' not in read(path)
    assert_containerd_accepts(path, binary)


def test_release_all_names_its_option_and_the_force_it_can_take(run_module, config):
    binary = binary_of('1.7')
    path = config('v2_kubeadm.toml')
    gpu(run_module, path, binary, [NVIDIA])
    made_default_by_ops(run_module, path, binary, 'nvidia')
    before = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, state='absent',
                     release_all=True, expect_fail=True)
    msg = res['msg']
    assert msg.startswith('%s: release_all: true releases runtime nvidia' % path), msg
    assert 'name it in runtimes with force: true' in msg and 'runtimes[' not in msg and res['key'] == 'release_all'
    assert read(path, 'rb') == before
