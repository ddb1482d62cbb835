#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_baseline
short_description: Snapshot a known-good containerd config, check drift from it, restore or repair it
version_added: 0.1.0
description:
  - Keeps a known-good copy (a I(baseline)) of containerd's C(config.toml) and, by default, of every file it
    imports, and compares the node with it, puts it back byte for byte, or puts back only the keys that keep
    the node running.
  - O(state=snapshot) copies the config and its imports (globs expanded), with mode, owner, a SHA-256 per file,
    the containerd version and a timestamp, plus the nodeguard ledger of that config, into
    C(<store>/<name>/<id>/) and points C(<store>/<name>/current) at it. The snapshot is built in a temporary
    folder and renamed into place, so a crash leaves the previous baseline or the new one. A missing config is
    recorded as missing.
  - A snapshot is only taken of a tree the node's containerd loads. It is judged by the built-in checks, the
    config version the node reads, the node's C(containerd config dump) (which refuses, for example, the
    integer C(pause_threshold = 1) on containerd 1.6 and 1.7) and a real start of containerd on the tree in
    isolation (O(load_test)), which shows a CRI plugin that fails although C(config dump) accepts the file.
    A tree that fails is refused and nothing is stored, unless O(allow_broken=true), which records it with its
    problems and warns.
  - The snapshot also stores the effective value of every protected key (what containerd runs after merging
    config.toml and its drop-ins, with the file the value comes from) and the node's C(config dump) of the
    tree (C(effective.toml)).
  - O(state=check) reports drift as key paths (C(added), C(removed), C(changed) with before and after values),
    and effective drift (C(effective_drift)) of the protected keys, each naming the file that caused it (a
    drop-in that changed the default runtime counts). It fails when what containerd runs drifted, when a
    protected key drifted in config.toml itself (also when a drop-in hides it for now), or when the config is
    missing, is not valid TOML or would not load (judged as for a snapshot). It never changes anything.
  - O(state=restore) puts back the config and the imported files byte for byte with their mode and owner, also
    when the current file is not valid TOML or is missing, and puts back the ledger copy so that the ledger
    agrees with the restored file. Before anything is replaced, the tree as it will be after the restore is
    checked with the built-in checks, the node's C(containerd config dump) (see O(validate)) and the real-load
    test (O(load_test)); a baseline that would not load is refused. A restore is the same transaction as every
    nodeguard edit (open, build, check, commit); a program that rewrites one of the files without nodeguard's lock
    while the restore runs is caught before anything is renamed, and the restore starts over on its content (it
    fails after three such writes, with nothing written).
  - O(state=repair) puts back only the protected keys (by default the CRI C(runc) runtime table and
    C(default_runtime_name)) from the baseline, keeping every other change (an C(nvidia) runtime added since
    stays), and folds duplicate and dangling C(imports) entries. It first puts config.toml's own protected keys
    back where that is in effect; then, for each protected key whose effective value still differs from the
    baseline's, it writes the baseline's value into the drop-in that decides it (O(edit_in=auto)), for example
    C(default_runtime_name = "runc") into the NVIDIA toolkit's C(conf.d/99-nvidia.toml). What it cannot fix is
    returned in C(left) with the reason (and warned), for example a key a drop-in hides, or a value that came
    from a drop-in that is gone. Every file is verified, checked, validated and load-tested like every nodeguard write; a
    result that would not load is refused.
  - O(state=absent) deletes the baseline (all of its snapshots).
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - nodeguard.containerd.common.secrets
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
    details: O(state=restore) returns one diff per file it would replace; O(state=repair) one for the config.
  platform:
    platforms: posix
