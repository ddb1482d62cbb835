# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kata_runtimes: coco_runtime_classes, each as a full description of the kata handler."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kata_runtimes
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: The kata runtime classes, each a name or a mapping, as full handler descriptions
description:
  - Turns the role C(coco)'s C(coco_runtime_classes) into one mapping per handler with every key set, as
    kata-deploy writes the handlers.
  - The shim is the name without C(kata-) unless given. A shim listed in O(rs_shims), or a class with
    C(runtime=rs), is kata 4.x's runtime-rs one, whose shim and configuration live under O(shim_rs_path) and
    O(config_rs_dir).
  - C(needs) is passed on only when the class gives it.
options:
  _input:
    description: The runtime classes, each a name or a mapping with C(name).
    type: list
    elements: raw
    required: true
  shim_path:
    description: The Go runtime's shim.
    type: str
    default: /opt/kata/bin/containerd-shim-kata-v2
  shim_rs_path:
    description: The runtime-rs shim.
    type: str
    default: /opt/kata/runtime-rs/bin/containerd-shim-kata-v2
  config_dir:
    description: The Go runtime's configuration folder.
    type: str
    default: /opt/kata/share/defaults/kata-containers
  config_rs_dir:
    description: The runtime-rs configuration folder.
    type: str
    default: /opt/kata/share/defaults/kata-containers/runtime-rs
  rs_shims:
    description: Shims that are runtime-rs's.
    type: list
    elements: str
    default: []
  snapshotter:
    description: The snapshotter of a class that does not give one; empty for none.
    type: str
    default: ''
  probe_handlers:
    description: Handlers readiness probes when the class does not say.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: The handlers of two classes
  ansible.builtin.debug:
    msg: "{{ ['kata-qemu', {'name': 'kata-clh', 'shim': 'clh'}] | nodeguard.containerd.kata_runtimes(probe_handlers=['kata-qemu']) }}"
  # [{'name': 'kata-qemu', 'shim': 'qemu', 'runtime_type': 'io.containerd.kata-qemu.v2',
  #   'runtime_path': '/opt/kata/bin/containerd-shim-kata-v2',
  #   'config_path': '/opt/kata/share/defaults/kata-containers/configuration-qemu.toml', 'snapshotter': '',
  #   'probe': true}, {'name': 'kata-clh', 'shim': 'clh', ... 'probe': false}]
"""

RETURN = r"""
_value:
  description: One mapping per class, in the given order.
  type: list
  elements: dict
  contains:
    name:
      description: The handler's name.
      type: str
    shim:
      description: The kata shim (C(qemu), C(qemu-tdx), C(dragonball), ...).
      type: str
    runtime_type:
      description: The handler's C(runtime_type).
      type: str
    runtime_path:
      description: The shim binary.
      type: str
    config_path:
      description: The kata configuration (the C(ConfigPath) option).
      type: str
    snapshotter:
      description: The handler's snapshotter, empty for containerd's.
      type: str
    probe:
      description: Whether readiness starts a probe container through it.
      type: bool
    needs:
      description: What the node must provide, when the class says.
      type: list
      returned: when the class gives it
"""

import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from collections.abc import Mapping


def kata_runtimes(classes, shim_path='/opt/kata/bin/containerd-shim-kata-v2',
                  shim_rs_path='/opt/kata/runtime-rs/bin/containerd-shim-kata-v2',
                  config_dir='/opt/kata/share/defaults/kata-containers',
                  config_rs_dir='/opt/kata/share/defaults/kata-containers/runtime-rs',
                  rs_shims=None, snapshotter='', probe_handlers=None):
    """One full handler description per class of classes (names or mappings)."""
    rs_shims = rs_shims or []
    probe_handlers = probe_handlers or []
    out = []
    for item in classes:
        if isinstance(item, str):
            item = {'name': item}
        elif not isinstance(item, Mapping) or 'name' not in item:
            raise AnsibleFilterError('kata_runtimes: a runtime class is a name or a mapping with a name, got %r'
                                     % (item,))
        name = item['name']
        shim = item.get('shim', re.sub('^kata-', '', name))
        rs = item.get('runtime', 'rs' if shim in rs_shims else 'go') == 'rs'
        config = '%s/configuration-%s.toml' % (config_rs_dir if rs else config_dir, shim)
        runtime = {
            'name': name,
            'shim': shim,
            'runtime_type': item.get('runtime_type', 'io.containerd.kata-%s.v2' % shim),
            'runtime_path': item.get('runtime_path', shim_rs_path if rs else shim_path),
            'config_path': item.get('config_path', config),
            'snapshotter': item.get('snapshotter', snapshotter),
            'probe': boolean(item.get('probe', name in probe_handlers), strict=False),
        }
        if 'needs' in item:
            runtime['needs'] = item['needs']
        out.append(runtime)
    return out


class FilterModule(object):
    def filters(self):
        return {'kata_runtimes': kata_runtimes}
