# -*- coding: utf-8 -*-
"""coco's facts (tasks/facts.yml) through ansible-playbook (local connection)
on a real config, with the real containerd binaries found in PATH: what the
role works out in its one set_fact (placement, handlers, the runtime entries,
what the payload must hold, the drop-ins it wants, whether anything of coco is
on the node, the Kubernetes labelling), and its one check: a node without a
config, or bad input, is refused with the reason before anything is written.

coco_state absent on a node coco never touched: the role reads the node and
has nothing to undo, so the run writes nothing (no systemd here: coco_flush
is off).
"""

import os

import pytest

from coco_play import run_coco, tree
from conftest import CONTAINERD_2
from role_play import stand_in


def test_containerd_1x_puts_the_handlers_into_config_toml(workdir, config):
    path = config('v2_debian_stock.toml')
    kubectl = stand_in(workdir, 'kubectl')
    kubeconfig = os.path.join(workdir, 'kubelet.conf')
    with open(kubeconfig, 'w') as f:
        f.write('apiVersion: v1\n')
    before = tree(workdir)
    res = run_coco(workdir, path, dict(
        coco_runtime_classes=['kata-qemu', {'name': 'kata-clh', 'shim': 'clh', 'snapshotter': 'nydus', 'probe': True},
                              {'name': 'kata-qemu-tdx', 'runtime_path': '/usr/bin/shim-tdx'}],
        coco_kubernetes='auto', coco_kubectl=kubectl,
        coco_kubeconfig=[os.path.join(workdir, 'admin.conf'), kubeconfig], coco_node_name='node-7'))
    assert res['failure'] == ''
    facts = res['facts']
    kata = os.path.join(workdir, 'opt', 'kata')
    shim = kata + '/bin/containerd-shim-kata-v2'
    conf = kata + '/share/defaults/kata-containers/configuration-%s.toml'
    assert (facts['placement'], int(facts['ctd_major']), int(facts['config_version'])) == ('config', 1, 2)
    assert facts['images_table'] == 'plugins."io.containerd.grpc.v1.cri".containerd'
    assert facts['runtimes_table'] == 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'
    assert facts['runtimes'] == [
        dict(name='kata-qemu', shim='qemu', runtime_type='io.containerd.kata-qemu.v2', runtime_path=shim,
             config_path=conf % 'qemu', snapshotter='', probe=True),
        dict(name='kata-clh', shim='clh', runtime_type='io.containerd.kata-clh.v2', runtime_path=shim,
             config_path=conf % 'clh', snapshotter='nydus', probe=True),
        dict(name='kata-qemu-tdx', shim='qemu-tdx', runtime_type='io.containerd.kata-qemu-tdx.v2',
             runtime_path='/usr/bin/shim-tdx', config_path=conf % 'qemu-tdx', snapshotter='', probe=False)]
    assert facts['handlers'] == [dict(name='kata-qemu', probe=True), dict(name='kata-clh', probe=True),
                                 dict(name='kata-qemu-tdx', probe=False)]
    assert facts['entries'][1] == dict(
        name='kata-clh', runtime_type='io.containerd.kata-clh.v2', runtime_path=shim, inherit='none',
        settings=dict(privileged_without_host_devices=True, pod_annotations=['io.katacontainers.*'], snapshotter='nydus'),
        options=dict(ConfigPath=conf % 'clh'))
    assert 'snapshotter' not in facts['entries'][0]['settings']
    # the shim(s), then each configuration, once each
    assert facts['required'] == [shim, '/usr/bin/shim-tdx', conf % 'qemu', conf % 'clh', conf % 'qemu-tdx']
    assert facts['dropins'] == [os.path.join(workdir, 'etc', 'config.toml.d', 'nydus-snapshotter.toml')]
    assert facts['anything'] is False and facts['complete'] is False
    assert facts['kube'] == dict(enabled=True, reason='', kubectl=kubectl, kubeconfig=kubeconfig, node='node-7')
    # the start of the run, kept for the rescue's comparison
    # the first read, kept for the rescue: the config as containerd_info saw it
    assert facts['start']['config_exists'] is True and facts['start']['config_sha256'] == facts['config']['sha256']
    assert tree(workdir) == before


