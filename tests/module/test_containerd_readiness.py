# -*- coding: utf-8 -*-
"""containerd_readiness step=check: the readiness checks and their report, run as Ansible runs the module.

A real containerd (Debian's 1.6, or 2.1) runs on a private socket; ``systemctl
show`` is a stand-in that says the unit is active. The report's imports come
from the engine's walk and config dump, the CRI plugins from the real ``ctr
plugins ls``; drift is accounted against a real ledger; the Kubernetes checks
run a stand-in kubectl. The probe containers themselves run in
tests/standins (they need runc and an image) and in the Molecule readiness
scenario.
"""

import json
import os
import re
import stat
import subprocess
import sys

import pytest

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_2, REPO
from helpers.readiness import CRI, RUNC, check, fake_journalctl

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.drift import (
    evaluate_drift,
    parse_key_path,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.kube import kubernetes
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.probe import probe_argv
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import dotted_path


# ------------------------------------------------------------------ the checks, through the module
@pytest.mark.parametrize('binary,version,ids', [
    pytest.param(CONTAINERD_1, 2, [CRI], id='containerd-1.6'),
    pytest.param(CONTAINERD_2, 3, [CRI, 'io.containerd.cri.v1.runtime', 'io.containerd.cri.v1.images'],
                 id='containerd-2.1'),
])
def test_a_working_node_is_ready(run_module, readiness_node, binary, version, ids):
    n = readiness_node(binary, version=version)
    r, report = check(run_module, n)
    assert report['ok'] is True and report['failed'] == [], report
    assert r['msg'].endswith(': READY') and report['summary'] in r['msg']
    names = [c['name'] for c in report['checks']]
    assert names == ['containerd_active', 'config_dump', 'imports_exist', 'imports_unique', 'cri_plugin',
                     'handler:runc', 'probe:runc', 'baseline_drift', 'kubernetes_node_ready']
    for name in names[:6]:
        assert report['by_name'][name]['status'] == 'pass' and report['by_name'][name]['required'], name
    assert report['by_name']['probe:runc']['status'] == 'skip'
    c = report['containerd']
    assert c['version'] == subprocess.run([binary, '--version'], capture_output=True, text=True,
                                          check=True).stdout.split()[2].lstrip('v')
    assert c['config_version'] == version and c['cri_plugins'] == dict((i, 'ok') for i in ids)
    assert c['runtimes'] == ['runc'] and c['config_path'] == n['config']
    # the socket came from the config's grpc.address: the real ctr listed the plugins there
    assert 'ok' in report['by_name']['cri_plugin']['reason']


def test_a_missing_handler_fails_the_node_and_the_task(run_module, readiness_node):
    n = readiness_node()
    r, report = check(run_module, n, expect_fail=True, handlers=['runc', {'name': 'nvidia', 'probe': False}])
    assert not report['ok'] and report['failed'] == ['handler:nvidia']
    assert 'no runtime nvidia in the effective config (has: runc)' in report['by_name']['handler:nvidia']['reason']
    assert '[handler:nvidia]' in r['msg'] and 'NOT READY' in r['msg']
    # reported only: fail false, or the check is optional
    assert not check(run_module, n, handlers=['runc', 'nvidia'], fail=False)[1]['ok']
    r, report = check(run_module, n, handlers=[{'name': 'runc', 'probe': False}, 'nvidia'], probe=True,
                      optional_checks=['handler:nvidia', 'probe:nvidia'])
    assert report['ok'] and report['warnings'] == ['handler:nvidia', 'probe:nvidia'], report


def test_handler_settings_come_from_the_live_config(run_module, readiness_node):
    extra = ('[plugins."%s".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'
             '[plugins."%s".containerd.runtimes.nvidia.options]\n  BinaryName = "/usr/bin/nvidia-container-runtime"\n'
             % (CRI, CRI))
    n = readiness_node(extra=extra)
    report = check(run_module, n, handlers=['nvidia'])[1]
    assert report['ok'], report
    reason = report['by_name']['handler:nvidia']['reason']
    assert 'io.containerd.runc.v2 BinaryName=/usr/bin/nvidia-container-runtime' in reason


def test_imports_missing_duplicate_and_nested(run_module, readiness_node, workdir):
    """The engine's walk: a missing import, one file imported twice, a nested relative import."""
    n = readiness_node()
    etc = os.path.dirname(n['config'])
    conf_d = os.path.join(etc, 'conf.d')
    os.makedirs(conf_d)
    with open(os.path.join(conf_d, '10-a.toml'), 'w') as f:
        f.write('version = 2\nimports = ["../nested.toml"]\n')
    for name in ('nested.toml', 'drop.toml'):
        with open(os.path.join(etc, name), 'w') as f:
            f.write('version = 2\n')
    entries = [os.path.join(etc, 'drop.toml'), 'drop.toml', os.path.join(etc, 'gone.toml'),
               os.path.join(conf_d, '*.toml'), os.path.join(etc, 'none.d', '*.toml')]
    with open(n['config']) as f:
        text = f.read()
    with open(n['config'], 'w') as f:
        f.write(text.replace('version = 2\n', 'version = 2\nimports = %s\n' % json.dumps(entries), 1))
    # config dump refuses the missing file, so the live config (its runtimes, its socket) is unknown
    report = check(run_module, n, fail=False, address=n['address'])[1]
    assert report['failed'] == ['config_dump', 'imports_exist', 'imports_unique', 'handler:runc'], report['failed']
    assert report['by_name']['imports_exist']['reason'] == 'missing import(s): %s' % os.path.join(etc, 'gone.toml')
    twice = os.path.join(etc, 'drop.toml')
    assert report['by_name']['imports_unique']['reason'] == 'imported more than once: %s' % twice
    imports = report['containerd']['imports']
    # the nested import of conf.d/10-a.toml was followed, relative to its own folder
    assert dict(file=os.path.join(conf_d, '10-a.toml'), entry='../nested.toml', path=os.path.join(etc, 'nested.toml'),
                glob=False, exists=True) in imports
    assert [e['exists'] for e in imports if e['glob']] == [True, False]


def test_an_imported_file_that_is_not_toml(run_module, readiness_node):
    n = readiness_node()
    bad = os.path.join(os.path.dirname(n['config']), 'bad.toml')
    with open(bad, 'w') as f:
        f.write('version = 2\nimports = [ , "/x.toml"]\n')  # what the CoCo operator left behind
    with open(n['config']) as f:
        text = f.read()
    with open(n['config'], 'w') as f:
        f.write(text.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % bad, 1))
    # the daemon's socket given: with the config unreadable, the default socket would be waited for in vain
    report = check(run_module, n, fail=False, address=n['address'])[1]
    assert report['by_name']['imports_exist']['status'] == 'fail'
    assert bad in report['by_name']['imports_exist']['reason']


