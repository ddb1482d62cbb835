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