options:
  path:
    description:
      - The containerd config file.
      - O(state=repair) needs a file of C(version = 2) or C(version = 3) of the same version as the baseline;
        O(state=restore) accepts any current content, or none.
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  state:
    description:
      - V(snapshot) takes the baseline (once, unless O(overwrite=true)).
      - V(check) compares the node with the baseline; fails on protected drift or a config that would not load.
      - V(restore) puts the baseline's files back byte for byte.
      - V(repair) puts back only the protected keys and folds duplicate or dangling imports.
      - V(absent) deletes the baseline.
    type: str
    choices: [snapshot, check, restore, repair, absent]
    default: snapshot
  name:
    description:
      - Label of the baseline; its folder is C(<store>/<name>).
      - Letters, digits, C(-), C(_) and C(.), at most 64 characters.
      - One baseline belongs to one config path; using a name taken for another path fails.
    type: str
    default: default
  store:
    description:
      - Folder that holds the baselines (created with mode V(0700)).
    type: path
    default: /var/lib/nodeguard/baselines
  include_imports:
    description:
      - Also copy every file the config imports (globs expanded, imports of imports too), so that a restore brings
        back a deleted drop-in and a check reports drift inside drop-ins.
      - Files that match an imports glob but were not in the baseline are left alone by a restore (with a warning).
      - Used when the snapshot is taken; O(state=check) and O(state=restore) use what the baseline holds.
    type: bool
    default: true
  protect:
    description:
      - Key paths that O(state=check) fails on when they drifted and O(state=repair) puts back.
      - Logical names are resolved for the file's config version, for example V(cri.runtimes.runc) (a runtime
        table), V(cri.default_runtime_name), V(cri.enable_cdi), V(images.snapshotter),
        V(images.disable_snapshot_annotations); C(cri.<key>) is a key of the CRI runtime plugin's table and
        C(images.<key>) one of the table that holds the image settings.
      - Anything else is a raw dotted TOML path as written in the file, for example
        C(plugins."io.containerd.grpc.v1.cri".sandbox_image).
      - A table is compared and put back whole.
      - Default is V(cri.runtimes.runc) and V(cri.default_runtime_name). An empty list protects nothing; O(state=check)
        then fails only on a config that is missing or would not load, and O(state=repair) only folds imports.
      - Protected keys are compared twice, in config.toml itself (C(protected_drift)) and as containerd runs them,
        merged with the drop-ins (C(effective_drift), from C(config dump) when the baseline and the node have one
        from the same containerd version, else from nodeguard's merge model). An unset C(default_runtime_name)
        counts as V(runc), containerd's own default.
      - O(state=snapshot) records the effective values of these keys and of the default ones.
    type: list
    elements: str
  overwrite:
    description:
      - When V(false), O(state=snapshot) takes the baseline once and then reports C(changed=false).
      - When V(true), it takes a new snapshot whenever a file of the tree (content, mode or owner) differs from the
        current baseline; the previous one is kept as an older snapshot (see O(keep)).
    type: bool
    default: false
  keep:
    description:
      - How many older snapshots of this baseline to keep besides the current one. Older ones are deleted when
        O(state=snapshot) runs.
    type: int
    default: 3
  backup:
    description:
      - With O(state=restore) or O(state=repair), create a backup file with a timestamp in its name beside each
        file before replacing it.
    type: bool
    default: false
  validate:
    description:
      - How a tree is judged (the tree being snapshotted or checked, and the result of O(state=restore) and
        O(state=repair) before it replaces anything).
      - V(auto) runs the node's own C(containerd --config <candidate> config dump) when a C(containerd) binary is
        found (see O(containerd_bin)). Any other string is a command that must contain C(%s) (the candidate's
        path); C(config dump) then runs as well, for the effective values. V(load) is V(auto) with the load test
        required (see O(load_test); no binary is then an error, and for O(state=repair) the engine load-tests each
        write itself). V(none) skips every command (no C(config dump) and no load test).
      - The built-in checks (every non-glob import exists, the default runtime is defined, no drop-in replaces a
        plugin table of the main file on containerd 1.x, the config version is one the node reads) always run.
      - For O(state=restore) and O(state=repair) the candidate is a copy of the tree in a temporary folder, whose
        absolute C(imports) entries point into that folder, because the files being written are not on disk yet.
    type: str
    default: auto
  load_test:
    description:
      - Start the node's containerd on the tree in isolation (a private mount, network and PID namespace, its own
        root, state and socket; the node's containerd is not touched) and require the CRI plugins to be C(ok),
        for O(state=snapshot), O(state=check), O(state=restore) and O(state=repair). C(config dump) accepts configs
        whose CRI plugin then fails to load (for example a snapshotter that does not exist); only a start shows it.
      - Runs when a containerd binary is found and O(validate) is not V(none); costs about a second. Needs root
        and C(unshare); when the test cannot be made it is reported in C(validated.notes) and warned, and the tree
        is judged without it.
      - V(false) turns it off.
    type: bool
    default: true
  allow_broken:
    description:
      - With O(state=snapshot), record a tree that containerd would not load instead of refusing it. The
        problems are stored in the manifest (C(broken=true), C(problems)), returned and warned. O(state=restore)
        still refuses to put such a baseline back.
    type: bool
    default: false
  edit_in:
    description:
      - Where O(state=repair) may write.
      - V(auto) puts config.toml's protected keys back where that is in effect, then writes the baseline's
        effective value of each key that still drifts into the drop-in that decides it (the engine's checks
        apply there too). A program that writes that drop-in (the NVIDIA toolkit) may write it again; a warning
        says so.
      - V(config) writes config.toml only; drift that a drop-in decides is left and listed in C(left).
    type: str
    choices: [auto, config]
    default: auto
  containerd_bin:
    description:
      - The node's containerd binary, used for C(config dump) and C(--version).
      - By default C(containerd) is searched in PATH, then C(/usr/bin), C(/usr/local/bin), C(/opt/bin),
        C(/usr/sbin) and C(/usr/local/sbin).
    type: path
  containerd_version:
    description:
      - The containerd version that reads the config (for example V(1.7) or V(2.1)), for nodes without a
        containerd binary. When a binary is found its C(--version) is the truth, and a different value is an error.
    type: str
  lock_timeout:
    description:
      - Seconds to wait for the lock of the baseline store and the lock file beside the config
        (C(.<name>.nodeguard.lock)) held by another nodeguard task before failing.
    type: float
    default: 30
  state_dir:
    description:
      - Folder of the nodeguard ledger (C(<state_dir>/ledger/)); O(state=snapshot) copies the config's ledger into
        the baseline and O(state=restore) puts it back.
    type: path
    default: /var/lib/nodeguard
  follow:
    description:
      - When O(path) is a symbolic link, O(state=restore) and O(state=repair) replace the file it points to.
        When V(false), they refuse a link and write nothing. Snapshot and check read through links.
    type: bool
    default: false
  mode:
    description:
      - Permissions of the config after O(state=restore) or O(state=repair), as for M(ansible.builtin.file).
      - By default a restore gives the config the mode recorded in the baseline, and a repair keeps the current one.
      - A symbolic mode (V(u+x), V(g-w)) applies to the baseline's recorded mode on a restore, so a second
        restore finds nothing to change.
    type: raw
  file_owner:
    description:
      - Unix user that should own the config after a restore or repair (name or uid). By default a restore gives
        it the owner recorded in the baseline.
    type: str
  group:
    description:
      - Unix group of the config after a restore or repair (name or gid). By default a restore gives it the group
        recorded in the baseline.
    type: str
  seuser:
    description: SELinux user of the config after a restore or repair, as for M(ansible.builtin.file).
    type: str
  serole:
    description: SELinux role of the config after a restore or repair, as for M(ansible.builtin.file).
    type: str
  setype:
    description: SELinux type of the config after a restore or repair, as for M(ansible.builtin.file).
    type: str
  selevel:
    description: SELinux level of the config after a restore or repair, as for M(ansible.builtin.file).
    type: str
  attributes:
    description: File attributes (as shown by C(lsattr)) of the config after a restore or repair.
    type: str
    aliases: [attr]
notes:
  - The baseline store holds byte copies of the config (which may hold registry credentials); its folders are
    created with mode V(0700) and its files with V(0600).
  - Every file is written atomically (a temporary file in the target's folder, flushed, renamed) under the lock
    beside the config; imported files are restored before the config that imports them.
  - A restore never deletes a file. A drop-in created after the snapshot that matches an imports glob stays and
    is reported in a warning.
  - O(state=repair) does not record anything in the ledger; the keys it puts back belong to the baseline.
  - A baseline taken before effective values were recorded is compared from its stored files (merged the way
    the node's containerd merges them), without a C(config dump).
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
seealso:
  - module: nodeguard.containerd.containerd_runtime
  - module: nodeguard.containerd.containerd_setting
'''

EXAMPLES = r'''
- name: Take the known-good baseline once, before any runtime is installed
  nodeguard.containerd.containerd_baseline:
    state: snapshot

- name: Fail the play when the runc runtime or the default runtime was changed behind our back
  nodeguard.containerd.containerd_baseline:
    state: check
  register: drift

- name: Put back the runc table and default_runtime_name, keep the NVIDIA runtime, fold broken imports
  nodeguard.containerd.containerd_baseline:
    state: repair
    backup: true
  notify: Restart containerd

- name: Repair config.toml only; a default runtime set by a drop-in is reported in left, not changed
  nodeguard.containerd.containerd_baseline:
    state: repair
    edit_in: config
  register: repaired

- name: Record a known-broken node anyway (restore will still refuse to put it back)
  nodeguard.containerd.containerd_baseline:
    state: snapshot
    name: before-fix
    allow_broken: true

- name: Protect the snapshotter too (resolved for config version 2 or 3)
  nodeguard.containerd.containerd_baseline:
    state: check
    protect:
      - cri.runtimes.runc
      - cri.default_runtime_name
      - images.snapshotter
      - plugins."io.containerd.grpc.v1.cri".sandbox_image

- name: Bring back config.toml and its deleted drop-ins byte for byte (also from imports = [ , ])
  nodeguard.containerd.containerd_baseline:
    state: restore
  notify: Restart containerd

- name: Replace the baseline after a planned change, keeping the five previous ones
  nodeguard.containerd.containerd_baseline:
    state: snapshot
    overwrite: true
    keep: 5

- name: Forget the baseline
  nodeguard.containerd.containerd_baseline:
    state: absent
'''

RETURN = r'''
changed:
  description:
    - Whether a snapshot was taken or pruned, files were restored (or would be, in check mode), or the config was
      repaired. Always V(false) for O(state=check).
  returned: always
  type: bool
baseline:
  description: The baseline's folder, C(<store>/<name>).
  returned: always
  type: str
  sample: /var/lib/nodeguard/baselines/default
snapshot:
  description: The folder of the snapshot in use (holds C(manifest.json) and C(files/)).
  returned: success, except O(state=absent)
  type: str
  sample: /var/lib/nodeguard/baselines/default/20261129T101201.123456Z
files:
  description: The files of the baseline.
  returned: success, except O(state=absent)
  type: list
  elements: dict
  contains:
    path:
      description: The file on the node.
      type: str
    role:
      description: V(config) or V(import).
      type: str
    sha256:
      description: SHA-256 of the file's bytes.
      type: str
    size:
      description: Size in bytes.
      type: int
    mode:
      description: Mode, in octal.
      type: str
    owner:
      description: User name of the owner (null when the uid has no name).
      type: str
    group:
      description: Group name (null when the gid has no name).
      type: str
    uid:
      description: Owner uid.
      type: int
    gid:
      description: Group gid.
      type: int
    entry:
      description: The C(imports) entry that loads the file (null for the config).
      type: str
    imported_by:
      description: The file whose C(imports) names this one (null for the config).
      type: str
    stored:
      description: Where the copy is kept.
      type: str
  sample:
    - path: /etc/containerd/config.toml
      role: config
      sha256: 3f1c9a0e1d4b8f0b8b1f6e8d7c2a9e4b5d6c7f8a9b0c1d2e3f4a5b6c7d8e9f0a
      size: 1432
      mode: '0644'
      owner: root
      group: root
      uid: 0
      gid: 0
      entry: null
      imported_by: null
      stored: /var/lib/nodeguard/baselines/default/20261129T101201.123456Z/files/000-config.toml
created:
  description: When the baseline was taken (UTC, ISO 8601).
  returned: when a baseline exists
  type: str
  sample: '2026-11-29T10:12:01.123456Z'
containerd_version:
  description: The containerd version the node had when the baseline was taken (null if no binary was found).
  returned: when a baseline exists
  type: str
  sample: 1.6.20~ds1
config_version:
  description: The config version of the file. For O(state=repair), of the current file.
  returned: success, except O(state=absent)
  type: int
  sample: 2
drift:
  description:
    - How the node differs from the baseline. Keys are dotted TOML paths; C(path) is the same as a list of parts.
    - A table that exists on one side only is one entry, with its whole value.
    - For O(state=repair), the config file only, before the repair.
    - Null when the current config could not be read (missing files are reported under C(files.removed)).
  returned: O(state=check), O(state=restore) when the current config can be read, O(state=repair)
  type: dict
  contains:
    added:
      description: Keys that exist now and did not in the baseline (C(key), C(path), C(value), C(file)).
      type: list
      elements: dict
    removed:
      description: Keys of the baseline that are gone (C(key), C(path), C(value), C(file)).
      type: list
      elements: dict
    changed:
      description: Keys whose value changed (C(key), C(path), C(before), C(after), C(file)).
      type: list
      elements: dict
    files:
      description: Files of the tree C(added), C(removed) or C(changed) (lists of paths). Not for O(state=repair).
      type: dict
  sample:
    added:
      - key: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia
        path: [plugins, io.containerd.grpc.v1.cri, containerd, runtimes, nvidia]
        value: {runtime_type: io.containerd.runc.v2, options: {BinaryName: /usr/bin/nvidia-container-runtime}}
        file: /etc/containerd/config.toml
    removed:
      - key: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc
        path: [plugins, io.containerd.grpc.v1.cri, containerd, runtimes, runc]
        value: {runtime_type: io.containerd.runc.v2, options: {SystemdCgroup: true}}
        file: /etc/containerd/config.toml
    changed: []
    files: {added: [], removed: [], changed: [/etc/containerd/config.toml]}
drifted:
  description: Whether anything drifted.
  returned: O(state=check) when the config can be read
  type: bool
protected_drift:
  description:
    - The protected keys that differ from the baseline in config.toml itself, each with C(key) (as given in
      O(protect)), C(path) (dotted, for the file's version), C(change) (V(added), V(removed) or V(changed)),
      C(before) and C(after).
    - For O(state=check) also C(in_effect) (whether config.toml's value is the one containerd runs) and, when it
      is not, C(shadowed_by) (the drop-in whose value or table runs instead; config.toml's value comes into
      effect again if that file goes).
    - Null when the current config could not be read.
  returned: O(state=check), O(state=repair)
  type: list
  elements: dict
  sample:
    - key: cri.runtimes.runc
      path: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc
      change: removed
      before: {runtime_type: io.containerd.runc.v2, options: {SystemdCgroup: true}}
      after: null
problems:
  description:
    - Why the config (now, for O(state=check); at snapshot time, for O(state=snapshot)) would not load, in the
      words of the built-in checks, C(config dump) or the load test.
    - A snapshot with problems is only taken with O(allow_broken=true).
  returned: O(state=check), O(state=snapshot) when a snapshot was taken
  type: list
  elements: str
effective:
  description:
    - The protected keys as containerd runs them (config.toml merged with its drop-ins by the node's containerd
      version's rules). For O(state=snapshot) these are also stored in the manifest (C(effective.values)).
    - Each has C(key), C(path) (dotted, in the merged layout; version 3 paths on containerd 2.x), C(value) (the
      merged value; V(runc) for an unset C(default_runtime_name), with C(default=true)), C(file) (the file that
      sets it, null when none does; for a table gathered from several files the last of them, and C(files) lists
      them all), C(owner) (the file whose table holds it; on containerd 1.x the last file that defines the plugin
      table) and C(dumped) (the value C(config dump) shows; only when a dump was made).
  returned: O(state=snapshot) of an existing config, O(state=check), O(state=repair)
  type: list
  elements: dict
  sample:
    - key: cri.default_runtime_name
      path: plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name
      value: nvidia
      default: false
      file: /etc/containerd/conf.d/99-nvidia.toml
      owner: /etc/containerd/conf.d/99-nvidia.toml
      dumped: nvidia
effective_drift:
  description:
    - The protected keys whose effective value differs from the baseline's. For O(state=restore), before the
      restore; for O(state=repair), what is left after it.
    - Each has C(key), C(path), C(change) (V(added), V(removed), V(changed)), C(before), C(after), C(file) (the
      file that caused it), C(before_file) (where the baseline's value came from), C(compared) (V(config dump)
      when both sides have a dump of the same containerd version, else V(model)) and C(why) (a sentence).
  returned: O(state=check), O(state=restore) when the current config can be read, O(state=repair)
  type: list
  elements: dict
  sample:
    - key: cri.default_runtime_name
      path: plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name
      change: changed
      before: runc
      after: nvidia
      file: /etc/containerd/conf.d/99-nvidia.toml
      before_file: /etc/containerd/config.toml
      compared: config dump
      why: containerd 1.6 now runs cri.default_runtime_name = 'nvidia', set by /etc/containerd/conf.d/99-nvidia.toml
        (the baseline ran 'runc' from /etc/containerd/config.toml)
validated:
  description:
    - How the tree was judged. C(checked) lists what passed (V(built-in checks), V(validate command),
      V(config dump), V(load test)); C(notes) says what could not judge it and why (no binary, O(load_test=false),
      O(validate=none), a load test that could not run); C(load_test) is the load test's C(status) (V(ok),
      V(failed), V(timeout), V(cannot_run)), C(ok), C(seconds), C(required) (the CRI plugins and their status),
      C(errors), C(skipped) and C(containerd_version), or null when it did not run.
    - For O(state=restore), of the tree as it will be after the restore.
  returned: O(state=snapshot), O(state=check), O(state=restore)
  type: dict
  sample:
    checked: [built-in checks, config dump, load test]
    notes: []
    load_test: {status: ok, ok: true, seconds: 0.61, required: {io.containerd.grpc.v1.cri: ok}, errors: [],
                skipped: [], containerd_version: 1.6.20}
protect:
  description: The protected keys and their dotted paths for the current file.
  returned: O(state=check) when the config can be read
  type: list
  elements: dict
restored:
  description:
    - O(state=restore), the files written back (content, mode or owner).
    - O(state=repair), the dotted paths of the protected keys put back.
  returned: O(state=restore), O(state=repair)
  type: list
  elements: str
  sample: [/etc/containerd/conf.d/nydus-snapshotter.toml, /etc/containerd/config.toml]
restored_keys:
  description: O(state=repair), each key put back into config.toml with C(key), C(path) and C(change) (what had
    happened to it).
  returned: O(state=repair)
  type: list
  elements: dict
repaired:
  description:
    - O(state=repair), every key it put back, in any file, with C(key), C(path) (in that file), C(file) and
      C(change); for a drop-in also C(before) and C(after).
  returned: O(state=repair)
  type: list
  elements: dict
  sample:
    - key: cri.default_runtime_name
      path: plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name
      file: /etc/containerd/conf.d/99-nvidia.toml
      change: changed
      before: nvidia
      after: runc
left:
  description:
    - O(state=repair), what it did not fix and why, each with C(key), C(file) and C(why); C(shadowed_by) names
      the drop-in that makes a config.toml change have no effect. Each is also warned.
  returned: O(state=repair)
  type: list
  elements: dict
written:
  description: O(state=repair), the files it wrote (or would write, in check mode), config.toml first.
  returned: O(state=repair)
  type: list
  elements: str
load_test:
  description: O(state=repair), how each file's candidate was judged before it was written (as RV(validated)).
  returned: O(state=repair)
  type: list
  elements: dict
created_files:
  description: Files a restore created because they did not exist.
  returned: O(state=restore)
  type: list
  elements: str
removed_files:
  description:
    - Drop-ins a restore removed (in check mode, would remove), each with its own ledger - files a nodeguard owner
      wrote (M(nodeguard.containerd.containerd_dropin)) after the baseline was taken, that the config imported before
      the restore and does not import after it. Backed up first with O(backup=true).
  returned: O(state=restore)
  type: list
  elements: str
  version_added: 1.0.0
ledger:
  description: What a restore did to the ledger of the config (V(restored), V(removed), or null when it agreed).
  returned: O(state=restore)
  type: str
duplicates_removed:
  description: Duplicate C(imports) entries a repair folded.
  returned: O(state=repair)
  type: list
  elements: str
removed_missing:
  description: C(imports) entries naming missing files that a repair removed.
  returned: O(state=repair)
  type: list
  elements: str
pruned:
  description: Snapshot folders deleted because of O(keep).
  returned: O(state=snapshot)
  type: list
  elements: str
missing_imports:
  description: Imports that named missing files when the snapshot was taken.
  returned: O(state=snapshot) when a snapshot was taken
  type: list
  elements: dict
removed:
  description: Whether the baseline was deleted.
  returned: O(state=absent)
  type: bool
backup_file:
  description: The backup of the config, with O(backup=true).
  returned: changed and O(backup=true)
  type: str
backup_files:
  description: All backups a restore made, with O(backup=true).
  returned: O(state=restore), changed and O(backup=true)
  type: list
  elements: str
diff:
  description:
    - Before and after text, with C(--diff). A list of one per file for O(state=restore), and for O(state=repair)
      when it changed more than one file.
  returned: changed and diff mode
  type: raw
plugin:
  description: The CRI plugin id for the config's version.
  returned: O(state=repair)
  type: str
'''

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import COMMON_ARGUMENT_SPEC
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.states import SNAPSHOT_OPTIONS, main as run

COMMON_OPTIONS = ('path', 'backup', 'validate', 'containerd_bin', 'containerd_version', 'lock_timeout', 'state_dir',
                  'follow', 'mode', 'file_owner', 'group', 'seuser', 'serole', 'setype', 'selevel', 'attributes',
                  'secret_keys')


def main():
    argument_spec = dict(
        state=dict(type='str', default='snapshot', choices=['snapshot', 'check', 'restore', 'repair', 'absent']),
        name=dict(type='str', default='default'),
        store=dict(type='path', default='/var/lib/nodeguard/baselines'),
        include_imports=dict(type='bool', default=True),
        protect=dict(type='list', elements='str'),
        edit_in=dict(type='str', default='auto', choices=['auto', 'config']),
    )
    argument_spec.update((key, dict(spec)) for key, spec in SNAPSHOT_OPTIONS.items())
    for key in COMMON_OPTIONS:
        argument_spec[key] = dict(COMMON_ARGUMENT_SPEC[key])
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    run(module)


if __name__ == '__main__':
    main()
