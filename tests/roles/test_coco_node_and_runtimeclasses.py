# -*- coding: utf-8 -*-
"""coco on what is around containerd, through ansible-playbook (local connection):

- the node check before any write: a node without /dev/kvm, and a KVM node without TDX, refuse the install naming
  each class and what is missing, and nothing is written (node roots laid out like /dev, /sys, /proc here);
- RuntimeClass objects through the kubectl stand-in (molecule/coco/files/kubectl-standin, which records what it
  was asked): created when missing in the ready phase with scheduling.nodeSelector on the runtime label, a user's
  object of the same name kept, the manifests rendered into the artifacts folder; on removal only the role's own
  are deleted, and only when no node carries the runtime label any more.
"""

import json
import os
import shutil
import stat

from conftest import REPO, read
from role_play import run_playbook
from coco_play import run_coco, tree

STANDIN = os.path.join(REPO, 'molecule', 'coco', 'files', 'kubectl-standin')


def node_root(base, kvm=True, tdx=None):
    """A node's /dev and /sys, outside workdir (whose files the tests hash: a device cannot be read)."""
    root = os.path.join(str(base), 'node')
    os.makedirs(os.path.join(root, 'dev'))
    if kvm:
        os.mknod(os.path.join(root, 'dev', 'kvm'), stat.S_IFCHR | 0o600, os.makedev(10, 232))
    for name in ('vhost_vsock', 'vhost_net'):
        os.makedirs(os.path.join(root, 'sys', 'module', name))
    if tdx is not None:
        os.makedirs(os.path.join(root, 'sys', 'module', 'kvm_intel', 'parameters'))
        with open(os.path.join(root, 'sys', 'module', 'kvm_intel', 'parameters', 'tdx'), 'w') as f:
            f.write(tdx + '\n')
    return root


def install(workdir, config, root, classes=None):
    path = config('v2_debian_stock.toml')
    # refused before the payload is looked at
    role_vars = dict(coco_state='present', coco_payload_archive=os.path.join(workdir, 'kata.tar.zst'),
                     coco_payload_remote_src=True,
                     coco_check_node_root=root)
    if classes is not None:
        role_vars['coco_runtime_classes'] = classes
    before = tree(workdir)
    res = run_coco(workdir, path, role_vars)
    assert tree(workdir) == before, 'the refused install wrote something'
    assert not os.path.exists(os.path.join(workdir, 'state'))
    return ' '.join(res['failure'].split())


def test_a_node_without_dev_kvm_refuses_the_install_before_any_write(workdir, config, tmp_path):
    failure = install(workdir, config, node_root(tmp_path, kvm=False), ['kata-qemu', 'kata-qemu-coco-dev'])
    assert failure.startswith('runtime class kata-qemu cannot run on this node: needs kvm - /dev/kvm does not exist'), \
        failure
    assert 'runtime class kata-qemu-coco-dev cannot run on this node: needs kvm' in failure
    assert failure.endswith('Nothing was changed. Fix: remove the class(es) from the runtime classes asked for '
                            '(coco_runtime_classes), give the node what is missing, or skip this check '
                            '(coco_check_node: false).'), failure


def test_a_kvm_node_without_tdx_refuses_the_default_classes_naming_tdx_and_snp(workdir, config, tmp_path):
    failure = install(workdir, config, node_root(tmp_path, tdx='N'))
    assert failure.startswith('runtime class kata-qemu-tdx cannot run on this node: needs tdx - Intel TDX: '
                              '/sys/module/kvm_intel/parameters/tdx is N, not Y'), failure
    assert 'runtime class kata-qemu-snp cannot run on this node: needs snp - AMD SEV-SNP: ' \
           '/sys/module/kvm_amd/parameters/sev_snp does not exist' in failure
    assert 'kata-qemu cannot' not in failure and 'kata-qemu-coco-dev cannot' not in failure


# ------------------------------------------------------------------ RuntimeClasses
PLAY = '''
- name: coco's Kubernetes side, local
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: The labels entry point
      ansible.builtin.include_role:
        name: nodeguard.containerd.coco
        tasks_from: labels
      vars: {role_vars}
'''


def kube(workdir, config, monkeypatch, phase, **extra):
    logs = os.path.join(workdir, 'kube')
    monkeypatch.setenv('NODEGUARD_STANDIN_LOG_DIR', logs)
    kubectl = os.path.join(workdir, 'bin', 'kubectl')
    if not os.path.exists(kubectl):
        os.makedirs(os.path.dirname(kubectl))
        shutil.copy(STANDIN, kubectl)
        with open(os.path.join(workdir, 'kubeconfig'), 'w') as f:
            f.write('apiVersion: v1\n')
    role_vars = dict(coco_labels_phase=phase, coco_config_path=config('v2_debian_stock.toml'),
                     coco_state_dir=os.path.join(workdir, 'state'), coco_kubernetes='auto', coco_kubectl=kubectl,
                     coco_kubeconfig=[os.path.join(workdir, 'kubeconfig')], coco_node_name='node-7',
                     coco_artifacts_dir=os.path.join(workdir, 'artifacts'),
                     coco_runtime_classes=['kata-qemu', {'name': 'kata-qemu-tdx'}, 'kata-qemu-nvidia-gpu-snp'])
    role_vars.update(extra)
    proc = run_playbook(workdir, PLAY.format(role_vars=json.dumps(role_vars)))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    state = os.path.join(logs, 'kubectl-runtimeclasses.json')
    calls = [' '.join(line.split()[1:]) for line in read(os.path.join(logs, 'kubectl.log')).splitlines()]
    return (json.loads(read(state)) if os.path.exists(state) else {}), calls, proc.stdout


