# -*- coding: utf-8 -*-
"""containerd_baseline run as Ansible runs it, every written config judged by
the real containerd (1.6 for version 2 files, 2.1 for version 3)."""

import copy
import glob
import json
import os
import stat
import time

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_2, assert_containerd_accepts, config_dump, fixture_text, read

MOD = 'containerd_baseline'
CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
NVIDIA_BIN = '/usr/bin/nvidia-container-runtime'


def v3_env():
    return {'PATH': os.path.dirname(CONTAINERD_2) + os.pathsep + os.environ['PATH']}


def runtimes_of(data, cri):
    return data['plugins'][cri]['containerd']['runtimes']


def _sorted(d):
    return dict((k, _sorted(v) if isinstance(v, dict) else v) for k, v in sorted(d.items()))


def toolkit_install_then_revert(text, cri):
    """What nvidia-ctk leaves when its runtime name is runc (seed 000), plus an nvidia runtime:
    the file re-serialised (keys sorted, comments gone) and the runc table deleted whole."""
    data = tomlkit.parse(text).unwrap()
    rts = runtimes_of(data, cri)
    nvidia = copy.deepcopy(rts['runc'])
    nvidia.setdefault('options', {})['BinaryName'] = NVIDIA_BIN
    rts['nvidia'] = nvidia
    del rts['runc']
    return tomlkit.dumps(_sorted(data))


def dump_data(path, binary=None):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, err
    return tomlkit.parse(out).unwrap()


@pytest.fixture
def base(workdir, run_module):
    """Arguments every call shares: a private store and the ledger in the test's state dir."""
    return dict(store=os.path.join(workdir, 'baselines'))


def manifest_of(result):
    return json.loads(read(os.path.join(result['snapshot'], 'manifest.json')))


# ------------------------------------------------------------------ snapshot
def test_snapshot_once_then_overwrite_and_keep(config, run_module, base, workdir):
    path = config('v2_kubeadm.toml')
    os.chmod(path, 0o640)
    check = run_module(MOD, path=path, check=True, **base)
    assert check['changed'] and not os.path.exists(base['store'])

    first = run_module(MOD, path=path, **base)
    assert first['changed']
    assert first['baseline'] == os.path.join(base['store'], 'default')
    assert os.path.realpath(os.path.join(first['baseline'], 'current')) == first['snapshot']
    (rec,) = first['files']
    assert rec['path'] == path and rec['role'] == 'config' and rec['mode'] == '0640'
    assert read(rec['stored'], 'rb') == read(path, 'rb')
    m = manifest_of(first)
    assert m['containerd']['version'].startswith('1.6.') and m['config_version'] == 2
    assert m['created'].endswith('Z') and m['files'][0]['sha256'] == rec['sha256']
    assert stat.S_IMODE(os.stat(first['baseline']).st_mode) == 0o700

    again = run_module(MOD, path=path, **base)
    assert not again['changed'] and again['snapshot'] == first['snapshot']
    same = run_module(MOD, path=path, overwrite=True, **base)
    assert not same['changed'] and same['snapshot'] == first['snapshot']

    snaps = [first['snapshot']]
    for i in range(3):
        with open(path, 'a') as f:
            f.write('# edit %d\n' % i)
        r = run_module(MOD, path=path, overwrite=True, keep=1, **base)
        assert r['changed'] and r['snapshot'] != snaps[-1]
        assert read(r['files'][0]['stored']) == read(path)
        snaps.append(r['snapshot'])
    # current + one older one
    assert sorted(e for e in os.listdir(first['baseline']) if e != 'current') == \
        sorted(os.path.basename(s) for s in snaps[-2:])

    other = config('v2_flat.toml', filename='other.toml')
    failed = run_module(MOD, path=other, expect_fail=True, **base)
    assert 'was taken of %s' % path in failed['msg']


def test_snapshot_of_missing_config_records_it(config, run_module, base, workdir):
    path = os.path.join(workdir, 'etc', 'config.toml')
    os.makedirs(os.path.dirname(path))
    r = run_module(MOD, path=path, **base)
    assert r['changed'] and r['config_missing'] and r['files'] == []
    assert any('does not exist' in w for w in r['warnings'])
    config('v2_flat.toml')
    failed = run_module(MOD, path=path, state='restore', expect_fail=True, **base)
    assert 'did not exist when it was taken' in failed['msg']


