#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_info
short_description: Read-only facts about containerd, its config tree, the runtimes it runs and the nodeguard ledgers
version_added: 1.0.0
description:
  - Reports what containerd on the node runs, read through the same code the editing modules use, so roles read
    state through this module instead of copying the config or the ledger file format.
  - The containerd binary and its version (C(containerd --version); O(containerd_version) only where there is no
    binary), the config file with its version and SHA-256, and the import tree (every C(imports) entry of every
    loaded file, the files it loads, missing and duplicated entries, globs).
  - The effective CRI runtimes and the default runtime from nodeguard's merged view of C(config.toml) and its
    drop-ins (on containerd 1.x an imported C(plugins.<id>) table replaces the main file's whole, on 2.x tables
    deep-merge), each naming the file its table came from.
  - With O(dump=true) (the default) the merged view is confirmed with the node's own C(containerd config dump), and
    every disagreement is reported.
  - The nodeguard ledger of the config and of every drop-in that has one, as records grouped by owner.
  - With O(baseline), the drift of the node from that baseline, computed by the code of
    M(nodeguard.containerd.containerd_baseline) O(nodeguard.containerd.containerd_baseline#module:state=check).
  - Never changes anything. It writes no file, no ledger and no lock file, and takes no lock. Every nodeguard
    write is an atomic rename and a ledger carries the state before its config's write, so the records returned
    are those that describe the config bytes read, also while another nodeguard task writes.
  - A config with C(version = 1) (or no C(version) line) is reported with its version and a problem (the editing
    modules refuse it). A file of the tree that is not valid TOML makes the module fail, naming the file and the
    parse error.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - nodeguard.containerd.common.secrets
  - nodeguard.containerd.common.group_read_only
attributes:
  check_mode:
    support: full
    details: Nothing is written in any mode; the result is the same in check mode.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description:
      - The containerd config file.
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  state_dir:
    description:
      - Folder of the nodeguard ledger (C(<state_dir>/ledger/)), as for the editing modules. Only read.
    type: path
    default: /var/lib/nodeguard
  containerd_bin:
    description:
      - The node's containerd binary, used for C(--version) and C(config dump).
      - By default C(containerd) is searched in PATH, then C(/usr/bin), C(/usr/local/bin), C(/opt/bin),
        C(/usr/sbin) and C(/usr/local/sbin).
    type: path
  containerd_version:
    description:
      - The containerd version that reads the config (for example V(1.7) or V(2.1)), for nodes without a
        containerd binary. It decides the merge rules. When a binary is found its C(--version) is the truth, and a
        different value is an error.
    type: str
  dump:
    description:
      - Run the node's C(containerd --config <path> config dump) and compare the runtimes and the default runtime
        it shows with nodeguard's merged view (RV(dump_confirmed), RV(dump_disagreements)).
    type: bool
    default: true
  baseline:
    description:
      - Name of a baseline taken with M(nodeguard.containerd.containerd_baseline) in O(baseline_store). When
        given, RV(drift) reports how the node differs from it. A baseline that does not exist, or was taken of
        another config path, is an error.
    type: str
  baseline_store:
    description:
      - Folder that holds the baselines.
    type: path
    default: /var/lib/nodeguard/baselines
  protect:
    description:
      - The keys whose effective values RV(drift) compares with the baseline, as the O(protect) option of
        M(nodeguard.containerd.containerd_baseline). Default V(cri.runtimes.runc) and V(cri.default_runtime_name).
    type: list
    elements: str
  owner:
    description:
      - A ledger owner. RV(owned) then lists what the ledger of O(path) says it added (runtimes, settings, imports)
        and which of O(files) it wrote or created (M(nodeguard.containerd.containerd_dropin)).
    type: str
  files:
    description:
      - Paths to report in RV(files) (whether they exist, whether they may be executed, their SHA-256, whether the
        tree imports or loads them, which owner wrote them), for example drop-ins a role manages, or the binaries
        a runtime names.
    type: list
    elements: path
    default: []
  settings:
    description:
      - Keys whose values containerd runs, to report in RV(settings) - logical names as in O(protect) (for example
        V(images.disable_snapshot_annotations), which is where the config's version keeps it, or
        V(cri.enable_cdi)) or dotted TOML paths. A role can so tell whether a value it wants is there already,
        also when another tool wrote it (the ledger records only nodeguard's own changes).
    type: list
    elements: str
    default: []
    version_added: 1.2.0
  commands:
    description:
      - Commands to look up as bash's C(command -v) does (the first executable file of that name in the module's
        C(PATH); a name with a C(/) is that file when it is executable), for example V(kubectl). RV(commands) says
        where each is. Nothing is run.
    type: list
    elements: str
    default: []
    version_added: 1.0.0
  starts_since:
    description:
      - A point in time, in seconds since the epoch (for example when a playbook run began). RV(service_starts)
        then says how often systemd started O(service) since then, from the unit's journal, so a report reads the
        restarts of a run within this one call.
    type: float
    version_added: 1.0.0
  service:
    description:
      - The systemd unit of containerd, for O(starts_since).
    type: str
    default: containerd
    version_added: 1.0.0
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
notes:
  - The merged view is nodeguard's model of containerd's merge (see the README, section Effective config). Where
    C(config dump) says otherwise, the dump is what containerd runs; RV(dump_disagreements) lists each case.
  - C(config dump) is not a load test; M(nodeguard.containerd.containerd_preflight) starts containerd on the
    config.
  - With O(baseline) and O(protect) keys the baseline did not record at snapshot time, their values then are
    computed from the baseline's stored files, copied into a temporary folder that is removed at the end (as
    M(nodeguard.containerd.containerd_baseline) does).
