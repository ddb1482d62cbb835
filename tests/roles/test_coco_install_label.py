# -*- coding: utf-8 -*-
"""The Kubernetes life-cycle label on install follows what containerd runs, not nodeguard's ledger alone.

kata-deploy (or an operator) wrote the kata-qemu handler and disable_snapshot_annotations = false into
config.toml before coco ran: coco's edit changes nothing there, so the ledger records nothing for them. Once the
payload is installed too, a run has nothing to do, and the node label stays where it is - the label moves to
installing only when a value coco sets differs on the node. The kubectl stand-in
(molecule/coco/files/kubectl-standin) records each call.

The role runs through ansible-playbook (local connection) with containerd 1.6 (/usr/bin/containerd: placement
config); coco_flush is off (no systemd here), so nothing restarts and the ready label is not set.
"""

import os
import shutil
import subprocess

import tomlkit

from coco_play import run_present
from conftest import REPO, read
from helpers.common import make_tar

STANDIN = os.path.join(REPO, 'molecule', 'coco', 'files', 'kubectl-standin')
CRI = 'io.containerd.grpc.v1.cri'
SHIM = 'opt/kata/bin/containerd-shim-kata-v2'
CONF = 'opt/kata/share/defaults/kata-containers/configuration-qemu.toml'


def written_by_kata_deploy(workdir):
    """containerd 1.6's default config with the kata-qemu handler and the nydus setting as coco would write them."""
    doc = tomlkit.parse(subprocess.run(['/usr/bin/containerd', 'config', 'default'], capture_output=True, text=True,
                                       timeout=60, check=True).stdout)
    ctd = doc['plugins'][CRI]['containerd']
    ctd['disable_snapshot_annotations'] = False
    handler = tomlkit.table()
    handler.update({'runtime_type': 'io.containerd.kata-qemu.v2', 'runtime_path': os.path.join(workdir, SHIM),
                    'privileged_without_host_devices': True, 'pod_annotations': ['io.katacontainers.*'],
                    'options': {'ConfigPath': os.path.join(workdir, CONF)}})
    ctd['runtimes']['kata-qemu'] = handler
    return tomlkit.dumps(doc)


def edit(path, change):
    """Change config.toml's containerd table by hand (an operator's edit)."""
    doc = tomlkit.parse(read(path))
    change(doc['plugins'][CRI]['containerd'])
    with open(path, 'w') as f:
        f.write(tomlkit.dumps(doc))


def test_the_label_stays_when_the_handlers_and_setting_were_there_before_coco(workdir, config, monkeypatch):
    logs = os.path.join(workdir, 'kube')
    monkeypatch.setenv('NODEGUARD_STANDIN_LOG_DIR', logs)
    kubectl = os.path.join(workdir, 'bin', 'kubectl')
    os.makedirs(os.path.dirname(kubectl))
    shutil.copy(STANDIN, kubectl)
    kubeconfig = os.path.join(workdir, 'kubeconfig')
    with open(kubeconfig, 'w') as f:
        f.write('apiVersion: v1\n')
    archive = os.path.join(workdir, 'kata.tar.gz')
    make_tar(archive, [(SHIM, 'file', b'#!/bin/sh\nexit 0\n', 0o755), (CONF, 'file', b'[hypervisor.qemu]\n', 0o644)])
    path = config(written_by_kata_deploy(workdir))
    handlers = tomlkit.parse(read(path))['plugins'][CRI]['containerd']
    installing = '--kubeconfig %s label node node-7 --overwrite nodeguard.io/coco=installing' % kubeconfig

    def run(extra_args=()):
        res, out = run_present(workdir, path, extra_args=extra_args, reads="'complete': __coco_complete_on_node",
                               coco_payload_archive=archive, coco_kubernetes='auto', coco_kubectl=kubectl,
                               coco_kubeconfig=[kubeconfig], coco_node_name='node-7')
        assert res['failure'] == '', res['failure']
        calls = read(os.path.join(logs, 'kubectl.log')).splitlines() if os.path.exists(logs) else []
        return res['complete'] in (True, 'True'), [' '.join(c.split()[1:]) for c in calls], out

    # the payload and nydus' drop-in are missing: the run adds them, and says so first; config.toml's CRI table
    # holds what coco wants already
    complete, calls, _out = run()
    assert (complete, calls) == (False, [installing])
    assert tomlkit.parse(read(path))['plugins'][CRI]['containerd'] == handlers
    text = read(path)
    # nothing left to do: complete, in check mode as in a real run, and no label moves
    complete, calls, _out = run(['--check'])
    assert (complete, calls) == (True, [installing])
    complete, calls, out = run()
    assert (complete, calls) == (True, [installing])
    changed = [t.split(']', 1)[0] for t in out.split('\nTASK [')[1:] if '\nchanged: ' in t]
    assert [t for t in changed if t != 'What the test reads'] == [], changed
    assert read(path) == text

    # a value coco sets that differs on the node: this run changes it, and the label says so first
    edit(path, lambda ctd: ctd['runtimes']['kata-qemu'].update({'pod_annotations': []}))
    complete, calls, _out = run()
    assert (complete, calls) == (False, [installing, installing])
    assert read(path) == text
    edit(path, lambda ctd: ctd.update({'disable_snapshot_annotations': True}))
    complete, calls, _out = run()
    assert (complete, calls) == (False, [installing, installing, installing])
    assert tomlkit.parse(read(path))['plugins'][CRI]['containerd']['disable_snapshot_annotations'] is False
