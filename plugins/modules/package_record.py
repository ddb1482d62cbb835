#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: package_record
short_description: Record the packages and repository files an install adds or overwrites, and undo the files
version_added: 1.3.0
description:
  - Keeps, per owner, one JSON record (O(record)) of what an install of packages added to the node, so that its
    uninstall removes only that and puts back what it overwrote. The C(gpu_toolkit) role uses it for the NVIDIA
    container toolkit.
  - Reads which of O(packages) are installed (C(dpkg-query) on nodes with apt, C(rpm) on nodes with dnf or yum;
    the node is looked at, no facts are needed) and which of O(files) exist.
  - O(state=present), before the install adds anything - records the packages that are not installed and the
    files that do not exist; for a file that exists with other bytes than the O(files[].content) the install is
    about to write, records its prior bytes, mode and owner, and the SHA-256 of O(files[].content). The record is a
    union with the one already there (a second run keeps what the first one added) and is written only when it
    changes, atomically and under a lock. A package or file that was there before is never recorded as added.
  - O(state=absent) - after the packages the record names are removed (with M(ansible.builtin.package)) - puts
    each overwritten file's prior bytes back (one rename, prior mode and owner), removes the files the install
    created, then deletes the record; a failure keeps the record, so the next run finishes. A file the install
    overwrote that was changed since (it holds neither what the install wrote nor what was there before) is not
    overwritten - the module fails naming it before anything is changed, unless O(keep_changed).
  - O(state=query) only reads (the packages installed, the files there, the record, the overwritten files changed
    since).
  - 'Reads records written by release 1.2.0''s C(gpu_toolkit) role (C({"packages": [...], "files": [...]})); the key
    C(replaced) is added to the record only when a file was overwritten.'
attributes:
  check_mode:
    support: full
    details: Reports the record it would write, the files it would put back or remove; writes nothing.
  diff_mode:
    support: full
    details: The record before and after (prior bytes of overwritten files shown by their SHA-256).
  platform:
    platforms: posix
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
author:
  - nodeguard maintainers (@nodeguard)
