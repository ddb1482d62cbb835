# -*- coding: utf-8 -*-
"""playbooks/site.yml's rollback, as the playbook's own templates render it: the one-line failure message says
whether the baseline was put back, what the restart contract did on it (restarted, already running it, refused,
or would restart in check mode) and whether the node is ready again; a refused restart is no rollback. And the
rollback works on the config, state folder and baseline the roles used.

The templates are taken from site.yml itself and rendered by ansible-core's Templar with the facts the rescue's
tasks leave (molecule/coco's coexist step runs the whole rescue on a node).
"""

import os

import pytest
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from conftest import REPO

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 renders every string
    def trust_as_template(text):
        return text

LOADER = DataLoader()
PLAY = LOADER.load_from_file(os.path.join(REPO, 'playbooks', 'site.yml'))[0]


def trusted(variables):
    return dict((k, trust_as_template(v) if isinstance(v, str) else v) for k, v in variables.items())


def rescue_vars():
    """The vars of the rescue's 'keep the failure' step."""
    block = next(t for t in PLAY['tasks'] if 'rescue' in t)
    keep = next(t for t in block['rescue'] if t.get('ansible.builtin.include_tasks') == 'tasks/node_failed.yml')
    return trusted(keep['vars'])


def render(variables, name):
    return Templar(loader=LOADER, variables=variables).template(variables[name])


def failure(restart=None, restored=(), removed=(), ready=True, rollback_error=None):
    variables = rescue_vars()
    variables.update(inventory_hostname='node-1', site_failure='Set the labels: kubectl failed.\n',
                     config_snapshot_restore_result=dict(restored=list(restored), removed_files=list(removed)),
                     nodeguard_readiness=dict(ok=ready, failed=[] if ready else ['cri', 'probe:nvidia']))
    if restart is not None:
        variables['nodeguard_restart'] = dict(dict(restarted=False, refused=False, needed=False, reason=''), **restart)
    if rollback_error is not None:
        variables['site_rollback_error'] = rollback_error
    msg = ' '.join(render(variables, 'nodeguard_failure_msg').split())
    return msg, render(variables, 'nodeguard_failure_rolled_back') in (True, 'True', 'true')


HEAD = 'site converge failed on node-1: Set the labels: kubectl failed. '


@pytest.mark.parametrize('restart, restored, removed, ready, said, rolled_back', [
    (dict(restarted=True, needed=True), ['/etc/containerd/config.toml'], [], True,
     'Baseline put back, containerd restarted on it; node ready again.', True),
    (dict(), [], ['/etc/containerd/conf.d/nydus.toml'], True,
     'Baseline put back, containerd already runs it; node ready again.', True),
    (dict(), [], [], True, 'The config is the baseline, containerd already runs it; node ready again.', True),
    # the load test refused the restored config: containerd still runs the config that failed
    (dict(refused=True, needed=True, reason='the load test failed:\n  CRI plugin not loaded'),
     ['/etc/containerd/config.toml'], [], False,
     'Baseline put back, containerd NOT restarted on it (the load test failed: CRI plugin not loaded); '
     'node NOT ready: cri, probe:nvidia.', False),
    # check mode: the contract says a restart is needed and does not do it
    (dict(needed=True), ['/etc/containerd/config.toml'], [], True,
     'Baseline put back, containerd would be restarted on it; node ready again.', True),
])
def test_the_rollback_message_says_what_the_rollback_did(restart, restored, removed, ready, said, rolled_back):
    assert failure(restart, restored, removed, ready) == (HEAD + said, rolled_back)


def test_a_failed_rollback_names_its_step_and_the_manual_restore():
    msg, rolled_back = failure(dict(restarted=True), rollback_error='Put the baseline back: no baseline "default"')
    assert msg == HEAD + 'Rollback FAILED: Put the baseline back: no baseline "default". Run playbooks/restore.yml.'
    assert rolled_back is False


@pytest.mark.parametrize('given, path, state, name, store', [
    (dict(), '/etc/containerd/config.toml', '/var/lib/nodeguard', 'default', '/var/lib/nodeguard/baselines'),
    (dict(gpu_toolkit_config_path='/etc/k/config.toml', gpu_toolkit_baseline_name='pre-gpu'),
     '/etc/k/config.toml', '/var/lib/nodeguard', 'pre-gpu', '/var/lib/nodeguard/baselines'),
    (dict(gpu_toolkit_baseline_name='pre-gpu', coco_baseline_name='pre-coco', coco_state_dir='/srv/ng',
          coco_baseline_store='/srv/ng/baselines'),
     '/etc/containerd/config.toml', '/srv/ng', 'pre-coco', '/srv/ng/baselines'),
])
def test_the_rollback_uses_the_config_and_baseline_the_roles_used(given, path, state, name, store):
    variables = trusted(PLAY['vars'])
    variables.update(given)
    got = [render(variables, v).strip() for v in ('site_config_path', 'site_state_dir', 'site_baseline_name',
                                                  'site_baseline_store')]
    assert got == [path, state, name, store]
    block = next(t for t in PLAY['tasks'] if 'rescue' in t)
    steps = block['rescue'][1]['block']
    assert [s['vars'].get('config_snapshot_name') for s in steps[:1]] == ['{{ site_baseline_name }}']
    for step in steps:
        assert step['vars'].get('config_snapshot_path', step['vars'].get('node_readiness_config_path')) \
            == '{{ site_config_path }}', step['name']


@pytest.mark.parametrize('gpu, coco, gone', [
    ('absent', 'skip', ['nvidia']),
    ('absent', 'absent', ['nvidia', 'kata-clh', 'kata-qemu']),
    ('present', 'absent', ['kata-clh', 'kata-qemu']),
])
def test_the_runtimes_that_must_be_gone_are_those_the_roles_took_out(gpu, coco, gone):
    """gpu_toolkit's own count (gpu_toolkit_gone: a runtime the NVIDIA toolkit's drop-in still defines was never
    the role's and stays), and every handler coco installed (coco_gone), not those coco_runtime_classes names now
    (coco_handlers: kata-clh was installed and dropped from the variable since, kata-qemu-tdx was never installed)."""
    variables = trusted(PLAY['vars'])
    variables.update(gpu_toolkit_state=gpu, coco_state=coco, gpu_toolkit_runtimes=['nvidia', 'nvidia-cdi'],
                     gpu_toolkit_gone=['nvidia'], coco_gone=['kata-clh', 'kata-qemu'],
                     coco_handlers=[{'name': 'kata-qemu'}, {'name': 'kata-qemu-tdx'}])
    assert render(variables, 'site_gone') == gone
