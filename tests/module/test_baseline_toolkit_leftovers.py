# -*- coding: utf-8 -*-
"""containerd_baseline on what NVIDIA's toolkit leaves, on the real containerd 1.6, 1.7 and 2.1.

The leftovers are made by tests/standins/nvidia-toolkit-standin, which writes
what the toolkit's v1.17.8 installer and its cleanup write, byte for byte
(tests/standins/test_nvidia_toolkit_standin.py): the file re-serialised from
the node's `containerd config dump`, so on 1.x it imports itself. The node:
a kubeadm config (the real inputs of tests/fixtures/nvidia-ctk), its
baseline, nodeguard's own ``nvidia`` runtime, then the toolkit's setup and
cleanup. With the runtime class ``runc`` (the seed report) the cleanup
deletes the whole runc table, SystemdCgroup with it, and
``default_runtime_name``; with the defaults it deletes the default (``runc``
before the toolkit). ``check`` must say so and name the self-import,
``repair`` must put runc and the default back and keep nodeguard's runtime,
``restore`` must give the baseline's bytes, and a real daemon must load the
result with its CRI plugin ok.
"""

import os
import subprocess

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, config_dump, read

MOD = 'containerd_baseline'
CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
STANDIN = os.path.join(os.path.dirname(FIXTURES), 'standins', 'nvidia-toolkit-standin')
INPUTS = os.path.join(FIXTURES, 'nvidia-ctk', 'inputs')
OWN_BINARY = '/usr/bin/nvidia-container-runtime'

# (id, containerd binary, input, CRI runtime plugin)
NODES = [
    pytest.param(CONTAINERD_1, 'c16-systemd.toml', CRI2, id='containerd-1.6'),
    pytest.param(CONTAINERD_17, 'c16-systemd.toml', CRI2, id='containerd-1.7'),
    pytest.param(CONTAINERD_2, 'c2-systemd.toml', CRI3, id='containerd-2.1'),
]


def node(config, run_module, workdir, binary, source):
    """The kubeadm config, its baseline and nodeguard's own nvidia runtime: (path, common args)."""
    assert binary, 'containerd binary missing (make deps)'
    args = dict(store=os.path.join(workdir, 'baselines'), containerd_bin=binary)
    path = config(read(os.path.join(INPUTS, source)))
    assert run_module(MOD, path=path, **args)['changed']
    own = run_module('containerd_runtime', path=path, name='nvidia', runtime_type='io.containerd.runc.v2',
                     options={'BinaryName': OWN_BINARY, 'SystemdCgroup': True}, containerd_bin=binary)
    assert own['changed']
    return path, args


def toolkit(path, binary, *actions, **env):
    for action in actions:
        res = subprocess.run(['python3', STANDIN, action, '--config', path, '--containerd', binary],
                             env=dict(os.environ, **env), capture_output=True, text=True, check=False)
        assert res.returncode == 0, res.stderr


def dumped(path, binary, cri):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, err
    ctd = tomlkit.parse(out).unwrap()['plugins'][cri]['containerd']
    return ctd.get('runtimes', {}), ctd.get('default_runtime_name')


def self_import_warned(result, path):
    return [w for w in result.get('warnings', []) if w.startswith('%s imports itself' % path)]


def cri_ok(containerd_daemon, path, binary):
    daemon = containerd_daemon(path, binary)
    assert daemon.up, daemon.log_text()[-2000:]
    cri = dict((k, v) for k, v in daemon.plugins().items() if '.cri' in k)
    daemon.stop()
    return cri


