# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # Options shared by every module that edits a containerd config.
    DOCUMENTATION = r'''
options:
  path:
    description:
      - The containerd config file to edit.
      - Must declare C(version = 2) (containerd 1.6/1.7) or C(version = 3) (containerd 2.x);
        a version 1 file is refused with an explanation.
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  owner:
    description:
      - Name under which the change is recorded in the ledger.
      - Uninstall (C(state=absent)) removes only what this owner added and restores what it changed.
      - This is not the Unix owner of the file; see O(file_owner) for that.
    type: str
    default: nodeguard
  backup:
    description:
      - Create a backup file with a timestamp in its name beside the config before replacing it,
        so you can get the original back if you somehow clobbered it.
    type: bool
    default: false
  validate:
    description:
      - How the candidate file is checked before it replaces the config.
      - V(auto) runs the node's own C(containerd --config <candidate> config dump) (see O(containerd_bin)).
        When no binary is found the task warns loudly that the change was judged on nodeguard's own model only.
      - V(load) does that and also starts the node's containerd on the candidate tree in isolation (private
        network, mount and PID namespaces, private root, state and socket; device-touching snapshotters disabled)
        and requires its CRI plugins to load, then stops it (about a second; see C(docs/preflight.md)).
        C(config dump) accepts configs whose CRI plugin then fails in the daemon; this catches them. It needs root
        and C(unshare), and fails clearly when it cannot run.
      - Any other string is a command run on the candidate; it must contain C(%s), which is replaced
        by the candidate's path. The candidate sits in the config's own folder, so relative imports resolve.
      - V(none) skips the command.
      - Built-in checks always run whatever this option says. Every non-glob import must exist,
        the default runtime must name a defined runtime, and on containerd 1.x no drop-in may replace
        a plugin table of the main file and lose its keys.
    type: str
    default: auto
  edit_in:
    description:
      - Which file of the config tree the change is written to. containerd runs config.toml merged with its
        drop-ins (the files in C(imports)); a change is only reported done when it is in effect there.
      - V(auto) writes to config.toml unless a drop-in decides the key. On containerd 1.x a drop-in that defines
        a C(plugins.<id>) table (for example the NVIDIA toolkit's C(conf.d/99-nvidia.toml), which carries the whole
        CRI table) replaces config.toml's table, and on 2.x a later file that sets the same key wins. The change
        then goes to that drop-in, is recorded in the ledger for that file and is undone there, to the byte.
        This holds also when config.toml already has the wanted value, since a run is only C(ok) when the value
        is in effect.
      - V(config) writes to O(path) only, and refuses (naming the drop-in that shadows the key) when the change
        would have no effect there.
      - An absolute path names one file of the tree (O(path) or a file it imports) to write to; the change must
        still be in effect.
    type: str
    default: auto
  containerd_bin:
    description:
      - The node's containerd binary, used for C(config dump) (validation and confirming the merged view) and
        C(--version).
      - By default C(containerd) is searched in PATH, then C(/usr/bin), C(/usr/local/bin) (kubespray, the upstream
        tarball), C(/opt/bin) (Flatcar), C(/usr/sbin) and C(/usr/local/sbin).
    type: path
  containerd_version:
    description:
      - The containerd version that reads the file, for example V(1.7) or V(2.1), for nodes without a containerd
        binary (an image being prepared). It decides the merge rules (1.x replaces imported plugin tables,
        2.x deep-merges) and which config versions can be read.
      - When a binary is found, its C(--version) is the truth; a different O(containerd_version) is an error.
      - When neither is known, a config version 2 file is assumed to be read by containerd 1.x.
    type: str
  lock_timeout:
    description:
      - Seconds to wait for the lock file beside the config (C(.<name>.nodeguard.lock)) held by
        another nodeguard task before failing.
    type: float
    default: 30
  state_dir:
    description:
      - Folder of the ledger that records each owner's changes (one JSON file per config file
        under C(<state_dir>/ledger/)).
    type: path
    default: /var/lib/nodeguard
  follow:
    description:
      - When O(path) is a symbolic link, replace the file it points to (atomically, in that file's folder).
      - The same for a drop-in the edit is written to (O(edit_in)) that is a link; its ledger is named after the
        file the link points to, so an uninstall finds the records whichever name the imports use.
      - When V(false) (the default), a link is refused and nothing is written.
    type: bool
    default: false
  create:
    description:
      - When the config does not exist (or is empty), start from the node's C(containerd config default).
      - When V(false), a missing config is an error and nothing is written.
    type: bool
    default: false
  mode:
    description:
      - Permissions of the config after the write, as for M(ansible.builtin.file).
      - By default the mode of the existing file is kept (V(0644) for a new file).
    type: raw
  file_owner:
    description:
      - Unix user that should own the config (name or uid). The existing owner is kept by default.
      - Named C(file_owner) because O(owner) names the ledger owner.
    type: str
  group:
    description:
      - Unix group of the config (name or gid). The existing group is kept by default.
    type: str
  seuser:
    description: SELinux user of the config, as for M(ansible.builtin.file).
    type: str
  serole:
    description: SELinux role of the config, as for M(ansible.builtin.file).
    type: str
  setype:
    description: SELinux type of the config, as for M(ansible.builtin.file).
    type: str
  selevel:
    description: SELinux level of the config, as for M(ansible.builtin.file).
    type: str
  attributes:
    description: File attributes (as shown by C(lsattr)) of the config, as for M(ansible.builtin.file).
    type: str
    aliases: [attr]
notes:
  - Writes are atomic. The new content goes to a temporary file in the config's folder, is flushed,
    renamed over the config, and the folder is flushed. A crash leaves the old file or the new one.
  - A lock file beside the config serialises nodeguard tasks. A program that rewrites the file without
    the lock (nvidia-ctk, kata-deploy) is detected by comparing the file before the rename; the edit is
    then applied again on the new content, up to three times.
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
'''

    # The secret paths, for the modules that take only some of the common options.
    SECRETS = r'''
options:
  secret_keys:
    version_added: 1.0.0
    description:
      - Dotted TOML paths of config values that are secrets, beside those nodeguard knows, the registry credentials
        C(password), C(auth) and C(identitytoken) of C(plugins."io.containerd.grpc.v1.cri".registry.configs.<host>.auth)
        in version 2 and of C(plugins."io.containerd.cri.v1.images".registry.configs.<host>.auth) in versions 3 and 4,
        and the same keys under the older C(registry.auths.<host>) tables.
      - A C(*) part stands for any one key, for example C(plugins."io.containerd.grpc.v1.cri".registry.configs.*.tls.key_file);
        a path that names a table makes every value under it a secret.
      - Every secret value of the config, of each drop-in it imports, of the candidate and of the ledger is masked
        as C(********) wherever it would appear in the task's output (C(diff), C(msg), warnings, return values, the
        task's own arguments), also in check mode; a changed secret is named in C(secrets_changed) and in a
        warning, never shown. A setting whose key is a secret path or a table a secret path lies under (also an
        entry of C(settings)), a runtime's C(options) or C(settings) that hold a secret, and a drop-in C(content)
        that holds a secret, are masked in the task's arguments without C(no_log), also in the line the module
        logs on the node when it starts. Whole values are masked, so a user name (not a secret) stays readable,
        unless the task gives it inside a whole table with a secret (such a value is masked whole).
      - See C(docs/secrets.md).
    type: list
    elements: str
    default: []
'''

    # The group's editing options, accepted without effect by the read-only
    # modules of the action group (containerd_info, containerd_readiness), so
    # module_defaults for group/nodeguard.containerd.containerd reach them.
    GROUP_READ_ONLY = r'''
options:
  lock_timeout:
    description:
      - Accepted so that C(module_defaults) for the C(group/nodeguard.containerd.containerd) action group reach
        this module too. Has no effect; this module takes no lock.
    type: float
    default: 30
  validate:
    description:
      - Accepted so that C(module_defaults) for the action group reach this module too. Has no effect.
    type: str
    default: auto
  backup:
    description:
      - Accepted so that C(module_defaults) for the action group reach this module too. Has no effect; no config is
        written.
    type: bool
    default: false
'''
