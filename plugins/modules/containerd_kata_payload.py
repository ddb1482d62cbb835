#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_kata_payload
short_description: Install or remove the kata payload (kata-deploy's /opt/kata) from a tarball, file by file
version_added: 1.0.0
description:
  - O(state=present) unpacks the members of the tarball O(archive) that lie under O(root) into O(dest). Each file
    is written to a temporary name in its folder, flushed and renamed, and only when its bytes, mode or link target
    differ, so a second run changes nothing.
  - Members that would land outside O(dest) (absolute names, C(..), links pointing out), devices and fifos make
    the archive refused before anything is written.
  - A manifest (O(manifest)) records what was in O(dest) before the first install (never removed) and every path
    the payload owns. It is written before the first file is touched, so a run killed half way is finished by the
    next run and still removed completely. Paths an earlier payload owned that the new archive no longer has are
    removed (an upgrade leaves no stale files).
  - O(state=absent) removes what the manifest owns (files and links, then folders that are empty and were not
    there before), then the manifest, then the copy of the archive recorded with O(archive_is_cache). Without a
    manifest nothing is removed - a payload that nodeguard did not install is left alone.
  - The payload does not touch containerd's config; M(nodeguard.containerd.containerd_runtime) adds the handlers.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Reports what would be installed, updated and removed; writes nothing (no manifest, no lock file).
  diff_mode:
    support: partial
    details: The diff lists the paths that change, not their contents.
  platform:
    platforms: posix
options:
  state:
    description:
      - V(present) installs or updates the payload, V(absent) removes what the manifest says it installed.
    type: str
    choices: [present, absent]
    default: present
  archive:
    description:
      - The payload tarball on the node. Required with O(state=present).
      - C(.tar.gz), C(.tar.xz) and C(.tar.bz2) (kata up to 3.20, C(kata-static-<version>-amd64.tar.xz)) are read by
        Python's C(tarfile); C(.tar.zst) (kata 3.21 and later, 4.x) by C(tarfile) on Python 3.14+, else by the
        C(zstandard) Python package, else by the node's C(zstd) program, decompressed as a stream (no uncompressed
        copy is written). Without any of them the module fails naming the fix (install C(zstd)).
      - The compression is recognised by the file's first bytes, not its name.
    type: path
  dest:
    description:
      - Where the payload is unpacked. C(/), C(/usr), C(/etc) and C(/opt) themselves are refused.
    type: path
    default: /opt/kata
  root:
    description:
      - The folder inside the archive that maps to O(dest); members outside it are ignored. Empty means the
        archive's root.
    type: str
    default: opt/kata
  require:
    description:
      - Paths (relative to O(dest) or absolute) that must exist after the install, for example the shim and each
        C(configuration-<shim>.toml). The module fails naming the missing ones (the files are installed; the
        config should then not be changed).
    type: list
    elements: path
    default: []
  archive_is_cache:
    description:
      - O(archive) is a copy made for this install (the C(coco) role's cache); O(state=absent) deletes it too.
      - The copy an earlier install recorded, when it is another file, is deleted once this archive is installed
        (the cache keeps one archive, not every one a node was ever given).
    type: bool
    default: false
  archive_pending:
    description:
      - Check mode only - an earlier task of the run would replace O(archive) (the C(coco) role's copy or download of
        a new archive, which check mode does not make). The file at O(archive) now is not the one the real run
        installs, so it is not read; the result says the whole payload would be installed, as for an O(archive)
        that is not on the node yet. Ignored outside check mode.
    type: bool
    default: false
    version_added: 1.2.0
  manifest:
    description:
      - The manifest file. Default C(<state_dir>/kata-payload/manifest.json).
    type: path
  state_dir:
    description:
      - nodeguard's state folder; holds the default O(manifest).
    type: path
    default: /var/lib/nodeguard
  lock_timeout:
    description:
      - Seconds to wait for the manifest's lock, held by another run on the same payload.
    type: float
    default: 30
notes:
  - Kata 4.x's layout is recognised beside 3.x's - the Go shim C(bin/containerd-shim-kata-v2) with its configurations in
    C(share/defaults/kata-containers/), the runtime-rs shim C(runtime-rs/bin/containerd-shim-kata-v2) with its
    configurations in C(share/defaults/kata-containers/runtime-rs/) (for example C(configuration-dragonball.toml)).
    RV(layout) says which the payload has, and a missing O(require) path is reported with it.
  - A C(.tar.zst) payload read through C(zstd) is decompressed about twice (once to check every member before
    anything is written, once to install), never stored uncompressed.
  - Files are streamed from the archive, never held in memory whole (a real kata payload has files of hundreds of
    MB). Temporary files are named like those of the config writes, so a run killed mid-file leaves nothing that
    the next run does not remove.
seealso:
  - module: nodeguard.containerd.containerd_runtime
'''

EXAMPLES = r'''
- name: Unpack kata-deploy's payload under /opt/kata
  nodeguard.containerd.containerd_kata_payload:
    archive: /var/lib/nodeguard/coco/payload/kata-static-3.17.0-amd64.tar.xz
    require:
      - bin/containerd-shim-kata-v2
      - share/defaults/kata-containers/configuration-qemu.toml
  register: payload
  become: true

- name: Unpack a kata 4.x payload (zstd; the node needs zstd or the zstandard package below Python 3.14)
  nodeguard.containerd.containerd_kata_payload:
    archive: /var/lib/nodeguard/coco/payload/kata-static-4.0.0-amd64.tar.zst
    require:
      - runtime-rs/bin/containerd-shim-kata-v2
      - share/defaults/kata-containers/runtime-rs/configuration-dragonball.toml
  become: true

- name: Remove exactly what was installed
  nodeguard.containerd.containerd_kata_payload:
    state: absent
  become: true
'''

RETURN = r'''
dest:
  description: The payload folder (absolute).
  returned: always
  type: str
  sample: /opt/kata
manifest:
  description: The manifest file.
  returned: always
  type: str
  sample: /var/lib/nodeguard/kata-payload/manifest.json
entries:
  description: How many paths the archive has under O(root) (folders included).
  returned: state=present
  type: int
installed:
  description: Paths (relative to O(dest); folders end in C(/)) that did not exist and were (or would be) created;
    at most 100 are listed, RV(installed_count) counts them all.
  returned: state=present
  type: list
  elements: str
  sample: [bin/containerd-shim-kata-v2, share/defaults/kata-containers/configuration-qemu.toml]
installed_count:
  description: How many paths were installed.
  returned: state=present
  type: int
updated:
  description: Paths whose bytes, mode or link target differed and were (or would be) replaced; at most 100 listed.
  returned: state=present
  type: list
  elements: str
updated_count:
  description: How many paths were replaced.
  returned: state=present
  type: int
removed:
  description:
    - With O(state=present), paths an earlier payload owned that this archive no longer has, removed, and the
      copy of an earlier archive (absolute).
    - With O(state=absent), every path removed (relative to O(dest); O(dest) itself and the cached archive
      absolute); at most 100 listed.
  returned: always
  type: list
  elements: str
removed_count:
  description: How many paths were removed.
  returned: always
  type: int
layout:
  description:
    - The kata runtimes the payload carries (paths relative to O(dest)) - C(go) (kata 3.x's default runtime) and
      C(rs) (runtime-rs, kata 4.x's default), each with its shim (V(null) when absent) and the shim names of its
      C(configuration-<shim>.toml) files.
  returned: state=present and the archive was read
  type: dict
  sample:
    go: {shim: bin/containerd-shim-kata-v2, configurations: [qemu, qemu-coco-dev, qemu-nvidia-gpu, qemu-snp, qemu-tdx]}
    rs: {shim: runtime-rs/bin/containerd-shim-kata-v2, configurations: [cloud-hypervisor, dragonball, qemu-runtime-rs]}
archive_sha256:
  description: SHA-256 of O(archive), recorded in the manifest.
  returned: state=present
  type: str
preexisting_kept:
  description: How many paths were in O(dest) before the first install (never removed).
  returned: state=present
  type: int
kept_preexisting:
  description: How many paths the manifest recorded as there before the first install (left in place).
  returned: state=absent and a manifest existed
  type: int
'''

import os
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import LockTimeout
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import (
    PayloadError,
    diff_of,
    install,
    manifest_lock,
    remove,
)

# a payload unpacked over one of these would mix with the system's own files
REFUSED_DEST = ('/', '/usr', '/etc', '/opt')


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type='str', default='present', choices=['present', 'absent']),
            archive=dict(type='path'),
            dest=dict(type='path', default='/opt/kata'),
            root=dict(type='str', default='opt/kata'),
            require=dict(type='list', elements='path', default=[]),
            archive_is_cache=dict(type='bool', default=False),
            archive_pending=dict(type='bool', default=False),
            manifest=dict(type='path'),
            state_dir=dict(type='path', default='/var/lib/nodeguard'),
            lock_timeout=dict(type='float', default=30.0),
        ),
        required_if=[('state', 'present', ['archive'])],
        supports_check_mode=True,
    )
    params = dict(module.params)
    params['manifest'] = params['manifest'] or os.path.join(params['state_dir'], 'kata-payload', 'manifest.json')
    dest = os.path.abspath(params['dest'])
    if os.path.normpath(dest) in REFUSED_DEST:
        module.fail_json(msg='dest %s is refused: the payload needs a folder of its own (kata-deploy: /opt/kata)'
                         % dest)
    lock = None
    try:
        lock = manifest_lock(params['manifest'], params['lock_timeout'], module.check_mode)
        if lock is not None:
            lock.acquire()
        if params['state'] == 'present':
            result = install(params, module.check_mode)
        else:
            result = remove(params, module.check_mode)
    except (PayloadError, LockTimeout) as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg='%s: %s' % (getattr(exc, 'filename', None) or dest, exc),
                         exception=traceback.format_exc())
    finally:
        if lock is not None:
            lock.release()
    if module._diff and result.get('changed'):
        result['diff'] = diff_of(result)
    # plain JSON types only (no tomlkit items): exit_json as it is
    module.exit_json(**result)


if __name__ == '__main__':
    main()
