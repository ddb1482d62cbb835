# -*- coding: utf-8 -*-
"""containerd 1.6 has no CDI: enable_cdi and cdi_spec_dirs are accepted and dropped (measured with the real 1.6
config dump), so a setting of them is never reported done on 1.6, wherever it is written: config.toml or a
drop-in that already says so. containerd 1.7 runs them (the control)."""

import os

import pytest

from helpers.common import binary_of, fixture_text, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective


def _tree(config, cdi_in_dropin=True):
    """config.toml (kubeadm-like) importing a drop-in with the whole CRI table, as 1.x needs, and enable_cdi."""
    whole = fixture_text('nvidia-ctk/inputs/c16-systemd.toml')
    path = config(whole)
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    os.makedirs(folder)
    dropin = os.path.join(folder, '50-cdi.toml')
    text = whole.replace('imports = []', 'imports = ["%s"]' % dropin, 1)
    with open(path, 'w') as f:
        f.write(text)
    body = whole.replace('imports = []\n', '')
    if cdi_in_dropin:
        body = body.replace('[plugins."io.containerd.grpc.v1.cri"]\n', '[plugins."io.containerd.grpc.v1.cri"]\n'
                            '    enable_cdi = true\n    cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n', 1)
        assert 'enable_cdi = true' in body
    with open(dropin, 'w') as f:
        f.write(body)
    return path, dropin


@pytest.mark.parametrize('key, value', [('cri.enable_cdi', True), ('cri.cdi_spec_dirs', ['/etc/cdi', '/var/run/cdi'])])
def test_a_cdi_key_a_drop_in_sets_is_not_reported_ok_on_1_6(run_module, config, key, value):
    path, dropin = _tree(config)
    before = (read(path), read(dropin))
    res = run_module('containerd_setting', path=path, key=key, value=value, containerd_bin=binary_of('host'),
                     expect_fail=True)
    assert 'has no CDI' in res['msg'] and dropin in res['msg'], res['msg']
    assert (read(path), read(dropin)) == before


def test_a_cdi_key_in_config_toml_is_refused_on_1_6_with_the_reason(run_module, config):
    path = config(fixture_text('nvidia-ctk/inputs/c16-systemd.toml'))
    before = read(path)
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True,
                     containerd_bin=binary_of('host'), expect_fail=True)
    assert 'has no CDI' in res['msg'] and path in res['msg'], res['msg']
    assert read(path) == before


def test_the_same_tree_on_1_7_is_ok(run_module, config):
    path, dropin = _tree(config)
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True,
                     containerd_bin=binary_of('1.7'))
    assert not res['changed'] and res['file'] == dropin, res


def test_the_merged_view_of_1_6_has_no_cdi_keys(config):
    path, dropin = _tree(config)
    view = load_effective(path, parse_toml(read(path)), (1, 6))
    assert view.value(('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi')) is None
    assert view.unread[(dropin, ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi'))].startswith(
        'containerd 1.6 has no CDI')
    assert load_effective(path, parse_toml(read(path)), (1, 7)).value(
        ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi')) is True