def put(workdir, name, data):
    os.makedirs(os.path.join(workdir, 'kube'), exist_ok=True)
    with open(os.path.join(workdir, 'kube', name), 'w') as f:
        json.dump(data, f)


MARKS = {'app.kubernetes.io/managed-by': 'nodeguard', 'nodeguard.io/owner': 'coco'}
USERS = {'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass', 'metadata': {'name': 'kata-qemu'},
         'handler': 'kata-qemu', 'overhead': {'podFixed': {'memory': '160Mi'}}}


def test_ready_creates_the_missing_runtimeclasses_and_keeps_a_users(workdir, config, monkeypatch):
    put(workdir, 'kubectl-runtimeclasses.json', {'kata-qemu': USERS})
    classes, calls, _out = kube(workdir, config, monkeypatch, 'ready')
    kubeconfig = os.path.join(workdir, 'kubeconfig')
    assert calls == ['--kubeconfig %s label node node-7 --overwrite nodeguard.io/coco=ready '
                     'katacontainers.io/kata-runtime=true' % kubeconfig,
                     '--kubeconfig %s create -f -' % kubeconfig]
    assert classes['kata-qemu'] == USERS
    assert classes['kata-qemu-nvidia-gpu-snp'] == {
        'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass',
        'metadata': {'name': 'kata-qemu-nvidia-gpu-snp', 'labels': MARKS}, 'handler': 'kata-qemu-nvidia-gpu-snp',
        'scheduling': {'nodeSelector': {'katacontainers.io/kata-runtime': 'true'}}}
    assert sorted(classes) == ['kata-qemu', 'kata-qemu-nvidia-gpu-snp', 'kata-qemu-tdx']
    rendered = read(os.path.join(workdir, 'artifacts', 'coco-runtimeclasses-localhost.yaml'))
    assert rendered.count('---\n') == 3 and 'handler: kata-qemu-tdx\n' in rendered
    assert '    katacontainers.io/kata-runtime: \'true\'\n' in rendered
    # a second run creates nothing and changes nothing
    again, calls, out = kube(workdir, config, monkeypatch, 'ready')
    assert again == classes
    assert 'changed: [localhost]' not in out.split('TASK [nodeguard.containerd.coco : Create the RuntimeClasses')[1] \
        .split('TASK [')[0]


def test_removed_deletes_only_the_roles_own_and_only_when_no_node_runs_kata(workdir, config, monkeypatch):
    put(workdir, 'kubectl-runtimeclasses.json', {'kata-qemu': USERS})
    put(workdir, 'kubectl-other-nodes.json', {'node-8': {'katacontainers.io/kata-runtime': 'true'}})
    kube(workdir, config, monkeypatch, 'ready')
    # another node still runs the kata handlers: nothing is deleted, and the run says why
    classes, calls, out = kube(workdir, config, monkeypatch, 'removed')
    assert sorted(classes) == ['kata-qemu', 'kata-qemu-nvidia-gpu-snp', 'kata-qemu-tdx']
    assert not [c for c in calls if ' delete ' in c]
    assert 'RuntimeClasses kept: 1 other node(s) still carry katacontainers.io/kata-runtime=true (node/node-8)' in out
    # the last node: the role's own go, the user's kata-qemu stays as it was
    put(workdir, 'kubectl-other-nodes.json', {'node-8': {}})
    classes, calls, _out = kube(workdir, config, monkeypatch, 'removed')
    assert classes == {'kata-qemu': USERS}
    assert calls[-1] == ('--kubeconfig %s delete runtimeclass -l app.kubernetes.io/managed-by=nodeguard,'
                         'nodeguard.io/owner=coco --ignore-not-found' % os.path.join(workdir, 'kubeconfig'))


def test_without_a_cluster_the_manifests_are_still_rendered(workdir, config, monkeypatch):
    monkeypatch.setenv('NODEGUARD_STANDIN_LOG_DIR', os.path.join(workdir, 'kube'))
    role_vars = dict(coco_labels_phase='ready', coco_config_path=config('v2_debian_stock.toml'),
                     coco_state_dir=os.path.join(workdir, 'state'), coco_kubernetes='auto',
                     coco_kubectl=os.path.join(workdir, 'no-kubectl'), coco_artifacts_dir=os.path.join(workdir, 'art'))
    proc = run_playbook(workdir, PLAY.format(role_vars=json.dumps(role_vars)))
    assert proc.returncode == 0, proc.stdout[-4000:]
    rendered = read(os.path.join(workdir, 'art', 'coco-runtimeclasses-localhost.yaml'))
    assert [line for line in rendered.splitlines() if line.startswith('handler:')] == [
        'handler: kata-qemu', 'handler: kata-qemu-coco-dev', 'handler: kata-qemu-tdx', 'handler: kata-qemu-snp']
    assert not os.path.exists(os.path.join(workdir, 'kube', 'kubectl.log'))


def test_a_kubeconfig_that_may_not_create_them_leaves_the_node_ready_and_says_so(workdir, config, monkeypatch):
    """A worker's kubelet.conf may label its node but not create or delete RuntimeClasses (node authorizer)."""
    put(workdir, 'kubectl-forbidden.json', ['create', 'delete'])
    classes, calls, out = kube(workdir, config, monkeypatch, 'ready')
    assert classes == {} and calls[-1].endswith(' create -f -')
    assert ' '.join(out.split()).count('RuntimeClasses not created: %s may not create them (Error from server '
                                       '(Forbidden): ' % os.path.join(workdir, 'kubeconfig')) == 1, out
    assert 'coco-runtimeclasses-localhost.yaml with a kubeconfig that may' in ' '.join(out.split())
    _classes, calls, _out = kube(workdir, config, monkeypatch, 'removed')
    assert calls[-1].split()[2:4] == ['delete', 'runtimeclass']