def test_snapshot_refuses_invalid_toml(config, run_module, base):
    path = config('version = 2\nimports = [ , ]\n')
    r = run_module(MOD, path=path, expect_fail=True, **base)
    assert 'not valid TOML' in r['msg'] and 'no snapshot was taken' in r['msg']
    assert not os.path.exists(os.path.join(base['store'], 'default', 'current'))


def test_overwrite_keeps_three_older_snapshots_by_default(config, run_module, base):
    path = config('v2_kubeadm.toml')
    snaps = [run_module(MOD, path=path, **base)['snapshot']]
    for i in range(5):
        with open(path, 'a') as f:
            f.write('# edit %d\n' % i)
        snaps.append(run_module(MOD, path=path, overwrite=True, **base)['snapshot'])
    folder = os.path.join(base['store'], 'default')
    # current + the three before it (keep: 3)
    assert sorted(e for e in os.listdir(folder) if e != 'current') == sorted(os.path.basename(s) for s in snaps[-4:])


def test_a_negative_keep_is_refused_before_anything_is_read(config, run_module, base):
    path = config('v2_kubeadm.toml')
    r = run_module(MOD, path=path, keep=-1, expect_fail=True, **base)
    assert r['msg'] == 'keep must be 0 or more, got -1'
    assert not os.path.exists(base['store'])


# ------------------------------------------- the GPU toolkit seed, version 2
def test_toolkit_revert_check_repair_restore_v2(config, run_module, base):
    original = fixture_text('v2_kubeadm.toml')
    path = config(original)
    run_module(MOD, path=path, **base)
    clean = run_module(MOD, path=path, state='check', **base)
    assert not clean['changed'] and not clean['drifted'] and clean['protected_drift'] == []

    broken = toolkit_install_then_revert(original, CRI2)
    with open(path, 'w') as f:
        f.write(broken)

    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert not failed['changed']
    assert 'cri.runtimes.runc' in failed['msg'] and 'state: repair' in failed['msg']
    (pd,) = failed['protected_drift']
    assert pd['key'] == 'cri.runtimes.runc' and pd['change'] == 'removed' and pd['after'] is None
    assert pd['path'] == 'plugins."%s".containerd.runtimes.runc' % CRI2
    assert pd['before']['options'] == {'SystemdCgroup': True}
    removed = [e['key'] for e in failed['drift']['removed']]
    added = [e['key'] for e in failed['drift']['added']]
    assert removed == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    assert added == ['plugins."%s".containerd.runtimes.nvidia' % CRI2]
    assert failed['drift']['files']['changed'] == [path]
    assert any('default_runtime_name is \'runc\'' in p for p in failed['problems'])

    # repair: check mode and diff first, nothing written
    dry = run_module(MOD, path=path, state='repair', check=True, diff=True, **base)
    assert dry['changed'] and read(path) == broken
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]' in dry['diff']['after']
    assert 'runtimes.runc' not in dry['diff']['before']

    fixed = run_module(MOD, path=path, state='repair', diff=True, **base)
    assert fixed['changed']
    assert fixed['restored'] == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    assert fixed['restored_keys'][0]['change'] == 'removed'
    assert fixed['diff']['after'] == read(path)
    effective = dump_data(path, CONTAINERD_1)
    rts = runtimes_of(effective, CRI2)
    assert rts['runc']['options']['SystemdCgroup'] is True
    assert 'BinaryName' not in rts['runc']['options'] or rts['runc']['options']['BinaryName'] == ''
    assert rts['nvidia']['options']['BinaryName'] == NVIDIA_BIN
    want = tomlkit.parse(original).unwrap()
    got = tomlkit.parse(read(path)).unwrap()
    assert runtimes_of(got, CRI2)['runc'] == runtimes_of(want, CRI2)['runc']
    # the repaired table is the baseline's own text (key order and all), written flat like the rest of the file
    assert read(path).endswith('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                               'runtime_type = "io.containerd.runc.v2"\nruntime_engine = ""\nruntime_root = ""\n'
                               'privileged_without_host_devices = false\nbase_runtime_spec = ""\n'
                               '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
                               'SystemdCgroup = true\n')

    assert not run_module(MOD, path=path, state='repair', **base)['changed']
    after = run_module(MOD, path=path, state='check', **base)
    assert after['protected_drift'] == [] and after['problems'] == []
    assert [e['key'] for e in after['drift']['added']] == ['plugins."%s".containerd.runtimes.nvidia' % CRI2]

    # restore: check mode and diff, then the original bytes
    repaired = read(path)
    dry = run_module(MOD, path=path, state='restore', check=True, diff=True, **base)
    assert dry['changed'] and read(path) == repaired
    (d,) = dry['diff']
    assert d['before'] == repaired and d['after'] == original
    done = run_module(MOD, path=path, state='restore', backup=True, **base)
    assert done['changed'] and done['restored'] == [path]
    assert [e['key'] for e in done['drift']['added']] == ['plugins."%s".containerd.runtimes.nvidia' % CRI2]
    assert done['protected_drift'] == []
    assert read(path) == original
    assert read(done['backup_file']) == repaired
    assert_containerd_accepts(path, CONTAINERD_1)
    again = run_module(MOD, path=path, state='restore', diff=True, **base)
    assert not again['changed'] and again['restored'] == [] and again.get('diff', []) == []


