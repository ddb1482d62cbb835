# -*- coding: utf-8 -*-
"""Config trees the batch forms of the editing modules are tried on, beside the single calls."""

# (fixture, containerd binary that reads it): Debian's stock 1.6 file (no
# runtimes table: runc is written out), kubeadm's on 1.7, version 3 on 2.x
NODES = [('v2_debian_stock.toml', 'host'), ('v2_kubeadm.toml', '1.7'), ('v3_default.toml', '2')]

# a version 3 config.toml importing one drop-in (%s: the drop-in's path)
DROPIN_MAIN = '''version = 3
imports = ["%s"]

[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = 'io.containerd.runc.v2'
'''

# the drop-in that defines kata-qemu
KATA_DROPIN = '''version = 3

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]
  runtime_type = 'io.containerd.kata-qemu.v2'
'''

# the drop-in that decides enable_cdi
CDI_DROPIN = '''version = 3

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
'''


def write_tree(tmp_path, main, **files):
    """config.toml (with {name} placeholders for the other files' paths) and the other files, each NAME.toml
    under tmp_path; (config.toml's path, {name: path})."""
    paths = dict((name, str(tmp_path / ('%s.toml' % name))) for name in files)
    for name, text in files.items():
        (tmp_path / ('%s.toml' % name)).write_text(text)
    path = str(tmp_path / 'config.toml')
    (tmp_path / 'config.toml').write_text(main.format(**paths))
    return path, paths


def effective_view(path, ver):
    """The effective-config model of the tree at path, as containerd ver reads it."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
    with open(path) as f:
        return load_effective(path, parse_toml(f.read()), ver)
