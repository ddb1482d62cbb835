# -*- coding: utf-8 -*-
"""containerd_runtime, run the way Ansible runs it, judged by real containerd."""

import json
import os
import stat

import pytest

from helpers.common import CONTAINERD_1, assert_containerd_accepts, config_dump, read

import tomlkit

V2_CRI = 'io.containerd.grpc.v1.cri'
V3_CRI = 'io.containerd.cri.v1.runtime'
NVIDIA_BIN = '/usr/bin/nvidia-container-runtime'


def runtimes(path, plugin):
    data = tomlkit.parse(read(path)).unwrap()
    return data['plugins'][plugin]['containerd']


@pytest.mark.parametrize('fixture,plugin', [('v2_kubeadm.toml', V2_CRI), ('v2_flat.toml', V2_CRI),
                                            ('v3_default.toml', V3_CRI)])
def test_seed_000_round_trip_gives_back_original_bytes(run_module, config, fixture, plugin):
    path = config(fixture)
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', default=True,
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed'] and res['created']
    assert res['plugin'] == plugin
    assert res['default_runtime_name'] == 'nvidia'
    # the new runtime inherited the default runtime's cgroup driver
    assert res['runtime']['options'] == dict(read_runc_options(path, plugin), BinaryName=NVIDIA_BIN)
    assert res['runtime']['options']['SystemdCgroup'] is True
    assert_containerd_accepts(path)
    ctd = runtimes(path, plugin)
    assert ctd['default_runtime_name'] == 'nvidia'
    assert ctd['runtimes']['runc']['options']['SystemdCgroup'] is True
    assert 'BinaryName' not in ctd['runtimes']['runc']['options'] or \
        ctd['runtimes']['runc']['options']['BinaryName'] == ''

    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', state='absent')
    assert res['changed'] and res['removed']
    assert res['default_runtime_name'] in ('runc', None)
    assert read(path, 'rb') == original
    assert_containerd_accepts(path)


def read_runc_options(path, plugin):
    return runtimes(path, plugin)['runtimes']['runc']['options']


def test_runc_name_collision_uninstall_keeps_runc_whole(run_module, config):
    """The toolkit configured with runtime name `runc` only adds BinaryName; undo removes only that."""
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='runc', owner='gpu_toolkit',
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed'] and not res['created']
    assert read_runc_options(path, V2_CRI) == {'SystemdCgroup': True, 'BinaryName': NVIDIA_BIN}
    assert_containerd_accepts(path)

    res = run_module('containerd_runtime', path=path, name='runc', owner='gpu_toolkit', state='absent')
    assert res['changed'] and not res['removed']
    assert res['runtime']['options'] == {'SystemdCgroup': True}
    assert res['runtime']['runtime_type'] == 'io.containerd.runc.v2'
    assert read(path, 'rb') == original


def test_runc_not_created_by_owner_is_never_deleted(run_module, config):
    """The seed's state: the toolkit itself wrote BinaryName into runc, with no ledger."""
    path = config('v2_toolkit_installed.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='runc', owner='gpu_toolkit', state='absent')
    assert not res['changed'] and res['kept'] == ['plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc']
    assert any('not added or changed by owner gpu_toolkit' in w and path in w and 'force' in w
               for w in res['warnings'])
    assert read(path, 'rb') == original


def test_removing_the_default_runtime_set_by_someone_else_fails(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type='io.containerd.kata.v2',
               inherit='none')
    run_module('containerd_runtime', path=path, name='kata', owner='ops', default=True)
    before = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='kata', owner='coco', state='absent', expect_fail=True)
    assert 'default runtime' in res['msg'] and 'set by ops' in res['msg']
    assert read(path, 'rb') == before


def test_force_cannot_break_the_node_either(run_module, config):
    """Deleting runc (the default, no recorded owner) is refused by the built-in checks even with force,
    when other runtimes remain: containerd would then find no runtime for its default."""
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='nvidia', owner='g')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='runc', owner='ops', state='absent')
    assert not res['changed'] and any('not added or changed by owner ops' in w for w in res['warnings'])
    res = run_module('containerd_runtime', path=path, name='runc', owner='ops', state='absent', force=True,
                     expect_fail=True)
    assert 'would not load' in res['msg'] and "containerd uses 'runc'" in res['msg']
    assert read(path, 'rb') == original


def test_force_removes_foreign_runtime(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='kata', owner='coco', runtime_type='io.containerd.kata.v2',
               inherit='none')
    res = run_module('containerd_runtime', path=path, name='kata', owner='gpu_toolkit', state='absent',
                     expect_fail=True)
    assert 'created by: coco' in res['msg']
    res = run_module('containerd_runtime', path=path, name='kata', owner='gpu_toolkit', state='absent', force=True)
    assert res['changed'] and res['runtime'] is None
    assert_containerd_accepts(path)


