# -*- coding: utf-8 -*-
"""Layouts and owner sequences that once went wrong, judged by real containerd."""

import os

import tomlkit

from conftest import CONTAINERD_1, CONTAINERD_17, assert_containerd_accepts, read

V2_CRI = 'io.containerd.grpc.v1.cri'
NVIDIA_BIN = '/usr/bin/nvidia-container-runtime'


def cri(path, plugin=V2_CRI):
    return tomlkit.parse(read(path)).unwrap().get('plugins', {}).get(plugin, {})


def test_debian_stock_config_runc_binaryname_round_trip(run_module, config):
    """Debian's packaged config.toml has no runtimes table; runc is containerd's built-in one."""
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    run_module('containerd_runtime', path=path, name='runc', owner='gpu', options={'BinaryName': NVIDIA_BIN})
    assert cri(path)['containerd']['runtimes']['runc']['options']['BinaryName'] == NVIDIA_BIN
    assert_containerd_accepts(path)
    res = run_module('containerd_runtime', path=path, name='runc', owner='gpu', state='absent')
    assert res['changed']
    assert read(path, 'rb') == original


def test_debian_stock_config_new_runtime_keeps_runc_on_1x(run_module, config, containerd_daemon):
    """On 1.x the first runtimes table hides the built-in runc: nodeguard writes runc out, and takes it back."""
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', options={'BinaryName': NVIDIA_BIN})
    assert res['changed']
    rts = cri(path)['containerd']['runtimes']
    assert sorted(rts) == ['nvidia', 'runc'] and rts['runc']['runtime_type'] == 'io.containerd.runc.v2'
    daemon = containerd_daemon(path)
    assert daemon.up and daemon.plugins().get(V2_CRI) == 'ok', daemon.log_text()[-2000:]
    daemon.stop()
    # a second owner's runtime keeps runc alive when the first owner leaves
    run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type='io.containerd.kata.v2')
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', state='absent')
    assert sorted(cri(path)['containerd']['runtimes']) == ['kata', 'runc']
    assert_containerd_accepts(path)
    run_module('containerd_runtime', path=path, name='kata', owner='coco', state='absent')
    assert read(path, 'rb') == original


def test_setting_on_a_bare_version_file_round_trips(run_module, config):
    path = config('version = 2\n')
    run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu', containerd_bin=CONTAINERD_17)
    assert cri(path)['enable_cdi'] is True
    run_module('containerd_setting', path=path, key='cri.enable_cdi', owner='gpu', state='absent', containerd_bin=CONTAINERD_17)
    assert read(path) == 'version = 2\n'


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


def test_runtime_defined_in_a_drop_in_is_not_shadowed(run_module, config, workdir):
    dropin = os.path.join(workdir, 'etc', 'kata.toml')
    text = ('version = 3\n\n'
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
            "  runtime_type = 'io.containerd.runc.v2'\n")
    path = config(text.replace('version = 3\n', 'version = 3\nimports = ["%s"]\n' % dropin))
    with open(dropin, 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]\n"
                "  runtime_type = 'io.containerd.kata-qemu.v2'\n")
    before = read(path, 'rb')
    dropin_before = read(dropin, 'rb')
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco',
                     options={'ConfigPath': '/x'}, edit_in='config', expect_fail=True)
    assert dropin in res['msg'] and 'drop-in' in res['msg'] and 'edit_in: auto' in res['msg']
    assert read(path, 'rb') == before
    # edit_in: auto (the default) changes the runtime where it is defined, and undoes it there
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', options={'ConfigPath': '/x'})
    assert res['changed'] and res['file'] == dropin and all(e['in_effect'] for e in res['effects'])
    assert read(path, 'rb') == before and "ConfigPath = '/x'" in read(dropin)
    assert not run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco',
                          options={'ConfigPath': '/x'})['changed']
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', state='absent')
    assert read(dropin, 'rb') == dropin_before
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', default=True)
    assert res['changed'] and not res['created']
    data = tomlkit.parse(read(path)).unwrap()['plugins']['io.containerd.cri.v1.runtime']['containerd']
    assert data['default_runtime_name'] == 'kata-qemu' and 'kata-qemu' not in data['runtimes']
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', state='absent')
    assert read(path, 'rb') == before


def test_forced_removal_restores_the_recorded_default(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type='io.containerd.kata.v2',
               inherit='none')
    run_module('containerd_runtime', path=path, name='kata', owner='ops', default=True)
    run_module('containerd_runtime', path=path, name='kata', owner='coco', state='absent', force=True)
    assert cri(path)['containerd']['default_runtime_name'] == 'runc'
    assert_containerd_accepts(path)


def test_del_character_in_a_value_is_escaped(run_module, config):
    path = config('v2_kubeadm.toml')
    res = run_module('containerd_runtime', path=path, name='nvidia', options={'BinaryName': '/x\x7fy'})
    assert res['changed']
    assert cri(path)['containerd']['runtimes']['nvidia']['options']['BinaryName'] == '/x\x7fy'


def test_check_mode_leaves_no_lock_file(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='nvidia', check=True)
    assert os.listdir(os.path.dirname(path)) == ['config.toml']


def test_check_mode_reports_mode_only_changes(run_module, config):
    path = config('v2_kubeadm.toml')
    os.chmod(path, 0o644)
    run_module('containerd_runtime', path=path, name='runc', owner='x', options={'SystemdCgroup': True})
    res = run_module('containerd_runtime', path=path, name='runc', owner='x', options={'SystemdCgroup': True},
                     mode='0600', check=True)
    assert res['changed'] and oct(os.stat(path).st_mode & 0o777) == '0o644'


def test_version_3_means_containerd_2_merge_semantics(run_module, config):
    """A minimal v3 file: a kata runtime merges with containerd 2.x's built-in runc."""
    path = config('version = 3\n')
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type='io.containerd.kata.v2',
                     inherit='none')
    assert res['changed']
    assert sorted(cri(path, 'io.containerd.cri.v1.runtime')['containerd']['runtimes']) == ['kata']
    assert_containerd_accepts(path)
    assert CONTAINERD_1


def test_existing_clobbering_drop_in_blocks_other_edits_on_1x(run_module, config, workdir):
    """The engine's own check, not only containerd_imports': a drop-in already imported whose CRI table
    would replace the main file's (runc lost) is named, and nothing is written."""
    dropin = config('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                    '  runtime_type = "io.containerd.kata.v2"\n', filename='kata.toml')
    text = read(config('v2_kubeadm.toml')).replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % dropin)
    path = config(text)
    # a key containerd 1.6 runs (it has no CDI: enable_cdi is refused for that first)
    res = run_module('containerd_setting', path=path, key='images.snapshotter', value='native', owner='gpu',
                     expect_fail=True)
    assert dropin in res['msg'] and "runtime 'runc'" in res['msg'] and 'replaces the whole table' in res['msg']
    assert read(path) == text
