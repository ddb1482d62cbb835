# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""runtime_class_objects: one Kubernetes RuntimeClass object per handler."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: runtime_class_objects
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: One Kubernetes RuntimeClass (node.k8s.io/v1) per runtime handler
description:
  - One RuntimeClass per handler, named as the handler, with the labels O(labels) (what marks the object as the
    role's, so that an uninstall deletes only those) and C(scheduling.nodeSelector) O(node_label)=C(true).
options:
  _input:
    description: The handlers, each a name or a mapping with C(name).
    type: list
    elements: raw
    required: true
  labels:
    description: The labels of each object.
    type: dict
    default: {}
  node_label:
    description: The node label the objects select nodes by.
    type: str
    default: katacontainers.io/kata-runtime
"""

EXAMPLES = r"""
- name: Create the RuntimeClasses
  ansible.builtin.command:
    argv: [kubectl, create, -f, "-"]
    stdin: >-
      {{ {'apiVersion': 'v1', 'kind': 'List',
          'items': ['kata-qemu'] | nodeguard.containerd.runtime_class_objects(labels={'nodeguard.io/owner': 'coco'})}
         | to_json }}
"""

RETURN = r"""
_value:
  description: One RuntimeClass object per handler, in the given order.
  type: list
  elements: dict
"""


def runtime_class_objects(handlers, labels=None, node_label='katacontainers.io/kata-runtime'):
    """One RuntimeClass object per handler (a name or a mapping with name)."""
    out = []
    for handler in handlers:
        name = handler if isinstance(handler, str) else handler['name']
        out.append({'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass',
                    'metadata': {'name': name, 'labels': dict(labels or {})},
                    'handler': name, 'scheduling': {'nodeSelector': {node_label: 'true'}}})
    return out


class FilterModule(object):
    def filters(self):
        return {'runtime_class_objects': runtime_class_objects}