def test_toolkit_revert_v3_deep_merge(config, run_module, base):
    original = fixture_text('v3_default.toml')
    path = config(original)
    env = v3_env()
    assert run_module(MOD, path=path, env=env, **base)['containerd_version'].startswith('2.1')
    broken = toolkit_install_then_revert(original, CRI3)
    with open(path, 'w') as f:
        f.write(broken)
    failed = run_module(MOD, path=path, state='check', env=env, expect_fail=True, **base)
    assert [p['path'] for p in failed['protected_drift']] == ['plugins."%s".containerd.runtimes.runc' % CRI3]
    fixed = run_module(MOD, path=path, state='repair', env=env, **base)
    assert fixed['changed'] and fixed['config_version'] == 3
    rts = runtimes_of(dump_data(path, CONTAINERD_2), CRI3)
    assert rts['runc']['options']['SystemdCgroup'] is True
    assert rts['nvidia']['options']['BinaryName'] == NVIDIA_BIN
    assert "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]" in read(path)
    assert not run_module(MOD, path=path, state='repair', env=env, **base)['changed']
    run_module(MOD, path=path, state='restore', env=env, **base)
    assert read(path) == original
    assert_containerd_accepts(path, CONTAINERD_2)


def test_repair_changed_runc_and_default_in_place(config, run_module, base):
    """runc kept but changed (BinaryName added, SystemdCgroup dropped), default moved to nvidia."""
    original = fixture_text('v2_kubeadm.toml')
    path = config(original)
    run_module(MOD, path=path, **base)
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', default=True,
               options={'BinaryName': NVIDIA_BIN})
    text = read(path).replace('            SystemdCgroup = true\n',
                              '            BinaryName = "%s"\n' % NVIDIA_BIN, 1)
    with open(path, 'w') as f:
        f.write(text)
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert sorted(p['key'] for p in failed['protected_drift']) == ['cri.default_runtime_name', 'cri.runtimes.runc']
    fixed = run_module(MOD, path=path, state='repair', diff=True, **base)
    assert sorted(r['key'] for r in fixed['restored_keys']) == ['cri.default_runtime_name', 'cri.runtimes.runc']
    effective = dump_data(path, CONTAINERD_1)
    assert effective['plugins'][CRI2]['containerd']['default_runtime_name'] == 'runc'
    rts = runtimes_of(effective, CRI2)
    assert rts['runc']['options']['SystemdCgroup'] is True
    assert rts['runc']['options'].get('BinaryName', '') == ''
    assert rts['nvidia']['options']['BinaryName'] == NVIDIA_BIN
    # only the changed lines moved: the nvidia table and every comment are where they were
    assert fixed['diff']['before'].count('\n') == read(path).count('\n')
    assert '# Metrics are scraped by the node exporter.' in read(path)


# ------------------------------------------- the CoCo seed: imports
NYDUS = '[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"\n'


def _with_imports(workdir, config, imports):
    dropins = os.path.join(workdir, 'etc', 'config.toml.d')
    os.makedirs(dropins, exist_ok=True)
    nydus = os.path.join(dropins, 'nydus-snapshotter.toml')
    with open(nydus, 'w') as f:
        f.write('version = 2\n\n' + NYDUS)
    text = fixture_text('v2_kubeadm.toml').replace(
        'version = 2\n', 'version = 2\nimports = [%s]\n' % ', '.join('"%s"' % (i % dict(nydus=nydus)) for i in imports))
    return config(text), nydus


