# -*- coding: utf-8 -*-
"""Registry credentials stay on the node through the roles and a fleet run under ansible-runner (as AWX runs it).

A node (local connection) whose config.toml carries registry credentials runs
one job with --check --diff and one with --diff: gpu_toolkit's install (with
config_snapshot's baseline fetched to the controller), containerd_info, the
uninstall, config_snapshot's restore entry point, then the fleet report
(playbooks/report.yml, collecting from the node). The secret strings must then
be nowhere outside the node's config and its node-side baseline: not in the
job's stdout, not in any file of the runner's artifacts folder (job events,
the fleet report's JSON and HTML, set_stats), not in the fetched baseline
(masked by default). The config is back to its bytes, credentials untouched.
config_snapshot_fetch_exact: true fetches the exact copy.

make test runs the fleet on a version 2 config and coco on a version 3 one;
NG_SECRETS_ROLES=all runs both roles on both versions.
"""

import json
import os
import shutil
import sys

import ansible_runner
import pytest

from conftest import COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_2, REPO, fixture_text, read
from role_play import stand_in

# Each role runs on one config version in make test (the fleet on version 2, coco on version 3: the module
# tests run every module on both); NG_SECRETS_ROLES=all runs each role on both.
ALL_VERSIONS = os.environ.get('NG_SECRETS_ROLES') == 'all'


def both_versions(*params, **kw):
    return list(params) if ALL_VERSIONS else [params[kw['main']]]


PW = 'Rn-S3cr3t-pw-0b7e5d11'
TOKEN = 'Rn-idTok-77c1d0e2'
SECRETS = (PW, TOKEN)
CREDS = '''
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example.com".auth]
  username = "robot"
  password = "%s"
  identitytoken = "%s"
''' % SECRETS
CREDS_V3 = CREDS.replace('"io.containerd.grpc.v1.cri"', '"io.containerd.cri.v1.images"')

PLAY = '''
- name: Install and uninstall the GPU runtime on a node whose config carries registry credentials
  hosts: "{{ target }}"
  gather_facts: false
  tasks:
    - name: Install
      ansible.builtin.include_role:
        name: nodeguard.containerd.gpu_toolkit
      vars:
        gpu_toolkit_state: present

    - name: What the node runs
      nodeguard.containerd.containerd_info:
        path: "{{ gpu_toolkit_config_path }}"
        state_dir: "{{ gpu_toolkit_state_dir }}"

    - name: Uninstall
      ansible.builtin.include_role:
        name: nodeguard.containerd.gpu_toolkit
      vars:
        gpu_toolkit_state: absent

    - name: The baseline's check and restore (config_snapshot's restore entry point, without a restart)
      ansible.builtin.include_role:
        name: nodeguard.containerd.config_snapshot
        tasks_from: restore
      vars:
        config_snapshot_path: "{{ gpu_toolkit_config_path }}"
        config_snapshot_store: "{{ gpu_toolkit_baseline_store }}"
        config_snapshot_state_dir: "{{ gpu_toolkit_state_dir }}"
        config_snapshot_restart: false
      # a check-mode run took no baseline to restore
      when: not ansible_check_mode

- name: Fleet report
  ansible.builtin.import_playbook: report.yml
'''


def node_vars(workdir, path, fetch, exact):
    runtime = stand_in(workdir)
    state = os.path.join(workdir, 'state')
    return dict(ansible_connection='local', ansible_python_interpreter=sys.executable,
                gpu_toolkit_config_path=path, gpu_toolkit_state_dir=state, nodeguard_state_dir=state,
                gpu_toolkit_baseline_store=os.path.join(workdir, 'baselines'), gpu_toolkit_runtime_binary=runtime,
                gpu_toolkit_flush=False, gpu_toolkit_restart_handler=False, gpu_toolkit_probe=False,
                gpu_toolkit_backup=True, config_snapshot_fetch_dir=fetch, config_snapshot_fetch_exact=exact,
                fleet_report_config_path=path, fleet_report_state_dir=state)


def run_job(workdir, name, hostvars, containerd_dir, cmdline, play=PLAY):
    pdd = os.path.join(workdir, name)
    shutil.copytree(os.path.join(REPO, 'playbooks'), os.path.join(pdd, 'project'))
    with open(os.path.join(pdd, 'project', 'secrets.yml'), 'w') as f:
        f.write(play)
    os.makedirs(os.path.join(pdd, 'inventory'))
    with open(os.path.join(pdd, 'inventory', 'hosts.json'), 'w') as f:
        json.dump({'all': {'hosts': {'node-1': hostvars}}}, f)
    env = {'ANSIBLE_COLLECTIONS_PATH': COLLECTIONS_ROOT, 'ANSIBLE_NOCOLOR': '1',
           'PATH': os.pathsep.join([containerd_dir, os.path.dirname(sys.executable), os.environ.get('PATH', '')])}
    runner = ansible_runner.run(private_data_dir=pdd, playbook='secrets.yml', cmdline=cmdline, quiet=True,
                                extravars={'target': 'all', 'fleet_report_collect': True}, envvars=env, timeout=600)
    return runner, runner.stdout.read(), os.path.join(pdd, 'artifacts', runner.config.ident)


def files_under(folder):
    return [os.path.join(root, n) for root, _dirs, names in os.walk(folder) for n in names]


