# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_runtime_specs: gpu_toolkit_runtimes, each as a full description of the runtime to add."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: gpu_runtime_specs
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: The GPU runtimes to add, each a name or a mapping, as full descriptions
description:
  - Turns the role C(gpu_toolkit)'s C(gpu_toolkit_runtimes) into one mapping per runtime with every key set.
  - A runtime given by name gets O(binary) as its C(BinaryName), with the suffix O(suffixes) gives for its name
    appended (C(nvidia-cdi) gets C(.cdi), as the NVIDIA toolkit installs it). A mapping may give C(binary),
    C(options), C(settings), C(runtime_type) and C(probe) itself, and how readiness probes it - C(probe_image),
    C(probe_command) and C(probe_env), which P(nodeguard.containerd.readiness_handlers#filter) hands to
    M(nodeguard.containerd.containerd_readiness) as the handler's C(image), C(command) and C(env) (a GPU probe
    such as C(nvidia-smi -L) with C(NVIDIA_VISIBLE_DEVICES=all)).
  - C(options) starts with C(BinaryName) (when the binary is not empty), then the runtime's own options, which win.
options:
  _input:
    description: The runtimes, each a name or a mapping with C(name).
    type: list
    elements: raw
    required: true
  binary:
    description: C(BinaryName) of a runtime that does not give C(binary).
    type: str
    default: /usr/bin/nvidia-container-runtime
  suffixes:
    description: Runtime name to the suffix appended to O(binary) for it.
    type: dict
    default: {}
  probe:
    description: Whether readiness starts a probe container through a runtime that does not say.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: The runtimes of gpu_toolkit_runtimes
  ansible.builtin.debug:
    msg: >-
      {{ ['nvidia', {'name': 'nvidia-cdi', 'probe': false}]
         | nodeguard.containerd.gpu_runtime_specs(binary='/usr/bin/nvidia-container-runtime',
                                                  suffixes={'nvidia-cdi': '.cdi'}) }}
  # [{'name': 'nvidia', 'binary': '/usr/bin/nvidia-container-runtime',
  #   'options': {'BinaryName': '/usr/bin/nvidia-container-runtime'}, 'settings': {}, 'runtime_type': '', 'probe': true},
  #  {'name': 'nvidia-cdi', 'binary': '/usr/bin/nvidia-container-runtime.cdi',
  #   'options': {'BinaryName': '/usr/bin/nvidia-container-runtime.cdi'}, 'settings': {}, 'runtime_type': '',
  #   'probe': false}]
"""

RETURN = r"""
_value:
  description: One mapping per runtime, in the given order.
  type: list
  elements: dict
  contains:
    name:
      description: The runtime's name (empty when a mapping gave none).
      type: str
    binary:
      description: Its C(BinaryName), empty for none.
      type: str
    options:
      description: Its options table, C(BinaryName) first.
      type: dict
    settings:
      description: Keys of the runtime's own table.
      type: dict
    runtime_type:
      description: Its C(runtime_type), empty to inherit it.
      type: str
    probe:
      description: Whether readiness starts a probe container through it.
      type: bool
    probe_image:
      description: The image of its probe container, only when the mapping gives one.
      type: str
    probe_command:
      description: The command of its probe container (a list, or a string split as a shell would), only when given.
      type: raw
    probe_env:
      description: The environment of its probe container (a dict, or a list of C(KEY=VALUE)), only when given.
      type: raw
"""

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from collections.abc import Mapping

# how readiness probes a runtime, when its mapping says: the keys readiness_handlers passes on
from ansible_collections.nodeguard.containerd.plugins.filter.readiness_handlers import PROBE_KEYS


def gpu_runtime_specs(runtimes, binary='/usr/bin/nvidia-container-runtime', suffixes=None, probe=True):
    """One full description per runtime of runtimes (names or mappings)."""
    suffixes = suffixes or {}
    out = []
    for item in runtimes:
        if isinstance(item, str):
            item = {'name': item}
        elif not isinstance(item, Mapping):
            raise AnsibleFilterError('gpu_runtime_specs: a runtime is a name or a mapping with a name, got %r' % (item,))
        name = item.get('name', '')
        path = item['binary'] if 'binary' in item else binary + suffixes.get(name, '')
        options = {'BinaryName': path} if path else {}
        options.update(item.get('options') or {})
        spec = {'name': name, 'binary': path, 'options': options, 'settings': dict(item.get('settings') or {}),
                'runtime_type': item.get('runtime_type') or '', 'probe': boolean(item.get('probe', probe), strict=False)}
        spec.update((key, item[key]) for key in PROBE_KEYS if item.get(key) not in (None, '', [], {}))
        out.append(spec)
    return out


class FilterModule(object):
    def filters(self):
        return {'gpu_runtime_specs': gpu_runtime_specs}