def test_containerd_down_fails_with_the_unit_state(run_module, readiness_node, workdir):
    n = readiness_node()
    with open(os.path.join(n['env']['PATH'].split(os.pathsep)[0], 'systemctl'), 'w') as f:
        f.write('#!/bin/sh\nprintf "ActiveState=failed\\nSubState=failed\\nResult=exit-code\\nLoadState=loaded\\n"\n')
    report = check(run_module, n, fail=False, timeout=1, handlers=[{'name': 'runc', 'probe': True}])[1]
    assert report['failed'][0] == 'containerd_active'
    assert 'not active within 1.0 s (ActiveState=failed' in report['by_name']['containerd_active']['reason']
    assert report['by_name']['probe:runc']['reason'].startswith('containerd not ready')


def test_report_path_and_check_mode(run_module, readiness_node, workdir):
    n = readiness_node()
    path = os.path.join(workdir, 'readiness.json')
    check(run_module, n, check=True, report_path=path)
    assert not os.path.exists(path)
    report = check(run_module, n, report_path=path)[1]
    with open(path) as f:
        written = json.load(f)
    assert written['summary'] == report['summary'] and written['ok'] is True


def test_module_defaults_of_the_action_group_reach_it(workdir, readiness_node):
    """In group/nodeguard.containerd.containerd: the options module_defaults sets there are accepted."""
    n = readiness_node()
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write('''- hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/nodeguard.containerd.containerd:
      path: {path}
      containerd_bin: {bin}
      state_dir: {state}
      lock_timeout: 10
      validate: auto
      backup: false
  tasks:
    - nodeguard.containerd.containerd_readiness:
        kubernetes: "false"
        probe: false
      register: r
    - ansible.builtin.assert:
        that: r.readiness.ok and r.readiness.containerd.config_path == "{path}"
'''.format(path=n['config'], bin=n['binary'], state=os.path.join(workdir, 'state')))
    proc = run_play(workdir, play, sys.executable, n['env'])
    assert proc.returncode == 0, proc.stdout[-3000:]


