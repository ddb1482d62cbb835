#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_baseline_export
short_description: Copy a containerd config baseline on the node with its secrets masked, for fetching
version_added: 1.0.0
description:
  - Copies every snapshot of the baseline O(name) in O(store) (taken by M(nodeguard.containerd.containerd_baseline))
    to the folder O(dest) on the same node, with the layout of the baseline folder, so that
    M(ansible.builtin.fetch) can take the copy off the node instead of the baseline itself.
  - Every secret value is replaced by C(********) in every copied file (the configs, the C(config dump) copy, the
    ledger copy and the manifest). The secret values are those O(secret_keys) and nodeguard's built-in paths name
    (the registry credentials C(password), C(auth) and C(identitytoken) of containerd's CRI or images plugin) in the
    stored configs, and the secret priors the stored ledger keeps.
  - The baseline itself stays exact on the node (a restore needs the real values) and is not changed.
  - Folders under O(dest) are created with mode 0700 and files with mode 0600.
  - With O(exact=true) the copies are byte for byte the baseline's and B(contain the credentials).
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - nodeguard.containerd.common.secrets
attributes:
  check_mode:
    support: full
    details: Reports the files it would copy and how many values it would mask; writes nothing.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  name:
    description: The baseline's name, as given to M(nodeguard.containerd.containerd_baseline).
    type: str
    default: default
  store:
    description: The folder of the baselines, as given to M(nodeguard.containerd.containerd_baseline).
    type: path
    default: /var/lib/nodeguard/baselines
  dest:
    description:
      - The folder on the node the copy is written to (created with mode 0700 when missing). Use a folder of its
        own, for example one made by M(ansible.builtin.tempfile), and remove it after the fetch.
    type: path
    required: true
  exact:
    description:
      - Copy the files as they are, secrets included. The copies then carry the node's registry credentials; keep
        them where only those allowed to read the node's config can read them.
    type: bool
    default: false
seealso:
  - module: nodeguard.containerd.containerd_baseline
'''

EXAMPLES = r'''
- name: A private folder for the copy
  ansible.builtin.tempfile:
    state: directory
    suffix: .baseline
  register: export_dir

- name: Copy the baseline with its secrets masked
  nodeguard.containerd.containerd_baseline_export:
    name: default
    dest: "{{ export_dir.path }}"
  register: exported

- name: Fetch the masked copy
  ansible.builtin.fetch:
    src: "{{ export_dir.path }}/{{ item.path }}"
    dest: "baselines/{{ inventory_hostname }}/default/{{ item.path }}"
    flat: true
  loop: "{{ exported.files }}"
'''

RETURN = r'''
baseline:
  description: The baseline's folder on the node, C(<store>/<name>).
  returned: always
  type: str
  sample: /var/lib/nodeguard/baselines/default
dest:
  description: The folder the copy was written to.
  returned: always
  type: str
msg:
  description: Why nothing was copied, when there is no baseline yet (for example a check-mode run before the first
    snapshot).
  returned: when there is no baseline
  type: str
files:
  description: Each copied file, its path relative to O(dest) and to the baseline folder, and how many secret values
    were masked in it.
  returned: always
  type: list
  elements: dict
  sample: [{"path": "20250101T000000.000000Z/files/000-config.toml", "masked": 2}]
masked:
  description: How many secret values were masked in all files together (0 with O(exact=true)).
  returned: always
  type: int
exact:
  description: Whether the copies are exact (and carry the credentials).
  returned: always
  type: bool
'''

import os
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import Store, export_copy
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import COMMON_ARGUMENT_SPEC


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', default='default'),
            store=dict(type='path', default='/var/lib/nodeguard/baselines'),
            dest=dict(type='path', required=True),
            exact=dict(type='bool', default=False),
            secret_keys=dict(COMMON_ARGUMENT_SPEC['secret_keys']),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        secrets.bind(module)
        store = Store(p['store'], p['name'])
        if store.load() is None:
            # nothing to copy (a check-mode run before the first snapshot): an empty copy, as the folder is
            module.exit_json(changed=False, baseline=store.folder, dest=p['dest'], files=[], exact=p['exact'],
                             masked=0, msg='no baseline %s in %s: nothing to copy' % (p['name'], p['store']))
        dest = os.path.abspath(p['dest'])
        if os.path.realpath(dest).startswith(os.path.realpath(store.folder) + os.sep) \
                or os.path.realpath(dest) == os.path.realpath(store.folder):
            module.fail_json(msg='dest %s is inside the baseline %s. Fix: give a folder of its own.'
                                 % (dest, store.folder))
        copied = export_copy(store.folder, dest, secrets.patterns(), exact=p['exact'], check_mode=module.check_mode)
    except (ConfigError, secrets.SecretKeyError) as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s: %s' % (getattr(exc, 'filename', None) or p['dest'], exc),
                         exception=traceback.format_exc())
    files = [dict(path=rel, masked=n) for rel, n in copied]
    module.exit_json(changed=bool(files), baseline=store.folder, dest=dest, files=files, exact=p['exact'],
                     masked=sum(n for _rel, n in copied))


if __name__ == '__main__':
    main()
