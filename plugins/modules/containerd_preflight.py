#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_preflight
short_description: Start the node's containerd on a config in a sandbox and require the CRI plugin to load
version_added: 0.1.0
description:
  - A real-load test of a containerd config. C(containerd config dump) accepts configs whose CRI plugin
    then fails to load in the daemon (for example C(default_runtime_name = "runc") with a runtimes table
    that has no C(runc) on containerd 1.6); only starting the daemon shows that.
  - Starts the node's own containerd binary on O(path) in a private mount, network and PID namespace, with
    a private root, state folder and socket, reads the plugin list with the C(ctr) beside the binary (or from
    containerd's log when there is no C(ctr)), requires the CRI plugins to be C(ok), and stops it.
  - The daemon reads the file at its own path, so relative imports and globs resolve as on the node, and
    merges the imports itself.
  - Leaves nothing on the host. Settings that would make the daemon touch the host (socket paths, the opt
    and NRI folders, snapshotter root paths, C([cgroup] path), proxy plugin sockets) are pointed into the
    private folder in private copies of the files, bind-mounted over the originals inside the namespace
    only; C(/run) is a copy-on-write overlay there. The device snapshotters (devmapper, zfs, btrfs, aufs,
    blockfile, erofs) are never started. What was not exercised is listed in RV(not_checked).
  - Read-only. It writes nothing on the host, so it also runs in check mode, and never reports a change.
  - Needs root and C(unshare) (util-linux). When the test cannot be made, the module fails with
    RV(status=cannot_run); it never passes silently.
  - With O(runtime_classes), it first checks that the node can run each kata runtime class (C(/dev/kvm), the
    C(vhost_vsock) and C(vhost_net) modules, Intel TDX or AMD SEV-SNP where the class's name asks for one) and
    fails with RV(status=refused), naming each class and what is missing, before any load test. O(load_test=false)
    runs only that check.
author:
  - nodeguard maintainers (@nodeguard)
requirements:
  - tomlkit >= 0.7.0 (Python library, on the managed node; Ubuntu 22.04+, Debian 12+, EPEL 9 python3-tomlkit, or pip)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
attributes:
  check_mode:
    support: full
    details: Nothing is written on the host; the test runs in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  path:
    description:
      - The config file to test. It need not be C(/etc/containerd/config.toml); its imports are read by
        the daemon from where they are.
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  containerd_bin:
    description:
      - The node's containerd binary.
      - By default C(containerd) is searched in PATH, then C(/usr/bin), C(/usr/local/bin), C(/opt/bin),
        C(/usr/sbin) and C(/usr/local/sbin).
    type: path
  timeout:
    description:
      - Seconds for the whole test, start to plugin list. The daemon is killed when they run out and the
        module fails with RV(status=timeout).
    type: float
    default: 20
  required_plugins:
    description:
      - Plugin ids that must load (status C(ok)).
      - By default the CRI plugins of the binary's version, C(io.containerd.grpc.v1.cri) on containerd 1.x,
        and C(io.containerd.grpc.v1.cri), C(io.containerd.cri.v1.runtime), C(io.containerd.cri.v1.images)
        on 2.x.
    type: list
    elements: str
  load_test:
    version_added: 1.0.0
    description:
      - Start containerd on O(path). V(false) runs only the O(runtime_classes) check.
    type: bool
    default: true
  runtime_classes:
    version_added: 1.0.0
    description:
      - Kata runtime classes whose needs the node must meet. Each need is read from the kernel, never guessed -
        C(kvm) the character device C(/dev/kvm); C(vhost_vsock), C(vhost_net) the module loaded or built in
        (C(/sys/module/<name>)), its device node (C(/dev/vhost-vsock), C(/dev/vhost-net)) or a module of the running
        kernel (C(/lib/modules/<release>/modules.dep)); C(tdx) the kvm_intel parameter
        C(/sys/module/kvm_intel/parameters/tdx) = C(Y) (Linux 6.16+); C(snp) the kvm_amd parameter
        C(/sys/module/kvm_amd/parameters/sev_snp) = C(Y) (Linux 6.11+); C(se) (IBM Secure Execution)
        C(/sys/firmware/uv/prot_virt_host) = C(1). The CPU flags C(tdx_host_platform) and C(sev_snp) of
        C(/proc/cpuinfo) are named in the message beside a missing C(tdx) or C(snp).
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: The class (the runtime handler's name), for example V(kata-qemu-tdx).
        type: str
        required: true
      shim:
        description:
          - The kata shim; by default the name without C(kata-). Its needs - C(kvm), C(vhost_vsock) and
            C(vhost_net) for every shim but C(remote) (peer pods, the VM runs elsewhere), plus C(tdx), C(snp)
            or C(se) when a C(-)-separated word of the shim is one of them (C(qemu-tdx), C(qemu-nvidia-gpu-snp),
            C(qemu-se)).
        type: str
      needs:
        description: The needs, instead of those the shim's name implies (V([]) checks nothing for this class).
        type: list
        elements: str
        choices: [kvm, vhost_vsock, vhost_net, tdx, snp, se]
  node_root:
    version_added: 1.0.0
    description:
      - The folder under which C(/dev), C(/sys), C(/proc) and C(/lib/modules) are read for O(runtime_classes)
        (tests point it at a folder laid out like a node).
    type: path
    default: /
  kernel_release:
    version_added: 1.0.0
    description:
      - The kernel release whose C(/lib/modules/<release>) lists the loadable modules; by default the running
        kernel's (C(uname -r)).
    type: str
notes:
  - Cost is about one containerd start, a few tenths of a second (see C(docs/preflight.md) for measured figures).
  - The result is the daemon's own verdict on the merged config. Whether a device snapshotter named by
    the CRI config works on this node is not tested; the CRI plugin is loaded with the C(native)
    snapshotter in its place, and RV(not_checked) says so.
seealso:
  - module: nodeguard.containerd.containerd_setting
  - module: nodeguard.containerd.containerd_runtime
'''

EXAMPLES = r'''
- name: Refuse to restart containerd on a config it would not load
  nodeguard.containerd.containerd_preflight:
    path: /etc/containerd/config.toml
  become: true

- name: containerd from the upstream tarball, a longer limit on a busy node
  nodeguard.containerd.containerd_preflight:
    containerd_bin: /usr/local/bin/containerd
    timeout: 60
  become: true

- name: Warn instead of failing where the test cannot run (no root, no unshare)
  nodeguard.containerd.containerd_preflight:
  register: preflight
  failed_when: preflight.status not in ['ok', 'cannot_run']

- name: Refuse kata classes this node cannot run, before changing anything (no load test)
  nodeguard.containerd.containerd_preflight:
    load_test: false
    runtime_classes:
      - name: kata-qemu
      - name: kata-qemu-tdx
      - name: kata-remote
        shim: remote

- name: Require a plugin of your own as well
  nodeguard.containerd.containerd_preflight:
    required_plugins:
      - io.containerd.grpc.v1.cri
      - io.containerd.nri.v1.nri
  become: true
'''

RETURN = r'''
changed:
  description: Always false; nothing is written.
  returned: always
  type: bool
status:
  description:
    - V(ok) the daemon started and every required plugin is C(ok).
    - V(failed) the daemon refused the config, or a required plugin is not C(ok).
    - V(timeout) no answer within O(timeout).
    - V(cannot_run) the test could not be made (not root, no C(unshare), no binary, no such file).
    - V(refused) a runtime class of O(runtime_classes) cannot run on this node (no load test was made).
  returned: always
  type: str
  sample: failed
path:
  description: The config file that was tested.
  returned: always
  type: str
containerd_bin:
  description: The containerd binary that was started.
  returned: when the load test ran
  type: str
containerd_version:
  description: Its version, from C(--version).
  returned: when the binary ran
  type: str
  sample: 1.6.20
required:
  description: Status of each required plugin (V(ok), V(error), V(skip), or V(missing) when not listed).
  returned: when the load test ran
  type: dict
  sample: {"io.containerd.grpc.v1.cri": "error"}
plugins:
  description: Status of every plugin the daemon listed.
  returned: when the load test ran
  type: dict
errors:
  description: What failed, naming the file, the plugin and containerd's own error text.
  returned: when the load test ran
  type: list
  elements: str
  sample:
    - >-
      /etc/containerd/config.toml: containerd 1.6.20 starts, but its plugin io.containerd.grpc.v1.cri failed to load (error):
      invalid plugin config: no corresponding runtime configured in `containerd.runtimes` for `containerd`
      `default_runtime_name = "runc"`
plugin_warnings:
  description: Plugins that are not required and failed to load.
  returned: when the load test ran
  type: list
  elements: str
not_checked:
  description: What the test deliberately did not exercise, and why.
  returned: when the load test ran
  type: list
  elements: str
seconds:
  description: Wall time of the test.
  returned: when the load test ran
  type: float
method:
  description: Where the plugin list came from, V(ctr) or V(log).
  returned: when the daemon started
  type: str
log_tail:
  description: The last lines of containerd's log.
  returned: when the load test ran
  type: str
capabilities:
  version_added: 1.0.0
  description: Per runtime class of O(runtime_classes) - its needs, what is missing (need to reason) and C(ok).
  returned: always
  type: dict
  sample:
    kata-qemu: {needs: [kvm, vhost_vsock, vhost_net], missing: {}, ok: true}
    kata-qemu-tdx:
      needs: [kvm, vhost_vsock, vhost_net, tdx]
      missing: {tdx: "Intel TDX: /sys/module/kvm_intel/parameters/tdx does not exist (...)"}
      ok: false
refused:
  version_added: 1.0.0
  description: One message per runtime class the node cannot run, naming the class and what is missing.
  returned: always
  type: list
  elements: str
'''

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import note_tree_secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.capabilities import check_classes
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    STATUS_OK,
    load_test,
)

CONTAINERD_DIRS = ['/usr/bin', '/usr/local/bin', '/opt/bin', '/usr/sbin', '/usr/local/sbin']


def find_containerd(module):
    given = module.params.get('containerd_bin')
    if given:
        return given
    return module.get_bin_path('containerd') or next(
        (os.path.join(d, 'containerd') for d in CONTAINERD_DIRS if os.access(os.path.join(d, 'containerd'), os.X_OK)),
        None)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type='path', default='/etc/containerd/config.toml', aliases=['dest']),
            containerd_bin=dict(type='path'),
            timeout=dict(type='float', default=20.0),
            required_plugins=dict(type='list', elements='str'),
            load_test=dict(type='bool', default=True),
            runtime_classes=dict(type='list', elements='dict', default=[], options=dict(
                name=dict(type='str', required=True),
                shim=dict(type='str'),
                needs=dict(type='list', elements='str',
                           choices=['kvm', 'vhost_vsock', 'vhost_net', 'tdx', 'snp', 'se']),
            )),
            node_root=dict(type='path', default='/'),
            kernel_release=dict(type='str'),
        ),
        supports_check_mode=True,
    )
    path = module.params['path']
    # containerd's own log lines and errors may quote a value of the config: its secrets are masked
    secrets.bind(module)
    note_tree_secrets(path)
    capabilities, refused = check_classes(module.params['runtime_classes'], module.params['node_root'],
                                          module.params['kernel_release'])
    if refused:
        module.fail_json(changed=False, status='refused', path=path, capabilities=capabilities, refused=refused,
                         msg='%s. Nothing was changed. Fix: remove the class(es) from the runtime classes asked for '
                             '(coco_runtime_classes), give the node what is missing, or skip this check '
                             '(coco_check_node: false).' % '. '.join(refused))
    if not module.params['load_test']:
        module.exit_json(changed=False, status=STATUS_OK, path=path, capabilities=capabilities, refused=[],
                         msg='every runtime class can run on this node: %s'
                             % (', '.join(sorted(capabilities)) or 'none asked for'))
    binary = find_containerd(module)

    def run_command(cmd):
        return module.run_command(cmd)

    res = load_test(binary, path, run_command=run_command, timeout=module.params['timeout'],
                    required=module.params['required_plugins'])
    # not_checked, not `skipped`: Ansible takes a result's top-level `skipped`
    # for a skipped task and then ignores the caller's failed_when
    out = dict(changed=False, status=res.status, path=path, containerd_bin=binary,
               containerd_version=res.containerd_version, required=res.required, plugins=res.plugins,
               errors=res.errors, plugin_warnings=res.warnings, not_checked=res.skipped, seconds=res.seconds,
               method=res.method, log_tail=res.log_tail, capabilities=capabilities, refused=[])
    for warning in res.warnings:
        module.warn(warning)
    if res.status != STATUS_OK:
        if binary is None:
            out['msg'] = ('%s: the containerd load test cannot run: no containerd binary in PATH or %s. Fix: set '
                          'containerd_bin.' % (path, ', '.join(CONTAINERD_DIRS)))
        else:
            out['msg'] = res.message()
        module.fail_json(**out)
    out['msg'] = res.message()
    module.exit_json(**out)


if __name__ == '__main__':
    main()