def run_play(workdir, play, interpreter, env, *extra):
    environ = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
                   ANSIBLE_NOCOLOR='1', **env)
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + interpreter, play] + list(extra),
                          capture_output=True, text=True, env=environ, timeout=300, check=False)


def test_ready_with_tomlkit_only_for_the_interpreter_ansible_uses(workdir, readiness_node):
    """The former helper ran /usr/bin/python3; the module runs with ansible_python_interpreter.

    On this machine tomlkit is installed for the test venv's Python only. The role's checks, run with that
    interpreter, say READY; run with /usr/bin/python3 they fail naming tomlkit (so the interpreter is really
    the one that ran them).
    """
    system = '/usr/bin/python3'
    assert os.access(system, os.X_OK), 'no /usr/bin/python3 on this machine'
    assert subprocess.run([system, '-c', 'import tomlkit'], capture_output=True, check=False).returncode != 0, \
        'tomlkit is installed for /usr/bin/python3 here: this test cannot tell the interpreters apart'
    assert subprocess.run([sys.executable, '-c', 'import tomlkit'], check=False).returncode == 0
    n = readiness_node()
    play = os.path.join(workdir, 'role.yml')
    with open(play, 'w') as f:
        f.write('''- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: nodeguard.containerd.node_readiness
      vars:
        node_readiness_config_path: {path}
        node_readiness_state_dir: {state}
        node_readiness_check_drift: false
        node_readiness_kubernetes: false
        node_readiness_probe: false
        node_readiness_timeout: 20
''')
    extra = ('-e', '{"node_readiness_python": "/usr/bin/python3"}')  # the old variable is ignored
    with open(play) as f:
        text = f.read().format(path=n['config'], state=os.path.join(workdir, 'state'))
    with open(play, 'w') as f:
        f.write(text)
    env = dict(n['env'])
    assert os.path.dirname(n['binary']) in env['PATH'].split(os.pathsep)  # the role finds containerd in PATH
    ok = run_play(workdir, play, sys.executable, env, *extra)
    assert ok.returncode == 0, ok.stdout[-3000:]
    assert re.search(r'containerd \S+, %s \(config version 2\), \d+ passed, 0 failed, \d+ skipped: READY'
                     % re.escape(n['config']), ok.stdout), ok.stdout[-3000:]
    bad = run_play(workdir, play, system, env, *extra)
    assert bad.returncode != 0
    assert 'tomlkit' in bad.stdout and 'READY' not in bad.stdout, bad.stdout[-3000:]


# ------------------------------------------------------------------ the probe command line
OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='localhost/ng-probe:latest',
            probe_command=['/bin/true'], pass_config_path=True)


def test_probe_argv_runc_handler_uses_its_binary_and_cgroup_driver():
    table = {'runtime_type': 'io.containerd.runc.v2',
             'options': {'BinaryName': '/usr/bin/nvidia-container-runtime', 'SystemdCgroup': True}}
    probe_id, argv, notes = probe_argv('nvidia', table, {'name': 'nvidia'}, OPTS)
    assert argv[:7] == ['ctr', '--address', '/run/c.sock', '-n', 'k8s.io', 'run', '--rm']
    assert argv[argv.index('--runtime') + 1] == 'io.containerd.runc.v2'
    assert argv[argv.index('--runc-binary') + 1] == '/usr/bin/nvidia-container-runtime'
    assert argv[argv.index('--cgroup') + 1] == 'system.slice:nodeguard-probe:' + probe_id
    assert '--runc-systemd-cgroup' in argv
    assert argv[-3:] == ['localhost/ng-probe:latest', probe_id, '/bin/true']
    assert notes == []


def test_probe_argv_kata_handler_uses_runtime_path_and_config_path():
    table = {'runtime_type': 'io.containerd.kata-qemu-tdx.v2', 'runtime_path': '/opt/kata/bin/containerd-shim-kata-v2',
             'snapshotter': 'nydus',
             'options': {'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration-qemu-tdx.toml'}}
    argv, notes = probe_argv('kata-qemu-tdx', table, {'name': 'kata-qemu-tdx'}, OPTS)[1:]
    assert argv[argv.index('--runtime') + 1] == '/opt/kata/bin/containerd-shim-kata-v2'
    assert argv[argv.index('--runtime-config-path') + 1].endswith('configuration-qemu-tdx.toml')
    assert '--runc-binary' not in argv
    assert any('nydus' in n for n in notes)
    # per handler, or for all: leave ConfigPath out (stand-in shims), and say so
    argv, notes = probe_argv('k', table, {'name': 'k', 'pass_config_path': False}, OPTS)[1:]
    assert '--runtime-config-path' not in argv and any('ConfigPath' in n for n in notes)
    argv = probe_argv('k', table, {'name': 'k'}, dict(OPTS, pass_config_path=False))[1]
    assert '--runtime-config-path' not in argv