def test_restore_from_broken_imports_array_and_missing_dropin(config, run_module, base, workdir):
    path, nydus = _with_imports(workdir, config, ['%(nydus)s'])
    original = read(path)
    snap = run_module(MOD, path=path, **base)
    assert [f['path'] for f in snap['files']] == [path, nydus]
    assert snap['files'][1]['entry'] == nydus and snap['files'][1]['imported_by'] == path
    nydus_bytes = read(nydus, 'rb')

    # the operator's uninstall: the drop-in is deleted and the array is patched into `[ , ]`
    os.unlink(nydus)
    with open(path, 'w') as f:
        f.write(original.replace('imports = ["%s"]' % nydus, 'imports = [ , ]'))
    rc, _out, _err = config_dump(path, CONTAINERD_1)
    assert rc != 0                                          # containerd cannot read it

    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert 'not valid TOML' in failed['msg'] and 'state: restore' in failed['msg']
    refused = run_module(MOD, path=path, state='repair', expect_fail=True, **base)
    assert 'not valid TOML' in refused['msg'] and 'containerd_baseline (state: restore)' in refused['msg']

    dry = run_module(MOD, path=path, state='restore', check=True, diff=True, **base)
    assert dry['changed'] and not os.path.exists(nydus)
    assert sorted(d['after_header'] for d in dry['diff']) == sorted('%s (baseline)' % p for p in (path, nydus))
    done = run_module(MOD, path=path, state='restore', **base)
    assert done['restored'] == [nydus, path]          # the drop-in first, then the file that imports it
    assert done['created_files'] == [nydus]
    assert read(path) == original and read(nydus, 'rb') == nydus_bytes
    assert dump_data(path, CONTAINERD_1)['proxy_plugins']['nydus']['type'] == 'snapshot'
    assert not run_module(MOD, path=path, state='restore', **base)['changed']


def test_restore_missing_config_mode_owner_and_ledger(config, run_module, base, workdir):
    path = config('v2_kubeadm.toml')
    # a kata runtime installed through nodeguard before the snapshot: the ledger knows it
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', inherit='none',
               runtime_type='io.containerd.kata-qemu.v2')
    os.chmod(path, 0o600)
    os.chown(path, 4242, 4343)
    snap = run_module(MOD, path=path, **base)
    m = manifest_of(snap)
    assert m['ledger']['in_sync'] and os.path.exists(os.path.join(snap['snapshot'], 'ledger.json'))
    ledger_file = m['ledger']['path']
    ledger_bytes = read(ledger_file, 'rb')
    good = read(path)

    # after the snapshot someone else's install changes the ledger, then the file disappears
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', options={'BinaryName': NVIDIA_BIN})
    assert read(ledger_file, 'rb') != ledger_bytes
    os.unlink(path)
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert 'does not exist' in failed['msg'] and failed['drift']['files']['removed'] == [path]

    done = run_module(MOD, path=path, state='restore', **base)
    assert done['changed'] and done['created_files'] == [path] and done['ledger'] == 'restored'
    assert read(path) == good
    st = os.stat(path)
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o600, 4242, 4343)
    assert read(ledger_file, 'rb') == ledger_bytes
    assert_containerd_accepts(path, CONTAINERD_1)

    # the ledger agrees with the file: the owner's uninstall still works
    gone = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', state='absent')
    assert gone['removed'] and 'kata-qemu' not in read(path)
    assert read(path) == fixture_text('v2_kubeadm.toml')

    # mode drift alone is restored too, and counted as a change
    run_module(MOD, path=path, state='restore', **base)
    os.chmod(path, 0o644)
    fixed = run_module(MOD, path=path, state='restore', **base)
    assert fixed['changed'] and stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_glob_import_snapshot_restores_deleted_dropin_v3(config, run_module, base, workdir):
    env = v3_env()
    confd = os.path.join(workdir, 'etc', 'conf.d')
    os.makedirs(confd)
    kata = os.path.join(confd, '50-kata.toml')
    kata_text = ("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]\n"
                 "  runtime_type = 'io.containerd.kata-qemu.v2'\n"
                 "  runtime_path = '/opt/kata/bin/containerd-shim-kata-v2'\n")
    with open(kata, 'w') as f:
        f.write(kata_text)
    path = config(fixture_text('v3_default.toml').replace("imports = []", "imports = ['conf.d/*.toml']"))
    original = read(path)
    snap = run_module(MOD, path=path, env=env, **base)
    assert [(f['path'], f['entry']) for f in snap['files']] == [(path, None), (kata, 'conf.d/*.toml')]
    assert manifest_of(snap)['globs'][0]['matched'] == [kata]
    assert 'kata-qemu' in runtimes_of(dump_data(path, CONTAINERD_2), CRI3)

    os.unlink(kata)
    extra = os.path.join(confd, '99-nvidia.toml')
    with open(extra, 'w') as f:
        f.write("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
                "  runtime_type = 'io.containerd.runc.v2'\n")
    r = run_module(MOD, path=path, state='check', env=env, **base)          # nothing protected drifted
    assert r['drift']['files'] == dict(added=[extra], removed=[kata], changed=[])
    assert [e['key'] for e in r['drift']['removed']] == \
        ['plugins."%s".containerd.runtimes.kata-qemu' % CRI3]

    done = run_module(MOD, path=path, state='restore', env=env, **base)
    assert done['restored'] == [kata] and read(kata) == kata_text and read(path) == original
    assert any('99-nvidia.toml' in w and 'left as it is' in w for w in done['warnings'])
    assert os.path.exists(extra)
    rts = runtimes_of(dump_data(path, CONTAINERD_2), CRI3)
    assert set(rts) == set(['runc', 'kata-qemu', 'nvidia'])


