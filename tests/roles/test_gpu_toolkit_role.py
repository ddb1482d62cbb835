# -*- coding: utf-8 -*-
"""gpu_toolkit through ansible-playbook (local connection) on a real config
judged by the real containerd binaries.

The role makes one containerd_config call (exclusive: it reads the owner's
ledger records itself; the baseline taken first), and its modules take path,
state_dir, lock_timeout, backup and owner from the module_defaults of the
block in tasks/main.yml: they must reach the tasks of the files it includes
(present.yml, absent.yml, rescue.yml) and config_snapshot's, and win over a
play's own defaults for the action group (a decoy path, state_dir and
containerd_bin here). Ansible merges module_defaults entry by entry: inside
the role, the role's group entry replaces the play's whole, so no option of
the play's group entry reaches the role's modules (containerd is found in
PATH: 1.7 first here where enable_cdi is set). No systemd here: gpu_toolkit_flush is off (no restart, no readiness),
except in the rollback test, where the restart contract is pointed at a unit
that does not exist.
"""

import json
import os
import re

import tomlkit

from conftest import CONTAINERD_17, assert_containerd_accepts, read
from role_play import gpu_toolkit_head, role_tasks, run_playbook, stand_in

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

# the play's head; role_play.role_tasks() adds the role and what the test reads
PLAY = gpu_toolkit_head('gpu_toolkit, local') + '''    gpu_toolkit_flush: false
    # no systemd here: the restart contract (the role's handler) tries a unit that does not exist
    node_readiness_service: nodeguard-test-no-such-unit
    node_readiness_restart_retries: 1
    node_readiness_preflight: false
  module_defaults:
    group/nodeguard.containerd.containerd:
      path: {decoy}/config.toml
      state_dir: {decoy}/state
      containerd_bin: /usr/bin/containerd
'''


def play_text(workdir, path, extra_play_vars=None):
    """PLAY for the config at path, its folders under workdir, with extra_play_vars added to the play's vars."""
    text = PLAY.format(path=path, state=os.path.join(workdir, 'state'), store=os.path.join(workdir, 'baselines'),
                       binary=os.path.join(workdir, 'bin', 'nvidia-container-runtime'),
                       decoy=os.path.join(workdir, 'decoy'))
    if extra_play_vars:
        text = text.replace('    gpu_toolkit_flush: false\n', '    gpu_toolkit_flush: false\n' + ''.join(
            '    %s: %s\n' % (k, json.dumps(v)) for k, v in extra_play_vars.items()))
    return text


def run_role(workdir, path, role_vars, extra_play_vars=None, containerd_dir=None, check=False):
    """ansible-playbook on PLAY: (tasks that changed, the play's result file, stdout, whether the handler ran).

    The handler (the restart contract, notified by a config change) runs after
    the play's tasks and fails the host here, where the unit does not exist:
    that failure, and only that one, is expected of a run that changed the config.
    """
    out = os.path.join(workdir, 'out.json')
    if os.path.exists(out):
        os.remove(out)
    text = play_text(workdir, path, extra_play_vars)
    text += role_tasks('gpu_toolkit', role_vars, out, "'added': __gpu_toolkit_added | default({}), "
                       "'removed': __gpu_toolkit_removed | default({}), 'gone': gpu_toolkit_gone | default(None)")
    proc = run_playbook(workdir, text, containerd_dir, ['--check'] if check else [])
    tasks, _sep, handlers = proc.stdout.partition('\nRUNNING HANDLER [')
    # an include_tasks handler says "included" when it runs, "skipping" when its condition is false
    handler_ran = re.search(r'nodeguard\.containerd\.gpu_toolkit : Restart containerd once[^\n]*\n(?!skipping)',
                            handlers) is not None
    if handler_ran:
        assert proc.returncode == 2 and 'fatal: [localhost]' in handlers, proc.stdout[-4000:]
    else:
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    changed = [t.split(']', 1)[0] for t in tasks.split('\nTASK [')[1:] if '\nchanged: ' in t]
    assert changed[-1] == 'What the test reads', changed
    return len(changed) - 1, json.loads(read(out)), proc.stdout, handler_ran


def cri(path):
    return tomlkit.parse(read(path)).unwrap()['plugins']['io.containerd.grpc.v1.cri']


def records(workdir, path, owner='gpu_toolkit'):
    lpath = ledger_path_for(os.path.join(workdir, 'state'), path)
    if not os.path.exists(lpath):
        return []
    return [r for r in json.loads(read(lpath))['records'] if r['owner'] == owner and r['kind'] != 'released']