@pytest.mark.parametrize('binary, source, cri', NODES)
def test_repair_puts_runc_and_the_default_back_after_the_runtime_class_runc_cleanup(
        config, run_module, workdir, containerd_daemon, binary, source, cri):
    path, args = node(config, run_module, workdir, binary, source)
    toolkit(path, binary, 'setup', 'cleanup', CONTAINERD_RUNTIME_CLASS='runc')
    left = read(path)
    runtimes, default = dumped(path, binary, cri)
    assert runtimes.get('runc', {}).get('options', {}).get('SystemdCgroup') is not True and default in (None, 'runc')
    self_import = cri == CRI2   # 1.x's config dump lists the file itself; 2.1's lists nothing
    assert (('imports = ["%s"]' % path) in left) == self_import

    failed = run_module(MOD, path=path, state='check', expect_fail=True, **args)
    drifted = sorted(d['key'] for d in failed['protected_drift'])
    assert drifted == ['cri.default_runtime_name', 'cri.runtimes.runc'], failed['protected_drift']
    assert 'state: repair' in failed['msg']
    assert bool(self_import_warned(failed, path)) == self_import, failed.get('warnings')
    assert 'unknown' not in failed['msg'] and 'dropped' not in failed['msg']

    fixed = run_module(MOD, path=path, state='repair', **args)
    assert fixed['changed'], fixed
    assert sorted(fixed['restored']) == ['plugins."%s".containerd.default_runtime_name' % cri,
                                         'plugins."%s".containerd.runtimes.runc' % cri]
    runtimes, default = dumped(path, binary, cri)
    assert default == 'runc'
    assert runtimes['runc']['options']['SystemdCgroup'] is True
    assert runtimes['runc']['options'].get('BinaryName', '') == ''
    assert runtimes['nvidia']['options']['BinaryName'] == OWN_BINARY          # nodeguard's own runtime kept
    assert not [r for r in runtimes if r.startswith('nvidia-')]
    assert not run_module(MOD, path=path, state='repair', **args)['changed']
    clean = run_module(MOD, path=path, state='check', **args)
    assert clean['protected_drift'] == [] and clean['problems'] == []
    assert bool(self_import_warned(clean, path)) == self_import              # still there: the toolkit's mark

    cri_status = cri_ok(containerd_daemon, path, binary)
    assert cri_status and set(cri_status.values()) == {'ok'}, cri_status


@pytest.mark.parametrize('binary, source, cri', NODES)
def test_repair_puts_the_default_back_after_the_default_cleanup(config, run_module, workdir, binary, source, cri):
    """The toolkit's defaults: nvidia is made the default and the cleanup deletes the key, so a node whose
    default was runc silently runs containerd's fallback. (The cleanup also deletes a runtime named nvidia,
    whoever wrote it: gpu_toolkit's next converge adds its own back; repair puts back protected keys.)"""
    path, args = node(config, run_module, workdir, binary, source)
    toolkit(path, binary, 'setup', 'cleanup')
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **args)
    drift = dict((d['key'], d['change']) for d in failed['protected_drift'])
    assert drift.pop('cri.default_runtime_name') == 'removed'
    # 1.7's config dump adds its newer default keys to runc's table: the re-serialised table differs
    assert drift == ({'cri.runtimes.runc': 'changed'} if binary == CONTAINERD_17 else {}), drift
    fixed = run_module(MOD, path=path, state='repair', **args)
    assert 'plugins."%s".containerd.default_runtime_name' % cri in fixed['restored']
    runtimes, default = dumped(path, binary, cri)
    assert default == 'runc' and runtimes['runc']['options']['SystemdCgroup'] is True
    assert not run_module(MOD, path=path, state='repair', **args)['changed']


@pytest.mark.parametrize('binary, source, cri', NODES)
def test_restore_gives_the_baselines_bytes_back_over_the_leftovers(
        config, run_module, workdir, containerd_daemon, binary, source, cri):
    path, args = node(config, run_module, workdir, binary, source)
    toolkit(path, binary, 'setup', 'cleanup', CONTAINERD_RUNTIME_CLASS='runc')
    done = run_module(MOD, path=path, state='restore', **args)
    assert done['changed'] and done['restored'] == [path]
    assert read(path) == read(os.path.join(INPUTS, source))
    runtimes, default = dumped(path, binary, cri)
    assert default == 'runc' and runtimes['runc']['options']['SystemdCgroup'] is True
    cri_status = cri_ok(containerd_daemon, path, binary)
    assert cri_status and set(cri_status.values()) == {'ok'}, cri_status