def test_repair_folds_duplicate_and_dangling_imports(config, run_module, base, workdir):
    path, nydus = _with_imports(workdir, config, ['%(nydus)s'])
    run_module(MOD, path=path, **base)
    # the seed's third state: the same drop-in three times and a kata drop-in that is gone
    kata = os.path.join(workdir, 'etc', 'kata-deploy.toml')
    text = read(path).replace('imports = ["%s"]' % nydus,
                              'imports = ["%s", "%s", "%s", "%s"]' % (nydus, nydus, nydus, kata))
    with open(path, 'w') as f:
        f.write(text)
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert failed['protected_drift'] == [] and 'kata-deploy.toml' in failed['msg']
    fixed = run_module(MOD, path=path, state='repair', **base)
    assert fixed['changed'] and fixed['restored'] == []
    assert fixed['duplicates_removed'] == [nydus, nydus] and fixed['removed_missing'] == [kata]
    assert tomlkit.parse(read(path))['imports'] == [nydus]
    assert_containerd_accepts(path, CONTAINERD_1)
    assert not run_module(MOD, path=path, state='repair', **base)['changed']


# ------------------------------------------- broken or damaged baselines
def test_broken_baseline_is_never_written(config, run_module, base):
    # a node that was already broken when the baseline was taken: default runc, a runtimes table
    # without runc (the GPU report's end state; containerd 1.x then has no runc at all)
    bad = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
           '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
           '  runtime_type = "io.containerd.runc.v2"\n')
    path = config(bad)
    refused = run_module(MOD, path=path, expect_fail=True, **base)
    assert 'no snapshot was taken' in refused['msg'] and 'default_runtime_name' in refused['msg']
    assert 'allow_broken: true' in refused['msg']
    assert not os.path.exists(os.path.join(base['store'], 'default', 'current'))
    snap = run_module(MOD, path=path, allow_broken=True, **base)
    assert snap['changed'] and snap['problems'] and any('would not load' in w for w in snap['warnings'])
    assert manifest_of(snap)['broken'] is True
    good = fixture_text('v2_kubeadm.toml')
    with open(path, 'w') as f:
        f.write(good)
    refused = run_module(MOD, path=path, state='restore', expect_fail=True, **base)
    assert 'baseline itself is broken' in refused['msg'] and 'default_runtime_name' in refused['msg']
    assert read(path) == good

    # a stored copy damaged on disk is refused by its checksum
    snap = run_module(MOD, path=path, overwrite=True, **base)
    with open(snap['files'][0]['stored'], 'a') as f:
        f.write('# tampered\n')
    with open(path, 'w') as f:
        f.write('imports = [ , ]\n')
    damaged = run_module(MOD, path=path, state='restore', expect_fail=True, **base)
    assert 'checksum mismatch' in damaged['msg']
    assert read(path) == 'imports = [ , ]\n'