def assert_untouched_decoy(workdir):
    assert not os.path.exists(os.path.join(workdir, 'decoy')), os.listdir(os.path.join(workdir, 'decoy'))


def test_install_rerun_uninstall_rerun_through_the_group_defaults(workdir, config):
    assert CONTAINERD_17, 'run make deps (containerd 1.7: enable_cdi is not known to 1.6)'
    path = config('v2_kubeadm.toml')
    original = read(path)
    binary = stand_in(workdir)
    role = dict(gpu_toolkit_state='present', gpu_toolkit_runtimes=['nvidia', 'runc'], gpu_toolkit_set_default=True,
                gpu_toolkit_enable_cdi=True, gpu_toolkit_cdi_spec_dirs=['/etc/cdi', '/var/run/cdi'])
    ctd17 = os.path.dirname(CONTAINERD_17)
    changed, res, _out, restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert not res['failure'], res['failure']
    # one call: the baseline first, the runtimes (nvidia, runc's BinaryName) and the CDI settings; the restart handler
    assert (changed, restarted) == (1, True)
    assert res['added']['baseline']['taken'] is True and res['added']['baseline']['name'] == 'default'
    data = cri(path)
    runtimes = data['containerd']['runtimes']
    assert runtimes['nvidia']['options']['BinaryName'] == binary
    assert runtimes['nvidia']['options']['SystemdCgroup'] is True  # inherited from runc
    assert runtimes['runc']['options']['BinaryName'] == binary
    assert data['containerd']['default_runtime_name'] == 'nvidia'
    assert data['enable_cdi'] is True and data['cdi_spec_dirs'] == ['/etc/cdi', '/var/run/cdi']
    # the runtimes and both CDI keys in one call (containerd_config)
    assert [r['key'] for r in res['added']['settings']] == ['cri.enable_cdi', 'cri.cdi_spec_dirs']
    assert [r['name'] for r in res['added']['runtimes']] == ['nvidia', 'runc']
    # the role's path and state_dir reached present.yml's modules and config_snapshot's baseline
    assert sorted(set(r['resource'] for r in records(workdir, path))) == [
        'runtime:nvidia', 'runtime:runc', 'setting:plugins."io.containerd.grpc.v1.cri".cdi_spec_dirs',
        'setting:plugins."io.containerd.grpc.v1.cri".enable_cdi']
    assert os.path.isdir(os.path.join(workdir, 'baselines', 'default'))
    # the call wrote the role's config (containerd from PATH, 1.7, which knows enable_cdi: not the play's group entry)
    assert res['added']['file'] == path
    assert_untouched_decoy(workdir)
    assert_containerd_accepts(path, CONTAINERD_17)

    # no config_snapshot call: the edit took the baseline itself
    assert 'config_snapshot : Take the containerd config baseline (once)' not in _out
    changed, res, out, restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert (changed, res['failure'], restarted) == (0, '', False)
    # the baseline exists: left alone; the second run read what the first recorded and released nothing
    assert res['added']['baseline']['taken'] is False
    assert res['added']['released']['runtimes'] == [] and res['added']['released']['settings'] == []
    assert 'config_snapshot' not in out
    assert 'runtime:nvidia' in [r['resource'] for r in records(workdir, path)]

    # absent: whatever gpu_toolkit_runtimes says now, the ledger's records go
    changed, res, _out, restarted = run_role(workdir, path, dict(gpu_toolkit_state='absent',
                                                                 gpu_toolkit_runtimes=['nvidia']),
                                             containerd_dir=ctd17)
    assert not res['failure'], res['failure']
    assert (changed, restarted) == (1, True)  # one containerd_config call: the runtimes, then the settings
    # the default runtime first, so its prior default comes back before the other tables go
    assert [r['name'] for r in res['removed']['runtimes']] == ['nvidia', 'runc']
    assert sorted(r['key'] for r in res['removed']['settings']) == [
        'plugins."io.containerd.grpc.v1.cri".cdi_spec_dirs', 'plugins."io.containerd.grpc.v1.cri".enable_cdi']
    assert read(path) == original
    assert records(workdir, path) == []
    assert_untouched_decoy(workdir)
    # published for site.yml: the table the role created is gone; runc, whose BinaryName it only set, stays
    assert res['gone'] == ['nvidia']

    changed, res, out, restarted = run_role(workdir, path, dict(gpu_toolkit_state='absent'), containerd_dir=ctd17)
    assert (changed, res['failure'], restarted) == (0, '', False)
    assert 'The ledger records no change by owner gpu_toolkit' in out
    assert read(path) == original
    assert res['gone'] == []


