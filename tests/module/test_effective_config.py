# -*- coding: utf-8 -*-
"""Edits judged on what containerd runs: config.toml merged with its drop-ins.

Each layout is one that real tools write (the NVIDIA toolkit >= 1.18's
conf.d/99-nvidia.toml with a copy of the whole CRI table, kata-deploy's CRI
drop-in), and every outcome is judged by the real containerd 1.6, 1.7 and 2.1
binaries' own `config dump`.
"""

import os
import re

import pytest
import tomlkit

from helpers.common import (
    CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, assert_containerd_accepts, nvidia_tree, read,
    without_containerd)

V2_CRI = 'io.containerd.grpc.v1.cri'
V3_RT = 'io.containerd.cri.v1.runtime'
V3_IMAGES = 'io.containerd.cri.v1.images'
KATA_TYPE = 'io.containerd.kata-qemu.v2'


def binaries_1x():
    assert CONTAINERD_1 and CONTAINERD_17, 'run make deps (containerd 1.6 from Debian, 1.7 in build/containerd17)'
    return [('1.6', CONTAINERD_1), ('1.7', CONTAINERD_17)]


def dump(path, binary):
    return tomlkit.parse(assert_containerd_accepts(path, binary)).unwrap()


def cri_v2(data):
    return data['plugins'][V2_CRI]


@pytest.mark.parametrize('label', ['1.6', '1.7'])
def test_1x_nvidia_dropin_setting_goes_where_containerd_reads_it(run_module, workdir, label):
    """1.x: the drop-in's CRI table replaces config.toml's, so a CRI key is edited in the drop-in."""
    binary = dict(binaries_1x())[label]
    main, dropin = nvidia_tree(workdir, 'c16')
    main_bytes, dropin_bytes = read(main, 'rb'), read(dropin, 'rb')
    assert cri_v2(dump(main, binary))['containerd']['disable_snapshot_annotations'] is True
    res = run_module('containerd_setting', path=main, key='images.disable_snapshot_annotations', value=False,
                     owner='coco', containerd_bin=binary)
    assert res['changed'] and res['file'] == dropin
    [effect] = res['effects']
    assert effect['in_effect'] and effect['file'] == dropin and effect['confirmed_by'] == 'config dump'
    assert read(main, 'rb') == main_bytes, 'config.toml is not where containerd reads the CRI table'
    assert cri_v2(dump(main, binary))['containerd']['disable_snapshot_annotations'] is False
    again = run_module('containerd_setting', path=main, key='images.disable_snapshot_annotations', value=False,
                       owner='coco', containerd_bin=binary)
    assert not again['changed']
    res = run_module('containerd_setting', path=main, key='images.disable_snapshot_annotations', owner='coco',
                     state='absent', containerd_bin=binary)
    assert res['changed'] and res['file'] == dropin
    assert read(dropin, 'rb') == dropin_bytes and read(main, 'rb') == main_bytes


@pytest.mark.parametrize('label', ['1.6', '1.7'])
def test_1x_nvidia_dropin_new_default_runtime_in_effect_and_undone(run_module, workdir, label):
    binary = dict(binaries_1x())[label]
    main, dropin = nvidia_tree(workdir, 'c16')
    main_bytes, dropin_bytes = read(main, 'rb'), read(dropin, 'rb')
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', default=True, containerd_bin=binary)
    assert res['changed'] and res['file'] == dropin and res['created']
    assert all(e['in_effect'] for e in res['effects']), res['effects']
    merged = cri_v2(dump(main, binary))['containerd']
    assert merged['default_runtime_name'] == 'kata-qemu'
    assert merged['runtimes']['kata-qemu']['runtime_type'] == KATA_TYPE
    # the toolkit's runtimes and runc's SystemdCgroup are still what containerd runs
    assert merged['runtimes']['runc']['options']['SystemdCgroup'] is True and 'nvidia' in merged['runtimes']
    assert read(main, 'rb') == main_bytes
    assert not run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                          inherit='none', default=True, containerd_bin=binary)['changed']
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', state='absent',
                     containerd_bin=binary)
    assert res['changed'] and res['removed']
    assert read(dropin, 'rb') == dropin_bytes and read(main, 'rb') == main_bytes
    assert cri_v2(dump(main, binary))['containerd']['default_runtime_name'] == 'nvidia'


