# -*- coding: utf-8 -*-
"""Runtimes written without [section] headers: dotted keys and inline tables.

Both load in containerd. A runtime inherited from a dotted-key runc gets
sections of its own (TOML lets [a.b.new] extend a table made by dotted keys);
an inline runtimes table cannot be extended at all, so the refusal names the
table and the fix and writes nothing.
"""

import tomlkit

from helpers.common import CONTAINERD_2, assert_containerd_accepts, config_dump, read

NVIDIA_BIN = '/usr/bin/nvidia-container-runtime'
V2 = '''version = 2

# runc written with dotted keys
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  runtimes.runc.runtime_type = "io.containerd.runc.v2"
  runtimes.runc.options.SystemdCgroup = true
'''
V3 = '''version = 3

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
  runtimes.runc.runtime_type = 'io.containerd.runc.v2'
  runtimes.runc.options.SystemdCgroup = true
'''
INLINE = '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  runtimes = { runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } } }
'''


def runtimes(path, plugin, binary=None):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, err
    return tomlkit.parse(out).unwrap()['plugins'][plugin]['containerd']['runtimes']


def test_inherit_from_a_dotted_key_runc_round_trips_v2(run_module, config):
    path = config(V2)
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
                     options={'BinaryName': NVIDIA_BIN})
    assert res['changed']
    nvidia = runtimes(path, 'io.containerd.grpc.v1.cri')['nvidia']
    assert nvidia['runtime_type'] == 'io.containerd.runc.v2'
    assert nvidia['options']['SystemdCgroup'] is True and nvidia['options']['BinaryName'] == NVIDIA_BIN
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]' in read(path)
    assert not run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
                          options={'BinaryName': NVIDIA_BIN})['changed']
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', state='absent')
    assert read(path) == V2


def test_inherit_from_a_dotted_key_runc_round_trips_v3(run_module, config):
    assert CONTAINERD_2, 'run make deps'
    path = config(V3)
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
               options={'BinaryName': NVIDIA_BIN})
    nvidia = runtimes(path, 'io.containerd.cri.v1.runtime', CONTAINERD_2)['nvidia']
    assert nvidia['options']['SystemdCgroup'] is True and nvidia['options']['BinaryName'] == NVIDIA_BIN
    # the file's own quoting (literal strings) is followed
    assert "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]" in read(path)
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', state='absent')
    assert read(path) == V3


def test_inline_runtimes_table_is_refused_with_the_fix(run_module, config):
    path = config(INLINE)
    assert_containerd_accepts(path)  # the premise: containerd loads it
    res = run_module('containerd_runtime', path=path, name='nvidia', owner='gpu',
                     options={'BinaryName': NVIDIA_BIN}, expect_fail=True)
    msg = res['msg']
    assert path in msg and 'inline table' in msg and 'containerd.runtimes' in msg
    assert 'rewrite' in msg and 'Nothing was written' in msg
    assert read(path) == INLINE


def test_inherit_from_dotted_keys_plus_an_options_section(run_module, config):
    """runc's type by dotted key, its options in a [..runc.options] section of their own: all of it is copied."""
    text = V2.replace('  runtimes.runc.options.SystemdCgroup = true\n', '') + (
        '\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
    path = config(text)
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', inherit='runc',
               options={'BinaryName': NVIDIA_BIN})
    nvidia = runtimes(path, 'io.containerd.grpc.v1.cri')['nvidia']
    assert nvidia['runtime_type'] == 'io.containerd.runc.v2'
    assert nvidia['options']['SystemdCgroup'] is True and nvidia['options']['BinaryName'] == NVIDIA_BIN
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', state='absent')
    assert read(path) == text
