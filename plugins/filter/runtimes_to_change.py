# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""runtimes_to_change: the runtimes entries whose values containerd does not run yet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: runtimes_to_change
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.2.0
short_description: The runtimes entries whose values containerd does not run yet
description:
  - Compares O(nodeguard.containerd.containerd_config#module:runtimes) entries with the runtimes containerd runs
    (RV(nodeguard.containerd.containerd_info#module:runtimes) of that module) and returns the names of the entries
    an edit would change - a handler missing from the effective config, or one whose C(runtime_type),
    C(runtime_path), a key of C(settings) or a key of C(options) has another value there. Keys the entry does not
    name are not compared (an edit leaves them alone).
  - The role C(coco) judges with it whether every kata handler is in place already, whoever wrote it.
options:
  _input:
    description: The runtimes entries (name, runtime_type, runtime_path, settings, options).
    type: list
    elements: dict
    required: true
  runtimes:
    description: The effective runtimes by name, as RV(nodeguard.containerd.containerd_info#module:runtimes) returns them.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Say whether the kata handlers are in place
  ansible.builtin.debug:
    msg: >-
      {{ ['kata-qemu'] | nodeguard.containerd.kata_runtimes | nodeguard.containerd.kata_runtime_entries
         | nodeguard.containerd.runtimes_to_change(info.runtimes) }}
"""

RETURN = r"""
_value:
  description: The names of the entries an edit would change, in the given order; empty when all are in place.
  type: list
  elements: str
"""

MISSING = object()


def _in_effect(entry, table):
    """Whether the effective table has every value the entry sets."""
    for key in ('runtime_type', 'runtime_path'):
        if key in entry and table.get(key, MISSING) != entry[key]:
            return False
    if any(table.get(key, MISSING) != value for key, value in (entry.get('settings') or {}).items()):
        return False
    options = table.get('options') or {}
    return all(options.get(key, MISSING) == value for key, value in (entry.get('options') or {}).items())


def runtimes_to_change(entries, runtimes):
    """Names of the entries whose values the effective runtimes (containerd_info's runtimes) do not all have."""
    runtimes = runtimes or {}
    return [entry['name'] for entry in entries
            if entry['name'] not in runtimes or not _in_effect(entry, runtimes[entry['name']].get('table') or {})]


class FilterModule(object):
    def filters(self):
        return {'runtimes_to_change': runtimes_to_change}
