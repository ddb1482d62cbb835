#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_setting
short_description: Set or restore one containerd config key, undoably
version_added: 0.1.0
description:
  - Sets one key of containerd's C(config.toml) on behalf of an O(owner) and records the prior value,
    so O(state=absent) puts back exactly what was there (or removes the key if it was absent).
  - Logical key names are resolved for the file's config version, so one task works on
    containerd 1.6/1.7 (version 2), 2.0 - 2.2 (version 3) and 2.3 (version 4, the same CRI keys as version 3).
  - Same guarantees as M(nodeguard.containerd.containerd_runtime) - locked, validated, atomic,
    format-preserving writes.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.containerd.common
  - nodeguard.containerd.common.secrets
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details:
      - An uninstall (O(state=absent)) whose changes are in more than one file (a drop-in and C(config.toml))
        is previewed file by file, each file's undo taken as done for the next, as the run then writes them.
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  key:
    description:
      - A logical key, resolved per config version
      - V(cri.enable_cdi) and V(cri.cdi_spec_dirs) (CDI devices for the GPU toolkit),
      - V(images.snapshotter) and V(images.disable_snapshot_annotations) (for the nydus snapshotter;
        version 2 keeps them in C(plugins."io.containerd.grpc.v1.cri".containerd), versions 3 and 4 in
        C(plugins."io.containerd.cri.v1.images")),
      - V(cri.default_runtime_name).
      - With O(raw=true), a dotted TOML key as written in the file, for example
        C(plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads).
      - One of O(key) and O(settings) is required.
    type: str
  settings:
    description:
      - Several keys in one call, each a dict of O(key), O(value), O(state) and O(raw) as one key takes them.
      - One lock, one candidate, one validation and one write of the file for all of them, with the same text
        and the same ledger records as one call per key, in the order given (so either form undoes the other).
      - All entries have one O(state) (an entry without one takes the module's); a key given twice is refused.
      - When the keys would not all be written to one file (one is decided by a drop-in), each is its own
        transaction, as separate calls would be.
      - Mutually exclusive with O(key) and O(value); O(raw) applies to O(key) only.
    type: list
    elements: dict
    version_added: 1.0.0
    suboptions:
      key:
        description: As O(key).
        type: str
        required: true
      value:
        description: As O(value); required when the entry's state is V(present).
        type: raw
      state:
        description: As O(state); the module's O(state) when not given.
        type: str
        choices: [present, absent]
      raw:
        description: As O(raw).
        type: bool
        default: false
  value:
    description:
      - The value to set (string, number, boolean or list). Required with O(state=present) and O(key).
    type: raw
  state:
    description:
      - V(present) sets the key and records the prior value.
      - V(absent) puts back the value recorded for O(owner) (or removes the key if it was absent before).
        A key this owner never set is left alone.
    type: str
    choices: [present, absent]
    default: present
  raw:
    description:
      - Treat O(key) as a dotted TOML key path instead of a logical name.
    type: bool
    default: false
seealso:
  - module: nodeguard.containerd.containerd_runtime
'''

EXAMPLES = r'''
- name: Enable CDI for the GPU toolkit
  nodeguard.containerd.containerd_setting:
    key: cri.enable_cdi
    value: true
    owner: gpu_toolkit

- name: Let the nydus snapshotter see snapshot annotations
  nodeguard.containerd.containerd_setting:
    key: images.disable_snapshot_annotations
    value: false
    owner: coco

- name: Put the prior value back
  nodeguard.containerd.containerd_setting:
    key: images.disable_snapshot_annotations
    owner: coco
    state: absent

- name: CDI on, with its spec folders, in one validated write
  nodeguard.containerd.containerd_setting:
    settings:
      - key: cri.enable_cdi
        value: true
      - key: cri.cdi_spec_dirs
        value: [/etc/cdi, /var/run/cdi]
    owner: gpu_toolkit

- name: Any key, spelled as in the file
  nodeguard.containerd.containerd_setting:
    key: plugins."io.containerd.grpc.v1.cri".max_concurrent_downloads
    raw: true
    value: 6
    owner: tuning
'''

RETURN = r'''
changed:
  description: Whether the config file was changed (or would be, in check mode).
  returned: always
  type: bool
diff:
  description: Before and after text of the config, with headers, when run with C(--diff).
  returned: changed and diff mode
  type: dict
backup_file:
  description: Name of the backup file that was created.
  returned: changed and O(backup=true)
  type: str
config_version:
  description: The config version of the file.
  returned: success
  type: int
plugin:
  description: The CRI plugin id for that version.
  returned: success
  type: str
file:
  description:
    - The file of the config tree that was (or would be) written, O(path) or a drop-in it imports (see O(edit_in)).
  returned: success
  type: str
effects:
  description:
    - Each key the change set or removed, where it lives and whether containerd runs it (judged on the merged
      view of config.toml and its drop-ins, and confirmed with the node's C(containerd config dump) when there is
      a binary). A change that would not be in effect is refused, so a written change always has C(in_effect=true).
  returned: changed
  type: list
  elements: dict
  contains:
    key:
      description: The dotted key path in that file's layout.
      type: str
    file:
      description: The file that holds the key.
      type: str
    in_effect:
      description: Whether containerd will run this value.
      type: bool
    value:
      description: The value written (null for a removed key).
      type: raw
    removed:
      description: Whether the key was removed.
      type: bool
    shadowed_by:
      description: A later file that sets the same key (it decides the value).
      type: str
    effective_value:
      description: The value containerd runs when it differs from C(value).
      type: raw
    confirmed_by:
      description: V(config dump) when the node's containerd confirmed it, V(model) for top-level lists.
      type: str
  sample:
    - key: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata-qemu.runtime_type
      file: /etc/containerd/conf.d/99-nvidia.toml
      in_effect: true
      value: io.containerd.kata-qemu.v2
      removed: false
      confirmed_by: config dump
validated:
  description: How the candidate was checked by containerd (V(config dump)), or why it could not be.
  returned: changed and not check mode
  type: str
settings:
  version_added: 1.0.0
  description: With O(settings), what happened to each key, in the order given.
  returned: success and O(settings) given
  type: list
  elements: dict
  contains:
    key:
      description: The key as given.
      type: str
    key_path:
      description: Its path in the file.
      type: list
      elements: str
    value:
      description: Its value after the run (null when absent).
      type: raw
    restored:
      description: Keys put back to their prior values.
      type: list
      elements: str
    kept:
      description: Keys left as they are (another owner or the operator changed them since, or never this owner's).
      type: list
      elements: str
  sample:
    - {key: cri.enable_cdi, key_path: [plugins, io.containerd.grpc.v1.cri, enable_cdi], value: true, restored: []}
key_path:
  description: The key's path in the file, one element per table.
  returned: success and O(key) given
  type: list
  elements: str
  sample: ["plugins", "io.containerd.grpc.v1.cri", "enable_cdi"]
value:
  description: The key's value after the run (null when absent).
  returned: success and O(key) given
  type: raw
restored:
  description: Keys put back to their prior values (with O(settings), of all of them).
  returned: success
  type: list
  elements: str
owner:
  description: The ledger owner.
  returned: success
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.secrets import mark_secret_options
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    run_batch,
    run_transaction,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.setting import (
    SettingBatch,
    apply_setting,
    setting_entries,
)


def main():
    argument_spec = dict(
        key=dict(type='str', no_log=False),
        settings=dict(type='list', elements='dict', options=dict(
            key=dict(type='str', required=True, no_log=False),
            value=dict(type='raw'),
            state=dict(type='str', choices=['present', 'absent']),
            raw=dict(type='bool', default=False),
        )),
        value=dict(type='raw'),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        raw=dict(type='bool', default=False),
    )
    argument_spec.update(COMMON_ARGUMENT_SPEC)
    # a secret key's value is never logged or returned (the journal line AnsibleModule writes on start)
    argument_spec = mark_secret_options(argument_spec)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_one_of=[('key', 'settings')],
                           mutually_exclusive=[('settings', 'key'), ('settings', 'value')],
                           required_if=[('state', 'present', ('value', 'settings'), True)])
    params = module.params
    if params['settings'] is None:
        run_transaction(module, lambda doc, ledger, ctx: apply_setting(doc, ledger, ctx, params))
        return
    run_batch(module, setting_entries, SettingBatch)


if __name__ == '__main__':
    main()
