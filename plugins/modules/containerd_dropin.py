#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_dropin
short_description: Write a whole containerd drop-in file for an owner, validated and atomic; remove it only when it is that owner's
version_added: 1.0.0
description:
  - O(state=present) writes O(content) to the drop-in O(dropin), only when its bytes or mode differ. The new file
    goes to a temporary file beside it, is checked with the node's C(containerd --config <candidate> config dump)
    (O(validate)) and, when the tree of O(path) loads the drop-in already, with nodeguard's checks of that tree with
    the candidate in its place; only then is it renamed over the drop-in (a crash leaves the old file or the new
    one).
  - The drop-in's nodeguard ledger records that O(owner) wrote it, before the rename. When its folder is missing
    and O(create_folder=true), the folder is created and the folder's ledger records that O(owner) created it.
  - O(state=absent) removes the drop-in only when the ledger says O(owner) wrote it and no plain C(imports) entry
    of the tree of O(path) still names it (another owner still importing it keeps it; a dangling import would stop
    containerd); a drop-in O(owner) took over is put back as it was instead (see the notes). Then the folder, when
    O(owner) created it and it is empty.
  - The import itself is M(nodeguard.containerd.containerd_imports)' job - write the drop-in, then import it; on
    uninstall remove the import, then the drop-in.
  - Takes config.toml's lock, so it waits for, and is waited for by, the editing modules.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - nodeguard.containerd.common.secrets
attributes:
  check_mode:
    support: full
    details: Reports what would change; writes no file, ledger, folder or lock file.
  diff_mode:
    support: full
  platform:
    platforms: posix
options:
  dropin:
    description:
      - The drop-in file (absolute path). One of O(dropin) and O(dropins) is required.
    type: path
  dropins:
    description:
      - With O(state=absent), several drop-ins removed in one call, in the order given, each as O(dropin) would be
        (a drop-in that is not O(owner)'s, or is still imported, is kept; the folder goes after the last of its
        files). RV(dropins) has the result of each.
    type: list
    elements: path
    version_added: 1.0.0
  content:
    description:
      - The whole content of the drop-in (TOML). Required with O(state=present).
    type: str
  state:
    description:
      - V(present) writes the drop-in, V(absent) removes it when O(owner) wrote it.
    type: str
    choices: [present, absent]
    default: present
  owner:
    description:
      - The ledger owner (the role or tool the drop-in belongs to).
    type: str
    default: nodeguard
  mode:
    description:
      - Octal permissions of the drop-in.
    type: raw
    default: '0644'
  create_folder:
    description:
      - Create the drop-in's folder when it is missing (its parent must exist), recorded as O(owner)'s so that
        O(state=absent) removes it again once it is empty.
    type: bool
    default: true
  path:
    description:
      - containerd's main config file, whose tree the drop-in belongs to (its lock is taken; its imports decide
        whether the drop-in is loaded, or still imported on removal).
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  state_dir:
    description:
      - Folder of the nodeguard ledgers (C(<state_dir>/ledger/)), as for the editing modules.
    type: path
    default: /var/lib/nodeguard
  validate:
    description:
      - V(auto) runs the node's C(containerd --config <candidate> config dump) (the drop-in alone); V(none) skips it;
        any other value is a command with C(%s) for the candidate file. V(load) is taken as V(auto) here.
    type: str
    default: auto
  backup:
    description:
      - Keep a timestamped copy of the drop-in before it is replaced.
    type: bool
    default: false
  lock_timeout:
    description:
      - Seconds to wait for config.toml's lock held by another nodeguard task.
    type: float
    default: 30
  containerd_bin:
    description:
      - The node's containerd binary; by default C(containerd) in PATH or the usual folders.
    type: path
  containerd_version:
    description:
      - The containerd version that reads the tree, for nodes without a containerd binary (it decides how imports
        resolve).
    type: str
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
notes:
  - A file at O(dropin) that no owner's ledger record says nodeguard wrote (a site's own drop-in) is taken over;
    its bytes, mode and file owner are kept in O(owner)'s ledger record, and the file is replaced with O(content)
    with a warning naming it (one that already has O(content) and O(mode) is left as it is). O(state=absent) then
    puts that file back, atomically, instead of removing it (RV(restored)), so an install and an uninstall give
    back the original bytes. While another owner still holds the file (it wrote the same O(content) since), the
    file is kept and that owner puts it back when it leaves.
  - A drop-in changed or removed by someone else since nodeguard wrote it is still replaced (O(state=present)),
    removed or put back (O(state=absent)), each with a warning that names the file; O(backup=true) keeps a copy
    of what a write replaces.
  - O(state=absent) never removes a file O(owner) did not write.