def found_in(paths):
    """(path, secret) for each secret string in each file."""
    out = []
    for path in paths:
        with open(path, 'rb') as f:
            data = f.read()
        out.extend((path, s) for s in SECRETS if s.encode() in data)
    return out


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    # nothing of the checkout's ansible.cfg or ANSIBLE_* settings reaches the job, as under AWX
    for name in [n for n in os.environ if n.startswith('ANSIBLE_')]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize('version,fixture,binary', both_versions(
    pytest.param(2, 'v2_kubeadm.toml', CONTAINERD_1, id='v2-containerd-1.6'),
    pytest.param(3, 'v3_default.toml', CONTAINERD_2, id='v3-containerd-2.1'), main=0))
def test_a_fleet_run_keeps_the_credentials_on_the_node(workdir, config, version, fixture, binary):
    assert binary, 'run make deps'
    path = config(fixture_text(fixture) + (CREDS if version == 2 else CREDS_V3))
    os.chmod(path, 0o600)
    original = read(path, 'rb')
    fetch = os.path.join(workdir, 'fetched')
    hostvars = node_vars(workdir, path, fetch, False)
    outs = []
    for name, cmdline in (('check', '--check --diff'), ('run', '--diff')):
        runner, out, artifacts = run_job(workdir, name, hostvars, os.path.dirname(binary), cmdline)
        assert runner.status == 'successful', out[-4000:]
        outs.append((out, artifacts))
    out, artifacts = outs[-1]
    # the run did something: installed (a diff of the config), fetched, reported
    assert 'nvidia' in out and '********' in out
    assert os.path.isfile(os.path.join(artifacts, 'nodeguard-fleet-report.json'))
    fetched = files_under(fetch)
    assert any(p.endswith('config.toml') for p in fetched), fetched
    assert any(b'password = "********"' in open(p, 'rb').read() for p in fetched)
    # nowhere off the node: stdout, the artifacts folder (events, report, stats), the fetched baseline
    for out, artifacts in outs:
        assert not [s for s in SECRETS if s in out]
        assert not found_in(files_under(artifacts))
    assert not found_in(fetched)
    # on the node: the config to the byte, the node-side baseline exact, the backups in the config's own mode
    assert read(path, 'rb') == original
    assert found_in(files_under(os.path.join(workdir, 'baselines')))
    backups = [os.path.join(os.path.dirname(path), n) for n in os.listdir(os.path.dirname(path)) if '~' in n]
    assert backups and all(os.stat(b).st_mode & 0o777 == 0o600 for b in backups)
    # asked for, the exact copy: the credentials, as documented
    exact = os.path.join(workdir, 'exact')
    runner, out, artifacts = run_job(workdir, 'exact', node_vars(workdir, path, exact, True),
                                     os.path.dirname(binary), '')
    assert runner.status == 'successful', out[-4000:]
    assert found_in(files_under(exact))
    assert not [s for s in SECRETS if s in out] and not found_in(files_under(artifacts))
    assert read(path, 'rb') == original


COCO_PLAY = """
- name: Install and uninstall the confidential-containers runtimes on a node whose config carries credentials
  hosts: "{{ target }}"
  gather_facts: false
  tasks:
    - name: Install
      ansible.builtin.include_role:
        name: nodeguard.containerd.coco
      vars:
        coco_state: present

    - name: Uninstall
      ansible.builtin.include_role:
        name: nodeguard.containerd.coco
      vars:
        coco_state: absent
"""


@pytest.mark.parametrize('version,fixture,binary', both_versions(
    pytest.param(2, 'v2_debian_stock.toml', CONTAINERD_1, id='v2-containerd-1.6'),
    pytest.param(3, 'v3_default.toml', CONTAINERD_2, id='v3-containerd-2.1'), main=1))
def test_coco_install_and_uninstall_keep_the_credentials_on_the_node(workdir, config, version, fixture, binary):
    assert binary, 'run make deps'
    path = config(fixture_text(fixture) + (CREDS if version == 2 else CREDS_V3))
    os.chmod(path, 0o600)
    original = read(path, 'rb')
    kata = os.path.join(workdir, 'opt', 'kata')
    for name in (os.path.join(kata, 'bin', 'containerd-shim-kata-v2'),
                 os.path.join(kata, 'share', 'defaults', 'kata-containers', 'configuration-qemu.toml')):
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, 'w') as f:
            f.write('# stand-in\n')
    hostvars = dict(ansible_connection='local', ansible_python_interpreter=sys.executable, coco_config_path=path,
                    coco_state_dir=os.path.join(workdir, 'state'),
                    coco_dropin_dir=os.path.join(workdir, 'etc', 'config.toml.d'), coco_install_dir=kata,
                    coco_baseline_store=os.path.join(workdir, 'baselines'), coco_flush=False,
                    coco_kubernetes='false', coco_payload_manage=False, coco_check_node=False, coco_readiness=False,
                    coco_runtime_classes=['kata-qemu'], coco_backup=True)
    for name, cmdline in (('check', '--check --diff'), ('run', '--diff')):
        runner, out, artifacts = run_job(workdir, 'coco-' + name, hostvars, os.path.dirname(binary), cmdline,
                                         play=COCO_PLAY)
        assert runner.status == 'successful', out[-4000:]
        assert 'kata-qemu' in out
        assert not [s for s in SECRETS if s in out] and not found_in(files_under(artifacts))
    assert '********' in out  # the run's diff of the config, the password masked
    assert read(path, 'rb') == original
