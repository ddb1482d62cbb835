# -*- coding: utf-8 -*-
"""version = 0 is what a file with no version line decodes to: containerd reads it as version 1, and so does
nodeguard, in config.toml (refused with the fix) and in a drop-in (merged, or refused, as containerd does)."""

import subprocess

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2
from helpers.engine import setting
from helpers.trees import effective_view, write_tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    ConfigError,
    detect_version,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree, file_version

BINARIES = {(1, 6, 20): CONTAINERD_1, (1, 7, 24): CONTAINERD_17, (2, 1, 9): CONTAINERD_2}

MAIN_V2 = '''version = 2
imports = ["{d}"]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
'''

# version 1's short CRI id in a drop-in: 1.x refuses the whole config, 2.x ignores the table
SHORT_ID_DROPIN = '''%s[plugins.cri.containerd]
  snapshotter = "native"
'''

FULL_ID_DROPIN = '''%s[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "native"
'''


def dump(binary, path):
    proc = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_version_0_reads_as_no_version_line():
    assert file_version({'version': 0}) == 1
    assert file_version({}) == 1
    assert file_version({'version': 2}) == 2


def test_a_drop_in_with_version_0_takes_the_layout_of_config_toml():
    assert detect_version('/etc/containerd/conf.d/gpu.toml', {'version': 0}, default_version=2) == 2
    assert detect_version('/etc/containerd/conf.d/gpu.toml', {'version': 0}, default_version=3) == 3
    # an explicit version 1 stays refused, drop-in or not
    with pytest.raises(ConfigError):
        detect_version('/etc/containerd/conf.d/gpu.toml', {'version': 1}, default_version=2)


def test_a_config_toml_with_version_0_is_refused_as_version_1_with_the_fix():
    with pytest.raises(ConfigError) as err:
        detect_version('/etc/containerd/config.toml', {'version': 0})
    msg = str(err.value)
    assert msg.startswith('/etc/containerd/config.toml declares version = 0, which containerd reads as version 1 '
                          '(legacy layout, plugins.cri).'), msg
    assert 'Fix: migrate the file to version 2' in msg
    assert err.value.given_details() == dict(key='version', found=0)


@pytest.mark.parametrize('ver', sorted(BINARIES))
@pytest.mark.parametrize('header', ['', 'version = 0\n'])
def test_a_drop_in_with_version_0_is_judged_as_one_with_no_version_line(tmp_path, ver, header):
    binary = BINARIES[ver]
    assert binary, 'run make deps (containerd 1.6, 1.7 and 2.1)'
    path, _paths = write_tree(tmp_path, MAIN_V2, d=SHORT_ID_DROPIN % header)
    rc, out = dump(binary, path)
    errors = check_tree(path, effective_view(path, ver).files[0][1], ver)
    if ver[0] == 1:
        # containerd 1.x: 'invalid plugin key URI "cri"', and nodeguard says so before any write
        assert rc != 0 and 'invalid plugin key URI "cri"' in out, out
        assert len(errors) == 1 and 'plugins."cri" is not a full plugin id' in errors[0], errors
    else:
        assert rc == 0 and 'snapshotter = \'native\'' not in out, out
        assert errors == []


@pytest.mark.parametrize('ver', [(1, 6, 20), (1, 7, 24)])
def test_1x_merges_a_version_0_drop_in_with_the_full_cri_id_as_config_dump_shows(tmp_path, ver):
    binary = BINARIES[ver]
    assert binary, 'run make deps (containerd 1.6 and 1.7)'
    path, _paths = write_tree(tmp_path, MAIN_V2, d=FULL_ID_DROPIN % 'version = 0\n')
    rc, out = dump(binary, path)
    assert rc == 0 and '      snapshotter = "native"' in out, out
    view = effective_view(path, ver)
    assert view.value(('plugins', CRI_V2, 'containerd', 'snapshotter')) == 'native'
    assert view.ignored == [] and view.unread == {}


@pytest.mark.parametrize('ver', [(1, 6, 20), (1, 7, 24)])
def test_a_setting_is_made_in_a_version_0_drop_in_as_in_one_without_a_version_line(tmp_path, capsys, ver):
    binary = BINARIES[ver]
    assert binary, 'run make deps (containerd 1.6 and 1.7)'
    path, paths = write_tree(tmp_path, MAIN_V2, d=FULL_ID_DROPIN % 'version = 0\n')
    node = dict(path=path, state=str(tmp_path / 'state'), tmp=str(tmp_path))
    res = setting(node, capsys, containerd_bin=binary, edit_in=paths['d'], settings=[
        dict(key='plugins."io.containerd.grpc.v1.cri".containerd.snapshotter', value='overlayfs', raw=True)])
    assert res.get('changed') is True and not res.get('failed'), res
    assert res['file'] == paths['d']
    with open(paths['d']) as f:
        assert f.read() == FULL_ID_DROPIN.replace('"native"', '"overlayfs"') % 'version = 0\n'
    rc, out = dump(binary, path)
    assert rc == 0 and '      snapshotter = "overlayfs"' in out, out