def test_cdi_turned_off_puts_back_both_keys_in_one_call(workdir, config):
    assert CONTAINERD_17, 'run make deps (containerd 1.7: enable_cdi is not known to 1.6)'
    path = config('v2_kubeadm.toml')
    original = read(path)
    stand_in(workdir)
    ctd17 = os.path.dirname(CONTAINERD_17)
    role = dict(gpu_toolkit_runtimes=['nvidia'], gpu_toolkit_enable_cdi=True, gpu_toolkit_cdi_spec_dirs=['/etc/cdi'])
    _changed, res, _out, _restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert not res['failure'] and cri(path)['enable_cdi'] is True, res['failure']
    # CDI off: both keys get their priors back in one call (enable_cdi false in kubeadm's file, cdi_spec_dirs
    # absent there), nothing else of the role's changes
    changed, res, _out, _restarted = run_role(workdir, path, dict(role, gpu_toolkit_enable_cdi=False),
                                              containerd_dir=ctd17)
    assert not res['failure'], res['failure']
    assert sorted(res['added']['released']['settings']) == [
        'plugins."io.containerd.grpc.v1.cri".cdi_spec_dirs', 'plugins."io.containerd.grpc.v1.cri".enable_cdi']
    assert cri(path)['enable_cdi'] is False and 'cdi_spec_dirs' not in cri(path)
    assert 'nvidia' in cri(path)['containerd']['runtimes']
    assert [r['resource'] for r in records(workdir, path)] == ['runtime:nvidia']
    # CDI on again, then only the folders dropped: enable_cdi stays, cdi_spec_dirs goes back to its prior
    run_role(workdir, path, role, containerd_dir=ctd17)
    role['gpu_toolkit_cdi_spec_dirs'] = []
    changed, res, _out, _restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert not res['failure'], res['failure']
    assert res['added']['released']['settings'] == ['plugins."io.containerd.grpc.v1.cri".cdi_spec_dirs']
    assert cri(path)['enable_cdi'] is True and 'cdi_spec_dirs' not in cri(path)
    # the same again: cdi_spec_dirs is no longer this role's, so there is nothing to put back and no write
    changed, res, _out, restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert (changed, restarted, res['added']['released']['settings']) == (0, False, []), res['added']['released']
    # CDI off: only enable_cdi is still this role's to put back
    role['gpu_toolkit_enable_cdi'] = False
    changed, res, _out, _restarted = run_role(workdir, path, role, containerd_dir=ctd17)
    assert not res['failure'], res['failure']
    assert res['added']['released']['settings'] == ['plugins."io.containerd.grpc.v1.cri".enable_cdi']
    assert cri(path)['enable_cdi'] is False and [r['resource'] for r in records(workdir, path)] == ['runtime:nvidia']
    run_role(workdir, path, dict(gpu_toolkit_state='absent'), containerd_dir=ctd17)
    assert read(path) == original


def test_a_runtime_no_longer_listed_is_removed_on_the_next_install(workdir, config):
    path = config('v2_kubeadm.toml')
    binary = stand_in(workdir)
    # as the toolkit installs it: a link to the runtime, judged by its target
    os.symlink(binary, os.path.join(workdir, 'bin', 'nvidia-container-runtime.cdi'))
    changed, res, _out, restarted = run_role(workdir, path, dict(gpu_toolkit_runtimes=['nvidia', 'nvidia-cdi']))
    assert not res['failure'] and 'nvidia-cdi' in cri(path)['containerd']['runtimes']
    changed, res, out, restarted = run_role(workdir, path, dict(gpu_toolkit_runtimes=['nvidia']))
    assert not res['failure'], res['failure']
    assert (changed, restarted) == (1, True) and 'nvidia-cdi' not in cri(path)['containerd']['runtimes']
    assert res['added']['released']['runtimes'] == ['nvidia-cdi'], res['added']['released']
    assert 'nvidia' in cri(path)['containerd']['runtimes']
    assert [r['resource'] for r in records(workdir, path)] == ['runtime:nvidia']


