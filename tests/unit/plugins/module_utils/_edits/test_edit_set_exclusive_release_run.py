# -*- coding: utf-8 -*-
"""exclusive's release run in this process by containerd_config on a containerd 2.1 tree (real containerd
validates each write): an import that is the only thing left unnamed is released, a runtime another
owner made the CRI default is refused, not removed, and on containerd 1.x the release's write gets the same
check as any other that an import does not replace a plugin table of config.toml.

tests/module/test_containerd_config_exclusive.py runs whole calls in a module process.
"""

from helpers.common import CONTAINERD_1, fixture_text
from helpers.engine import make_node, setting
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_config

NVIDIA = dict(name='nvidia', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})


def config(node, capsys, **args):
    return setting(node, capsys, module=containerd_config, **args)


def gpu_dropin(node):
    path = node['dropin'].replace('10-site.toml', '20-gpu.toml')
    with open(path, 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.images']\n  discard_unpacked_layers = true\n")
    return path


def read(path):
    with open(path) as f:
        return f.read()


def test_an_import_left_unnamed_is_released_when_nothing_else_is(tmp_path, capsys):
    node = make_node(tmp_path)
    dropin = gpu_dropin(node)
    first = config(node, capsys, owner='gpu', imports=[dropin], runtimes=[NVIDIA])
    assert first['changed'] and dropin in read(node['path']), first
    done = config(node, capsys, owner='gpu', exclusive=True, runtimes=[NVIDIA])
    assert done['changed'] and not done.get('failed'), done
    assert done['released']['imports'] == [dropin] and done['released']['runtimes'] == []
    assert dropin not in read(node['path']) and 'nvidia' in read(node['path'])
    again = config(node, capsys, owner='gpu', exclusive=True, runtimes=[NVIDIA])
    assert not again['changed'] and again['released']['imports'] == []


def single_file_node(tmp_path):
    """config.toml (2.1's default) alone: the default runtime is a key of the file the runtimes are in."""
    (tmp_path / 'etc').mkdir()
    path = tmp_path / 'etc' / 'config.toml'
    path.write_text(fixture_text('v3_default.toml'))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def test_a_runtime_another_owner_made_the_default_is_refused_not_removed(tmp_path, capsys):
    node = single_file_node(tmp_path)
    assert config(node, capsys, owner='gpu', runtimes=[NVIDIA])['changed']
    made_default = config(node, capsys, owner='ops', runtimes=[dict(name='nvidia', default=True)])
    assert made_default['changed'] and made_default['default_runtime_name'] == 'nvidia', made_default
    before = read(node['path'])
    refused = config(node, capsys, owner='gpu', exclusive=True, runtimes=[])
    assert refused['failed'], refused
    assert 'nvidia is the default runtime (default_runtime_name, set by ops)' in refused['msg']
    assert read(node['path']) == before


SITE = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '  runtime_type = "io.containerd.runc.v2"\n')


def test_on_1_x_the_release_is_refused_when_an_import_replaces_the_cri_table(tmp_path, capsys):
    """site.toml, imported by hand after gpu's install, replaces config.toml's CRI table whole on 1.x: the
    release's write of config.toml is refused as any write would be (containerd_config allows no override)."""
    assert CONTAINERD_1, 'containerd 1.x is needed (make deps)'
    node = single_file_node(tmp_path)
    path = tmp_path / 'etc' / 'config.toml'
    path.write_text(fixture_text('v2_flat.toml'))
    assert config(node, capsys, owner='gpu', containerd_bin=CONTAINERD_1, runtimes=[NVIDIA])['changed']
    site = tmp_path / 'etc' / 'site.toml'
    site.write_text(SITE)
    path.write_text(path.read_text().replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % site, 1))
    before = path.read_text()
    refused = config(node, capsys, owner='gpu', containerd_bin=CONTAINERD_1, exclusive=True, runtimes=[])
    assert refused['failed'], refused
    assert 'site.toml defines plugins."io.containerd.grpc.v1.cri"' in refused['msg']
    assert 'runtimes.runc.options.SystemdCgroup would be lost' in refused['msg']
    assert path.read_text() == before and 'nvidia' in before