def test_validate_command_refuses(config, run_module, base):
    path = config('v2_kubeadm.toml')
    run_module(MOD, path=path, **base)
    with open(path, 'w') as f:
        f.write('version = 2\n')
    refused = run_module(MOD, path=path, state='restore', validate='/bin/false %s', expect_fail=True, **base)
    assert 'validation "/bin/false %s"' in refused['msg']
    assert read(path) == 'version = 2\n'


def test_protect_logical_and_raw_keys(config, run_module, base):
    path = config('v2_kubeadm.toml')
    run_module(MOD, path=path, **base)
    # native, not nydus: without a nydus proxy plugin the CRI plugin fails to load (the load test sees it)
    text = read(path).replace('snapshotter = "overlayfs"', 'snapshotter = "native"').replace(
        'sandbox_image = "registry.k8s.io/pause:3.9"', 'sandbox_image = "example.org/pause:1"')
    with open(path, 'w') as f:
        f.write(text)
    assert run_module(MOD, path=path, state='check', **base)['protected_drift'] == []
    runc_changed = read(path).replace('SystemdCgroup = true', 'SystemdCgroup = false')
    with open(path, 'w') as f:
        f.write(runc_changed)
    assert run_module(MOD, path=path, state='check', protect=[], **base)['protected_drift'] == []
    assert not run_module(MOD, path=path, state='repair', protect=[], **base)['changed']
    run_module(MOD, path=path, state='check', expect_fail=True, **base)
    run_module(MOD, path=path, state='repair', protect=['cri.runtimes.runc'], **base)
    assert read(path) == text
    protect = ['images.snapshotter', 'plugins."%s".sandbox_image' % CRI2]
    failed = run_module(MOD, path=path, state='check', protect=protect, expect_fail=True, **base)
    assert [(p['key'], p['before'], p['after']) for p in failed['protected_drift']] == [
        ('images.snapshotter', 'overlayfs', 'native'),
        ('plugins."%s".sandbox_image' % CRI2, 'registry.k8s.io/pause:3.9', 'example.org/pause:1')]
    fixed = run_module(MOD, path=path, state='repair', protect=protect, diff=True, **base)
    assert read(path) == fixture_text('v2_kubeadm.toml')
    assert fixed['diff']['after'] == read(path)
    bad = run_module(MOD, path=path, state='check', protect=['cri.runtimes.'], expect_fail=True, **base)
    assert 'protect entry' in bad['msg']


def test_absent_and_foreign_folders(config, run_module, base, workdir):
    path = config('v2_flat.toml')
    snap = run_module(MOD, path=path, **base)
    dry = run_module(MOD, path=path, state='absent', check=True, **base)
    assert dry['changed'] and os.path.isdir(snap['baseline'])
    gone = run_module(MOD, path=path, state='absent', **base)
    assert gone['changed'] and not os.path.exists(snap['baseline'])
    assert not run_module(MOD, path=path, state='absent', **base)['changed']
    missing = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert 'there is no baseline' in missing['msg']
    # a store pointed at a folder that is not ours is never deleted
    os.makedirs(os.path.join(base['store'], 'etc'))
    with open(os.path.join(base['store'], 'etc', 'passwd'), 'w') as f:
        f.write('x')
    refused = run_module(MOD, path=path, name='etc', state='absent', expect_fail=True, **base)
    assert 'not a baseline folder' in refused['msg']
    assert os.path.exists(os.path.join(base['store'], 'etc', 'passwd'))


# ------------------------------------------- a real daemon decides
def test_real_daemon_cri_broken_then_ok_after_repair(config, run_module, base, containerd_daemon):
    original = fixture_text('v2_kubeadm.toml').split('# Metrics')[0]   # no fixed metrics port
    path = config(original)
    run_module(MOD, path=path, **base)
    with open(path, 'w') as f:
        f.write(toolkit_install_then_revert(original, CRI2))
    broken = containerd_daemon(path, CONTAINERD_1)
    assert broken.up, broken.log_text()[-2000:]
    assert broken.plugins().get(CRI2) == 'error'
    broken.stop()
    run_module(MOD, path=path, state='repair', **base)
    fixed = containerd_daemon(path, CONTAINERD_1)
    assert fixed.up, fixed.log_text()[-2000:]
    assert fixed.plugins().get(CRI2) == 'ok'