def test_a_missing_or_not_executable_binary_is_refused_before_any_change(workdir, config):
    path = config('v2_kubeadm.toml')
    original = read(path)
    plain = stand_in(workdir, 'not-executable', mode=0o644)
    missing = os.path.join(workdir, 'bin', 'no-such-runtime')
    changed, res, _out, restarted = run_role(workdir, path, dict(gpu_toolkit_runtimes=[
        dict(name='nvidia', binary=missing), dict(name='nvidia-plain', binary=plain),
        dict(name='nvidia-dir', binary=os.path.dirname(plain))]))
    msg = res['failure']
    # containerd_config's check_binaries names each key, path and why, before anything is written
    assert 'runtimes[0].options.BinaryName %s does not exist' % missing in msg, msg
    assert 'runtimes[1].options.BinaryName %s is not executable (mode 0644)' % plain in msg, msg
    assert 'runtimes[2].options.BinaryName %s is not a regular file' % os.path.dirname(plain) in msg, msg
    # and the role says which of its variables fix it
    assert 'set gpu_toolkit_check_binary: false' in msg and 'gpu_toolkit_runtime_binary' in msg, msg
    assert 'gpu_toolkit present failed on localhost' in msg
    assert 'was not changed by this run; nothing rolled back' in msg
    assert read(path) == original and not restarted
    assert records(workdir, path) == []


def test_a_cdi_key_containerd_does_not_know_refuses_the_whole_set_before_any_change(workdir, config):
    """The runtime and enable_cdi are one containerd_config call: containerd 1.6 does not know enable_cdi, so
    the call refuses the whole set before anything is written (the runtime used to be written by a
    call of its own first and then rolled back). The host fails with the reason and says nothing was changed;
    the rollback after a change is molecule/gpu_toolkit's rescue.yml (a probe through a missing binary)."""
    path = config('v2_kubeadm.toml')
    original = read(path)
    stand_in(workdir)
    play_vars = dict(node_readiness_timeout=1, node_readiness_probe=False, node_readiness_kubernetes=False,
                     node_readiness_show_report=False)
    changed, res, out, restarted = run_role(workdir, path, dict(gpu_toolkit_enable_cdi=True), extra_play_vars=play_vars)
    msg = res['failure']
    assert res['added']['failed'] is True and res['added']['changed'] is False, res['added']
    assert 'gpu_toolkit present failed on localhost' in msg, msg
    assert 'enable_cdi = True in %s has no effect' % path in msg, msg
    assert '%s was not changed by this run; nothing rolled back.' % path in msg, msg
    # the baseline was taken first, inside the call that then failed: no task changed, no restart
    assert (changed, restarted) == (0, False)
    assert os.path.isdir(os.path.join(workdir, 'baselines', 'default'))
    assert read(path) == original
    assert records(workdir, path) == []
    assert_untouched_decoy(workdir)


def test_the_handler_leaves_the_restart_to_the_playbook_when_told(workdir, config):
    """gpu_toolkit_restart_handler: false (playbooks/site.yml): the change is made, the handler restarts nothing.

    The playbook restarts containerd itself afterwards, with the checks in the
    same module call; a handler restart before it would be a second module run.
    """
    path = config('v2_kubeadm.toml')
    stand_in(workdir)
    changed, res, out, restarted = run_role(workdir, path, dict(gpu_toolkit_state='present'),
                                            extra_play_vars={'gpu_toolkit_restart_handler': False})
    assert not res['failure'], res['failure']
    assert (changed, restarted) == (1, False), out[-3000:]
    assert 'nvidia' in cri(path)['containerd']['runtimes']
    assert re.search(r'RUNNING HANDLER \[nodeguard\.containerd\.gpu_toolkit : Restart containerd once[^\n]*\n'
                     r'skipping: \[localhost\]', out), out[-3000:]


def test_a_run_that_only_took_the_baseline_rolls_nothing_back(workdir, config):
    """The edit takes the baseline itself when there is none (its result then says changed). A run that
    changed nothing else and then fails (here the restart contract: no containerd unit) must not put that
    baseline back nor restart containerd on it: the config was not changed by this run."""
    path = config('v2_kubeadm.toml')
    stand_in(workdir)
    # an earlier install without a baseline (gpu_toolkit_snapshot: false): the runtimes are there already
    changed, res, _out, restarted = run_role(workdir, path, dict(gpu_toolkit_snapshot=False))
    assert not res['failure'] and (changed, restarted) == (1, True), res['failure']
    assert not os.path.exists(os.path.join(workdir, 'baselines', 'default'))
    installed = read(path)

    changed, res, out, restarted = run_role(workdir, path, dict(gpu_toolkit_flush=True))
    assert res['added']['changed'] is True and res['added']['baseline']['taken'] is True, res['added']
    assert 'effects' not in res['added'] or res['added']['effects'] == [], res['added']
    msg = res['failure']
    assert 'gpu_toolkit present failed on localhost' in msg, msg
    assert '%s was not changed by this run; nothing rolled back.' % path in msg, msg
    assert 'config_snapshot : ' not in out  # no restore
    assert read(path) == installed
    # the rescue settled the restart: the handler the edit notified does not restart containerd after it
    assert restarted is False


