#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_config
short_description: Install or remove one owner's containerd changes (drop-ins, imports, settings, runtimes) in one call
version_added: 1.0.0
description:
  - The edits of M(nodeguard.containerd.containerd_dropin), M(nodeguard.containerd.containerd_imports),
    M(nodeguard.containerd.containerd_setting) and M(nodeguard.containerd.containerd_runtime) for one O(owner), in one
    task and one module run, with the same text and the same ledger records as those modules write (so either form
    undoes the other).
  - O(state=present) first writes each of O(dropins) (only when its bytes or mode differ; validated with the node's
    C(containerd config dump); atomic; a file nothing imports yet changes nothing containerd runs), then makes
    O(imports), O(settings) and O(runtimes) in C(config.toml) in one transaction - one lock, one candidate, one
    validation, one write, one ledger update.
  - O(state=absent) undoes this owner's O(runtimes), O(settings) and O(imports) in one transaction (prior values put
    back, tables this owner created deleted, others' changes kept), then removes each of O(dropins) that the ledger
    says O(owner) wrote and that nothing imports any more, and the drop-in folder O(owner) created once it is empty.
  - A drop-in of O(dropins) whose new entry in O(imports) would replace a plugin table of C(config.toml) whole
    (containerd 1.x replaces a plugin table from an import instead of merging it) is refused before any file is
    written, in check mode too, with the same message as M(nodeguard.containerd.containerd_imports) gives. Write
    such a change with O(settings) or O(runtimes) instead, or move to containerd 2.x, which merges plugin tables.
  - Every state in between is one containerd loads. When the settings and runtimes would not all be written to
    C(config.toml) (a key decided by a drop-in, see O(edit_in)), each is its own transaction, as separate calls
    would be.
  - With O(state=present) a role's whole install can be this one call - O(baseline) taken first when the store
    has none yet, each runtime binary checked (O(check_binaries)), and what O(owner) added earlier and no longer
    asks for undone (O(exclusive)) - without a M(nodeguard.containerd.containerd_info) read of the ledgers, a
    check of the binaries or a M(nodeguard.containerd.containerd_baseline) call before it.
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
      - Writes no file, ledger or folder; imports of drop-ins this call would write are judged as if written.
      - An uninstall (O(state=absent)) whose changes are in more than one file (a drop-in and C(config.toml))
        is previewed file by file, each file's undo taken as done for the next, as the run then writes them.
      - With O(exclusive=true) the release is previewed too, on the files as they are (not on the install's
        preview); RV(changed), RV(released) and RV(diff) say what both transactions would do.
      - O(baseline) is not taken; RV(baseline) says whether it would be.
  diff_mode:
    support: full
    details: RV(diff) lists each file's before and after.
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) writes the drop-ins, then adds the imports, settings and runtimes.
      - V(absent) undoes what O(owner) did to the imports, settings and runtimes named (with O(release_all), to all
        of them the ledgers record), then removes the drop-ins.
    type: str
    choices: [present, absent]
    default: present
  dropins:
    description:
      - Whole drop-in files of O(owner), as M(nodeguard.containerd.containerd_dropin) writes and removes them.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: The drop-in file (absolute path).
        type: path
        required: true
      content:
        description: The whole content (TOML). Required with O(state=present).
        type: str
      mode:
        description: Octal permissions of the drop-in.
        type: raw
        default: '0644'
      create_folder:
        description:
          - Create the drop-in's folder when it is missing (recorded as O(owner)'s, removed again once empty).
        type: bool
        default: true
  imports:
    description:
      - Entries of C(config.toml)'s C(imports), as M(nodeguard.containerd.containerd_imports) takes them (each at
        most once; an entry another owner still imports is kept on O(state=absent)).
    type: list
    elements: str
    default: []
  position:
    description:
      - Where new O(imports) entries go (later files win when containerd merges them).
    type: str
    choices: [append, prepend]
    default: append
  require_exists:
    description:
      - Refuse to import a file that does not exist (containerd does not start with a missing import). A drop-in
        of O(dropins) exists by the time its import is written.
    type: bool
    default: true
  settings:
    description:
      - Keys set (and their prior values recorded), as the O(nodeguard.containerd.containerd_setting#module:settings)
        option of M(nodeguard.containerd.containerd_setting) takes them.
      - With O(state=absent), O(settings[].value) is not needed.
    type: list
    elements: dict
    default: []
    suboptions:
      key:
        description: A logical key (for example V(images.disable_snapshot_annotations)) or, with O(settings[].raw), a dotted TOML key.
        type: str
        required: true
      value:
        description: The value to set; required with O(state=present).
        type: raw
      raw:
        description: O(settings[].key) is a dotted TOML key as written in the file.
        type: bool
        default: false
  runtimes:
    description:
      - CRI runtime handlers, as the O(nodeguard.containerd.containerd_runtime#module:runtimes) option of
        M(nodeguard.containerd.containerd_runtime) takes them. With O(state=absent) only O(runtimes[].name) (and
        O(runtimes[].force)) matter.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The runtime handler name (letters, digits, C(-), C(_), C(.); at most 63 characters).
        type: str
        required: true
      runtime_type:
        description: The runtime's C(runtime_type); a new runtime gets V(io.containerd.runc.v2) when not given.
        type: str
      runtime_path:
        description: The runtime's C(runtime_path) (the shim binary).
        type: path
      options:
        description: Keys merged into the runtime's C(options) table (C(BinaryName), C(ConfigPath), ...).
        type: dict
      settings:
        description: Other keys of the runtime table (C(privileged_without_host_devices), C(pod_annotations), ...).
        type: dict
      inherit:
        description: For a new runtime, the runtime whose table is copied first; V(none) copies nothing.
        type: str
      default:
        description: V(true) makes it the CRI default (the previous default is put back on removal).
        type: bool
      force:
        description: With O(state=absent), delete the runtime even when O(owner) did not create it (false when not given).
        type: bool
  release_all:
    description:
      - With O(state=absent), also undo every runtime, setting and import that the ledgers of C(config.toml) and of
        the files it loads record for O(owner), whatever O(runtimes), O(settings) and O(imports) name. So an
        uninstall releases exactly what the owner added, without reading the ledgers first
        (M(nodeguard.containerd.containerd_info)) and without knowing the ledger's record format.
      - The runtime O(owner) made the CRI default goes first, so the prior default is back before the other tables
        go. Entries named in O(runtimes), O(settings) and O(imports) are undone as given. Drop-in files are
        removed only when listed in O(dropins).
      - RV(released) says what the ledgers recorded.
    type: bool
    default: false
  exclusive:
    description:
      - With O(state=present), O(owner)'s runtimes, settings and imports (a drop-in's import too, not its file)
        that this call no longer asks for are released. After the install's transaction, in the same module run,
        what the ledgers of C(config.toml) and of the files it loads record for O(owner) (as O(release_all) reads
        them) and the call does not name is undone, as O(state=absent) with O(release_all=true) would undo it -
        runtimes not in O(runtimes) (never forced; the one O(owner) made the CRI default first, so the prior default
        is back before its table goes), settings whose key O(settings) does not set, and imports not in O(imports).
      - Keys inside a runtime that O(runtimes) still names stay as they are, even those O(owner) set earlier and
        this call leaves out (an C(options) key dropped from the entry is not undone); of such a runtime only a
        change of C(default_runtime_name) can be undone (below).
      - A runtime it would release that is still the CRI default by another change (another owner's, or a hand
        edit) makes the module fail naming the runtime and O(exclusive); when that is known from the files as
        read, before anything is written. Fix it by making another runtime the default first, or keep the runtime
        by naming it in O(runtimes).
      - A setting is named when its key path is the one recorded, whatever the spelling (V(cri.enable_cdi) names
        C(plugins."io.containerd.grpc.v1.cri".enable_cdi) on a version 2 config, and the version 3 path on a
        version 3 one). An import is named in any spelling of the same file.
      - A runtime O(runtimes) names without O(runtimes[].default=true), whose change of C(default_runtime_name)
        the ledgers record for O(owner), gets that change undone (the default that was there before is back).
      - The release is a transaction of its own (validated, atomic, one per file that holds the records, drop-ins
        first), run only when the ledgers record something to undo, so a call that changes nothing writes and
        validates nothing. RV(released) says what was undone.
      - Drop-in files are never removed by it. Needs O(state=present); with O(state=absent) the module fails.
    type: bool
    default: false
    version_added: 1.1.0
  check_binaries:
    description:
      - With O(state=present), before anything is written (in check mode too), each runtime of O(runtimes) whose
        C(options.BinaryName) or O(runtimes[].runtime_path) is given must name an existing regular file that is
        executable (a symbolic link is judged by its target; a name without a folder is looked up in C(PATH) and
        the folders systemd gives containerd). Else the module fails naming the file, the key
        (C(runtimes[N].options.BinaryName)), the path and why, and writes nothing. A runtime whose binary is
        missing fails every container started through it.
      - Ignored with O(state=absent).
    type: bool
    default: false
    version_added: 1.1.0
  baseline:
    description:
      - With O(state=present), the baseline of the config tree taken before any file of this call is written, when
        the store holds none of that name yet, exactly as
        O(nodeguard.containerd.containerd_baseline#module:state=snapshot) of that module takes it (the same files,
        manifest and lock; the tree checked by the node's containerd, its load test too; a refused tree fails the
        module with nothing written). A baseline that exists is left alone (replacing it is left to
        O(nodeguard.containerd.containerd_baseline#module:overwrite) of that module).
      - Not taken in check mode; RV(baseline) says whether it would be. Ignored with O(state=absent).
      - Taking it makes RV(changed) true.
    type: dict
    version_added: 1.1.0
    suboptions:
      name:
        description: The baseline's name (its folder is C(<store>/<name>)); one name belongs to one config path.
        type: str
        required: true
      store:
        description: The folder that holds the baselines.
        type: path
        default: /var/lib/nodeguard/baselines
      include_imports:
        description: Also copy every file the config imports, as M(nodeguard.containerd.containerd_baseline) does.
        type: bool
        default: true
      protect:
        description:
          - Keys whose effective values the baseline records besides the default ones, as
            O(nodeguard.containerd.containerd_baseline#module:protect) of that module takes them.
        type: list
        elements: str
        default: []
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
notes:
  - One module run instead of four is what makes a role's converge and its no-op re-run fast; the checks are the
    same as those of the single-purpose modules.
seealso:
  - module: nodeguard.containerd.containerd_dropin
  - module: nodeguard.containerd.containerd_imports
  - module: nodeguard.containerd.containerd_setting
  - module: nodeguard.containerd.containerd_runtime
'''

EXAMPLES = r'''
- name: Nydus snapshotter and the kata handlers on containerd 1.x, in one call
  nodeguard.containerd.containerd_config:
    owner: coco
    dropins:
      - path: /etc/containerd/config.toml.d/nydus-snapshotter.toml
        content: |
          version = 2
          [proxy_plugins.nydus]
            type = "snapshot"
            address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
    imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml]
    settings:
      - key: images.disable_snapshot_annotations
        value: false
    runtimes:
      - name: kata-qemu
        runtime_type: io.containerd.kata-qemu.v2
        runtime_path: /opt/kata/bin/containerd-shim-kata-v2
        inherit: none
        settings:
          privileged_without_host_devices: true
          pod_annotations: ["io.katacontainers.*"]
        options:
          ConfigPath: /opt/kata/share/defaults/kata-containers/configuration-qemu.toml
  become: true
  notify: Restart containerd

- name: Remove all of it again (the prior value of disable_snapshot_annotations comes back)
  nodeguard.containerd.containerd_config:
    owner: coco
    state: absent
    dropins:
      - path: /etc/containerd/config.toml.d/nydus-snapshotter.toml
    imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml]
    settings:
      - key: images.disable_snapshot_annotations
    runtimes:
      - name: kata-qemu
  become: true

- name: Uninstall whatever owner nvidia recorded (runtimes, keys such as BinaryName in runc, settings, imports)
  nodeguard.containerd.containerd_config:
    owner: nvidia
    state: absent
    release_all: true
  become: true
  register: released

- name: Show the runtime tables the uninstall deleted
  ansible.builtin.debug:
    msg: "{{ released.released.tables }}"

- name: >-
    The GPU runtimes and CDI keys in one call: the baseline first when there is none, each BinaryName checked,
    and the runtimes and keys this owner added earlier and no longer lists put back
  nodeguard.containerd.containerd_config:
    owner: gpu_toolkit
    runtimes:
      - name: nvidia
        options:
          BinaryName: /usr/bin/nvidia-container-runtime
        default: true
      - name: nvidia-cdi
        options:
          BinaryName: /usr/bin/nvidia-container-runtime.cdi
    settings:
      - key: cri.enable_cdi
        value: true
    exclusive: true
    check_binaries: true
    baseline:
      name: default
  become: true
  register: gpu
  notify: Restart containerd

- name: Show what the call released (runtimes, tables, settings, imports no longer asked for)
  ansible.builtin.debug:
    msg: "{{ gpu.released }}; baseline taken now: {{ gpu.baseline.taken }}"
'''

RETURN = r'''
changed:
  description: Whether any file was changed (or would be, in check mode).
  returned: always
  type: bool
diff:
  description: Each changed file's before and after text, with headers, when run with C(--diff).
  returned: changed and diff mode
  type: list
  elements: dict
backup_file:
  description: The backup of C(config.toml), with O(backup=true).
  returned: config.toml changed and O(backup=true)
  type: str
file:
  description: The file of the config tree the transaction wrote (C(config.toml), or a drop-in that decides the keys).
  returned: O(imports), O(settings) or O(runtimes) given, or O(exclusive=true) undid something
  type: str
files:
  description: The files written, when the transaction wrote more than one.
  returned: more than one file written
  type: list
  elements: str
effects:
  description: Each key the transaction set or removed and whether containerd runs it (as M(nodeguard.containerd.containerd_runtime)).
  returned: changed
  type: list
  elements: dict
validated:
  description: How the candidate config was checked by containerd.
  returned: config.toml changed and not check mode
  type: str
config_version:
  description: The config version of C(config.toml).
  returned: O(imports), O(settings) or O(runtimes) given, or O(exclusive=true) undid something
  type: int
dropins:
  description:
    - Each drop-in's result, in the order given, as M(nodeguard.containerd.containerd_dropin) returns it
      (C(dropin), C(changed), and C(owned), C(validated), C(folder_created) with O(state=present), C(removed),
      C(kept), C(imported_by), C(folder_removed) with O(state=absent)).
  returned: always
  type: list
  elements: dict
  sample:
    - {dropin: /etc/containerd/config.toml.d/nydus-snapshotter.toml, changed: true, owned: true,
       validated: containerd config dump, folder_created: true}
imports:
  description: What happened to the imports.
  returned: O(imports) given
  type: dict
  contains:
    imports:
      description: The imports of C(config.toml) after the run.
      type: list
      elements: str
    added:
      description: Entries added.
      type: list
      elements: str
    removed:
      description: Entries removed.
      type: list
      elements: str
    kept:
      description: Entries left in place (another owner still imports them, or O(owner) never added them).
      type: list
      elements: str
    missing:
      description: Entries whose file does not exist.
      type: list
      elements: str
  sample: {imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml],
           added: [/etc/containerd/config.toml.d/nydus-snapshotter.toml], removed: [], kept: [], missing: []}
settings:
  description: What happened to each key, in the order given (as containerd_setting's RV(nodeguard.containerd.containerd_setting#module:settings)).
  returned: O(settings) given
  type: list
  elements: dict
runtimes:
  description: What happened to each runtime, in the order given (as containerd_runtime's RV(nodeguard.containerd.containerd_runtime#module:runtimes)).
  returned: O(runtimes) given
  type: list
  elements: dict
default_runtime_name:
  description: The CRI default runtime after the run.
  returned: O(runtimes) given, or O(exclusive=true) undid a runtime or a change of the default
  type: str
owner:
  description: The ledger owner.
  returned: success
  type: str
released:
  description:
    - What the ledgers recorded for O(owner) when the run began, all of which O(release_all) undid.
    - With O(exclusive=true), what the ledgers recorded for O(owner) when the run began and the call does not name
      (undone by the release, or in check mode previewed); empty lists when there was nothing to undo.
  returned: O(release_all=true) or O(exclusive=true)
  type: dict
  contains:
    runtimes:
      description:
        - The runtimes O(owner) added or changed (a table it created, or keys it set in one).
        - With O(exclusive=true), those not in O(runtimes), and those in it whose change of the default was undone.
      type: list
      elements: str
    tables:
      description: The runtimes whose table O(owner) created (deleted now).
      type: list
      elements: str
    settings:
      description: The settings O(owner) changed, as dotted keys of the file (their prior values are back).
      type: list
      elements: str
    imports:
      description: The imports O(owner) added.
      type: list
      elements: str
  sample: {runtimes: [nvidia, runc], tables: [nvidia], settings: ['plugins."io.containerd.grpc.v1.cri".enable_cdi'],
           imports: []}
baseline:
  description: The baseline of O(baseline).
  returned: O(baseline) given and O(state=present)
  type: dict
  version_added: 1.1.0
  contains:
    name:
      description: Its name.
      type: str
    store:
      description: The store that holds it.
      type: str
    folder:
      description: Its folder, C(<store>/<name>) (M(nodeguard.containerd.containerd_baseline)'s RV(nodeguard.containerd.containerd_baseline#module:baseline)).
      type: str
    taken:
      description: Whether this run took it (in check mode, whether it would); V(false) when it existed already.
      type: bool
    snapshot:
      description:
        - The folder of the snapshot in use (M(nodeguard.containerd.containerd_baseline)'s
          RV(nodeguard.containerd.containerd_baseline#module:snapshot)); V(null) in check mode when it would be taken.
      type: str
    created:
      description: When the snapshot in use was taken (UTC, ISO 8601); V(null) when there is none yet.
      type: str
  sample: {name: default, store: /var/lib/nodeguard/baselines, folder: /var/lib/nodeguard/baselines/default,
           taken: true, snapshot: /var/lib/nodeguard/baselines/default/20261129T101201.123456Z,
           created: '2026-11-29T10:12:01.123456Z'}
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.states import SNAPSHOT_OPTIONS, run_state
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import apply_set, params_as
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    Context,
    require_tomlkit,
    run_logic,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import RUNTIME_ENTRY_OPTIONS
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.secrets import mark_secret_options


# containerd_baseline's own defaults for the options the baseline option leaves out
SNAPSHOT_DEFAULTS = dict((key, spec['default']) for key, spec in SNAPSHOT_OPTIONS.items())


# what containerd_baseline says when it refuses the tree itself; its fixes name its own options (allow_broken,
# state: restore), which the baseline option does not have
TREE_REFUSED = 'so no snapshot was taken'
RESTORE_FIX = ('put back an older baseline with nodeguard.containerd.containerd_baseline state=restore (or the '
               'playbook playbooks/restore.yml)')


def baseline_refusal(given, result):
    """containerd_baseline's refusal of the snapshot as this module's message: the baseline's name, then its
    reason; a refused tree gets the fixes that apply from here."""
    msg = result.get('msg') or ''
    what = msg.rpartition(' Fix: ')[0] or msg  # the fix comes last; a problem quoted before it may hold one
    if TREE_REFUSED in what:
        fix = 'repair the config first, or %s' % RESTORE_FIX
        if result.get('problems'):
            fix += ('; to record this tree anyway, with its problems, take the baseline with '
                    'nodeguard.containerd.containerd_baseline state=snapshot, allow_broken=true (name %s, store %s) '
                    'before this call, which then leaves it alone' % (given['name'], os.path.abspath(given['store'])))
        msg = '%s. Nothing was written. Fix: %s.' % (what.rstrip('. '), fix)
    msg = 'baseline %s: %s' % (given['name'], msg)
    return msg if 'Nothing was written' in msg else msg.rstrip('. ') + '. Nothing was written.'


def take_baseline(module):
    """The baseline option: containerd_baseline state=snapshot's own run (its files, manifest and locks), before
    any write of this call, while no lock of the call is held; one that exists is left alone."""
    given = module.params['baseline']
    path = os.path.abspath(module.params['path'])
    with params_as(module, state='snapshot', name=given['name'], store=given['store'],
                   include_imports=given['include_imports'], protect=list(given['protect'] or []), **SNAPSHOT_DEFAULTS):
        result, failed = run_state(module, 'snapshot', given['store'], given['name'], path)
    if failed:
        details = dict((k, v) for k, v in result.items() if k not in ('msg', 'changed'))
        raise ConfigError(baseline_refusal(given, result), **dict(details, key='baseline'))
    return dict(changed=bool(result.get('changed')),
                baseline=dict(name=given['name'], store=os.path.abspath(given['store']), folder=result.get('baseline'),
                              taken=bool(result.get('changed')), snapshot=result.get('snapshot'),
                              created=result.get('created')))


def main():
    argument_spec = dict(
        state=dict(type='str', default='present', choices=['present', 'absent']),
        dropins=dict(type='list', elements='dict', default=[], options=dict(
            path=dict(type='path', required=True),
            content=dict(type='str'),
            mode=dict(type='raw', default='0644'),
            create_folder=dict(type='bool', default=True),
        )),
        imports=dict(type='list', elements='str', default=[]),
        position=dict(type='str', default='append', choices=['append', 'prepend']),
        require_exists=dict(type='bool', default=True),
        settings=dict(type='list', elements='dict', default=[], options=dict(
            key=dict(type='str', required=True, no_log=False),
            value=dict(type='raw'),
            raw=dict(type='bool', default=False),
        )),
        runtimes=dict(type='list', elements='dict', default=[], options=RUNTIME_ENTRY_OPTIONS),
        release_all=dict(type='bool', default=False),
        exclusive=dict(type='bool', default=False),
        check_binaries=dict(type='bool', default=False),
        baseline=dict(type='dict', options=dict(
            name=dict(type='str', required=True),
            store=dict(type='path', default='/var/lib/nodeguard/baselines'),
            include_imports=dict(type='bool', default=True),
            protect=dict(type='list', elements='str', default=[]),
        )),
    )
    argument_spec.update(COMMON_ARGUMENT_SPEC)
    argument_spec = mark_secret_options(argument_spec)
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    require_tomlkit(module)
    ctx = Context(module, os.path.abspath(module.params['path']))
    first = (lambda: take_baseline(module)) if module.params['baseline'] else None
    run_logic(module, ctx, lambda: apply_set(module, ctx, first), 'containerd_config')


if __name__ == '__main__':
    main()
