# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kata_runtime_entries: the kata handlers as containerd_config's runtimes entries."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: kata_runtime_entries
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: The kata handlers as the runtimes entries of containerd_config
description:
  - Turns the output of P(nodeguard.containerd.kata_runtimes#filter) into the
    O(nodeguard.containerd.containerd_config#module:runtimes) entries the role C(coco) adds to config.toml, as
    kata-deploy writes them - C(inherit=none), C(privileged_without_host_devices), the pod annotations, the
    snapshotter when set, and C(ConfigPath).
options:
  _input:
    description: The handlers, as P(nodeguard.containerd.kata_runtimes#filter) returns them.
    type: list
    elements: dict
    required: true
  pod_annotations:
    description: The C(pod_annotations) of each handler.
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Add the kata handlers
  nodeguard.containerd.containerd_config:
    owner: coco
    runtimes: >-
      {{ ['kata-qemu'] | nodeguard.containerd.kata_runtimes
         | nodeguard.containerd.kata_runtime_entries(pod_annotations=['io.katacontainers.*']) }}
"""

RETURN = r"""
_value:
  description: One containerd_config runtimes entry per handler, in the given order.
  type: list
  elements: dict
"""


def kata_runtime_entries(runtimes, pod_annotations=None):
    """runtimes (kata_runtimes) as containerd_config runtimes entries."""
    out = []
    for runtime in runtimes:
        settings = {'privileged_without_host_devices': True, 'pod_annotations': list(pod_annotations or [])}
        if runtime.get('snapshotter'):
            settings['snapshotter'] = runtime['snapshotter']
        out.append({'name': runtime['name'], 'runtime_type': runtime['runtime_type'],
                    'runtime_path': runtime['runtime_path'], 'inherit': 'none', 'settings': settings,
                    'options': {'ConfigPath': runtime['config_path']}})
    return out


class FilterModule(object):
    def filters(self):
        return {'kata_runtime_entries': kata_runtime_entries}