def test_1x_edit_in_config_refuses_with_the_true_reason(run_module, workdir):
    """The old refusal said "would not load" and suggested editing config.toml, where the change already was."""
    main, dropin = nvidia_tree(workdir, 'c16')
    before = (read(main, 'rb'), read(dropin, 'rb'))
    for args in (dict(_module='containerd_runtime', name='kata-qemu', runtime_type=KATA_TYPE, inherit='none'),
                 dict(_module='containerd_runtime', name='runc', options={'SystemdCgroup': False}),
                 dict(_module='containerd_setting', key='images.disable_snapshot_annotations', value=False)):
        res = run_module(path=main, owner='coco', edit_in='config', expect_fail=True, **args)
        msg = res['msg']
        assert 'has no effect' in msg and dropin in msg and 'replaces the whole plugin table' in msg, msg
        assert 'containerd 1.6' in msg and 'edit_in: auto' in msg and 'would not load' not in msg
        assert res['effects'] and not any(e['in_effect'] for e in res['effects'])
        assert (read(main, 'rb'), read(dropin, 'rb')) == before


def test_2x_nvidia_dropin_default_is_set_where_the_later_file_wins(run_module, workdir):
    """2.x deep-merges, later files win: config.toml's default_runtime_name is overridden by 99-nvidia.toml."""
    assert CONTAINERD_2, 'run make deps'
    main, dropin = nvidia_tree(workdir, 'c2')
    main_bytes, dropin_bytes = read(main, 'rb'), read(dropin, 'rb')
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none')
    assert res['changed'] and res['file'] == main, 'a new runtime merges from config.toml on 2.x'
    mid = read(main, 'rb')
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', default=True)
    assert res['changed'] and res['file'] == dropin
    assert [e['key'] for e in res['effects']] == ['plugins."%s".containerd.default_runtime_name' % V3_RT]
    assert res['effects'][0]['in_effect'] and res['effects'][0]['confirmed_by'] == 'config dump'
    merged = dump(main, CONTAINERD_2)['plugins'][V3_RT]['containerd']
    assert merged['default_runtime_name'] == 'kata-qemu' and 'kata-qemu' in merged['runtimes']
    assert read(main, 'rb') == mid
    # edit_in: config says which file wins instead
    res = run_module('containerd_setting', path=main, key='cri.enable_cdi', value=False, owner='ops',
                     edit_in='config', expect_fail=True)
    assert dropin in res['msg'] and 'later file wins' in res['msg']
    run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', state='absent')
    assert read(main, 'rb') == main_bytes and read(dropin, 'rb') == dropin_bytes


def test_2x_kata_deploy_dropin_runtime_edited_in_its_file(run_module, workdir):
    """kata-deploy on 2.x imports its own drop-in defining kata-qemu; options for it go there."""
    assert CONTAINERD_2, 'run make deps'
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    kata = os.path.join(etc, 'kata-deploy.toml')
    with open(kata, 'w') as f:
        f.write("version = 3\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]\n"
                "  runtime_type = 'io.containerd.kata-qemu.v2'\n  privileged_without_host_devices = true\n")
    text = read(os.path.join(FIXTURES, 'v3_default.toml'))
    text = re.sub(r'(?m)^imports = .*$', 'imports = ["%s"]' % kata, text)
    if 'imports = ' not in text:
        text = text.replace('version = 3\n', 'version = 3\nimports = ["%s"]\n' % kata, 1)
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write(text)
    before = (read(main, 'rb'), read(kata, 'rb'))
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco',
                     options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration-qemu.toml'})
    assert res['changed'] and res['file'] == kata and read(main, 'rb') == before[0]
    merged = dump(main, CONTAINERD_2)['plugins'][V3_RT]['containerd']['runtimes']['kata-qemu']
    assert merged['options']['ConfigPath'].endswith('configuration-qemu.toml')
    run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', state='absent')
    assert (read(main, 'rb'), read(kata, 'rb')) == before


