# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_runtime_entries: the GPU runtimes as containerd_config's runtimes entries."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_runtime_entries
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: The GPU runtimes as the runtimes entries of containerd_config
description:
  - Turns the output of P(nodeguard.containerd.gpu_runtime_specs#filter) into the O(nodeguard.containerd.containerd_config#module:runtimes)
    entries the role C(gpu_toolkit) adds.
  - C(runtime_type) and C(inherit) are given only when set. The runtime named O(default) gets C(default=true); a
    runtime this owner made the CRI default earlier (O(owned_defaults)) and that is no longer meant to be gets
    C(default=false), which puts the previous default back.
options:
  _input:
    description: The runtimes, as P(nodeguard.containerd.gpu_runtime_specs#filter) returns them.
    type: list
    elements: dict
    required: true
  inherit:
    description: The runtime whose table a new runtime copies; empty for the module's choice.
    type: str
    default: ''
  default:
    description: The runtime to make the CRI default; empty for none.
    type: str
    default: ''
  owned_defaults:
    description: Runtimes the owner made the CRI default before, as the ledger records them.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Add the GPU runtimes, nvidia as the CRI default
  nodeguard.containerd.containerd_config:
    owner: gpu_toolkit
    runtimes: >-
      {{ ['nvidia'] | nodeguard.containerd.gpu_runtime_specs
         | nodeguard.containerd.gpu_runtime_entries(default='nvidia') }}
  # [{'name': 'nvidia', 'options': {'BinaryName': '/usr/bin/nvidia-container-runtime'}, 'settings': {},
  #   'default': true}]
"""

RETURN = r"""
_value:
  description: One containerd_config runtimes entry per runtime, in the given order.
  type: list
  elements: dict
"""


def gpu_runtime_entries(specs, inherit='', default='', owned_defaults=None):
    """specs as containerd_config runtimes entries."""
    owned_defaults = owned_defaults or []
    out = []
    for spec in specs:
        entry = {'name': spec['name'], 'options': spec['options'], 'settings': spec['settings']}
        if spec.get('runtime_type'):
            entry['runtime_type'] = spec['runtime_type']
        if inherit:
            entry['inherit'] = inherit
        if default and spec['name'] == default:
            entry['default'] = True
        elif spec['name'] in owned_defaults:
            entry['default'] = False
        out.append(entry)
    return out


class FilterModule(object):
    def filters(self):
        return {'gpu_runtime_entries': gpu_runtime_entries}
