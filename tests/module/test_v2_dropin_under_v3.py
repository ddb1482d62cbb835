# -*- coding: utf-8 -*-
"""containerd 2.1, a version 3 config.toml and version 2 drop-ins: what containerd 2.1 runs (measured with its
config dump), never a runtime reported ok that it does not run. A drop-in with no version line merges as written
on 2.x: its version 3 runtime tables count, and then a version 2 drop-in's runtimes are not migrated."""

import os

from helpers.common import assert_containerd_accepts, binary_of, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective

MAIN = """version = 3
imports = ["conf.d/40-nvidia.toml"]

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = "runc"
"""
NVIDIA_V2 = """version = 2
imports = ["50-kata.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
"""
KATA_NO_VERSION = """[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
"""
RUNTIMES = ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes')


def _tree(config, nvidia=NVIDIA_V2, kata=KATA_NO_VERSION):
    path = config(MAIN)
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    os.makedirs(folder)
    for name, text in (('40-nvidia.toml', nvidia), ('50-kata.toml', kata)):
        with open(os.path.join(folder, name), 'w') as f:
            f.write(text)
    return path


def _dumped_runtimes(path):
    data = parse_toml(assert_containerd_accepts(path, binary_of('2')))
    for key in RUNTIMES:
        data = data[key]
    return data


def test_the_merged_view_is_what_containerd_2_1_runs(config):
    path = _tree(config)
    assert sorted(_dumped_runtimes(path)) == ['kata', 'runc']   # the measurement the model follows
    view = load_effective(path, parse_toml(read(path)), (2, 1))
    runtimes = view.value(RUNTIMES)
    assert 'kata' in runtimes and 'nvidia' not in runtimes, runtimes
    why = [w for (f, _k), w in view.unread.items() if f.endswith('40-nvidia.toml')]
    assert why and all('version 3 file sets it' in w for w in why), view.unread


def test_a_runtime_the_version_2_drop_in_defines_is_not_reported_ok(run_module, config):
    binary = binary_of('2')
    path = _tree(config)
    res = run_module('containerd_runtime', path=path, name='nvidia', runtime_type='io.containerd.runc.v2',
                     containerd_bin=binary)
    # containerd 2.1 does not run the drop-in's nvidia: the runtime goes where it takes effect
    assert res['changed'] and res['file'] == path, res
    assert all(e['in_effect'] for e in res['effects']), res['effects']
    assert _dumped_runtimes(path)['nvidia']['runtime_type'] == 'io.containerd.runc.v2'
    again = run_module('containerd_runtime', path=path, name='nvidia', runtime_type='io.containerd.runc.v2',
                       containerd_bin=binary)
    assert not again['changed']
    run_module('containerd_runtime', path=path, name='nvidia', state='absent', containerd_bin=binary)
    assert read(path) == MAIN


def test_without_the_version_3_runtimes_the_drop_in_s_runtime_is_run_and_ok(run_module, config):
    path = _tree(config, kata='# nothing\n')
    assert 'nvidia' in _dumped_runtimes(path)
    res = run_module('containerd_runtime', path=path, name='nvidia', runtime_type='io.containerd.runc.v2',
                     containerd_bin=binary_of('2'))
    assert not res['changed'] and read(path) == MAIN, res