def test_probe_argv_shim_found_by_type_and_custom_image():
    spec = {'name': 'kata-clh', 'image': 'registry.example/busybox:1', 'command': ['/bin/sh', '-c', 'exit 0']}
    probe_id, argv = probe_argv('kata-clh', {'runtime_type': 'io.containerd.kata-clh.v2'}, spec, OPTS)[:2]
    assert argv[argv.index('--runtime') + 1] == 'io.containerd.kata-clh.v2'
    assert argv[-5:] == ['registry.example/busybox:1', probe_id, '/bin/sh', '-c', 'exit 0']


# ------------------------------------------------------------------ drift
RUNC_PATH = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'
RUNC_TABLE = {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True}}


def write_ledger(state_dir, config, records):
    path = ledger_path_for(str(state_dir), config)
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as fh:
        json.dump({'format': 1, 'config': config, 'records': records}, fh)


def drift(state_dir, result, config='/etc/containerd/config.toml', accounted=()):
    return evaluate_drift(json.dumps(result), str(state_dir), [config], list(accounted), 'default')


def test_drift_none(tmp_path):
    res = drift(tmp_path, {'changed': False, 'protected_drift': [], 'drift': {}})
    assert res['status'] == 'pass' and res['unaccounted'] == []


def test_drift_runc_removed_is_named(tmp_path):
    """The GPU report: the toolkit's revert deleted the runc table."""
    item = {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'removed', 'before': RUNC_TABLE, 'after': None}
    res = drift(tmp_path, {'failed': True, 'msg': 'protected keys drifted', 'protected_drift': [item]})
    assert res['status'] == 'fail'
    assert RUNC_PATH in res['reason'] and 'removed' in res['reason']


def test_drift_recorded_by_an_owner_in_the_ledger_is_accounted(tmp_path):
    """nvidia as runtime name `runc`: BinaryName added by the gpu role, recorded in the ledger."""
    after = {'runtime_type': 'io.containerd.runc.v2',
             'options': {'SystemdCgroup': True, 'BinaryName': '/usr/bin/nvidia-container-runtime'}}
    item = {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'changed', 'before': RUNC_TABLE, 'after': after}
    config = '/etc/containerd/config.toml'
    write_ledger(tmp_path, config, [
        {'owner': 'gpu_toolkit', 'resource': 'runc', 'kind': 'key', 'path': RUNC + ['options', 'BinaryName'],
         'prior': None, 'value': '"/usr/bin/nvidia-container-runtime"', 'seq': 1},
    ])
    res = drift(tmp_path, {'protected_drift': [item]}, config=config)
    assert res['status'] == 'pass', res
    assert res['accounted'] == [{'path': RUNC_PATH, 'change': 'changed', 'by': 'gpu_toolkit'}]


def test_drift_recorded_in_a_drop_in_ledger_is_accounted(tmp_path):
    """The toolkit >= 1.18 writes a drop-in: its ledger is read too (every file of the tree)."""
    item = {'key': 'cri.default_runtime_name', 'path': 'plugins."%s".containerd.default_runtime_name' % CRI,
            'change': 'changed', 'before': 'runc', 'after': 'nvidia'}
    dropin = '/etc/containerd/conf.d/99-nvidia.toml'
    write_ledger(tmp_path, dropin, [{'owner': 'gpu_toolkit', 'kind': 'key', 'seq': 1, 'prior': None,
                                     'path': ['plugins', CRI, 'containerd', 'default_runtime_name'], 'value': '"x"'}])
    res = evaluate_drift({'protected_drift': [item]}, str(tmp_path), ['/etc/containerd/config.toml', dropin], [],
                         'default')
    assert res['status'] == 'pass' and res['accounted'][0]['by'] == 'gpu_toolkit', res