def test_check_mode_on_a_node_without_the_nvidia_repository_reports_the_install(workdir, config):
    """gpu_toolkit_manage_packages on a node the NVIDIA repository is not set up on yet: in check mode the
    repository is not written, so apt cannot see the packages. The run reports the install instead of trying
    it (apt would fail: "No package matching"), and writes nothing."""
    path = config('v2_kubeadm.toml')
    before = read(path)
    source = '/etc/apt/sources.list.d/nvidia-container-toolkit.list'
    assert not os.path.exists(source)
    _changed, res, out, restarted = run_role(workdir, path, dict(
        gpu_toolkit_manage_packages=True, gpu_toolkit_apt_key_url='',
        gpu_toolkit_packages=['nodeguard-test-no-such-package']), check=True)
    assert not res['failure'], res['failure']
    assert 'Check mode: nodeguard-test-no-such-package would be installed from the NVIDIA repository' in out, \
        out[-3000:]
    assert re.search(r'TASK \[nodeguard\.containerd\.gpu_toolkit : Install the NVIDIA container toolkit \(apt\)\]'
                     r'[^\n]*\nskipping:', out), out[-3000:]
    assert res['added']['changed'] is True  # the edit says what it would change
    assert read(path) == before and not os.path.exists(source) and restarted is False


def test_a_default_runtime_not_among_the_runtimes_is_refused_naming_both(workdir, config):
    path = config('v2_kubeadm.toml')
    before = read(path)
    _changed, res, _out, restarted = run_role(workdir, path, dict(
        gpu_toolkit_runtimes=['nvidia'], gpu_toolkit_set_default=True, gpu_toolkit_default_runtime='nvidia-cdi'))
    assert "Got: gpu_toolkit_runtimes=['nvidia'], gpu_toolkit_default_runtime='nvidia-cdi'." in res['failure'], res
    assert read(path) == before and restarted is False


def test_a_runtimes_probe_settings_reach_the_readiness_check(workdir, config):
    """gpu_toolkit_runtimes may say how readiness probes each runtime (a GPU probe: an image with nvidia-smi, its
    command, NVIDIA_VISIBLE_DEVICES): the handlers the role gives readiness carry them, and the config gets the
    runtime alone."""
    path = config('v2_kubeadm.toml')
    stand_in(workdir)
    runtimes = [{'name': 'nvidia', 'probe_image': 'localhost/cuda-base:12', 'probe_command': ['nvidia-smi', '-L'],
                 'probe_env': {'NVIDIA_VISIBLE_DEVICES': 'all'}}, 'nvidia-cdi']
    out = os.path.join(workdir, 'out.json')
    # the runtimes as play vars and the role public: its vars (templated when read) are still its own in the task
    # that writes what the test reads
    text = play_text(workdir, path, {'gpu_toolkit_runtimes': runtimes})
    text += role_tasks('gpu_toolkit', dict(gpu_toolkit_check_binary=False), out,
                       "'handlers': __gpu_toolkit_handlers | default(none)").replace(
        '          ansible.builtin.include_role:\n', '          ansible.builtin.include_role:\n            public: true\n', 1)
    proc = run_playbook(workdir, text)
    res = json.loads(read(out))
    assert res['failure'] == '', res['failure'] + proc.stdout[-3000:]
    assert res['handlers'] == ['runc', {'name': 'nvidia', 'probe': True, 'image': 'localhost/cuda-base:12',
                                        'command': ['nvidia-smi', '-L'], 'env': {'NVIDIA_VISIBLE_DEVICES': 'all'}},
                               {'name': 'nvidia-cdi', 'probe': True}]
    nvidia = cri(path)['containerd']['runtimes']['nvidia']
    assert 'probe_image' not in json.dumps(nvidia) and 'nvidia-smi' not in read(path)