def test_restore_over_binary_garbage_and_through_a_link_only_with_follow(config, run_module, base, workdir):
    real = config('v2_kubeadm.toml', filename='real.toml')
    link = os.path.join(workdir, 'etc', 'config.toml')
    os.symlink('real.toml', link)
    run_module(MOD, path=link, **base)
    with open(real, 'wb') as f:
        f.write(b'\xff\xfe\x00 not a config')
    failed = run_module(MOD, path=link, state='check', expect_fail=True, **base)
    assert 'not UTF-8' in failed['msg']
    refused = run_module(MOD, path=link, state='restore', expect_fail=True, **base)
    assert 'symbolic link' in refused['msg'] and read(real, 'rb').startswith(b'\xff')
    done = run_module(MOD, path=link, state='restore', follow=True, **base)
    assert done['restored'] == [real] and done['drift'] is None
    assert os.path.islink(link) and read(real) == fixture_text('v2_kubeadm.toml')


def test_restore_removes_the_dropins_an_owner_wrote_since_and_keeps_the_others(config, run_module, base, workdir):
    """The FLEET_FULL rollback: coco's nydus drop-in, written and imported after the baseline, goes with the restore."""
    path = config('v2_kubeadm.toml')
    original = read(path)
    run_module(MOD, path=path, **base)
    folder = os.path.join(workdir, 'etc', 'config.toml.d')
    os.makedirs(folder)
    nydus = os.path.join(folder, 'nydus-snapshotter.toml')
    by_hand = os.path.join(folder, 'by-hand.toml')
    with open(by_hand, 'w') as f:
        f.write('version = 2\n')
    run_module('containerd_dropin', path=path, dropin=nydus, content='version = 2\n\n' + NYDUS, owner='coco')
    run_module('containerd_imports', path=path, imports=[nydus, by_hand], owner='coco')
    assert nydus in read(path) and os.path.exists(nydus)
    dropin_ledger = glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json'))
    assert len(dropin_ledger) == 2  # config.toml's and the drop-in's own

    dry = run_module(MOD, path=path, state='restore', check=True, **base)
    assert dry['changed'] and dry['removed_files'] == [nydus] and os.path.exists(nydus)
    done = run_module(MOD, path=path, state='restore', backup=True, **base)
    assert done['removed_files'] == [nydus] and done['restored'] == [path]
    assert read(path) == original and not os.path.exists(nydus)
    assert os.path.exists(by_hand)                        # nobody's record: the operator's file stays
    assert any(b.startswith(nydus + '.') for b in done['backup_files']), done['backup_files']
    # config.toml's ledger back to the baseline's (none), and the drop-in's own ledger gone with it
    assert glob.glob(os.path.join(run_module.state_dir, 'ledger', '*.json')) == []
    assert not run_module(MOD, path=path, state='restore', **base)['changed']


def test_restore_keeps_a_dropin_adopted_as_it_was_before_the_baseline(config, run_module, base, workdir):
    """A file on disk before the snapshot that an owner later adopted unchanged is not the owner's to delete."""
    path = config('v2_kubeadm.toml')
    folder = os.path.join(workdir, 'etc', 'config.toml.d')
    os.makedirs(folder)
    nydus = os.path.join(folder, 'nydus-snapshotter.toml')
    with open(nydus, 'w') as f:
        f.write('version = 2\n\n' + NYDUS)
    old = time.time() - 3600
    os.utime(nydus, (old, old))
    run_module(MOD, path=path, **base)
    res = run_module('containerd_dropin', path=path, dropin=nydus, content='version = 2\n\n' + NYDUS, owner='coco')
    assert not res['changed'] and res['owned']              # adopted, not written
    run_module('containerd_imports', path=path, imports=[nydus], owner='coco')
    done = run_module(MOD, path=path, state='restore', **base)
    assert done['removed_files'] == [] and os.path.exists(nydus)


