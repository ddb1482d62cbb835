# -*- coding: utf-8 -*-
"""Short plugin ids (plugins.cri, disabled_plugins = ["cri"]) against the real binaries: _validate.check_tree
refuses a config exactly when containerd 1.6, 1.7 and 2.1's own `config dump` refuse it, and names the file,
the key and the fix.

Measured: 1.x wants every plugins.<id> of a file it reads as version 2 (the main file, an import without a
version or with version 2) in full (io.containerd.<type>.<version>, "invalid plugin key URI"); an import that
says version = 1 may use short ids. 2.x keeps an unknown short id as a table of its own. disabled_plugins and
required_plugins entries are checked on every containerd ("invalid disabled plugin URI"), and what a full id
is differs: 1.6 takes any four dotted parts, 1.7 only io.containerd.<type>.<version>..., 2.x any id with a dot.
"""

import os
import subprocess

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree

BINARIES = {(1, 6): CONTAINERD_1, (1, 7): CONTAINERD_17, (2, 1): CONTAINERD_2}
NVIDIA = '.containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n'

CASES = [
    # (name, main file, the import or None)
    ('main-v2-plugins-cri', 'version = 2\n[plugins.cri.containerd]\n  snapshotter = "native"\n', None),
    ('main-v2-disabled-cri', 'version = 2\ndisabled_plugins = ["cri"]\n', None),
    ('main-v2-required-cri', 'version = 2\nrequired_plugins = ["cri"]\n', None),
    ('main-v3-plugins-cri', 'version = 3\n[plugins.cri]\n  x = 1\n', None),
    ('main-v3-disabled-cri', 'version = 3\ndisabled_plugins = ["cri"]\n', None),
    ('main-v2-full-ids', 'version = 2\ndisabled_plugins = ["io.containerd.snapshotter.v1.btrfs"]\n'
                         '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "native"\n', None),
    ('import-versionless-plugins-cri', None, '[plugins.cri' + NVIDIA),
    ('import-v2-plugins-cri', None, 'version = 2\n[plugins.cri' + NVIDIA),
    ('import-v1-plugins-cri', None, 'version = 1\n[plugins.cri' + NVIDIA),
    ('import-versionless-full-id', None, '[plugins."io.containerd.grpc.v1.cri"' + NVIDIA),
    ('import-v2-disabled-cri', None, 'version = 2\ndisabled_plugins = ["cri"]\n'),
    ('import-versionless-disabled-cri', None, 'disabled_plugins = ["cri"]\n'),
]


def write_case(folder, main, imported):
    main_path = os.path.join(folder, 'config.toml')
    if imported is not None:
        drop = os.path.join(folder, 'conf.d', 'x.toml')
        os.makedirs(os.path.dirname(drop))
        with open(drop, 'w') as f:
            f.write(imported)
        main = 'version = 2\nimports = ["%s"]\n' % drop
    with open(main_path, 'w') as f:
        f.write(main)
    return main_path, main


def id_errors(errors):
    return [e for e in errors if 'plugin id' in e]


@pytest.mark.parametrize('name, main, imported', CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize('version', sorted(BINARIES), ids=lambda v: '%d.%d' % v)
def test_check_tree_refuses_short_plugin_ids_as_the_binary_does(tmp_path, name, main, imported, version):
    binary = BINARIES[version]
    if binary is None:
        pytest.fail('no containerd %d.%d binary: run `make deps`' % version)
    main_path, text = write_case(str(tmp_path), main, imported)
    if version < (2, 0) and text.startswith('version = 3'):
        return  # 1.x does not read version 3 at all: refused when the file is read (test_validate_parts)
    dump = subprocess.run([binary, '--config', main_path, 'config', 'dump'], capture_output=True, text=True,
                          check=False)
    refused = dump.returncode != 0 and 'plugin' in dump.stderr and 'URI' in dump.stderr
    assert refused or dump.returncode == 0, dump.stderr
    errors = id_errors(check_tree(main_path, parse_toml(text), version))
    assert bool(errors) == refused, (errors, dump.stderr)
    for error in errors:
        # the file, the key, what containerd does and the fix
        assert error.startswith(main_path if imported is None else os.path.join(str(tmp_path), 'conf.d', 'x.toml'))
        assert '"cri"' in error and 'refuses the whole config' in error
        assert 'Fix: ' in error and 'io.containerd.grpc.v1.cri' in error


def test_the_messages_name_the_kind_of_key_and_the_containerd():
    errors = check_tree('/etc/containerd/config.toml',
                        {'version': 2, 'disabled_plugins': ['cri', 'io.containerd.snapshotter.v1.btrfs'],
                         'plugins': {'cri': {}, 'io.containerd.grpc.v1.cri': {}}}, (1, 7))
    assert id_errors(errors) == [
        '/etc/containerd/config.toml: disabled_plugins names "cri", not a full plugin id: containerd 1.7 refuses '
        'the whole config ("invalid disabled plugin URI"). Fix: name it in full, "io.containerd.grpc.v1.cri" '
        '(`containerd config default` lists the ids).',
        '/etc/containerd/config.toml: plugins."cri" is not a full plugin id: containerd 1.7 refuses the whole '
        'config ("invalid plugin key URI") of a file it reads as version 2. Fix: write plugins.'
        '"io.containerd.grpc.v1.cri" (`containerd config default` lists the ids).']
    # a short id containerd does not know gets the general fix; 2.x keeps an unknown plugins table
    errors = check_tree('/etc/containerd/config.toml', {'version': 2, 'required_plugins': ['nydus'],
                                                        'plugins': {'nydus': {}}}, (2, 1))
    assert id_errors(errors) == [
        '/etc/containerd/config.toml: required_plugins names "nydus", not a full plugin id: containerd 2.1 '
        'refuses the whole config ("invalid required plugin URI"). Fix: name it in full, '
        '"io.containerd.<type>.<version>.nydus" (`containerd config default` lists the ids).']


def test_without_a_binary_a_version_2_file_is_judged_as_1x_reads_it_and_odd_values_are_left_alone():
    """No containerd binary (containerd_version unknown): a version 2 file may be read by 1.x, so its short
    plugins ids are refused as 1.x refuses them; a disabled_plugins that is not a list, or an entry that is no
    string, is not this rule's to judge."""
    errors = check_tree('/etc/containerd/config.toml', {'version': 2, 'plugins': {'cri': {}},
                                                        'disabled_plugins': 'cri', 'required_plugins': [7]}, None)
    assert id_errors(errors) == [
        '/etc/containerd/config.toml: plugins."cri" is not a full plugin id: containerd 1.x refuses the whole '
        'config ("invalid plugin key URI") of a file it reads as version 2. Fix: write plugins.'
        '"io.containerd.grpc.v1.cri" (`containerd config default` lists the ids).']


def dump_refuses(binary, path):
    """Whether containerd's own `config dump` refuses the file for a plugin id ("invalid ... URI")."""
    dump = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True, check=False)
    assert dump.returncode == 0 or 'URI' in dump.stderr, dump.stderr
    return dump.returncode != 0


