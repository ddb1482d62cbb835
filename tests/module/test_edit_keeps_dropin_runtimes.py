# -*- coding: utf-8 -*-
"""containerd 2.1, a version 3 config.toml with no runtimes table, version 2 drop-ins (kata-deploy importing
NVIDIA's toolkit's, then a CDI drop-in with no version line) that define the runtimes and the default: a
runtimes table written into config.toml would make 2.1 drop every runtime of the drop-ins (measured with its
config dump) and its CRI plugin fail on the default "nvidia". The check step refuses such an edit and writes
nothing; the fix it names works."""

import os

from helpers.common import assert_containerd_accepts, binary_of, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
import tomlkit

MAIN = """version = 3
imports = ["conf.d/kata-deploy.toml", "conf.d/10-cdi.toml"]
root = "/var/lib/containerd"
"""
KATA_V2 = """version = 2
imports = ["99-nvidia.toml"]

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata-qemu]
  runtime_type = "io.containerd.kata-qemu.v2"
"""
NVIDIA_V2 = """version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "nvidia"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true
"""
CDI_NO_VERSION = """[plugins."io.containerd.grpc.v1.cri"]
  enable_cdi = true
"""
RUNTIME_TABLE = ('plugins', 'io.containerd.cri.v1.runtime', 'containerd')
NEW_RUNTIME = """
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.extra]
  runtime_type = "io.containerd.runc.v2"
"""


def _tree(config):
    path = config(MAIN)
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    os.makedirs(folder)
    for name, text in (('kata-deploy.toml', KATA_V2), ('99-nvidia.toml', NVIDIA_V2), ('10-cdi.toml', CDI_NO_VERSION)):
        with open(os.path.join(folder, name), 'w') as f:
            f.write(text)
    return path, os.path.join(folder, 'kata-deploy.toml'), os.path.join(folder, '99-nvidia.toml')


def _dumped(path):
    data = parse_toml(assert_containerd_accepts(path, binary_of('2')))
    for key in RUNTIME_TABLE:
        data = data[key]
    return data


def _snapshot(paths):
    return [read(p, 'rb') for p in paths]


def test_containerd_2_1_drops_the_drop_ins_runtimes_and_the_model_agrees(config):
    """The measurement the guard stands on: a version 3 runtimes table in config.toml stops the migration."""
    path, _kata, _nvidia = _tree(config)
    before = _dumped(path)
    assert sorted(before['runtimes']) == ['kata-qemu', 'nvidia', 'runc'] and before['default_runtime_name'] == 'nvidia'
    with open(path, 'a') as f:
        f.write(NEW_RUNTIME)
    after = _dumped(path)
    assert sorted(after['runtimes']) == ['extra', 'runc'] and after['default_runtime_name'] == 'nvidia'
    view = load_effective(path, parse_toml(read(path)), (2, 1))
    assert sorted(view.value(RUNTIME_TABLE + ('runtimes',))) == ['extra']
    assert view.value(RUNTIME_TABLE + ('default_runtime_name',)) == 'nvidia'


def test_a_new_runtime_in_config_toml_that_would_drop_the_drop_ins_runtimes_is_refused(run_module, config):
    path, kata, nvidia = _tree(config)
    files = (path, kata, nvidia)
    original = _snapshot(files)
    res = run_module('containerd_runtime', path=path, name='extra', runtime_type='io.containerd.runc.v2',
                     containerd_bin=binary_of('2'), expect_fail=True)
    msg = res['msg']
    assert _snapshot(files) == original and 'Nothing was written' in msg, res
    for word in ('kata-qemu (gone)', 'nvidia (gone)', 'runc (its settings change)', kata, nvidia,
                 'default_runtime_name = "nvidia"', 'version 2', 'edit_in: %s' % nvidia):
        assert word in msg, (word, msg)


def test_runc_as_default_goes_to_the_drop_in_that_decides_it_and_keeps_every_runtime(run_module, config):
    path, kata, nvidia = _tree(config)
    res = run_module('containerd_runtime', path=path, name='runc', runtime_type='io.containerd.runc.v2',
                     default=True, containerd_bin=binary_of('2'))
    assert res['changed'] and res['file'] == nvidia, res
    dumped = _dumped(path)
    assert sorted(dumped['runtimes']) == ['kata-qemu', 'nvidia', 'runc'] and dumped['default_runtime_name'] == 'runc'
    assert read(path) == MAIN and read(kata) == KATA_V2


def test_the_fix_it_names_works_the_runtime_goes_to_the_version_2_drop_in(run_module, config):
    path, kata, nvidia = _tree(config)
    res = run_module('containerd_runtime', path=path, name='extra', runtime_type='io.containerd.runc.v2',
                     containerd_bin=binary_of('2'), edit_in=kata)
    assert res['changed'] and res['file'] == kata, res
    dumped = _dumped(path)
    assert sorted(dumped['runtimes']) == ['extra', 'kata-qemu', 'nvidia', 'runc'], dumped
    assert dumped['runtimes']['runc']['options']['SystemdCgroup'] is True
    assert read(path) == MAIN


# ------------------------------------------------------------------ a runtime a drop-in defines is changed there
def test_runtime_defined_in_a_drop_in_is_not_shadowed(run_module, config, workdir):
    dropin = os.path.join(workdir, 'etc', 'kata.toml')
    text = ('version = 3\n\n'
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
            "  runtime_type = 'io.containerd.runc.v2'\n")
    path = config(text.replace('version = 3\n', 'version = 3\nimports = ["%s"]\n' % dropin))
    with open(dropin, 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]\n"
                "  runtime_type = 'io.containerd.kata-qemu.v2'\n")
    before = read(path, 'rb')
    dropin_before = read(dropin, 'rb')
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco',
                     options={'ConfigPath': '/x'}, edit_in='config', expect_fail=True)
    assert dropin in res['msg'] and 'drop-in' in res['msg'] and 'edit_in: auto' in res['msg']
    assert read(path, 'rb') == before
    # edit_in: auto (the default) changes the runtime where it is defined, and undoes it there
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', options={'ConfigPath': '/x'})
    assert res['changed'] and res['file'] == dropin and all(e['in_effect'] for e in res['effects'])
    assert read(path, 'rb') == before and "ConfigPath = '/x'" in read(dropin)
    assert not run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco',
                          options={'ConfigPath': '/x'})['changed']
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', state='absent')
    assert read(dropin, 'rb') == dropin_before
    res = run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', default=True)
    assert res['changed'] and not res['created']
    data = tomlkit.parse(read(path)).unwrap()['plugins']['io.containerd.cri.v1.runtime']['containerd']
    assert data['default_runtime_name'] == 'kata-qemu' and 'kata-qemu' not in data['runtimes']
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', state='absent')
    assert read(path, 'rb') == before
