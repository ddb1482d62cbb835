# -*- coding: utf-8 -*-
"""A config.toml that imports itself (NVIDIA's v1.17.8 installer writes `imports = ["/etc/containerd/config.toml"]`
at its top): the candidate is judged as containerd will read it, with the self-import naming the candidate, on the
real containerd 1.6, 1.7 and 2.1. Before, every runtime add was refused: the temporary candidate imported the live
file, whose CRI table (1.x replaces a plugin table from an import) hid the new runtime."""

import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, fixture_text, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree, self_imports

SETUP = 'nvidia-ctk/ctk-v1.17.8-installer-c16-systemd-default.after-setup.config.toml'
CLEANUP = 'nvidia-ctk/ctk-v1.17.8-installer-c16-systemd-default.after-cleanup.config.toml'
V3_SELF = fixture_text('nvidia-ctk/inputs/c2-systemd.toml').replace('imports = []', 'imports = ["%s"]', 1)


def _self_importing(config, name, text=None):
    """The toolkit's file at the test's own path, importing that path as on the node."""
    text = text if text is not None else fixture_text(name)
    path = config('placeholder = 1\n')
    with open(path, 'w') as f:
        f.write(text.replace('"/etc/containerd/config.toml"', '"%s"' % path).replace('"%s"', '"%s"' % path))
    return path


def _runtimes(dump_text, version):
    data = parse_toml(dump_text)
    plugin = 'io.containerd.grpc.v1.cri' if version == 2 else 'io.containerd.cri.v1.runtime'
    return data['plugins'][plugin]['containerd']['runtimes']


@pytest.mark.parametrize('which', ['host', '1.7'])
@pytest.mark.parametrize('fixture', [SETUP, CLEANUP])
def test_a_runtime_is_added_to_a_file_that_imports_itself_v2(run_module, config, which, fixture):
    binary = binary_of(which)
    path = _self_importing(config, fixture)
    before = read(path)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration.toml'},
                     containerd_bin=binary)
    assert res['changed'], res
    assert res['validated'] == 'config dump', res
    assert all(e['in_effect'] for e in res['effects']), res['effects']
    runtimes = _runtimes(assert_containerd_accepts(path, binary), 2)
    assert runtimes['kata']['runtime_type'] == 'io.containerd.kata.v2'
    assert runtimes['runc']['options']['SystemdCgroup'] is True
    again = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                       options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration.toml'},
                       containerd_bin=binary)
    assert not again['changed'], again
    run_module('containerd_runtime', path=path, name='kata', state='absent', containerd_bin=binary)
    assert read(path) == before


def test_a_runtime_is_added_to_a_file_that_imports_itself_v3(run_module, config):
    binary = binary_of('2')
    path = _self_importing(config, None, V3_SELF)
    before = read(path)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     containerd_bin=binary)
    assert res['changed'] and all(e['in_effect'] for e in res['effects']), res
    assert _runtimes(assert_containerd_accepts(path, binary), 3)['kata']['runtime_type'] == 'io.containerd.kata.v2'
    run_module('containerd_runtime', path=path, name='kata', state='absent', containerd_bin=binary)
    assert read(path) == before


@pytest.mark.parametrize('which', ['host', '1.7'])
def test_the_load_test_starts_the_candidate_of_a_file_that_imports_itself(run_module, config, which):
    """validate: load starts the real daemon on the candidate: its self-import reads the candidate too."""
    binary = binary_of(which)
    path = _self_importing(config, CLEANUP)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     containerd_bin=binary, validate='load')
    assert res['changed'] and res['validated'] == 'config dump', res
    assert 'kata' in _runtimes(assert_containerd_accepts(path, binary), 2)


def test_a_self_import_is_named_in_a_warning_not_refused(config, tmp_path):
    path = _self_importing(config, SETUP)
    data = parse_toml(read(path))
    assert self_imports(path, data) == [path]
    assert check_tree(path, data, (1, 6)) == []
    other = tmp_path / 'config.toml'
    other.write_text('version = 2\n')
    assert self_imports(str(other), parse_toml('version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n')) == []
    assert self_imports(str(other), parse_toml('version = 2\nimports = ["config.toml"]\n')) == [str(other)]


def test_a_runtime_add_warns_of_the_self_import(run_module, config):
    path = _self_importing(config, SETUP)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     containerd_bin=binary_of('host'))
    assert any('imports itself' in w and path in w for w in res['warnings']), res['warnings']


@pytest.mark.parametrize('which', ['host', '1.7'])
def test_a_drop_in_that_imports_config_toml_is_checked_with_the_candidates(run_module, config, which):
    """The edit goes to the drop-in that holds the CRI table (1.x): its import of config.toml (loaded already in
    place) must not read the live files at the candidate's check."""
    binary = binary_of(which)
    whole = fixture_text('nvidia-ctk/inputs/c16-systemd.toml')
    path = config(whole)
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    with open(path, 'w') as f:
        f.write(whole.replace('imports = []', 'imports = ["%s/*.toml"]' % folder, 1))
    os.makedirs(folder)
    dropin = os.path.join(folder, '50-cri.toml')
    with open(dropin, 'w') as f:
        f.write(whole.replace('imports = []', 'imports = ["%s", "%s"]' % (path, dropin), 1))
    before = read(dropin)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     containerd_bin=binary)
    assert res['changed'] and res['file'] == dropin and all(e['in_effect'] for e in res['effects']), res
    assert any('imports itself' in w and dropin in w for w in res['warnings']), res['warnings']
    assert 'kata' in _runtimes(assert_containerd_accepts(path, binary), 2)
    run_module('containerd_runtime', path=path, name='kata', state='absent', containerd_bin=binary)
    assert read(dropin) == before


def test_containerd_info_names_a_file_that_imports_itself(run_module, config):
    path = _self_importing(config, CLEANUP)
    res = run_module('containerd_info', path=path, containerd_bin=binary_of('host'))
    assert res['imports']['self_imports'] == [path]
    assert len(res['imports']['warnings']) == 1 and path in res['imports']['warnings'][0]
    assert res['imports']['problems'] == [] and res['dump_confirmed'] is True, res