# ---------------------------------------------------------------- the lock, and the details of a snapshot
def test_a_snapshot_waits_for_the_configs_lock(config, run_module, base):
    """A snapshot reads the tree under config.toml's lock: an editor holding it makes the snapshot wait, then
    fail with the lock's own message, and nothing is stored."""
    import fcntl
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import lock_path_for
    path = config('v2_kubeadm.toml')
    fd = os.open(lock_path_for(path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        res = run_module(MOD, path=path, lock_timeout=0.5, expect_fail=True, **base)
    finally:
        os.close(fd)
    assert lock_path_for(path) in res['msg'], res['msg']
    assert not glob.glob(os.path.join(base['store'], 'default', '2*'))


def test_a_new_drop_in_makes_a_new_snapshot(config, run_module, base, workdir):
    """overwrite: true takes a new snapshot when the tree gained a file (a glob import matching one more), even
    though config.toml and every file the old snapshot holds are unchanged."""
    folder = os.path.join(workdir, 'etc', 'conf.d')
    path = config('imports = ["%s/*.toml"]\n' % folder + fixture_text('v2_kubeadm.toml'))
    os.makedirs(folder)
    nydus = 'version = 2\n[proxy_plugins.%s]\n  type = "snapshot"\n  address = "/run/%s.sock"\n'
    with open(os.path.join(folder, 'a.toml'), 'w') as f:
        f.write(nydus % ('a', 'a'))
    first = run_module(MOD, path=path, overwrite=True, **base)
    with open(os.path.join(folder, 'b.toml'), 'w') as f:
        f.write(nydus % ('b', 'b'))
    again = run_module(MOD, path=path, overwrite=True, **base)
    assert again['changed'] and again['snapshot'] != first['snapshot']
    assert sorted(os.path.basename(r['path']) for r in again['files']) == ['a.toml', 'b.toml', 'config.toml']


def test_repair_names_a_baseline_without_a_config(config, run_module, base, workdir):
    path = os.path.join(workdir, 'etc', 'config.toml')
    os.makedirs(os.path.dirname(path))
    run_module(MOD, path=path, **base)
    config('v2_flat.toml')
    failed = run_module(MOD, path=path, state='repair', expect_fail=True, **base)
    assert "baseline 'default' recorded that %s did not exist when it was taken, so it has no keys to put back" \
        % path in failed['msg'], failed['msg']


@pytest.mark.parametrize('manifest', ['[1]', '{"format": 1', '{"format": 99}'])
def test_a_damaged_manifest_is_named(config, run_module, base, manifest):
    path = config('v2_kubeadm.toml')
    snap = run_module(MOD, path=path, **base)
    target = os.path.join(snap['snapshot'], 'manifest.json')
    os.chmod(target, 0o600)
    with open(target, 'w') as f:
        f.write(manifest)
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **base)
    assert failed['msg'].startswith('the manifest of baseline %s is damaged (' % snap['snapshot']), failed['msg']


def test_restore_takes_back_the_ledger_of_a_drop_in_it_puts_back(config, run_module, base, workdir):
    """A drop-in in the baseline that an owner edited since (the toolkit's 99-nvidia.toml on 1.x, where the CRI
    table lives): the restore puts its bytes back and its ledger with them, so the owner is not left recorded
    for a runtime the file no longer has."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    path = os.path.join(etc, 'config.toml')
    with open(path, 'w') as f:
        f.write('version = 2\nimports = ["%s/conf.d/*.toml"]\n' % etc)
    dropin = os.path.join(etc, 'conf.d', '99-nvidia.toml')
    with open(dropin, 'w') as f:
        f.write(fixture_text('v2_debian_stock.toml'))
    before = read(dropin)
    run_module(MOD, path=path, **base)
    res = run_module('containerd_runtime', path=path, name='nvidia-broken', runtime_type='io.containerd.runc.v2',
                     owner='gpu', containerd_bin=CONTAINERD_1)
    assert res['changed'] and 'nvidia-broken' in read(dropin) and read(path).count('nvidia') == 0
    info = run_module('containerd_info', path=path, owner='gpu', dump=False, containerd_bin=CONTAINERD_1)
    assert info['owned']['runtimes'] == ['nvidia-broken']
    done = run_module(MOD, path=path, state='restore', **base)
    assert dropin in done['restored'] and read(dropin) == before
    info = run_module('containerd_info', path=path, owner='gpu', dump=False, containerd_bin=CONTAINERD_1)
    assert info['owned']['runtimes'] == [] and info['owned']['tables'] == []
    assert all(entry['records_by_owner'].get('gpu', []) == [] for entry in info['ledgers']), info['ledgers']
    assert not run_module(MOD, path=path, state='restore', **base)['changed']