def test_key_unknown_to_the_node_containerd_is_not_reported_done(run_module, config):
    """containerd 1.6 has no CDI (1.7 has): enable_cdi is accepted by config dump and dropped."""
    path = config('v2_kubeadm.toml')
    before = read(path, 'rb')
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu',
                     containerd_bin=CONTAINERD_1, expect_fail=True)
    assert 'has no effect' in res['msg'] and 'containerd 1.6' in res['msg'] and 'dropped' in res['msg']
    assert read(path, 'rb') == before
    assert CONTAINERD_17, 'run make deps'
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu',
                     containerd_bin=CONTAINERD_17)
    assert res['changed'] and res['effects'][0]['in_effect']
    assert cri_v2(dump(path, CONTAINERD_17))['enable_cdi'] is True


def test_type_error_containerd_refuses_is_not_written(run_module, config):
    """jq/tomlq-based installers write 1.0 as 1; containerd 1.6 cannot load an int where it wants a float."""
    path = config('v2_kubeadm.toml')
    before = read(path, 'rb')
    res = run_module('containerd_setting', path=path, raw=True, owner='ops', value=1,
                     key='plugins."io.containerd.gc.v1.scheduler".pause_threshold', containerd_bin=CONTAINERD_1,
                     expect_fail=True)
    assert 'validation' in res['msg'] and 'float' in res['msg'] and 'Nothing was written' in res['msg']
    assert read(path, 'rb') == before


def test_version_3_file_on_a_1x_node_is_refused_with_the_fix(run_module, config):
    """1.6's config dump exits 0 on any version 3 file and runs on its defaults: the CRI settings are lost."""
    path = config('v3_default.toml')
    before = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', containerd_bin=CONTAINERD_1,
                     expect_fail=True)
    assert 'version = 3' in res['msg'] and 'containerd is 1.6' in res['msg'] and 'version 2 layout' in res['msg']
    assert read(path, 'rb') == before


def test_containerd_version_may_not_contradict_the_binary(run_module, config):
    path = config('v2_kubeadm.toml')
    before = read(path, 'rb')
    res = run_module('containerd_imports', path=path, imports=[], owner='coco', containerd_version='2.1',
                     containerd_bin=CONTAINERD_1, expect_fail=True)
    assert 'containerd_version is 2.1' in res['msg'] and 'is 1.6' in res['msg'] and CONTAINERD_1 in res['msg']
    assert read(path, 'rb') == before


def test_containerd_found_outside_path(run_module, config, tmp_path):
    """kubespray and the upstream tarball use /usr/local/bin, which RHEL's sudo PATH leaves out: searched too."""
    path = config('v2_kubeadm.toml')
    empty = tmp_path / 'bin'
    empty.mkdir()
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', env={'PATH': str(empty)})
    assert res['changed'] and res['validated'] == 'config dump' and res['effects'][0]['confirmed_by'] == 'config dump'


def test_containerd_bin_that_is_not_a_binary_is_refused(run_module, config, tmp_path):
    path = config('v2_kubeadm.toml')
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco',
                     containerd_bin=str(tmp_path / 'nope'), expect_fail=True)
    assert 'containerd_bin' in res['msg'] and 'not an executable' in res['msg']


@pytest.mark.parametrize('product,header', [
    ('k3s', '# File generated by k3s. DO NOT EDIT. Use config.toml.tmpl instead.'),
    ('RKE2', '# File generated by rke2. DO NOT EDIT. Use config.toml.tmpl instead.'),
])
def test_generated_config_is_refused_with_the_fix_that_works(run_module, config, product, header):
    path = config(header + '\n' + read(os.path.join(FIXTURES, 'v2_kubeadm.toml')))
    before = read(path, 'rb')
    for module, args in (('containerd_runtime', dict(name='nvidia')),
                         ('containerd_setting', dict(key='images.disable_snapshot_annotations', value=False)),
                         ('containerd_imports', dict(imports=[]))):
        res = run_module(module, path=path, owner='gpu', expect_fail=True, **args)
        assert 'generated by %s' % product in res['msg'] and 'config.toml.tmpl' in res['msg']
        assert '{{ template "base" . }}' in res['msg'] and res['generated_by'] == product
    assert read(path, 'rb') == before