@pytest.mark.parametrize('version', sorted(BINARIES), ids=lambda v: '%d.%d' % v)
def test_four_dotted_parts_are_a_full_plugin_id_as_for_the_binary(tmp_path, version):
    """io.containerd.<type>.<version> with no name is the shortest id containerd takes (1.x splits the id in at
    most four parts and wants four); every containerd takes it, in disabled_plugins and as a plugins table."""
    binary = BINARIES[version]
    if binary is None:
        pytest.fail('no containerd %d.%d binary: run `make deps`' % version)
    text = 'version = 2\ndisabled_plugins = ["io.containerd.nydus.v1"]\n[plugins."io.containerd.nydus.v1"]\n  x = 1\n'
    main_path, text = write_case(str(tmp_path), text, None)
    assert not dump_refuses(binary, main_path)
    assert check_tree(main_path, parse_toml(text), version) == []


@pytest.mark.parametrize('version', [(1, 6), (1, 7)], ids=lambda v: '%d.%d' % v)
def test_three_dotted_parts_are_refused_on_1x_as_the_binary_refuses_them(tmp_path, version):
    binary = BINARIES[version]
    if binary is None:
        pytest.fail('no containerd %d.%d binary: run `make deps`' % version)
    text = 'version = 2\ndisabled_plugins = ["io.containerd.nydus"]\n'
    main_path, text = write_case(str(tmp_path), text, None)
    assert dump_refuses(binary, main_path)
    (error,) = id_errors(check_tree(main_path, parse_toml(text), version))
    assert error.startswith('%s: disabled_plugins names "io.containerd.nydus", not a full plugin id' % main_path)


DOTTED_CASES = [
    # (name, main file): ids that are full to one binary and not to another
    ('disabled-two-parts', 'disabled_plugins = ["a.b"]\n'),
    ('disabled-three-parts', 'disabled_plugins = ["io.containerd.x"]\n'),
    ('disabled-four-parts-foreign', 'disabled_plugins = ["foo.bar.baz.qux"]\n'),
    ('required-four-parts-foreign', 'required_plugins = ["foo.bar.baz.qux"]\n'),
    ('plugins-four-parts-foreign', '[plugins."foo.bar.baz.qux"]\n  x = 1\n'),
    ('plugins-three-parts', '[plugins."io.containerd.x"]\n  x = 1\n'),
]


@pytest.mark.parametrize('name, body', DOTTED_CASES, ids=[c[0] for c in DOTTED_CASES])
@pytest.mark.parametrize('version', sorted(BINARIES), ids=lambda v: '%d.%d' % v)
def test_what_a_full_plugin_id_is_follows_each_binary(tmp_path, name, body, version):
    """2.x takes a.b in disabled_plugins, 1.7 refuses foo.bar.baz.qux that 1.6 takes: the check says what
    the node's own binary says, neither refusing a config it runs nor passing one it refuses."""
    binary = BINARIES[version]
    if binary is None:
        pytest.fail('no containerd %d.%d binary: run `make deps`' % version)
    text = 'version = %d\n%s' % (3 if version >= (2, 0) else 2, body)
    main_path = os.path.join(str(tmp_path), 'config.toml')
    with open(main_path, 'w') as f:
        f.write(text)
    dump = subprocess.run([binary, '--config', main_path, 'config', 'dump'], capture_output=True, text=True,
                          check=False)
    refused = dump.returncode != 0 and 'URI' in dump.stderr
    assert refused or dump.returncode == 0, dump.stderr
    errors = id_errors(check_tree(main_path, parse_toml(text), version))
    assert bool(errors) == refused, (name, errors, dump.stderr)
    for error in errors:
        assert error.startswith(main_path) and 'refuses the whole config' in error and 'Fix: ' in error
