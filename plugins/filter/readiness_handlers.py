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
    C({name, probe}), once per name (the last one wins) - the
    O(nodeguard.containerd.containerd_readiness#module:handlers) of a role that added O(runtimes).
  - A runtime's C(probe_image), C(probe_command) and C(probe_env) (P(nodeguard.containerd.gpu_runtime_specs#filter)
    keeps them) become the handler's C(image), C(command) and C(env).
options:
  _input:
    description: The handlers that must be there anyway, each a name or a mapping with C(name).
    type: list
    elements: raw
    required: true
  runtimes:
    description: The runtimes added, each a mapping with C(name), C(probe) and optionally C(probe_image),
      C(probe_command) and C(probe_env).
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


# a runtime's probe settings (gpu_runtime_specs) as containerd_readiness names them in a handler
PROBE_KEYS = {'probe_image': 'image', 'probe_command': 'command', 'probe_env': 'env'}


def readiness_handlers(base, runtimes=None):
    """base less the runtimes' names, then {name, probe} per runtime (one per name, the last one wins), with its
    probe image, command and env when it gives them."""
    handlers = {}
    order = []
    for runtime in runtimes or []:
        if runtime['name'] not in handlers:
            order.append(runtime['name'])
        handler = {'name': runtime['name'], 'probe': runtime.get('probe', True)}
        handler.update((PROBE_KEYS[key], runtime[key]) for key in PROBE_KEYS if key in runtime)
        handlers[runtime['name']] = handler
    kept = [h for h in base if (h if isinstance(h, str) else h.get('name')) not in handlers]
    return kept + [handlers[name] for name in order]


class FilterModule(object):
    def filters(self):
        return {'readiness_handlers': readiness_handlers}