def test_absent_for_an_owner_with_no_record_keeps_and_warns(run_module, config, workdir):
    """The EKS GPU AMI and k3s ship nvidia already: an uninstall playbook must not fail or remove it."""
    shipped = ('\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
               '  runtime_type = "io.containerd.runc.v2"\n'
               '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
               '    BinaryName = "/usr/bin/nvidia-container-runtime"\n')
    path = config(read(os.path.join(FIXTURES, 'v2_kubeadm.toml')) + shipped)
    nydus = os.path.join(workdir, 'etc', 'nydus.toml')
    with open(nydus, 'w') as f:
        f.write('version = 2\n[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/nydus.sock"\n')
    run_module('containerd_imports', path=path, imports=[nydus], owner='ops')
    run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations', value=False,
               owner='ops')
    before = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', state='absent')
    assert not res['changed'] and res['kept'] and any('no ledger record' in w for w in res['warnings'])
    res = run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations',
                     owner='gpu_toolkit', state='absent')
    assert not res['changed'] and res['kept'] and any('no ledger record' in w for w in res['warnings'])
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', state='absent')
    assert not res['changed'] and res['kept'] == [nydus]
    assert read(path, 'rb') == before
    # another owner's runtime is still refused without force
    run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type=KATA_TYPE, inherit='none')
    res = run_module('containerd_runtime', path=path, name='kata', owner='gpu_toolkit', state='absent',
                     expect_fail=True)
    assert 'created by: coco' in res['msg'] and 'force' in res['msg']


def test_effects_in_check_mode_and_nothing_written(run_module, workdir):
    main, dropin = nvidia_tree(workdir, 'c16')
    before = (read(main, 'rb'), read(dropin, 'rb'))
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', check=True, diff=True, containerd_bin=CONTAINERD_1)
    assert res['changed'] and res['file'] == dropin and res['effects']
    assert dropin in res['diff']['after_header'] and 'kata-qemu' in res['diff']['after']
    assert (read(main, 'rb'), read(dropin, 'rb')) == before
    assert not [n for n in os.listdir(os.path.dirname(dropin)) if n.endswith('.nodeguard-tmp')]


def test_no_containerd_anywhere_warns_loudly(run_module, config, tmp_path):
    """validate: auto used to skip silently when containerd was not on PATH: now the result says so."""
    path = config('v2_kubeadm.toml')
    hide, env = without_containerd(tmp_path)
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', env=env, prefix=hide)
    assert res['changed'] and res['validated'].startswith('not validated by containerd')
    assert any("nodeguard's own model" in w and 'containerd_bin' in w for w in res['warnings']), res['warnings']
    assert 'confirmed_by' not in res['effects'][0]


def test_validate_load_catches_what_config_dump_accepts(run_module, config):
    """`systemd_cgroup = true` (meant: runc's SystemdCgroup) passes config dump; 1.6's CRI plugin then fails."""
    path = config('v2_kubeadm.toml')
    before = read(path, 'rb')
    key = 'plugins."io.containerd.grpc.v1.cri".systemd_cgroup'
    res = run_module('containerd_setting', path=path, raw=True, key=key, value=True, owner='ops',
                     containerd_bin=CONTAINERD_1, validate='load', expect_fail=True)
    assert 'validate: load' in res['msg'] and 'io.containerd.grpc.v1.cri' in res['msg']
    assert 'only works for runtime io.containerd.runtime.v1.linux' in res['msg'] and path in res['msg']
    assert res['load_test']['status'] == 'failed' and read(path, 'rb') == before
    # config dump alone (validate: auto) accepts the same candidate: that is why the load test exists
    res = run_module('containerd_setting', path=path, raw=True, key=key, value=True, owner='ops',
                     containerd_bin=CONTAINERD_1)
    assert res['changed'] and res['validated'] == 'config dump'
    run_module('containerd_setting', path=path, raw=True, key=key, owner='ops', state='absent')
    assert read(path, 'rb') == before


@pytest.mark.parametrize('label', ['1.7', '2.1'])
def test_validate_load_passes_a_good_edit(run_module, workdir, label):
    binary = {'1.7': CONTAINERD_17, '2.1': CONTAINERD_2}[label]
    assert binary, 'run make deps'
    main, dropin = nvidia_tree(workdir, 'c16' if label == '1.7' else 'c2')
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', default=True, containerd_bin=binary, validate='load')
    assert res['changed'] and res['file'] == dropin and all(e['in_effect'] for e in res['effects'])