@pytest.mark.parametrize('binary, source, cri', NODES[:2])
def test_a_baseline_taken_on_the_toolkits_file_repairs_and_restores_through_its_self_import(
        config, run_module, workdir, containerd_daemon, binary, source, cri):
    """The baseline is taken while the toolkit's setup is in the file (self-import and all); its cleanup
    then deletes runc. Repair and restore validate candidates that import themselves."""
    assert binary, 'containerd binary missing (make deps)'
    args = dict(store=os.path.join(workdir, 'baselines'), containerd_bin=binary)
    path = config(read(os.path.join(INPUTS, source)))
    toolkit(path, binary, 'setup', CONTAINERD_RUNTIME_CLASS='runc')
    taken = read(path)
    assert ('imports = ["%s"]' % path) in taken
    snap = run_module(MOD, path=path, **args)
    assert snap['changed']
    toolkit(path, binary, 'cleanup', CONTAINERD_RUNTIME_CLASS='runc')

    fixed = run_module(MOD, path=path, state='repair', **args)
    assert fixed['changed'] and 'plugins."%s".containerd.runtimes.runc' % cri in fixed['restored'], fixed
    runtimes, default = dumped(path, binary, cri)
    assert default == 'runc' and runtimes['runc']['options']['SystemdCgroup'] is True

    toolkit(path, binary, 'cleanup', CONTAINERD_RUNTIME_CLASS='runc')
    done = run_module(MOD, path=path, state='restore', **args)
    assert done['changed'] and read(path) == taken
    cri_status = cri_ok(containerd_daemon, path, binary)
    assert cri_status and set(cri_status.values()) == {'ok'}, cri_status


@pytest.mark.parametrize('binary', [pytest.param(CONTAINERD_1, id='containerd-1.6'),
                                    pytest.param(CONTAINERD_17, id='containerd-1.7')])
@pytest.mark.parametrize('state, lost', [
    ('ctk-v1.17.8-installer-c16-systemd-runtime-class-runc.after-cleanup.config.toml',
     ['cri.default_runtime_name', 'cri.runtimes.runc']),
    ('ctk-v1.17.8-installer-c16-systemd-default.after-cleanup.config.toml', ['cri.default_runtime_name']),
])
def test_repair_on_the_files_the_real_toolkit_left(config, run_module, workdir, containerd_daemon, binary, state, lost):
    """The recorded files themselves (their self-import renamed to the test's path), over the input's baseline."""
    assert binary, 'containerd binary missing (make deps)'
    args = dict(store=os.path.join(workdir, 'baselines'), containerd_bin=binary)
    path = config(read(os.path.join(INPUTS, 'c16-systemd.toml')))
    run_module(MOD, path=path, **args)
    left = read(os.path.join(FIXTURES, 'nvidia-ctk', state)).replace('"/etc/containerd/config.toml"', '"%s"' % path)
    with open(path, 'w') as f:
        f.write(left)
    failed = run_module(MOD, path=path, state='check', expect_fail=True, **args)
    assert sorted(d['key'] for d in failed['protected_drift']) == lost
    assert self_import_warned(failed, path)
    fixed = run_module(MOD, path=path, state='repair', **args)
    assert fixed['changed'] and len(fixed['restored']) == len(lost)
    runtimes, default = dumped(path, binary, CRI2)
    assert default == 'runc' and runtimes['runc']['options']['SystemdCgroup'] is True
    assert ('imports = ["%s"]' % path) in read(path)    # the toolkit's entry is left to the toolkit (named)
    cri_status = cri_ok(containerd_daemon, path, binary)
    assert cri_status and set(cri_status.values()) == {'ok'}, cri_status
