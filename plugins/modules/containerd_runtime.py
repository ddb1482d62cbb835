#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_runtime
short_description: Add, change or remove a containerd CRI runtime handler, undoably
version_added: 0.1.0
description:
  - Adds a runtime handler (for example C(nvidia) or C(kata-qemu)) to containerd's CRI plugin in
    C(config.toml), changes keys of an existing one, or removes one, on behalf of an O(owner).
  - Finds the runtimes table where the file's config version keeps it
    (C(plugins."io.containerd.grpc.v1.cri".containerd.runtimes) in version 2,
    C(plugins."io.containerd.cri.v1.runtime".containerd.runtimes) in version 3 and in version 4, read by containerd 2.3).
  - Records in a ledger which tables the owner created and, for keys it changed in tables it did not
    create, what was there before. O(state=absent) deletes only tables the owner created and puts back
    prior values elsewhere, so removing an C(nvidia) change that only added C(BinaryName) to C(runc)
    leaves C(runc) whole.
  - Keeps comments, order, indentation and quoting; adding then removing the same runtime gives back
    the original bytes.
  - Every write is validated (built-in checks and the node's C(containerd config dump)) and atomic.
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
  name:
    description:
      - The runtime handler name (the RuntimeClass C(handler)), for example V(nvidia) or V(kata-qemu).
      - Letters, digits, C(-), C(_) and C(.) only, at most 63 characters.
      - One of O(name) and O(runtimes) is required.
    type: str
  runtimes:
    description:
      - Several runtimes in one call, each a dict of the keys one runtime takes (O(name), O(state),
        O(runtime_type), O(runtime_path), O(options), O(settings), O(inherit), O(default), O(force)).
      - One lock, one candidate, one validation and one write of the file for all of them, with the same text
        and the same ledger records as one call per runtime, in the order given (so either form undoes the other).
      - All entries have one O(state) (an entry without one takes the module's); a runtime given twice is refused.
      - When the runtimes would not all be written to one file (one is defined in a drop-in that decides it),
        each is its own transaction, as separate calls would be.
      - Mutually exclusive with O(name), O(runtime_type), O(runtime_path), O(options), O(settings), O(inherit)
        and O(default).
    type: list
    elements: dict
    version_added: 1.0.0
    suboptions:
      name:
        description: The runtime handler name, as O(name).
        type: str
        required: true
      state:
        description: As O(state); default the module's O(state).
        type: str
        choices: [present, absent]
      runtime_type:
        description: As O(runtime_type).
        type: str
      runtime_path:
        description: As O(runtime_path).
        type: path
      options:
        description: As O(options).
        type: dict
      settings:
        description: As O(settings).
        type: dict
      inherit:
        description: As O(inherit).
        type: str
      default:
        description: As O(default).
        type: bool
      force:
        description: As O(force); default the module's O(force).
        type: bool
  state:
    description:
      - V(present) creates the runtime or sets the given keys of an existing one.
      - V(absent) undoes what O(owner) did to this runtime; a runtime the owner did not create is only
        deleted with O(force=true).
    type: str
    choices: [present, absent]
    default: present
  runtime_type:
    description:
      - The runtime's C(runtime_type). A new runtime gets V(io.containerd.runc.v2) when this is not given;
        an existing runtime's type is changed only when this is given.
    type: str
  runtime_path:
    description:
      - The runtime's C(runtime_path) (the shim binary), for example C(/opt/kata/bin/containerd-shim-kata-v2).
    type: path
  options:
    description:
      - Keys merged into the runtime's C(options) table, for example C(BinaryName), C(ConfigPath),
        C(SystemdCgroup). Keys not given are left as they are.
    type: dict
  settings:
    description:
      - Other keys of the runtime table, for example C(privileged_without_host_devices),
        C(pod_annotations), C(container_annotations), C(snapshotter), C(base_runtime_spec).
      - Use O(runtime_type), O(runtime_path) and O(options) for those keys.
    type: dict
  inherit:
    description:
      - For a new runtime, the runtime whose table (with its C(options)) is copied first, so a new
        C(nvidia) runtime keeps C(SystemdCgroup = true).
      - Default is the current default runtime, else C(runc). V(none) copies nothing.
    type: str
  default:
    description:
      - V(true) makes this runtime the CRI default (C(default_runtime_name)); the previous default is
        recorded and put back when the runtime is removed.
      - V(false) undoes this owner's change of the default.
      - Not given leaves the default alone.
    type: bool
  force:
    description:
      - With O(state=absent), delete a runtime that O(owner) did not create (or that is the default because
        someone else made it so, together with the C(default_runtime_name) key).
    type: bool
    default: false
seealso:
  - module: nodeguard.containerd.containerd_setting
  - module: nodeguard.containerd.containerd_imports
  - module: nodeguard.containerd.containerd_baseline
'''

EXAMPLES = r'''
- name: Add the NVIDIA runtime, inheriting the default runtime's settings (SystemdCgroup and all)
  nodeguard.containerd.containerd_runtime:
    name: nvidia
    owner: gpu_toolkit
    options:
      BinaryName: /usr/bin/nvidia-container-runtime
  notify: Restart containerd

- name: Make it the default runtime; the previous default is recorded
  nodeguard.containerd.containerd_runtime:
    name: nvidia
    owner: gpu_toolkit
    default: true

- name: Point runc at the NVIDIA runtime (what the toolkit does when its runtime name is runc)
  nodeguard.containerd.containerd_runtime:
    name: runc
    owner: gpu_toolkit
    options:
      BinaryName: /usr/bin/nvidia-container-runtime

- name: Undo it - runc keeps its table and SystemdCgroup, only BinaryName goes
  nodeguard.containerd.containerd_runtime:
    name: runc
    owner: gpu_toolkit
    state: absent

- name: A kata handler as kata-deploy writes it
  nodeguard.containerd.containerd_runtime:
    name: kata-qemu
    owner: coco
    runtime_type: io.containerd.kata-qemu.v2
    runtime_path: /opt/kata/bin/containerd-shim-kata-v2
    inherit: none
    settings:
      privileged_without_host_devices: true
      pod_annotations: ["io.katacontainers.*"]
    options:
      ConfigPath: /opt/kata/share/defaults/kata-containers/configuration-qemu.toml
    backup: true

- name: The kata handlers in one call (one validation and one write for all of them)
  nodeguard.containerd.containerd_runtime:
    owner: coco
    runtimes:
      - name: kata-qemu
        runtime_type: io.containerd.kata-qemu.v2
        runtime_path: /opt/kata/bin/containerd-shim-kata-v2
        inherit: none
        options:
          ConfigPath: /opt/kata/share/defaults/kata-containers/configuration-qemu.toml
      - name: kata-clh
        runtime_type: io.containerd.kata-clh.v2
        runtime_path: /opt/kata/bin/containerd-shim-kata-v2
        inherit: none
        options:
          ConfigPath: /opt/kata/share/defaults/kata-containers/configuration-clh.toml

- name: Remove them, in one call
  nodeguard.containerd.containerd_runtime:
    owner: coco
    state: absent
    runtimes:
      - name: kata-qemu
      - name: kata-clh

- name: Remove the NVIDIA runtime; the previous default comes back
  nodeguard.containerd.containerd_runtime:
    name: nvidia
    owner: gpu_toolkit
    state: absent
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
  sample: /etc/containerd/config.toml.2231.2026-11-29@10:12:01~
config_version:
  description: The config version of the file.
  returned: success
  type: int
  sample: 2
plugin:
  description: The CRI plugin id that holds the runtimes for that version.
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
  sample: io.containerd.grpc.v1.cri
runtime:
  description: The runtime's table after the change (null when it no longer exists).
  returned: success and O(name) given
  type: dict
  sample: {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": true, "BinaryName": "/usr/bin/nvidia-container-runtime"}}
default_runtime_name:
  description: The CRI default runtime after the change (null when the file does not set one).
  returned: success
  type: str
  sample: runc
created:
  description: Whether this run created the runtime table (with O(runtimes), any of them).
  returned: O(state=present)
  type: bool
removed:
  description: Whether this run deleted the runtime table (with O(runtimes), any of them).
  returned: O(state=absent)
  type: bool
restored:
  description: Keys put back to their prior values (with O(runtimes), of all of them).
  returned: O(state=absent)
  type: list
  elements: str
kept:
  description:
    - Keys the owner had changed that someone changed again since; they were left as they are (with O(runtimes),
      of all of them).
  returned: O(state=absent)
  type: list
  elements: str
runtimes:
  version_added: 1.0.0
  description: With O(runtimes), what happened to each runtime, in the order given.
  returned: success and O(runtimes) given
  type: list
  elements: dict
  contains:
    name:
      description: The runtime handler name.
      type: str
    state:
      description: V(present) or V(absent).
      type: str
    runtime:
      description: The runtime's table after the change (null when it no longer exists).
      type: dict
    created:
      description: Whether this run created the runtime table (V(present)).
      type: bool
    removed:
      description: Whether this run deleted the runtime table (V(absent)).
      type: bool
    restored:
      description: Keys of this runtime put back to their prior values (V(absent)).
      type: list
      elements: str
    kept:
      description: Keys of this runtime left as someone changed them since (V(absent)).
      type: list
      elements: str
  sample:
    - {"name": "kata-qemu", "state": "present", "created": true,
       "runtime": {"runtime_type": "io.containerd.kata-qemu.v2", "runtime_path": "/opt/kata/bin/containerd-shim-kata-v2"}}
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
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import (
    RUNTIME_ENTRY_OPTIONS,
    RuntimeBatch,
    apply_runtime,
    batch_entries,
)

ONE_RUNTIME = ('name', 'runtime_type', 'runtime_path', 'options', 'settings', 'inherit', 'default')


def main():
    # one runtime's keys are those of an entry of runtimes (name and force: optional, force defaults to false)
    argument_spec = dict(
        RUNTIME_ENTRY_OPTIONS,
        name=dict(type='str'),
        force=dict(type='bool', default=False),
        runtimes=dict(type='list', elements='dict', options=dict(
            RUNTIME_ENTRY_OPTIONS, state=dict(type='str', choices=['present', 'absent']))),
        state=dict(type='str', default='present', choices=['present', 'absent']),
    )
    argument_spec.update(COMMON_ARGUMENT_SPEC)
    # options or settings that hold a secret (secret_keys) are never logged or returned as given
    argument_spec = mark_secret_options(argument_spec)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_one_of=[('name', 'runtimes')],
                           mutually_exclusive=[('runtimes', key) for key in ONE_RUNTIME])
    params = module.params
    if params['runtimes'] is None:
        run_transaction(module, lambda doc, ledger, ctx: apply_runtime(doc, ledger, ctx, params))
        return
    run_batch(module, batch_entries, RuntimeBatch)


if __name__ == '__main__':
    main()