def test_containerd_2x_puts_them_into_a_dropin_and_says_why_labels_are_skipped(workdir, config):
    path = config('v3_default.toml')
    res = run_coco(workdir, path, dict(coco_kubernetes='auto', coco_kubectl=os.path.join(workdir, 'no-kubectl'),
                                       coco_nydus_enabled=False),
                   containerd_dir=os.path.dirname(CONTAINERD_2))
    assert res['failure'] == ''
    facts = res['facts']
    assert (facts['placement'], int(facts['ctd_major']), int(facts['config_version'])) == ('dropin', 2, 3)
    assert facts['images_table'] == 'plugins."io.containerd.cri.v1.images"'
    assert facts['runtimes_table'] == 'plugins."io.containerd.cri.v1.runtime".containerd.runtimes'
    assert facts['dropins'] == [os.path.join(workdir, 'etc', 'config.toml.d', 'nodeguard-coco-runtimes.toml')]
    assert [h['name'] for h in facts['handlers']] == ['kata-qemu', 'kata-qemu-coco-dev', 'kata-qemu-tdx', 'kata-qemu-snp']
    assert facts['kube']['enabled'] is False
    assert facts['kube']['reason'] == 'no kubectl (%s) on the node' % os.path.join(workdir, 'no-kubectl')


def test_a_node_without_a_config_is_refused_naming_the_file_and_the_fix(workdir):
    path = os.path.join(workdir, 'etc', 'config.toml')
    res = run_coco(workdir, path, {})
    assert res['failure'].startswith(path + ' does not exist or cannot be read on localhost.'), res['failure']
    assert 'playbooks/restore.yml' in res['failure']
    assert not os.path.exists(path) and not os.path.exists(os.path.join(workdir, 'state'))


def test_a_damaged_ledger_is_refused_naming_it_and_the_fix_before_any_write(workdir, config):
    """A ledger that cannot be read leaves coco unable to tell its own changes from others': the role's one
    check refuses it first, naming the ledger and the fix, and nothing is written."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for
    path = config('v2_debian_stock.toml')
    ledger = ledger_path_for(os.path.join(workdir, 'state'), path)
    os.makedirs(os.path.dirname(ledger))
    with open(ledger, 'w') as f:
        f.write('{"records": [')
    before = tree(workdir)
    res = run_coco(workdir, path, {})
    assert res['failure'].startswith('the ledger %s for %s is damaged' % (ledger, path)), res['failure']
    assert res['failure'].endswith('Nothing was changed. Fix: move it aside and run playbooks/restore.yml; '
                                   "coco's earlier changes can then not be removed automatically."), res['failure']
    assert tree(workdir) == before


# one run each (about 10 s): a bad name of the input, and input the node cannot take
@pytest.mark.parametrize('role_vars, named', [
    (dict(coco_runtime_classes=['kata qemu']), "runtime classes ['kata qemu']"),
    (dict(coco_placement='dropin'), "placement dropin (coco_placement=dropin; 'dropin' needs containerd 2.x"),
])
def test_bad_input_is_refused_before_any_write(workdir, config, role_vars, named):
    path = config('v2_debian_stock.toml')
    before = tree(workdir)
    res = run_coco(workdir, path, role_vars)
    assert res['failure'].startswith('coco cannot run on localhost: containerd 1.6'), res['failure']
    assert named in res['failure'], res['failure']
    assert res['facts']['config']['exists'] is True
    assert tree(workdir) == before


def test_a_payload_coco_does_not_manage_must_be_there_before_any_change(workdir, config):
    """coco_payload_manage false: the shim and each handler's kata configuration are looked for on the node, and
    a missing one refuses the install before the config is touched (the rescue finds nothing to undo)."""
    path = config('v2_debian_stock.toml')
    kata = os.path.join(workdir, 'opt', 'kata')
    shim = os.path.join(kata, 'bin', 'containerd-shim-kata-v2')
    conf = os.path.join(kata, 'share', 'defaults', 'kata-containers', 'configuration-%s.toml')
    for name in (shim, conf % 'qemu'):
        os.makedirs(os.path.dirname(name), exist_ok=True)
        with open(name, 'w') as f:
            f.write('# stand-in\n')
    before = tree(workdir)
    res = run_coco(workdir, path, dict(coco_state='present', coco_payload_manage=False, coco_snapshot=False,
                                       coco_check_node=False,
                                       coco_readiness=False, coco_runtime_classes=['kata-qemu', 'kata-clh']))
    failure = ' '.join(res['failure'].split())
    assert failure.startswith('coco present failed on localhost: Refuse handlers whose shim or configuration is '
                              'missing: Not changing %s: the kata payload is incomplete on localhost, missing %s.'
                              % (path, conf % 'clh')), failure
    assert '%s was not changed by this run; nothing to undo.' % path in failure
    assert tree(workdir) == before
