# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""as_list: a list variable as a list, also when a survey gave it as a string."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: as_list
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: A list variable as a list, also when it arrives as a string (AWX surveys)
description:
  - AWX survey answers and C(-e key=value) extra vars arrive as strings. The collection's roles read every list
    variable through this filter, so a real list, a JSON list string and a comma- or newline-separated string give
    the same list.
  - A list (or tuple) is returned as it is. A string is stripped first; one that starts with C([) is read as a JSON
    list (its items may be strings or mappings); any other string is split at commas and line ends, each item
    stripped and empty items dropped. An empty string and V(null) give an empty list.
  - Anything else (a mapping, a number, a JSON string that is not a list) is refused, naming what was given.
options:
  _input:
    description: The variable's value.
    type: raw
    required: true
seealso:
  - name: AWX surveys
    description: The collection's survey variables.
    link: https://github.com/nodeguard/containerd/blob/main/docs/awx.md
"""

EXAMPLES = r"""
- name: The same list from each form
  ansible.builtin.assert:
    that:
      - "['runc', 'nvidia'] | nodeguard.containerd.as_list == ['runc', 'nvidia']"
      - "'[\"runc\", \"nvidia\"]' | nodeguard.containerd.as_list == ['runc', 'nvidia']"
      - "'runc, nvidia' | nodeguard.containerd.as_list == ['runc', 'nvidia']"
      - "'runc\nnvidia\n' | nodeguard.containerd.as_list == ['runc', 'nvidia']"
      - "'' | nodeguard.containerd.as_list == []"

- name: Expected handlers from a survey answer
  nodeguard.containerd.containerd_readiness:
    step: check
    handlers: "{{ node_readiness_expected_handlers | nodeguard.containerd.as_list }}"
"""

RETURN = r"""
_value:
  description: The list.
  type: list
  elements: raw
"""

import json
import re

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.text.converters import to_text

from collections.abc import Mapping


def as_list(value):
    """value (a list, a JSON list string, a comma- or newline-separated string, None) as a list."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = to_text(value).strip()
        if text.startswith('['):
            try:
                loaded = json.loads(text)
            except ValueError as exc:
                raise AnsibleFilterError('as_list: %r starts with [ but is not a JSON list: %s' % (text, exc))
            if not isinstance(loaded, list):
                raise AnsibleFilterError('as_list: %r is not a JSON list' % text)
            return loaded
        return [item.strip() for item in re.split(r'[,\r\n]', text) if item.strip()]
    kind = 'a mapping' if isinstance(value, Mapping) else type(value).__name__
    raise AnsibleFilterError('as_list: expected a list, a JSON list string or a comma- or newline-separated string, '
                             'got %s: %r' % (kind, value))


class FilterModule(object):
    def filters(self):
        return {'as_list': as_list}
