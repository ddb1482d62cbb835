# -*- coding: utf-8 -*-
"""containerd 1.6 and 1.7: a drop-in with no version line that defines a CRI runtime replaces config.toml's whole
CRI table (measured with the real config dump), so config.toml's runc is not run. containerd_runtime name=runc
default=true must not call that ok: it writes runc where containerd reads it, in that drop-in."""

import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, fixture_text, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml

KATA = """[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
CTD = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')


def _tree(config):
    whole = fixture_text('nvidia-ctk/inputs/c16-systemd.toml')
    path = config(whole)
    dropin = os.path.join(os.path.dirname(path), 'conf.d', '50-kata.toml')
    os.makedirs(os.path.dirname(dropin))
    with open(path, 'w') as f:
        f.write(whole.replace('imports = []', 'imports = ["%s"]' % dropin, 1))
    with open(dropin, 'w') as f:
        f.write(KATA)
    return path, dropin


def _containerd_table(path, binary):
    data = parse_toml(assert_containerd_accepts(path, binary))
    for key in CTD:
        data = data[key]
    return data


@pytest.mark.parametrize('which', ['host', '1.7'])
def test_runc_default_is_written_where_containerd_reads_it(run_module, config, which):
    binary = binary_of(which)
    path, dropin = _tree(config)
    main_before = read(path)
    assert 'runc' not in _containerd_table(path, binary)['runtimes']  # what containerd runs before
    res = run_module('containerd_runtime', path=path, name='runc', default=True, containerd_bin=binary)
    assert res['changed'] and res['file'] == dropin, res
    assert all(e['in_effect'] for e in res['effects']), res['effects']
    table = _containerd_table(path, binary)
    assert 'runc' in table['runtimes'] and table['default_runtime_name'] == 'runc'
    assert read(path) == main_before
    again = run_module('containerd_runtime', path=path, name='runc', default=True, containerd_bin=binary)
    assert not again['changed'], again
    # runc stays: it is the default runtime, which the drop-in named before nodeguard came
    res = run_module('containerd_runtime', path=path, name='runc', state='absent', containerd_bin=binary,
                     expect_fail=True)
    assert 'runc is the default runtime' in res['msg'] and dropin in res['msg']


# ------------------------------------------------------------------ a drop-in already imported that replaces config.toml's CRI table
def test_existing_clobbering_drop_in_blocks_other_edits_on_1x(run_module, config, workdir):
    """The engine's own check, not only containerd_imports': a drop-in already imported whose CRI table
    would replace the main file's (runc lost) is named, and nothing is written."""
    dropin = config('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                    '  runtime_type = "io.containerd.kata.v2"\n', filename='kata.toml')
    text = read(config('v2_kubeadm.toml')).replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % dropin)
    path = config(text)
    # a key containerd 1.6 runs (it has no CDI: enable_cdi is refused for that first)
    res = run_module('containerd_setting', path=path, key='images.snapshotter', value='native', owner='gpu',
                     expect_fail=True)
    assert dropin in res['msg'] and "runtime 'runc'" in res['msg'] and 'replaces the whole table' in res['msg']
    assert read(path) == text
