# -*- coding: utf-8 -*-
"""Where coco's kata payload comes from, run after run: a URL whose file name stays the same while the URL
changes (a new release at .../b/kata.tar.gz after .../a/kata.tar.gz) is downloaded and installed, while the same
URL with coco_payload_checksum is not fetched again; and check mode with a newer controller archive of the same
file name judges the new archive, not the older copy still cached on the node.

The role runs through ansible-playbook (local connection) with containerd 1.6 (/usr/bin/containerd: placement
config); coco_flush is off (no systemd here), so nothing restarts. The URLs are served by a local HTTP server.
"""

import functools
import hashlib
import http.server
import os
import threading

import pytest

from coco_play import run_present, tree
from conftest import read
from helpers.common import make_tar

SHIM = 'opt/kata/bin/containerd-shim-kata-v2'
CONF = 'opt/kata/share/defaults/kata-containers/configuration-%s.toml'


def payload(path, shim_text, shims=('qemu',)):
    """A small kata payload archive at path: the shim (its text tells payloads apart) and a configuration per shim."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    confs = [(CONF % s, 'file', b'[hypervisor.%s]\n' % s.encode(), 0o644) for s in shims]
    make_tar(path, [(SHIM, 'file', shim_text, 0o755)] + confs)
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def run(workdir, path, extra_args=(), **role):
    """The coco role once (present); its failure message ('' when it passed) and the play's output."""
    res, out = run_present(workdir, path, extra_args=extra_args, **role)
    return res['failure'], out


@pytest.fixture
def served(workdir):
    """A local HTTP server over <workdir>/www: its base URL and the paths it was asked for."""
    root = os.path.join(workdir, 'www')
    os.makedirs(root)
    asked = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            asked.append(self.path)

    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), functools.partial(Handler, directory=root))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield 'http://127.0.0.1:%d' % server.server_address[1], root, asked
    server.shutdown()
    server.server_close()


def test_a_new_url_with_the_same_file_name_is_downloaded_and_the_same_url_with_a_checksum_is_not(
        workdir, config, served):
    base, root, asked = served
    payload(os.path.join(root, 'a', 'kata.tar.gz'), b'#!/bin/sh\necho a\n')
    sha_b = payload(os.path.join(root, 'b', 'kata.tar.gz'), b'#!/bin/sh\necho b\n')
    path = config('v2_debian_stock.toml')
    shim = os.path.join(workdir, SHIM)

    assert run(workdir, path, coco_payload_archive=base + '/a/kata.tar.gz')[0] == ''
    assert read(shim) == '#!/bin/sh\necho a\n'

    # another release at another URL, same file name: fetched and installed
    assert run(workdir, path, coco_payload_archive=base + '/b/kata.tar.gz')[0] == ''
    assert asked.count('/b/kata.tar.gz') == 1, asked
    assert read(shim) == '#!/bin/sh\necho b\n'

    # the same URL again with its checksum: the cached copy matches, nothing is fetched
    del asked[:]
    failure, out = run(workdir, path, coco_payload_archive=base + '/b/kata.tar.gz', coco_payload_checksum='sha256:' + sha_b)
    assert failure == '' and asked == [], asked
    assert '\nok: [localhost]' in out.split('TASK [nodeguard.containerd.coco : Download the archive]')[1].split('TASK [')[0]
    assert read(shim) == '#!/bin/sh\necho b\n'


def test_check_mode_judges_a_newer_controller_archive_not_the_older_cached_copy(workdir, config):
    """v4/kata.tar.gz replaces v3/kata.tar.gz (same file name, so the same cached copy on the node); only v4 has
    kata-clh's configuration. Check mode does not copy, yet it must say what the real run does: install."""
    path = config('v2_debian_stock.toml')
    v3 = os.path.join(workdir, 'controller', 'v3', 'kata.tar.gz')
    v4 = os.path.join(workdir, 'controller', 'v4', 'kata.tar.gz')
    payload(v3, b'#!/bin/sh\necho 3\n')
    payload(v4, b'#!/bin/sh\necho 4\n', shims=('qemu', 'clh'))
    assert run(workdir, path, coco_payload_archive=v3)[0] == ''

    before = tree(workdir)
    failure, out = run(workdir, path, ('--check', '-v'), coco_payload_archive=v4,
                       coco_runtime_classes=['kata-qemu', 'kata-clh'])
    assert failure == ''
    cached = os.path.join(workdir, 'state', 'coco', 'payload', 'kata.tar.gz')
    assert '%s would be replaced (check mode): the whole payload would be installed' % cached in out
    assert tree(workdir) == before

    assert run(workdir, path, coco_payload_archive=v4, coco_runtime_classes=['kata-qemu', 'kata-clh'])[0] == ''
    assert read(os.path.join(workdir, SHIM)) == '#!/bin/sh\necho 4\n'
    assert os.path.isfile(os.path.join(workdir, CONF % 'clh'))
