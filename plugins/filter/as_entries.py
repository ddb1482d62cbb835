# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""as_entries: a list of names as a list of mappings, one per name, with the same other keys."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: as_entries
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: Names as module entries, each with the same other keys
description:
  - Turns a list of names (runtimes, keys, files) into the list of mappings a module option takes, one per name,
    the name under O(key) and every other keyword given to the filter copied into each.
  - Names given more than once give one entry, at the first place.
options:
  _input:
    description: The names.
    type: list
    elements: str
    required: true
  key:
    description: The key each name goes under.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Remove the runtimes an owner added, putting back prior values
  nodeguard.containerd.containerd_config:
    state: absent
    owner: coco
    runtimes: "{{ ['kata-qemu', 'kata-clh'] | nodeguard.containerd.as_entries('name', force=false) }}"
  # [{'name': 'kata-qemu', 'force': false}, {'name': 'kata-clh', 'force': false}]
"""

RETURN = r"""
_value:
  description: One mapping per name, in the given order.
  type: list
  elements: dict
"""


def as_entries(names, key, **fixed):
    """One mapping {key: name, **fixed} per distinct name, in order."""
    out = []
    seen = set()
    for name in names:
        if name in seen:
            continue
        seen.add(name)
        entry = {key: name}
        entry.update(fixed)
        out.append(entry)
    return out


class FilterModule(object):
    def filters(self):
        return {'as_entries': as_entries}
