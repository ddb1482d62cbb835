# -*- coding: utf-8 -*-
"""A config that starts with a UTF-8 byte order mark.

Measured: containerd 1.6 skips the mark and loads the file; containerd 2.1
refuses it ("invalid character at start of key: U+00EF"). So on 1.x nodeguard
edits such a file and keeps the mark, and on 2.x it refuses clearly, naming
the mark and the fix, and writes nothing.
"""

import os

import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_2, assert_containerd_accepts, fixture_text, read

BOM = b'\xef\xbb\xbf'
NVIDIA_BIN = '/usr/bin/nvidia-container-runtime'
V2_CRI = 'io.containerd.grpc.v1.cri'


def with_bom(workdir, name, text):
    folder = os.path.join(workdir, 'etc')
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, 'wb') as f:
        f.write(BOM + text.encode('utf-8'))
    return path


def path_with(env_dir):
    return {'PATH': env_dir + os.pathsep + os.environ['PATH']}


def test_1x_edits_keep_the_mark_and_round_trip(run_module, workdir):
    assert CONTAINERD_1, 'run make deps'
    path = with_bom(workdir, 'config.toml', fixture_text('v2_kubeadm.toml'))
    original = read(path, 'rb')
    assert_containerd_accepts(path, CONTAINERD_1)  # the premise: 1.x loads it
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed']
    data = read(path, 'rb')
    assert data.startswith(BOM) and not data[3:].startswith(BOM)
    runtimes = tomlkit.parse(data[3:].decode())['plugins'][V2_CRI]['containerd']['runtimes']
    assert runtimes['nvidia']['options']['BinaryName'] == NVIDIA_BIN
    assert_containerd_accepts(path, CONTAINERD_1)
    assert not run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
                          options={'BinaryName': NVIDIA_BIN})['changed']
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', state='absent')
    assert read(path, 'rb') == original


def test_2x_refuses_with_the_mark_named_and_writes_nothing(run_module, workdir):
    assert CONTAINERD_2, 'run make deps'
    path = with_bom(workdir, 'config.toml', fixture_text('v3_default.toml'))
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu',
                     env=path_with(os.path.dirname(CONTAINERD_2)), expect_fail=True)
    msg = res['msg']
    assert path in msg and 'byte order mark' in msg and 'containerd 2.1' in msg
    assert "sed -i '1s/^\\xEF\\xBB\\xBF//'" in msg and 'Nothing was written' in msg
    assert read(path, 'rb') == original
    assert sorted(os.listdir(os.path.dirname(path))) == ['.config.toml.nodeguard.lock', 'config.toml']


def test_version_3_file_with_a_mark_on_a_1x_node_is_refused_for_its_version(run_module, workdir, tmp_path):
    """containerd 1.6 (found in /usr/bin even when PATH lacks it) cannot read version 3 at all."""
    path = with_bom(workdir, 'config.toml', 'version = 3\n')
    empty = tmp_path / 'bin'
    empty.mkdir()
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu',
                     validate='none', containerd_bin='/usr/bin/containerd', env={'PATH': str(empty)},
                     expect_fail=True)
    assert 'version = 3' in res['msg'] and 'containerd is 1.6' in res['msg'] and path in res['msg']
    assert read(path, 'rb') == BOM + b'version = 3\n'


def test_2x_names_an_imported_file_with_a_mark(run_module, workdir):
    assert CONTAINERD_2, 'run make deps'
    drop = with_bom(workdir, 'drop.toml', 'version = 3\n')
    path = with_bom(workdir, 'config.toml', 'version = 3\n')
    with open(path, 'wb') as f:
        f.write(b'version = 3\n')
    res = run_module('containerd_imports', path=path, imports=[drop], owner='coco',
                     env=path_with(os.path.dirname(CONTAINERD_2)), expect_fail=True)
    assert drop in res['msg'] and 'byte order mark' in res['msg'] and 'imported by' in res['msg']
    assert read(path, 'rb') == b'version = 3\n'


def test_1x_imports_a_file_with_a_mark(run_module, workdir):
    assert CONTAINERD_1, 'run make deps'
    drop = with_bom(workdir, 'drop.toml', 'version = 2\n')
    path = os.path.join(workdir, 'etc', 'config.toml')
    with open(path, 'w') as f:
        f.write(fixture_text('v2_kubeadm.toml'))
    res = run_module('containerd_imports', path=path, imports=[drop], owner='coco')
    assert res['changed']
    assert_containerd_accepts(path, CONTAINERD_1)


def test_1x_snapshot_check_repair_restore_of_a_file_with_a_mark(run_module, workdir):
    """The roles take a baseline first: containerd_baseline must read such a file too, and give its bytes back."""
    assert CONTAINERD_1, 'run make deps'
    path = with_bom(workdir, 'config.toml', fixture_text('v2_kubeadm.toml'))
    original = read(path, 'rb')
    base = dict(path=path, store=os.path.join(workdir, 'baselines'))
    assert run_module('containerd_baseline', state='snapshot', **base)['changed']
    # runc's SystemdCgroup flipped by hand: check names it, repair puts it back, keeping the mark
    with open(path, 'wb') as f:
        f.write(original.replace(b'SystemdCgroup = true', b'SystemdCgroup = false', 1))
    failed = run_module('containerd_baseline', state='check', expect_fail=True, **base)
    assert 'runtimes.runc' in failed['msg'] and 'drifted' in failed['msg']
    run_module('containerd_baseline', state='repair', **base)
    assert read(path, 'rb') == original
    # restore gives the bytes back after a runtime was added
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', options={'BinaryName': NVIDIA_BIN})
    assert run_module('containerd_baseline', state='restore', **base)['changed']
    assert read(path, 'rb') == original
