# -*- coding: utf-8 -*-
"""coco moving its edits between config.toml and its drop-ins: containerd upgraded from 1.6 (handlers and
disable_snapshot_annotations in config.toml) to 2.1 (coco_placement auto: drop-ins), then coco_placement: config
on 2.1 (back into config.toml). The old placement's edits are undone before the new ones are made, so
config.toml's own value comes back while no drop-in of coco's shadows it, the handlers stay in what containerd
runs (its config dump) at every step, and the uninstall gives back config.toml's bytes.

The role runs through ansible-playbook (local connection) with the real containerd binaries first in PATH;
coco_flush is off (no systemd here), so nothing restarts.
"""

import os
import subprocess
import tomllib

from conftest import CONTAINERD_2, read
from coco_play import run_present
from helpers.common import make_tar

CRI_V2 = 'io.containerd.grpc.v1.cri'
SHIM = 'opt/kata/bin/containerd-shim-kata-v2'
CONF = 'opt/kata/share/defaults/kata-containers/configuration-qemu.toml'


def run(workdir, path, containerd_dir, **role):
    """The coco role once; its failure message ('' when it passed) and what it worked out."""
    archive = os.path.join(workdir, 'kata.tar.gz')
    if not os.path.exists(archive):
        make_tar(archive, [(SHIM, 'file', b'#!/bin/sh\nexit 0\n', 0o755), (CONF, 'file', b'[hypervisor.qemu]\n', 0o644)])
    return run_present(workdir, path, containerd_dir, reads="'placement': __coco_placement | default(none)",
                       coco_payload_archive=archive, **role)[0]


def dump(binary, path):
    proc = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return tomllib.loads(proc.stdout)


def in_effect_on_2x(path):
    """(the kata-qemu runtime's type, disable_snapshot_annotations) as containerd 2.1 runs the tree."""
    plugins = dump(CONTAINERD_2, path)['plugins']
    runtimes = plugins['io.containerd.cri.v1.runtime']['containerd']['runtimes']
    return (runtimes.get('kata-qemu', {}).get('runtime_type'),
            plugins['io.containerd.cri.v1.images']['disable_snapshot_annotations'])


def test_the_handlers_follow_containerd_from_config_toml_to_drop_ins_and_back(workdir, config):
    assert CONTAINERD_2, 'run make deps (containerd 2.1)'
    # containerd 1.6's default config: disable_snapshot_annotations = true, which nydus needs false
    text = subprocess.run(['/usr/bin/containerd', 'config', 'default'], capture_output=True, text=True, timeout=60,
                          check=True).stdout
    assert 'disable_snapshot_annotations = true' in text
    path = config(text)
    ctd2 = os.path.dirname(CONTAINERD_2)
    runtimes_dropin = os.path.join(workdir, 'etc', 'config.toml.d', 'nodeguard-coco-runtimes.toml')

    res = run(workdir, path, None)
    assert (res['failure'], res['placement']) == ('', 'config'), res
    cri = tomllib.loads(read(path))['plugins'][CRI_V2]['containerd']
    assert 'kata-qemu' in cri['runtimes'] and cri['disable_snapshot_annotations'] is False

    # containerd 2.1 now: the edits move into coco's drop-ins, config.toml's own value comes back
    res = run(workdir, path, ctd2)
    assert (res['failure'], res['placement']) == ('', 'dropin'), res
    cri = tomllib.loads(read(path))['plugins'][CRI_V2]['containerd']
    assert 'kata-qemu' not in cri['runtimes'] and cri['disable_snapshot_annotations'] is True
    assert os.path.isfile(runtimes_dropin)
    assert in_effect_on_2x(path) == ('io.containerd.kata-qemu.v2', False)
    assert run(workdir, path, ctd2)['failure'] == ''  # a second run: nothing to move

    # and back into config.toml by hand: the runtimes drop-in goes, the handler stays in effect
    res = run(workdir, path, ctd2, coco_placement='config')
    assert (res['failure'], res['placement']) == ('', 'config'), res
    assert 'kata-qemu' in tomllib.loads(read(path))['plugins'][CRI_V2]['containerd']['runtimes']
    assert not os.path.exists(runtimes_dropin)
    assert in_effect_on_2x(path) == ('io.containerd.kata-qemu.v2', False)

    res = run(workdir, path, ctd2, coco_state='absent', coco_placement='config')
    assert res['failure'] == '', res
    assert read(path) == text