seealso:
  - module: nodeguard.containerd.containerd_imports
'''

EXAMPLES = r'''
- name: Write the nydus snapshotter drop-in, then import it
  nodeguard.containerd.containerd_dropin:
    dropin: /etc/containerd/config.toml.d/nydus-snapshotter.toml
    owner: coco
    content: |
      version = 2
      [proxy_plugins.nydus]
        type = "snapshot"
        address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
  become: true

- name: Import it
  nodeguard.containerd.containerd_imports:
    imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml]
    owner: coco
  become: true

- name: Uninstall - the import first, then the file
  nodeguard.containerd.containerd_imports:
    imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml]
    owner: coco
    state: absent
  become: true

- name: Remove the drop-in (and its folder, if coco created it and it is empty)
  nodeguard.containerd.containerd_dropin:
    dropin: /etc/containerd/config.toml.d/nydus-snapshotter.toml
    owner: coco
    state: absent
  become: true
'''

RETURN = r'''
dropin:
  description: The drop-in (absolute path).
  returned: when O(dropin) is given
  type: str
dropins:
  description:
    - With O(dropins), the result of each drop-in in the order given (C(dropin), C(changed), C(removed), C(kept),
      C(imported_by), C(folder_removed), C(restored), C(msg)); the top-level C(removed), C(restored), C(kept) and
      C(folder_removed) are true when true of any, C(imported_by) lists the files of all of them.
  returned: when O(dropins) is given
  type: list
  elements: dict
  sample:
    - {dropin: /etc/containerd/config.toml.d/nydus-snapshotter.toml, changed: true, removed: true, restored: false,
       kept: false, imported_by: [], folder_removed: false}
owned:
  description: The ledger says O(owner) wrote the drop-in.
  returned: state=present
  type: bool
validated:
  description: How the candidate was checked (null when nothing was written).
  returned: state=present
  type: str
  sample: containerd config dump and the tree of /etc/containerd/config.toml
folder_created:
  description: The folder was (or would be) created.
  returned: state=present
  type: bool
backup_file:
  description: The backup, with O(backup=true).
  returned: when a backup was made
  type: str
removed:
  description: The drop-in was (or would be) removed.
  returned: state=absent
  type: bool
restored:
  description:
    - The file O(owner) had taken over was (or would be) put back (its bytes, mode and file owner from before).
  returned: state=absent
  type: bool
  version_added: 1.3.0
kept:
  description: The drop-in is O(owner)'s but was kept, because RV(imported_by) still import it (or, for a file
    O(owner) took over, another owner still holds it).
  returned: state=absent
  type: bool
imported_by:
  description: Files whose plain C(imports) entry still names the drop-in.
  returned: state=absent
  type: list
  elements: str
folder_removed:
  description: The folder O(owner) created was (or would be) removed.
  returned: state=absent
  type: bool
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import remove, remove_all, write
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    Context,
    require_tomlkit,
    run_logic,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.secrets import mark_secret_options

SHARED = ('path', 'state_dir', 'validate', 'backup', 'lock_timeout', 'containerd_bin', 'containerd_version', 'owner',
          'secret_keys')


def main():
    argument_spec = dict(
        dropin=dict(type='path'),
        dropins=dict(type='list', elements='path'),
        content=dict(type='str'),
        state=dict(type='str', default='present', choices=['present', 'absent']),
        mode=dict(type='raw', default='0644'),
        create_folder=dict(type='bool', default=True),
    )
    for key in SHARED:
        argument_spec[key] = dict(COMMON_ARGUMENT_SPEC[key])
    argument_spec = mark_secret_options(argument_spec)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True,
                           required_if=[('state', 'present', ['content']), ('state', 'present', ['dropin'])],
                           required_one_of=[('dropin', 'dropins')], mutually_exclusive=[('dropin', 'dropins')])
    require_tomlkit(module)
    ctx = Context(module, module.params['path'])
    run_logic(module, ctx, lambda: apply_dropin(module, ctx), 'containerd_dropin', subject=module.params['dropin'])


def apply_dropin(module, ctx):
    """The module's result: write the drop-in, or remove one or several."""
    if module.params['state'] == 'present':
        return write(module, ctx, module.params)
    if module.params['dropins'] is not None:
        return remove_all(module, ctx, module.params)
    return remove(module, ctx, module.params)


if __name__ == '__main__':
    main()
