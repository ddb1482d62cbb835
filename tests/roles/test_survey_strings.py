# -*- coding: utf-8 -*-
"""Survey answers are strings: a list variable given as a JSON list string, as a comma-separated string or as a
newline-separated string reaches the modules as the same list as a real list.

One job per form, run as AWX runs a job template (ansible-runner: private data dir, inventory, extra vars only),
on localhost: node_readiness (no probes, no drift, no Kubernetes: the handler checks come from the config's
`config dump`), gpu_toolkit adding two runtimes to a copy of a kubeadm config (flush and restart off: no systemd
here), and coco's facts (coco_state absent on a node it never touched: nothing is written). What the test reads is
what the modules were called with (each result's invocation) and what was written.
"""

import json
import os
import shutil
import sys

import ansible_runner
import pytest
import tomlkit

from conftest import COLLECTIONS_ROOT, FIXTURES
from role_play import stand_in

PLAY = '''
- name: Survey strings
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The readiness checks
      ansible.builtin.include_role:
        name: nodeguard.containerd.node_readiness
      vars:
        node_readiness_config_path: "{{ test_dir }}/config.toml"
        node_readiness_fail: false
        node_readiness_probe: false
        node_readiness_check_drift: false
        node_readiness_kubernetes: false
        node_readiness_show_report: false
        node_readiness_timeout: 1

    - name: The GPU runtimes
      ansible.builtin.include_role:
        name: nodeguard.containerd.gpu_toolkit
      vars:
        gpu_toolkit_config_path: "{{ test_dir }}/config.toml"
        gpu_toolkit_state_dir: "{{ test_dir }}/state"
        gpu_toolkit_baseline_store: "{{ test_dir }}/baselines"
        gpu_toolkit_runtime_binary: "{{ test_dir }}/bin/nvidia-container-runtime"
        gpu_toolkit_flush: false
        gpu_toolkit_restart_handler: false

    - name: coco's handlers
      ansible.builtin.include_role:
        name: nodeguard.containerd.coco
      vars:
        coco_state: absent
        coco_config_path: "{{ test_dir }}/config.toml"
        coco_state_dir: "{{ test_dir }}/state"
        coco_dropin_dir: "{{ test_dir }}/config.toml.d"
        coco_install_dir: "{{ test_dir }}/opt/kata"
        coco_baseline_store: "{{ test_dir }}/baselines"
        coco_flush: false
        coco_kubernetes: "false"
'''

HANDLERS = ['runc', 'nvidia']
RUNTIMES = ['nvidia', 'nvidia-legacy']
CLASSES = ['kata-qemu', 'kata-clh']
# each form as a survey gives it: strings only
FORMS = {
    'json': json.dumps,
    'comma': ', '.join,
    'newline': lambda items: '\n'.join(items) + '\n',
}


@pytest.fixture(autouse=True)
def venv_on_path(monkeypatch):
    # the runner finds ansible-playbook on PATH, as in an execution environment
    monkeypatch.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))


def node_dir(tmp_path):
    """A config containerd 1.6 judges, and the NVIDIA runtime stand-ins gpu_toolkit checks for."""
    node = tmp_path / 'node'
    (node / 'bin').mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, 'v2_kubeadm.toml'), str(node / 'config.toml'))
    for name in ('nvidia-container-runtime', 'nvidia-container-runtime.legacy'):
        stand_in(str(node), name)
    return node


def run_job(tmp_path, extravars):
    pdd = tmp_path / 'job'
    (pdd / 'project').mkdir(parents=True)
    (pdd / 'project' / 'play.yml').write_text(PLAY)
    (pdd / 'inventory').mkdir()
    (pdd / 'inventory' / 'hosts').write_text('localhost ansible_python_interpreter=%s\n' % sys.executable)
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook='play.yml', extravars=extravars,
                                envvars={'ANSIBLE_COLLECTIONS_PATH': COLLECTIONS_ROOT, 'ANSIBLE_NOCOLOR': '1'},
                                quiet=True, timeout=600)
    out = runner.stdout.read()
    assert runner.status == 'successful', (runner.status, out[-4000:])
    return {e['event_data']['task']: e['event_data']['res'] for e in runner.events
            if e.get('event') == 'runner_on_ok' and 'res' in e.get('event_data', {})}


@pytest.mark.parametrize('form', sorted(FORMS))
def test_each_survey_form_gives_the_modules_the_same_list(tmp_path, form):
    node = node_dir(tmp_path)
    given = FORMS[form]
    results = run_job(tmp_path, {'test_dir': str(node), 'node_readiness_expected_handlers': given(HANDLERS),
                                 'gpu_toolkit_runtimes': given(RUNTIMES), 'coco_runtime_classes': given(CLASSES)})
    for value in (given(HANDLERS), given(RUNTIMES), given(CLASSES)):
        assert isinstance(value, str)

    readiness = next(r for t, r in results.items() if t.startswith('Check that containerd works'))
    assert readiness['invocation']['module_args']['handlers'] == HANDLERS
    checks = [c['name'] for c in readiness['readiness']['checks']]
    assert [c for c in checks if c.startswith('handler:')] == ['handler:runc', 'handler:nvidia']

    added = results['Add the GPU runtimes (each a copy of the default runtime) and the CDI settings, drop those no longer asked for']
    assert [r['name'] for r in added['invocation']['module_args']['runtimes']] == RUNTIMES
    runtimes = tomlkit.parse((node / 'config.toml').read_text()).unwrap()[
        'plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']
    assert runtimes['nvidia']['options']['BinaryName'] == str(node / 'bin' / 'nvidia-container-runtime')
    assert runtimes['nvidia-legacy']['options']['BinaryName'] == str(node / 'bin' / 'nvidia-container-runtime.legacy')

    facts = next(r for t, r in results.items() if t.startswith("Work out where coco's edits go"))['ansible_facts']
    assert [h['name'] for h in facts['coco_handlers']] == CLASSES
    assert [r['shim'] for r in facts['__coco_runtimes']] == ['qemu', 'clh']


def test_a_json_list_string_may_carry_mappings(tmp_path):
    """A survey's JSON answer can give what a list of strings cannot: a runtime's own keys."""
    node = node_dir(tmp_path)
    results = run_job(tmp_path, {'test_dir': str(node), 'node_readiness_expected_handlers': 'runc',
                                 'gpu_toolkit_runtimes': json.dumps([{'name': 'nvidia', 'probe': False}]),
                                 'coco_runtime_classes': json.dumps([{'name': 'kata-fc', 'shim': 'fc'}])})
    added = results['Add the GPU runtimes (each a copy of the default runtime) and the CDI settings, drop those no longer asked for']
    assert [r['name'] for r in added['invocation']['module_args']['runtimes']] == ['nvidia']
    facts = next(r for t, r in results.items() if t.startswith("Work out where coco's edits go"))['ansible_facts']
    assert facts['__coco_runtimes'][0]['runtime_type'] == 'io.containerd.kata-fc.v2'
    readiness = next(r for t, r in results.items() if t.startswith('Check that containerd works'))
    assert readiness['invocation']['module_args']['handlers'] == ['runc']
