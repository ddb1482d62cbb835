# -*- coding: utf-8 -*-
"""On uninstall, the handlers that must be gone from what containerd runs are those coco put there, not those
coco_runtime_classes names now: a class installed earlier and dropped from the variable since is still checked,
a class listed since but never installed is not expected.

containerd 2.1 (placement dropin): the handlers live in coco's runtimes drop-in, which the ledger records as a
file, not handler by handler; the uninstall reads which handlers the drop-in defines before removing it. The
role runs through ansible-playbook (local connection) with the real containerd binaries first in PATH; coco_flush
is off (no systemd here), so the check itself (verify.yml, after the restart) is not reached: the test reads the
handlers it is given.
"""

import os
import subprocess
import tomllib

from coco_play import run_present
from conftest import CONTAINERD_2
from helpers.common import make_tar

SHIM = 'opt/kata/bin/containerd-shim-kata-v2'
CONF = 'opt/kata/share/defaults/kata-containers/configuration-%s.toml'


def runtimes_run(path):
    """The CRI runtime handlers containerd 2.1 runs on the tree (its config dump)."""
    proc = subprocess.run([CONTAINERD_2, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=True)
    return sorted(tomllib.loads(proc.stdout)['plugins']['io.containerd.cri.v1.runtime']['containerd']['runtimes'])


def test_the_handlers_checked_gone_are_those_the_install_wrote(workdir, config):
    assert CONTAINERD_2, 'run make deps (containerd 2.1)'
    ctd2 = os.path.dirname(CONTAINERD_2)
    archive = os.path.join(workdir, 'kata.tar.gz')
    make_tar(archive, [(SHIM, 'file', b'#!/bin/sh\nexit 0\n', 0o755)]
             + [(CONF % s, 'file', b'[hypervisor]\n', 0o644) for s in ('qemu', 'clh', 'qemu-tdx')])
    path = config('v3_default.toml')
    reads = "'gone': coco_gone | default(none), 'placement': __coco_placement | default(none)"

    res, _out = run_present(workdir, path, ctd2, reads=reads, coco_payload_archive=archive,
                            coco_runtime_classes=['kata-qemu', 'kata-clh'])
    assert (res['failure'], res['placement']) == ('', 'dropin'), res
    assert runtimes_run(path) == ['kata-clh', 'kata-qemu', 'runc']

    # kata-clh dropped from the variable, kata-qemu-tdx added: the uninstall still expects kata-clh gone
    res, _out = run_present(workdir, path, ctd2, reads=reads, coco_state='absent',
                            coco_runtime_classes=['kata-qemu', 'kata-qemu-tdx'])
    assert res['failure'] == '', res['failure']
    assert sorted(res['gone']) == ['kata-clh', 'kata-qemu']
    assert runtimes_run(path) == ['runc']