def test_check_mode_diff_mode_and_idempotency(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    mtime = os.stat(path).st_mtime_ns
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', check=True, diff=True,
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed']
    assert read(path, 'rb') == original and os.stat(path).st_mtime_ns == mtime
    assert res['diff']['before'] == original.decode()
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]' in res['diff']['after']
    assert res['diff']['before_header'].startswith(path)
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger')), 'check mode wrote the ledger'

    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', diff=True,
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed']
    written = read(path, 'rb')
    mtime = os.stat(path).st_mtime_ns
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', diff=True,
                     options={'BinaryName': NVIDIA_BIN})
    assert not res['changed'] and 'diff' not in res
    assert read(path, 'rb') == written and os.stat(path).st_mtime_ns == mtime


def test_version_1_is_refused_clearly(run_module, config):
    path = config('v1_legacy.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', expect_fail=True)
    assert path in res['msg'] and 'version 1' in res['msg'] and 'migrate' in res['msg']
    assert res['key'] == 'version'
    assert read(path, 'rb') == original


def test_unknown_version_is_refused(run_module, config):
    path = config('version = 99\n')
    res = run_module('containerd_runtime', path=path, name='nvidia', expect_fail=True)
    assert 'version = 99' in res['msg'] and path in res['msg']
    assert read(path) == 'version = 99\n'


def test_missing_file_fails_without_create_and_is_created_with_it(run_module, config, workdir):
    path = os.path.join(workdir, 'etc', 'config.toml')
    os.makedirs(os.path.dirname(path))
    res = run_module('containerd_runtime', path=path, name='nvidia', expect_fail=True)
    assert 'does not exist' in res['msg'] and 'create: true' in res['msg']
    assert not os.path.exists(path)
    res = run_module('containerd_runtime', path=path, name='nvidia', create=True, owner='gpu_toolkit',
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed'] and res['config_version'] == 2
    text = read(path)
    assert 'oom_score' in text, 'expected containerd config default as the starting point'
    assert '.runtimes.nvidia]' in text
    assert_containerd_accepts(path)


@pytest.mark.parametrize('broken', ['version = 2\nimports = [ , ]\n', 'version = 2\n[plugins\n',
                                    'version = 2\n[a]\nx = 1\n[a]\nx = 2\n'])
def test_malformed_toml_is_refused_with_path_and_position(run_module, config, broken):
    path = config(broken)
    res = run_module('containerd_runtime', path=path, name='nvidia', expect_fail=True)
    assert path in res['msg'] and 'not valid TOML' in res['msg'] and 'line' in res['msg']
    assert 'containerd_baseline' in res['msg']
    assert read(path) == broken
    assert sorted(os.listdir(os.path.dirname(path))) == ['.config.toml.nodeguard.lock', 'config.toml']


def test_foreign_writer_between_read_and_write_is_merged_not_lost(run_module, config, workdir):
    """A writer without our lock (nvidia-ctk style) rewrites the file mid-run: our edit is re-applied."""
    path = config('v2_kubeadm.toml')
    flag = os.path.join(workdir, 'wrote-once')
    script = os.path.join(workdir, 'foreign.sh')
    with open(script, 'w') as f:
        f.write('#!/bin/sh\nif [ ! -e %s ]; then touch %s; sed -i "s/pause:3.9/pause:3.10/" %s; fi\n'
                'exec %s --config "$1" config dump >/dev/null\n' % (flag, flag, path, CONTAINERD_1))
    os.chmod(script, 0o755)
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit',
                     options={'BinaryName': NVIDIA_BIN}, validate=script + ' %s')
    assert res['changed']
    assert any('changed while nodeguard was editing' in w for w in res.get('warnings', []))
    text = read(path)
    assert 'pause:3.10' in text, 'the foreign change was lost'
    assert '.runtimes.nvidia]' in text
    assert_containerd_accepts(path)


def test_persistent_foreign_writer_fails_clearly_and_writes_nothing(run_module, config, workdir):
    path = config('v2_kubeadm.toml')
    script = os.path.join(workdir, 'foreign.sh')
    with open(script, 'w') as f:
        f.write('#!/bin/sh\necho "# touched $$" >> %s\n' % path)
    os.chmod(script, 0o755)
    res = run_module('containerd_runtime', path=path, name='nvidia', validate=script + ' %s', expect_fail=True)
    assert 'changed by another program 3 times' in res['msg'] and path in res['msg']
    text = read(path)
    assert '.runtimes.nvidia]' not in text and text.count('# touched') == 3
    assert not [n for n in os.listdir(os.path.dirname(path)) if n.endswith('.nodeguard-tmp')]


def test_validate_command_failure_writes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', validate='/bin/false %s', expect_fail=True)
    assert 'validation' in res['msg'] and 'Nothing was written' in res['msg']
    assert read(path, 'rb') == original
    res = run_module('containerd_runtime', path=path, name='nvidia', validate='/bin/true', expect_fail=True)
    assert '%s' in res['msg']
    assert read(path, 'rb') == original


def test_backup_mode_and_owner_are_kept(run_module, config):
    path = config('v2_kubeadm.toml')
    os.chmod(path, 0o600)
    os.chown(path, 65534, 65534)
    original = read(path, 'rb')
    res = run_module('containerd_runtime', path=path, name='nvidia', backup=True)
    assert res['changed'] and os.path.isfile(res['backup_file'])
    assert read(res['backup_file'], 'rb') == original
    st = os.stat(path)
    assert stat.S_IMODE(st.st_mode) == 0o600 and (st.st_uid, st.st_gid) == (65534, 65534)


