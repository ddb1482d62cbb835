# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""readiness_handlers: the handlers readiness expects, with a probe flag each."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: readiness_handlers
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: The handlers readiness expects after runtimes were added
description:
  - The handlers of O(_input) that O(runtimes) does not name, then each runtime of O(runtimes) as
    C({name, probe}), once per name (the last one's C(probe) wins) - the
    O(nodeguard.containerd.containerd_readiness#module:handlers) of a role that added O(runtimes).
options:
  _input:
    description: The handlers that must be there anyway, each a name or a mapping with C(name).
    type: list
    elements: raw
    required: true
  runtimes:
    description: The runtimes added, each a mapping with C(name) and C(probe).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: Check runc and the GPU runtimes
  nodeguard.containerd.containerd_readiness:
    step: check
    handlers: >-
      {{ ['runc'] | nodeguard.containerd.readiness_handlers([{'name': 'nvidia', 'probe': true}]) }}
  # ['runc', {'name': 'nvidia', 'probe': true}]
"""

RETURN = r"""
_value:
  description: The handlers, the given ones first.
  type: list
  elements: raw
"""


def readiness_handlers(base, runtimes=None):
    """base less the runtimes' names, then {name, probe} per runtime (one per name, the last probe wins)."""
    probes = {}
    order = []
    for runtime in runtimes or []:
        if runtime['name'] not in probes:
            order.append(runtime['name'])
        probes[runtime['name']] = runtime.get('probe', True)
    kept = [h for h in base if (h if isinstance(h, str) else h.get('name')) not in probes]
    return kept + [{'name': name, 'probe': probes[name]} for name in order]


class FilterModule(object):
    def filters(self):
        return {'readiness_handlers': readiness_handlers}