seealso:
  - module: nodeguard.containerd.containerd_runtime
  - module: nodeguard.containerd.containerd_baseline
  - module: nodeguard.containerd.containerd_preflight
'''

EXAMPLES = r'''
- name: What does containerd run on this node?
  nodeguard.containerd.containerd_info:
  register: ctd
  become: true

- name: Refuse to go on when the GPU runtime is not the effective default
  ansible.builtin.assert:
    that:
      - ctd.default_runtime.name == 'nvidia'
      - ctd.default_runtime.exists
      - ctd.runtimes.nvidia.SystemdCgroup
    fail_msg: "default runtime {{ ctd.default_runtime.name }} comes from {{ ctd.default_runtime.file }}"

- name: Which runtimes did the gpu_toolkit role create in each file?
  ansible.builtin.debug:
    msg: "{{ item.file }}: {{ item.records_by_owner.gpu_toolkit | default([]) | map(attribute='key') | list }}"
  loop: "{{ ctd.ledgers }}"

- name: Drift from the baseline taken before any runtime was installed
  nodeguard.containerd.containerd_info:
    baseline: default
    dump: false
  register: ctd_drift

- name: A node image without containerd (the merge rules of 2.1)
  nodeguard.containerd.containerd_info:
    path: /mnt/image/etc/containerd/config.toml
    containerd_version: '2.1'
'''

RETURN = r'''
changed:
  description: Always V(false); nothing is written.
  returned: always
  type: bool
containerd:
  description: The node's containerd.
  returned: success
  type: dict
  contains:
    bin:
      description: The binary found (or given in O(containerd_bin)); null when there is none.
      type: str
    version:
      description: Its version as C(--version) prints it, or O(containerd_version) where there is no binary.
      type: str
    major_minor:
      description: Major and minor version, which decide the merge rules; null when unknown.
      type: str
    known_from:
      description: V(binary), V(containerd_version), or null when the version is unknown.
      type: str
  sample: {bin: /usr/bin/containerd, version: 1.6.20~ds1, major_minor: '1.6', known_from: binary}
config:
  description: The config file.
  returned: always
  type: dict
  contains:
    path:
      description: Its absolute path.
      type: str
    exists:
      description: Whether it exists.
      type: bool
    version:
      description: Its C(version) (V(1) when the file has no version line); null when it does not exist or the
        value is not an integer.
      type: int
    sha256:
      description: SHA-256 of its bytes; null when it does not exist.
      type: str
    size:
      description: Size in bytes.
      type: int
      returned: when it exists
    generated_by:
      description: V(k3s) or V(RKE2) when the file says it is generated (edits there do not survive a restart).
      type: str
    byte_order_mark:
      description: True when the file starts with a UTF-8 byte order mark.
      type: bool
      returned: when it has one
  sample: {path: /etc/containerd/config.toml, exists: true, version: 2, sha256: 0f3e..., size: 7311,
           generated_by: null}