def test_mode_option_applies(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='nvidia', mode='0640')
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_symlinked_config_needs_follow(run_module, config, workdir):
    real = config('v2_kubeadm.toml')
    other = os.path.join(workdir, 'other')
    os.makedirs(other)
    link = os.path.join(other, 'config.toml')
    os.symlink(real, link)
    original = read(real, 'rb')
    res = run_module('containerd_runtime', path=link, name='nvidia', expect_fail=True)
    assert 'symbolic link' in res['msg'] and 'follow: true' in res['msg']
    assert read(real, 'rb') == original
    res = run_module('containerd_runtime', path=link, name='nvidia', follow=True)
    assert res['changed'] and os.path.islink(link)
    assert '.runtimes.nvidia]' in read(real)


def test_hostile_names_and_values_cannot_inject_toml(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    for name in ['bad"name', 'x]\n[evil', 'a b', '', 'a' * 64]:
        res = run_module('containerd_runtime', path=path, name=name, expect_fail=True)
        assert 'runtime name' in res['msg']
    res = run_module('containerd_runtime', path=path, name='nvidia', options={'Bad Key]': 1}, expect_fail=True)
    assert 'options key' in res['msg']
    assert read(path, 'rb') == original
    evil = 'x"\n[plugins.evil]\nfoo = "bar\\'
    res = run_module('containerd_runtime', path=path, name='nvidia', options={'BinaryName': evil},
                     settings={'pod_annotations': ['a]"', "b'\n"]})
    assert res['changed']
    data = tomlkit.parse(read(path)).unwrap()
    nv = data['plugins'][V2_CRI]['containerd']['runtimes']['nvidia']
    assert nv['options']['BinaryName'] == evil and nv['pod_annotations'] == ['a]"', "b'\n"]
    assert 'evil' not in data['plugins']


def test_two_owners_on_one_key_stack_their_priors(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    run_module('containerd_runtime', path=path, name='runc', owner='a', options={'BinaryName': '/a'})
    run_module('containerd_runtime', path=path, name='runc', owner='b', options={'BinaryName': '/b'})
    # a leaves first: b's value stays, and b inherits a's prior (absent)
    res = run_module('containerd_runtime', path=path, name='runc', owner='a', state='absent')
    assert not res['changed'] and read_runc_options(path, V2_CRI)['BinaryName'] == '/b'
    res = run_module('containerd_runtime', path=path, name='runc', owner='b', state='absent')
    assert res['changed'] and read(path, 'rb') == original


def test_default_false_undoes_only_own_default(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    run_module('containerd_runtime', path=path, name='nvidia', owner='g', default=True)
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='g', default=False)
    assert res['default_runtime_name'] == 'runc' and res['runtime'] is not None
    run_module('containerd_runtime', path=path, name='nvidia', owner='g', state='absent')
    assert read(path, 'rb') == original


def test_ledger_records_priors(run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='runc', owner='gpu_toolkit', options={'BinaryName': '/x'})
    ledger_dir = os.path.join(run_module.state_dir, 'ledger')
    (name,) = os.listdir(ledger_dir)
    data = json.loads(read(os.path.join(ledger_dir, name)))
    (rec,) = data['records']
    assert rec['owner'] == 'gpu_toolkit' and rec['kind'] == 'key' and rec['prior'] is None
    assert rec['path'][-2:] == ['options', 'BinaryName'] and rec['value'] == '"/x"'
    assert stat.S_IMODE(os.stat(os.path.join(ledger_dir, name)).st_mode) == 0o600


def test_result_runs_on_a_real_containerd_with_cri_ok(run_module, config, containerd_daemon):
    path = config('v2_flat.toml')
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit', default=True,
               options={'BinaryName': NVIDIA_BIN})
    daemon = containerd_daemon(path)
    assert daemon.up, daemon.log_text()[-2000:]
    assert daemon.plugins().get(V2_CRI) == 'ok', daemon.log_text()[-3000:]


def test_the_seed_broken_state_fails_on_a_real_containerd(config, containerd_daemon):
    """The check above can fail: the toolkit's revert (runc deleted) breaks the CRI plugin."""
    path = config('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                  '  default_runtime_name = "runc"\n'
                  '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
                  '  runtime_type = "io.containerd.runc.v2"\n')
    rc, _out, _err = config_dump(path)
    assert rc == 0, '1.6 config dump accepts it: that is why nodeguard checks the default runtime itself'
    daemon = containerd_daemon(path)
    assert daemon.up
    assert daemon.plugins().get(V2_CRI) == 'error'


def test_builtin_check_refuses_what_config_dump_accepts(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, key='cri.default_runtime_name', value='nvidia',
                     expect_fail=True)
    assert "default_runtime_name is 'nvidia'" in res['msg'] and 'runc' in res['msg']
    assert read(path, 'rb') == original


# ------------------------------------------------------------------ Debian's stock file, a forced removal, check mode, version 3 merging


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