def test_drift_beyond_what_the_ledger_records_fails(tmp_path):
    after = {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': False, 'BinaryName': '/x'}}
    item = {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'changed', 'before': RUNC_TABLE, 'after': after}
    config = '/etc/containerd/config.toml'
    write_ledger(tmp_path, config, [
        {'owner': 'gpu_toolkit', 'kind': 'key', 'path': RUNC + ['options', 'BinaryName'], 'prior': None,
         'value': '"/x"', 'seq': 1},
        {'owner': 'coco', 'kind': 'released', 'path': RUNC + ['options', 'SystemdCgroup'], 'seq': 2},
    ])
    res = drift(tmp_path, {'protected_drift': [item]}, config=config)
    assert res['status'] == 'fail'
    assert res['unaccounted'][0]['keys'] == [RUNC_PATH + '.options.SystemdCgroup']
    assert 'SystemdCgroup' in res['reason']


def test_drift_accounted_by_the_operator(tmp_path):
    key = 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name'
    item = {'key': 'cri.default_runtime_name', 'path': key, 'change': 'changed', 'before': 'runc', 'after': 'nvidia'}
    res = drift(tmp_path, {'protected_drift': [item]}, accounted=[key])
    assert res['status'] == 'pass' and res['accounted'][0]['by'] == 'node_readiness_drift_accounted'


def test_drift_module_errors(tmp_path):
    res = drift(tmp_path, {'failed': True, 'msg': "no baseline 'default' in /var/lib/nodeguard/baselines"})
    assert res['status'] == 'skip' and 'no baseline' in res['reason']
    res = drift(tmp_path, {'failed': True, 'msg': '/etc/containerd/config.toml is not valid TOML',
                           'protected_drift': None})
    assert res['status'] == 'fail' and 'not valid TOML' in res['reason']


def test_parse_key_path_quotes():
    assert parse_key_path("plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc") == [
        'plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes', 'runc']
    assert parse_key_path(RUNC_PATH) == RUNC
    assert dotted_path(RUNC) == RUNC_PATH


def test_drift_check_through_the_module(run_module, readiness_node, workdir):
    """The baseline_drift check in the report: a dict result (as registered), accounted by the config's ledger."""
    n = readiness_node()
    item = {'key': 'cri.runtimes.runc', 'path': RUNC_PATH, 'change': 'changed', 'before': RUNC_TABLE,
            'after': dict(RUNC_TABLE, options={'SystemdCgroup': True, 'BinaryName': '/x'})}
    state = os.path.join(workdir, 'state')
    write_ledger(state, n['config'], [{'owner': 'gpu_toolkit', 'kind': 'key', 'seq': 1, 'prior': None,
                                       'value': '"/x"', 'path': RUNC + ['options', 'BinaryName']}])
    report = check(run_module, n, check_drift=True, state_dir=state,
                   drift_result={'failed': True, 'protected_drift': [item]})[1]
    assert report['by_name']['baseline_drift']['status'] == 'pass', report['by_name']['baseline_drift']
    assert report['drift']['accounted'][0]['by'] == 'gpu_toolkit'
    # an empty result judges nothing
    report = check(run_module, n, check_drift=True, fail=False, drift_result={})[1]
    assert report['by_name']['baseline_drift'] == dict(
        name='baseline_drift', status='fail', required=True,
        reason='drift check enabled but no containerd_baseline result was given')
    # no result: the module compares with the baseline itself (tests/module/test_containerd_readiness_drift.py)
    report = check(run_module, n, check_drift=True, fail=False, baseline_store=os.path.join(workdir, 'none'))[1]
    assert report['by_name']['baseline_drift']['status'] == 'skip'
    assert 'there is no baseline' in report['by_name']['baseline_drift']['reason']


# ------------------------------------------------------------------ kubernetes
def fake_kubectl(tmp_path, node_ready, pods):
    cond = {'type': 'Ready', 'status': 'True' if node_ready else 'False',
            'reason': 'KubeletReady' if node_ready else 'KubeletNotReady'}
    items = [{'metadata': {'name': '%s-node1' % name},
              'status': {'phase': phase,
                         'conditions': [{'type': 'Ready', 'status': 'True' if phase == 'Running' else 'False'}]}}
             for name, phase in pods.items()]
    (tmp_path / 'node.json').write_text(json.dumps({'status': {'conditions': [cond]}}))
    (tmp_path / 'pods.json').write_text(json.dumps({'items': items}))
    script = tmp_path / 'kubectl'
    script.write_text('#!/bin/sh\ncase "$*" in\n  *"get node node1 "*) cat %s ;;\n'
                      '  *"get pods -n kube-system"*) cat %s ;;\n  *) echo "unexpected: $*" >&2; exit 1 ;;\nesac\n'
                      % (tmp_path / 'node.json', tmp_path / 'pods.json'))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    kubeconfig = tmp_path / 'admin.conf'
    kubeconfig.write_text('apiVersion: v1\nkind: Config\n')
    return str(script), str(kubeconfig)


def test_kubernetes_skipped_with_reason_without_kubectl(tmp_path, monkeypatch):
    monkeypatch.setenv('PATH', str(tmp_path))
    assert kubernetes(str(tmp_path / 'kubectl'), [], 'node1', [], 0) == {
        'ran': False, 'reason': 'kubectl not found on the node'}
    kubectl = fake_kubectl(tmp_path, True, {})[0]
    res = kubernetes(kubectl, [str(tmp_path / 'missing.conf')], 'node1', [], 0)
    assert not res['ran'] and 'no kubeconfig' in res['reason']


def test_kubernetes_node_ready_and_static_pods(tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, True, {'etcd': 'Running', 'kube-apiserver': 'Running'})
    res = kubernetes(kubectl, [kubeconfig], 'node1', ['etcd', 'kube-apiserver'], 0)
    assert res['ran'] and res['ready'], res
    assert all(p['ok'] for p in res['static_pods'].values())


def test_kubernetes_crash_looping_static_pod_fails(tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, True, {'etcd': 'Pending'})
    res = kubernetes(kubectl, [kubeconfig], 'node1', ['etcd', 'kube-apiserver'], 0)
    assert res['ready']
    assert res['static_pods']['etcd'] == {'ok': False, 'reason': 'phase=Pending ready=False'}
    assert not res['static_pods']['kube-apiserver']['ok'] and 'not found' in res['static_pods']['kube-apiserver']['reason']


def test_kubernetes_node_not_ready(tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, False, {})
    res = kubernetes(kubectl, [kubeconfig], 'node1', [], 0)
    assert res['ran'] and not res['ready'] and 'KubeletNotReady' in res['reason']


def test_kubernetes_checks_in_the_report(run_module, readiness_node, tmp_path):
    n = readiness_node()
    kubectl, kubeconfig = fake_kubectl(tmp_path, True, {'etcd': 'Pending'})
    r, report = check(run_module, n, expect_fail=True, kubernetes='auto', kubectl=kubectl, kubeconfig=[kubeconfig],
                      node_name='node1', static_pods=['etcd'], kube_timeout=0)
    assert report['by_name']['kubernetes_node_ready']['status'] == 'pass'
    assert report['by_name']['static_pod:etcd'] == dict(name='static_pod:etcd', status='fail', required=True,
                                                        reason='phase=Pending ready=False')
    report = check(run_module, n, kubernetes='true', expect_fail=True, kubectl=str(tmp_path / 'none'))[1]
    assert report['by_name']['kubernetes_node_ready']['status'] == 'fail'
    report = check(run_module, n, kubernetes='auto', kubectl=str(tmp_path / 'none'))[1]
    kube = report['by_name']['kubernetes_node_ready']
    assert kube['status'] == 'skip' and 'kubectl' in kube['reason'] and not kube['required']


# ------------------------------------------------------------------ containerd's starts since the run began
def test_starts_since_counts_the_units_starts_in_the_report_the_fleet_report_takes(run_module, readiness_node, tmp_path):
    """The count containerd_info makes (systemd's own Started entries since the moment), in the readiness report
    (nodeguard_readiness.service_starts), after the checks; without starts_since there is none."""
    n = readiness_node()
    fake = str(tmp_path / 'journal-bin')
    calls = fake_journalctl(fake)
    env = dict(n['env'], PATH=fake + os.pathsep + n['env']['PATH'])
    r, report = check(run_module, dict(n, env=env), starts_since=1796488763.12, service='containerd')
    assert report['ok'] is True, report
    assert report['service_starts'] == dict(unit='containerd', since=1796488763.12, count=2, error=None)
    with open(calls) as f:
        assert f.read().splitlines() == ['-u containerd -o json --no-pager --since @1796488763.120000']
    r, report = check(run_module, dict(n, env=env))
    assert 'service_starts' not in report
    # a journal that cannot be read: no count, the reason, and the node is still judged by its checks
    fake2 = str(tmp_path / 'journal-bin-2')
    fake_journalctl(fake2, fail='Permission denied')
    r, report = check(run_module, dict(n, env=dict(n['env'], PATH=fake2 + os.pathsep + n['env']['PATH'])),
                      starts_since=5)
    assert report['ok'] is True and report['service_starts']['count'] is None
    assert 'Permission denied' in report['service_starts']['error']