options:
  owner:
    description:
      - Whose record it is (the C(gpu_toolkit) role's C(gpu_toolkit_owner)).
    type: str
    required: true
  state_dir:
    description:
      - nodeguard's state folder; holds the default O(record). Created (mode 0700) by O(state=present) when the
        record is written.
    type: path
    default: /var/lib/nodeguard
  record:
    description:
      - The record file. Default C(<state_dir>/gpu_toolkit-<owner>.json), where release 1.2.0's C(gpu_toolkit)
        role keeps it.
    type: path
  state:
    description:
      - V(present) records what the install is about to add; V(absent) undoes the recorded files and deletes the
        record; V(query) reads only.
    type: str
    choices: [present, absent, query]
    default: present
  packages:
    description:
      - The packages the install installs. A version pin (C(name=1.2-1), C(name>=1.2)) is dropped; the package
        database is asked for the name.
    type: list
    elements: str
    default: []
  files:
    description:
      - The repository files the install writes (apt source, signing key, yum repository file).
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The file.
        type: path
        required: true
      content:
        description:
          - The text the install writes there. An existing file with other bytes is recorded as overwritten, with
            its prior bytes; one with the same bytes is not recorded (it stays on uninstall).
          - Omitted - the install writes the file only where none exists (M(ansible.builtin.get_url) without
            C(force)); an existing file is not recorded.
        type: str
      package_manager:
        description:
          - The file belongs to this package manager's repository (V(apt), or V(yum) for dnf and yum); on a node
            with another one the entry is ignored. Omitted - every node.
        type: str
        choices: [apt, yum]
  keep_changed:
    description:
      - With O(state=absent), a file the install overwrote that was changed since is kept as it is, and its prior
        content is dropped with the record, instead of the module failing.
    type: bool
    default: false
  lock_timeout:
    description:
      - Seconds to wait for the record's lock, held by another run for the same owner.
    type: float
    default: 30
notes:
  - The record holds the prior bytes of overwritten files (base64); it is written with mode 0600.
  - A created file is removed on O(state=absent) whatever it holds now, as release 1.2.0 did.
seealso:
  - module: ansible.builtin.package
'''

EXAMPLES = r'''
- name: Record what the toolkit install adds, before adding it
  nodeguard.containerd.package_record:
    owner: gpu_toolkit   # record: /var/lib/nodeguard/gpu_toolkit-gpu_toolkit.json
    packages: [nvidia-container-toolkit=1.17.8-1]
    files:
      - path: /etc/apt/keyrings/nvidia-container-toolkit.asc   # fetched only where missing
        package_manager: apt
      - path: /etc/apt/sources.list.d/nvidia-container-toolkit.list
        package_manager: apt
        content: "deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.asc] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n"
  register: toolkit_record
  become: true

- name: Read the record and the packages installed
  nodeguard.containerd.package_record:
    owner: gpu_toolkit
    state: query
    packages: [nvidia-container-toolkit]
  register: toolkit_record
  become: true

- name: Remove the packages the install added
  ansible.builtin.package:
    name: "{{ toolkit_record.packages }}"
    state: absent
  when: toolkit_record.packages | length > 0
  become: true

- name: Put back the files it overwrote, remove those it created, then the record
  nodeguard.containerd.package_record:
    owner: gpu_toolkit
    state: absent
  become: true
'''

RETURN = r'''
record:
  description: The record file (O(record), or its default).
  returned: always
  type: str
  sample: /var/lib/nodeguard/gpu_toolkit-gpu_toolkit.json
recorded:
  description:
    - Whether there is a record - after the call with O(state=present) (in check mode - would be), before it
      otherwise.
  returned: always
  type: bool
package_manager:
  description: The node's package manager - V(apt), V(yum) (dnf or yum) or V(other).
  returned: state is present or query
  type: str
  sample: apt
package_db:
  description: The package database asked - V(dpkg) or V(rpm).
  returned: state is present or query
  type: str
  sample: dpkg
installed:
  description: The names of O(packages) that are installed (version pins dropped).
  returned: state is present or query
  type: list
  elements: str
not_installed:
  description: The names of O(packages) that are not installed.
  returned: state is present or query
  type: list
  elements: str
files_listed:
  description: The paths of O(files) that apply to this node's package manager.
  returned: state is present or query
  type: list
  elements: str
existing_files:
  description: Those of RV(files_listed) that exist.
  returned: state is present or query
  type: list
  elements: str
packages:
  description: The packages the record names (after the call with O(state=present)) - those uninstall removes.
  returned: state is present or query
  type: list
  elements: str
files:
  description: The files the record names as created by the install.
  returned: state is present or query
  type: list
  elements: str
replaced:
  description: The files the record names as overwritten by the install (their prior bytes are in the record).
  returned: state is present or query
  type: list
  elements: str
unrecorded:
  description:
    - What is on the node and not in the record - C(packages) (of O(packages), installed) and C(files) (of
      RV(files_listed), existing). Uninstall keeps these.
  returned: state is present or query
  type: dict
  sample: {packages: [nvidia-container-toolkit-base], files: [/etc/apt/keyrings/nvidia-container-toolkit.asc]}
changed_since:
  description:
    - The files the install overwrote that were changed since (they hold neither what it wrote nor what was there
      before) - O(state=absent) refuses them unless O(keep_changed). Lets a caller stop before it removes anything.
  returned: state=query
  type: list
  elements: str
added:
  description: What this call added to the record - C(packages), C(files) (created) and C(replaced) (overwritten).
  returned: state=present
  type: dict
  sample: {packages: [nvidia-container-toolkit], files: [/etc/apt/sources.list.d/nvidia-container-toolkit.list], replaced: []}
removed:
  description: The created files removed (or, in check mode, that would be).
  returned: state=absent
  type: list
  elements: str
restored:
  description: The overwritten files whose prior bytes were put back.
  returned: state=absent
  type: list
  elements: str
kept_changed:
  description: Overwritten files changed since, kept as they are (O(keep_changed)).
  returned: state=absent
  type: list
  elements: str
'''

import os
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import LockTimeout
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.package_record import (
    RecordError,
    diff_of,
    query,
    record_lock,
    record_present,
    undo_files,
)


def run_state(module):
    params = module.params
    if params['state'] == 'query':
        return query(params)
    if params['state'] == 'present':
        return record_present(params, module.check_mode)
    return undo_files(params, module.check_mode)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            owner=dict(type='str', required=True),
            state_dir=dict(type='path', default='/var/lib/nodeguard'),
            record=dict(type='path'),
            state=dict(type='str', default='present', choices=['present', 'absent', 'query']),
            packages=dict(type='list', elements='str', default=[]),
            files=dict(type='list', elements='dict', default=[], options=dict(
                path=dict(type='path', required=True),
                content=dict(type='str'),
                package_manager=dict(type='str', choices=['apt', 'yum']),
            )),
            keep_changed=dict(type='bool', default=False),
            lock_timeout=dict(type='float', default=30.0),
        ),
        supports_check_mode=True,
    )
    if not module.params['owner'].strip() or '/' in module.params['owner']:
        module.fail_json(msg='owner %r is not a name: it names the record file. Fix: give a name without "/", '
                             'for example gpu_toolkit.' % module.params['owner'])
    module.params['record'] = record = module.params['record'] or os.path.join(
        module.params['state_dir'], 'gpu_toolkit-%s.json' % module.params['owner'])
    # query reads only; absent without a record has nothing to lock (no state folder is created for it)
    writes = not module.check_mode and (module.params['state'] == 'present'
                                        or (module.params['state'] == 'absent' and os.path.exists(record)))
    lock = None
    try:
        lock = record_lock(record, module.params['lock_timeout'], create=writes)
        if lock is not None:
            lock.acquire()
        result = run_state(module)
    except (RecordError, LockTimeout) as exc:
        module.fail_json(msg=str(exc), record=record)
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s: %s' % (getattr(exc, 'filename', None) or record, exc), record=record,
                         exception=traceback.format_exc())
    finally:
        if lock is not None:
            lock.release()
    if module._diff and result['changed']:
        result['diff'] = diff_of(result, record)
    result.pop('before', None)
    result.pop('after', None)
    module.exit_json(record=record, **result)


if __name__ == '__main__':
    main()
