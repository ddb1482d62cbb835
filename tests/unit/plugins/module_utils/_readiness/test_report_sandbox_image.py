# -*- coding: utf-8 -*-
"""The node's sandbox image and registry hosts folder, as the readiness report reads them from a real
``containerd config dump`` (sandbox_image of config version 2 on containerd 1.6, pinned_images.sandbox of
version 3 on containerd 2.x), and the probe image chosen from them."""

import subprocess

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import report as rep
from helpers.common import CONTAINERD_1, CONTAINERD_2
from helpers.context import FakeContext
from helpers.report_node import Node

V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "%s"\n'
      '[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "%s"\n')
V3 = ('version = 3\n[plugins."io.containerd.cri.v1.images".pinned_images]\n  sandbox = "%s"\n'
      '[plugins."io.containerd.cri.v1.images".registry]\n  config_path = "%s"\n')
BINARIES = {2: (CONTAINERD_1, (1, 6)), 3: (CONTAINERD_2, (2, 1))}


def real_context(version):
    """A context whose commands run: config dump is the real containerd's for that config version."""
    binary, known = BINARIES[version]
    if binary is None:
        pytest.fail('no containerd binary for config version %d: run `make deps`' % version)

    def run(cmd):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    return FakeContext(containerd_bin=binary, containerd_version=known, answer=run, module=None)


def config(tmp_path, version, sandbox, hosts):
    path = tmp_path / 'config.toml'
    path.write_text((V2 if version == 2 else V3) % (sandbox, hosts))
    return str(path)


@pytest.mark.parametrize('version', [2, 3])
def test_the_sandbox_image_and_the_first_hosts_folder_come_from_the_dump(tmp_path, version):
    path = config(tmp_path, version, 'example.org/pause:9', '/etc/containerd/certs.d:/etc/docker/certs.d')
    info = rep.read_config(real_context(version), dict(path=path, address=None))
    assert info['dump_rc'] == 0 and info['effective_version'] == version
    assert (info['sandbox_image'], info['hosts_dir']) == ('example.org/pause:9', '/etc/containerd/certs.d')


@pytest.mark.parametrize('version', [2, 3])
def test_a_dump_that_names_neither_gives_none_for_both(tmp_path, version):
    info = rep.read_config(real_context(version), dict(path=config(tmp_path, version, '', ''), address=None))
    assert info['dump_rc'] == 0
    assert (info['sandbox_image'], info['hosts_dir']) == (None, None)


@pytest.mark.parametrize('version', [2, 3])
def test_the_sandbox_image_is_probed_when_no_image_is_given(monkeypatch, tmp_path, version):
    node = Node(monkeypatch, tmp_path)
    config(tmp_path, version, 'example.org/pause:9', '/etc/containerd/certs.d')
    report = node.report(ctx=real_context(version), probe_image=None)
    assert report['containerd']['sandbox_image'] == 'example.org/pause:9'
    assert report['probe_image']['image'] == 'example.org/pause:9'
    assert report['probe_image']['source'] == 'sandbox image of the effective config'
    (opts, _archive), _kw = node.calls['probe_image'][-1]
    assert opts['probe_image'] == 'example.org/pause:9' and opts['hosts_dir'] == '/etc/containerd/certs.d'


def test_an_image_given_is_probed_instead_and_said_so(monkeypatch, tmp_path):
    node = Node(monkeypatch, tmp_path)
    config(tmp_path, 2, 'example.org/pause:9', '')
    report = node.report(ctx=real_context(2), probe_image='example.org/probe:1')
    assert report['containerd']['sandbox_image'] == 'example.org/pause:9'
    assert (report['probe_image']['image'], report['probe_image']['source']) == ('example.org/probe:1', 'probe_image')


def test_without_a_sandbox_image_nor_an_image_given_the_probe_fails_and_says_what_to_set(monkeypatch, tmp_path):
    node = Node(monkeypatch, tmp_path)
    config(tmp_path, 2, '', '')
    report = node.report(ctx=real_context(2), probe_image=None)
    check, = [c for c in report['checks'] if c['name'] == 'probe:runc']
    assert check == dict(name='probe:runc', status='fail', required=True,
                         reason='no probe image: the effective config names no sandbox image (config dump has none) '
                                "and no image was given; set node_readiness_probe_image or the handler's image")
    assert report['probe_image']['image'] is None and 'probe_image' not in node.calls