imports:
  description: The import tree, as containerd loads it (breadth first, globs sorted, each file once).
  returned: always
  type: dict
  contains:
    entries:
      description: Every C(imports) entry of every loaded file.
      type: list
      elements: dict
      contains:
        entry:
          description: The entry as written.
          type: str
        imported_by:
          description: The file whose C(imports) holds it.
          type: str
        resolved:
          description: The absolute path or pattern it names.
          type: str
        glob:
          description: Whether it is a glob.
          type: bool
        files:
          description: The existing files it names (a glob's matches, sorted).
          type: list
          elements: str
        missing:
          description: A non-glob entry whose file does not exist (containerd refuses to start).
          type: bool
        duplicate:
          description: It repeats an earlier entry of the same file (by resolved path; harmless to containerd).
          type: bool
        problems:
          description: Why a file it names could not be loaded.
          type: list
          elements: str
    files:
      description: The files loaded, in containerd's order, the config first.
      type: list
      elements: str
    missing:
      description: Missing imports, each with C(entry), C(path) and C(imported_by).
      type: list
      elements: dict
    duplicates:
      description: Duplicated entries, each with C(entry), C(resolved) and C(imported_by).
      type: list
      elements: dict
    problems:
      description: Imports that cannot be loaded, and files containerd ignores (and why).
      type: list
      elements: str
    self_imports:
      description:
        - Files of the tree whose imports name the file itself (NVIDIA's container toolkit installer before v1.18
          writes C(imports = ["/etc/containerd/config.toml"])). containerd loads each file once, so the entry adds
          nothing; nodeguard checks its candidates with such an entry pointing at the candidate.
      type: list
      elements: str
    warnings:
      description: One line per entry of C(self_imports), naming the file and the fix.
      type: list
      elements: str
  sample:
    entries:
      - {entry: /etc/containerd/conf.d/*.toml, imported_by: /etc/containerd/config.toml,
         resolved: /etc/containerd/conf.d/*.toml, glob: true, files: [/etc/containerd/conf.d/99-nvidia.toml],
         missing: false, duplicate: false, problems: []}
    files: [/etc/containerd/config.toml, /etc/containerd/conf.d/99-nvidia.toml]
    missing: []
    duplicates: []
    problems: []
    self_imports: []
    warnings: []
runtimes:
  description:
    - The CRI runtime handlers containerd runs, by name, from the merged view. containerd's built-in C(runc) is
      listed (C(builtin=true)) where containerd adds it (2.x always; 1.x when no file has a runtimes table).
    - Each has C(file) (the file its table came from; for a table gathered from several files on 2.x the last of
      them), C(files) (all of them), C(builtin), C(runtime_type), C(runtime_path),
      C(privileged_without_host_devices), C(snapshotter), C(pod_annotations), the options C(BinaryName),
      C(SystemdCgroup) and C(ConfigPath) (null when not set), C(options) (the whole options table) and C(table)
      (the whole runtime table).
  returned: success
  type: dict
  sample:
    nvidia:
      file: /etc/containerd/conf.d/99-nvidia.toml
      files: [/etc/containerd/conf.d/99-nvidia.toml]
      builtin: false
      runtime_type: io.containerd.runc.v2
      runtime_path: ''
      privileged_without_host_devices: false
      snapshotter: null
      pod_annotations: []
      BinaryName: /usr/local/nvidia/toolkit/nvidia-container-runtime
      SystemdCgroup: true
      ConfigPath: null
      options: {BinaryName: /usr/local/nvidia/toolkit/nvidia-container-runtime, SystemdCgroup: true}
      table: {runtime_type: io.containerd.runc.v2, options: {SystemdCgroup: true}}
default_runtime:
  description:
    - The CRI default runtime. C(name) (V(runc), containerd's own default, when nothing sets it; C(default) is then
      true), C(file) (the file that sets it, null when none does) and C(exists) (whether RV(runtimes) has it; when
      false the CRI plugin fails to load and no pod starts).
  returned: success
  type: dict
  sample: {name: nvidia, file: /etc/containerd/conf.d/99-nvidia.toml, default: false, exists: true}
cri_plugin_ids:
  description: The CRI plugin ids whose tables hold the CRI settings in the merged view (containerd 1.x, the
    version 2 id; 2.x, the runtime, images and gRPC ids).
  returned: success
  type: list
  elements: str
  sample: [io.containerd.grpc.v1.cri]
cri_plugin_files:
  description: For each id of RV(cri_plugin_ids), the file whose table containerd uses (on containerd 1.x the last
    file that defines it, which replaces the others), or null.
  returned: success
  type: dict
  sample: {io.containerd.grpc.v1.cri: /etc/containerd/conf.d/99-nvidia.toml}
ledgers:
  description: One entry for the config and for each loaded drop-in that has a nodeguard ledger.
  returned: success
  type: list
  elements: dict
  contains:
    file:
      description: The config file the ledger is about.
      type: str
    ledger_path:
      description: The ledger file.
      type: str
    records_by_owner:
      description:
        - The records, by owner, as the editing modules read them. Each record has C(kind) (V(table), V(key),
          V(import) and others), C(resource), C(seq), and for key paths C(path) (a list) and C(key) (dotted);
          key records also C(prior) and C(value) (raw TOML text); the C(file) record of a drop-in an owner took over
          (M(nodeguard.containerd.containerd_dropin)) has C(replaced) with the C(sha256), C(mode), C(uid) and
          C(gid) of the file it replaced (its bytes stay in the ledger file).
      type: dict
    owners:
      description: The owners with records, sorted.
      type: list
      elements: str
    config_sha256:
      description: The SHA-256 of the config the ledger was last written for.
      type: str
    in_sync:
      description: Whether that is the file as it is now (false after a foreign edit or mid-write).
      type: bool
    note:
      description: Set when the records are those of the previous state, because another task's write of the
        config never happened (or has not yet), that is the very file that task read is still there (same inode
        and modification time; a change of its attributes alone, such as C(chattr -i), keeps it that file), as the
        editing modules judge it. Null otherwise. The ledger file is not changed.
      type: str
    error:
      description: Why the ledger could not be read (a damaged file); null otherwise.
      type: str
  sample:
    - file: /etc/containerd/config.toml
      ledger_path: /var/lib/nodeguard/ledger/etc%2Fcontainerd%2Fconfig.toml.json
      owners: [gpu_toolkit]
      records_by_owner:
        gpu_toolkit:
          - {owner: gpu_toolkit, resource: 'runtime:nvidia', kind: table, seq: 1,
             path: [plugins, io.containerd.grpc.v1.cri, containerd, runtimes, nvidia],
             key: plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia}
      config_sha256: 0f3e...
      in_sync: true
      note: null
      error: null
owned:
  description:
    - What the ledgers of C(config.toml) and of the files it loads say O(owner) added (as
      O(nodeguard.containerd.containerd_config#module:release_all) reads them, and as RV(ledgers) has them, so a
      ledger rolled back there is rolled back here). C(runtimes) (runtime handler names with
      records), C(tables) (those whose whole table it created), C(defaults) (those it made the CRI default),
      C(settings) (dotted keys it set with M(nodeguard.containerd.containerd_setting); give them back with
      O(nodeguard.containerd.containerd_setting#module:raw=true)), C(imports) (resolved paths it imported), C(files)
      (entries of O(files) it wrote or created), C(error) (why a ledger could not be read; null otherwise).
  returned: when O(owner) is given
  type: dict
  sample: {owner: coco, runtimes: [kata-qemu], tables: [kata-qemu], defaults: [],
           settings: ['plugins."io.containerd.grpc.v1.cri".containerd.disable_snapshot_annotations'],
           imports: [/etc/containerd/config.toml.d/nydus-snapshotter.toml],
           files: [/etc/containerd/config.toml.d/nydus-snapshotter.toml], error: null}
settings:
  description: For each key of O(settings), its value in the merged view of the tree (what containerd runs), or
    null when no file sets it (containerd's built-in default applies).
  returned: when O(settings) is given
  type: dict
  sample: {images.disable_snapshot_annotations: false}
  version_added: 1.2.0
node_name:
  description: The node's host name (C(uname -n)), for example the Kubernetes node name of a kubeadm node.
  returned: success
  type: str
  sample: worker-1
commands:
  description: For each name of O(commands), the executable file bash's C(command -v) finds, or null when there is none.
  returned: success
  type: dict
  sample: {kubectl: /usr/bin/kubectl}
files:
  description:
    - For each path of O(files) (as given), C(path) (absolute), C(exists), C(type) (V(file), V(directory), V(link),
      V(other) or null), C(dangling) (a link whose target does not exist), C(executable) (a regular file, links
      followed, that may be executed, as the shell's C([ -f ]) and C([ -x ]) judge it), C(sha256) (of a regular
      file; null otherwise), C(imported) (a plain C(imports) entry of the tree names it), C(imported_by) (those
      files), C(loaded) (containerd loads it, also through a glob) and
      C(owners) (owners whose ledger record says they wrote the file or created the folder).
  returned: success
  type: dict
  sample:
    /etc/containerd/config.toml.d/nydus-snapshotter.toml:
      path: /etc/containerd/config.toml.d/nydus-snapshotter.toml
      exists: true
      type: file
      sha256: 5d2c...
      executable: false
      imported: true
      imported_by: [/etc/containerd/config.toml]
      loaded: true
      owners: [coco]
drift:
  description:
    - How the node differs from the baseline O(baseline), computed as by
      M(nodeguard.containerd.containerd_baseline) O(nodeguard.containerd.containerd_baseline#module:state=check)
      (without its load test). Unlike that, differences do not make this module fail.
    - C(baseline) and C(snapshot) (folders), C(created), C(protect), C(drifted) (anything differs), C(tree) (key
      paths C(added), C(removed), C(changed) and C(files) of the whole tree), C(protected_drift) (protected keys in
      config.toml itself), C(effective) (the protected keys as containerd runs them) and C(effective_drift) (the
      protected keys whose effective value differs, each naming the file that caused it), C(error) (why the
      config could not be compared, for example it is missing).
  returned: when O(baseline) is given
  type: dict
  sample:
    drifted: true
    effective_drift:
      - key: cri.default_runtime_name
        change: changed
        before: runc
        after: nvidia
        file: /etc/containerd/conf.d/99-nvidia.toml
dump_confirmed:
  description: V(true) when the node's C(config dump) shows the runtimes and default runtime of the merged view;
    V(false) when it disagrees or failed; null when it was not run (O(dump=false), no binary, no config).
  returned: success
  type: bool
dump_disagreements:
  description: Each place where C(config dump) and the merged view differ, with C(key) (dotted), C(model), C(dump)
    and C(why). The dump is what containerd runs.
  returned: success
  type: list
  elements: dict
dump_error:
  description: Why there is no C(config dump) to confirm the merged view (its error text, no binary,
    O(dump=false)), or null.
  returned: success
  type: str
service_starts:
  description:
    - How often systemd started O(service) since O(starts_since), counted from the unit's journal (systemd's own
      C(Started) entries, by their catalog id, so a restart, a start after a crash and a boot each count once).
    - C(unit), C(since), C(count) (null when the journal could not be read) and C(error) (why, or null).
  returned: when O(starts_since) is given
  type: dict
  sample: {unit: containerd, since: 1796280000.25, count: 1, error: null}
problems:
  description: Everything that would keep containerd from running this config as meant, or that the editing modules
    refuse; a version 1 config, a config version the node cannot read, missing or unreadable imports, files
    containerd ignores, a default runtime with no table, a drop-in that replaces a plugin table and loses keys
    on containerd 1.x, a damaged ledger.
  returned: success
  type: list
  elements: str
'''

import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    json_safe,
    require_tomlkit,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import InfoError, gather

# the options every module of the action group shares (meta/runtime.yml)
COMMON_OPTIONS = ('path', 'state_dir', 'containerd_bin', 'containerd_version', 'lock_timeout', 'validate', 'backup',
                  'secret_keys')


def main():
    argument_spec = dict(
        dump=dict(type='bool', default=True),
        baseline=dict(type='str'),
        baseline_store=dict(type='path', default='/var/lib/nodeguard/baselines'),
        protect=dict(type='list', elements='str'),
        owner=dict(type='str'),
        files=dict(type='list', elements='path', default=[]),
        settings=dict(type='list', elements='str', default=[]),
        commands=dict(type='list', elements='str', default=[]),
        starts_since=dict(type='float'),
        service=dict(type='str', default='containerd'),
    )
    for key in COMMON_OPTIONS:
        argument_spec[key] = dict(COMMON_ARGUMENT_SPEC[key])
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    require_tomlkit(module)
    try:
        facts = gather(module)
    except InfoError as exc:
        module.fail_json(msg=str(exc), **json_safe(exc.facts))
    except ConfigError as exc:
        module.fail_json(msg=str(exc).replace(' Nothing was written.', '').replace(' Nothing was changed.', ''),
                         **json_safe(exc.given_details()))
    except Exception as exc:  # a clear failure, never a traceback on stdout
        module.fail_json(msg='containerd_info failed on %s: %s' % (module.params.get('path'), exc),
                         exception=traceback.format_exc())
    module.exit_json(**json_safe(facts))


if __name__ == '__main__':
    main()
