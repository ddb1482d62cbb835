#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_imports
short_description: Manage the C(imports) list of a containerd config safely, per owner and containerd version
version_added: 0.1.0
description:
  - Adds entries (drop-in files or globs) to the top-level C(imports) array of containerd's C(config.toml), or
    removes them, on behalf of an O(owner).
  - Each listed entry ends up in the list exactly once. Duplicates of any entry are folded into the first
    occurrence whenever the file is written (and always for the listed entries), so the repeated
    install/uninstall loop of the Confidential Containers operator can no longer pile up copies.
  - Entries are compared the way the node's containerd reads them - a relative entry is resolved against the
    config file's folder - so C(conf.d/nydus.toml) and C(/etc/containerd/conf.d/nydus.toml) are the same entry.
    containerd 1.6 expands a relative B(glob) against its working folder (C(/) under systemd) instead, so there
    C(conf.d/*.toml) and C(/etc/containerd/conf.d/*.toml) are two entries (neither is folded into the other) and
    the relative one loads nothing from the config's folder; such an entry is warned of, with its absolute
    spelling as the fix.
  - Records in a ledger which entries an owner added and whether the C(imports) key existed before, so
    O(state=absent) removes only what the owner added (an entry another owner still imports is kept) and
    removing the last added entry deletes the key again - adding and removing gives back the original bytes.
  - Refuses to add an entry whose file does not exist (containerd refuses to start then), unless
    O(require_exists=false). O(prune_missing=true) drops entries whose file is gone, to repair a node.
  - Edits the C(imports) of one file, O(path) (or the drop-in O(edit_in) names). An entry of a drop-in whose
    file is gone is reported in RV(missing) and RV(missing_in) with a warning; asked to remove it
    (O(prune_missing=true), or O(state=absent) naming it) the task fails, naming the drop-in and the call that
    removes it (O(edit_in) set to that drop-in).
  - On containerd older than 2.0 an imported file's C(plugins.<id>) table replaces the main file's table for
    that id whole (no merge). Adding an import that would so lose the main file's settings (for example
    the C(runc) runtime and C(SystemdCgroup)) fails, naming the file, the plugin id and what would be lost,
    unless O(allow_plugin_override=true). containerd 2.x merges plugin tables, so there it is fine.
  - Keeps the file's formatting - a multi-line array stays multi-line with its indentation, entries keep
    their quoting, a comment on the C(imports) line survives.
  - A file that is not valid TOML (for example C(imports = [ , ])) is refused with the parser's line and
    column; nothing is written (M(nodeguard.containerd.containerd_baseline) can restore a known-good copy).
  - Every write is validated (built-in checks of the merged config and the node's C(containerd config dump))
    and atomic.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - nodeguard.containerd.common
  - nodeguard.containerd.common.secrets
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  imports:
    description:
      - Files or globs to import, as they should be written in the file, for example
        V(/etc/containerd/conf.d/*.toml) or V(/etc/containerd/config.toml.d/nydus-snapshotter.toml).
      - A relative entry is relative to the folder of O(path), as containerd reads it; except a relative glob on
        containerd 1.6, which containerd expands against its working folder (C(/)). Write globs absolute.
      - An entry listed twice (also as two spellings of the same path) counts once.
      - May be empty, for example to only repair a node with O(prune_missing=true).
    type: list
    elements: str
    default: []
  state:
    description:
      - V(present) makes each listed entry appear once. Entries not yet in the list are added at O(position),
        in the given order; an entry placed next to listed entries that are already present goes where it
        keeps the listed order. Entries already present stay where they are.
      - V(absent) removes each listed entry (every occurrence), unless another owner recorded in the ledger
        still imports it; that one is kept and reported in RV(kept).
      - An entry that no owner recorded (written by hand or by another tool) is kept too (in RV(kept), with a
        warning), unless its file is missing (containerd cannot start with it).
    type: str
    choices: [present, absent]
    default: present
  position:
    description:
      - Where new entries go with O(state=present). containerd merges the main file first, then the imports
        in the listed order, later files winning.
      - V(append) adds them at the end (they win over earlier imports), V(prepend) at the start.
    type: str
    choices: [append, prepend]
    default: append
  require_exists:
    description:
      - A non-glob entry being added must name an existing file; the task fails otherwise, because containerd
        refuses to start when an imported file is missing.
      - V(false) adds it anyway, with a warning. The node's C(containerd config dump) on containerd 1.x also
        refuses a missing import, so set O(validate=none) as well when the file will only be created later.
      - A glob that matches nothing is always fine.
    type: bool
    default: true
  prune_missing:
    description:
      - Also remove entries (of any owner) whose non-glob file no longer exists, and their ledger records.
        This repairs a node that containerd refuses to start. Globs are never pruned.
      - Only entries of the file edited; an entry of a drop-in whose file is gone fails the task, naming the
        drop-in (run again with O(edit_in) set to it).
      - With O(state=present) the listed entries are never pruned.
    type: bool
    default: false
  allow_plugin_override:
    description:
      - On containerd older than 2.0, allow an import whose C(plugins.<id>) table replaces the main file's
        table whole (for example a drop-in that deliberately carries the whole CRI plugin table).
      - The other checks still run; a result whose default runtime has no table is still refused.
    type: bool
    default: false
notes:
  - Restart containerd after a change (containerd has no reload); a handler that restarts once per play
    avoids systemd's start limit.
  - k3s and RKE2 regenerate C(config.toml) at every start; manage C(config.toml.tmpl) there.
seealso:
  - module: nodeguard.containerd.containerd_runtime
  - module: nodeguard.containerd.containerd_setting
  - module: nodeguard.containerd.containerd_baseline
'''

EXAMPLES = r'''
- name: Import the nydus snapshotter drop-in (once, however often the role runs)
  nodeguard.containerd.containerd_imports:
    imports:
      - /etc/containerd/config.toml.d/nydus-snapshotter.toml
    owner: coco
  notify: Restart containerd

- name: Read every drop-in in conf.d, before other imports (containerd 2.x default layout)
  nodeguard.containerd.containerd_imports:
    imports:
      - /etc/containerd/conf.d/*.toml
    position: prepend

- name: Uninstall - remove the entry before the file, so containerd never sees a dangling import
  nodeguard.containerd.containerd_imports:
    imports:
      - /etc/containerd/config.toml.d/nydus-snapshotter.toml
    owner: coco
    state: absent

- name: Repair a node left with duplicated and dangling imports
  nodeguard.containerd.containerd_imports:
    imports: []
    prune_missing: true
    backup: true

- name: Repair a drop-in that imports a file that is gone (the failure of the task above names it)
  nodeguard.containerd.containerd_imports:
    imports: []
    prune_missing: true
    edit_in: /etc/containerd/conf.d/50-nydus.toml

- name: Import a drop-in that carries the whole CRI plugin table on containerd 1.7 (replacement intended)
  nodeguard.containerd.containerd_imports:
    imports:
      - /etc/containerd/conf.d/99-nvidia.toml
    owner: gpu_toolkit
    allow_plugin_override: true
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
  description: The CRI plugin id for that config version.
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
imports:
  description: The C(imports) list after the change (empty when the file has no C(imports) key).
  returned: success
  type: list
  elements: str
  sample: ["/etc/containerd/config.toml.d/nydus-snapshotter.toml", "/opt/kata/containerd/config.d/kata-deploy.toml"]
added:
  description: Entries this run added.
  returned: success
  type: list
  elements: str
removed:
  description: Entries this run removed (O(state=absent), and entries dropped by O(prune_missing)).
  returned: success
  type: list
  elements: str
pruned:
  description: Entries dropped by O(prune_missing) because their file no longer exists.
  returned: success
  type: list
  elements: str
kept:
  description: Entries asked to be absent that were kept because another owner still imports them or no owner recorded them.
  returned: success
  type: list
  elements: str
duplicates_removed:
  description: Repeated entries that were folded into their first occurrence (one item per copy removed).
  returned: success
  type: list
  elements: str
  sample: ["/etc/containerd/config.toml.d/nydus-snapshotter.toml", "/etc/containerd/config.toml.d/nydus-snapshotter.toml"]
missing:
  description:
    - Non-glob entries of the final list whose file does not exist (containerd would refuse to start), then
      those of the drop-ins the list loads (RV(missing_in) says which drop-in holds each).
  returned: success
  type: list
  elements: str
missing_in:
  description: The entries of the drop-ins the list loads whose file does not exist, each with the drop-in that holds it.
  returned: success
  type: list
  elements: dict
  contains:
    file:
      description: The drop-in that holds the entry (run again with O(edit_in) set to it to remove the entry).
      type: str
    entry:
      description: The entry as written in that drop-in.
      type: str
warnings:
  description:
    - Warnings, for example an entry kept for another owner, entries whose file is missing (also in a drop-in),
      duplicates left for the next write, listed entries found in another order, or a relative glob that
      containerd 1.6 expands against its working folder.
  returned: when there are any
  type: list
  elements: str
owner:
  description: The ledger owner.
  returned: success
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    run_transaction,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import apply_imports


def main():
    argument_spec = dict(
        imports=dict(type='list', elements='str', default=[]),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        position=dict(type='str', default='append', choices=['append', 'prepend']),
        require_exists=dict(type='bool', default=True),
        prune_missing=dict(type='bool', default=False),
        allow_plugin_override=dict(type='bool', default=False),
    )
    argument_spec.update(COMMON_ARGUMENT_SPEC)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run_transaction(module, lambda doc, ledger, ctx: apply_imports(doc, ledger, ctx, module.params),
                    allow_plugin_override=module.params['allow_plugin_override'])


if __name__ == '__main__':
    main()
