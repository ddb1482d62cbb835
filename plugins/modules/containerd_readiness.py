#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: containerd_readiness
short_description: Check that containerd on the node works, and restart it only when its effective config changed
version_added: 1.0.0
description:
  - The node side of the C(nodeguard.containerd.node_readiness) role, callable from any playbook. It runs with the
    Python interpreter Ansible uses on the node (C(ansible_python_interpreter)).
  - O(step=check) runs every readiness check and returns the report RV(readiness) (the role publishes it as the fact
    C(nodeguard_readiness)). The checks are C(containerd_active) (the unit is active, waiting up to O(timeout) for it
    and its CRI plugins), C(config_dump) (C(containerd config dump) of O(path) succeeds), C(imports_exist) and
    C(imports_unique) (every non-glob import exists, every imported file can be read, no file is imported twice),
    C(cri_plugin) (the CRI plugins of this containerd version are C(ok) in C(ctr plugins ls)), per expected
    handler C(handler:<name>) (the runtime is in the effective config) and C(probe:<name>) (a probe container
    started with C(ctr run) through that handler's own settings works, see O(probe_image)), per proxy plugin of the
    effective config C(proxy_plugin:<name>) (the service behind it answers on its socket, for example
    C(containerd-nydus-grpc) for C(proxy_plugins.nydus); required when the CRI plugin or a runtime handler uses
    that snapshotter), C(baseline_drift) (protected keys differ
    from the baseline only where an owner's ledger record or O(drift_accounted) accounts for it),
    C(kubernetes_node_ready) and C(static_pod:<name>).
  - When containerd is not active (or does not come back after O(step=restart)), the message and the report quote
    the last lines of the unit's journal (a failing C(ExecStartPre), containerd's own error), also in C(journal) of
    RV(wait), of RV(restart) and of C(containerd) in RV(readiness).
  - O(step=restart) is the collection's restart contract in one call. It decides whether containerd runs the
    current config (as O(step=pending)); when it does not (or O(force=true)), it load-tests the config in
    isolation (the code of M(nodeguard.containerd.containerd_preflight)) unless O(preflight=false), restarts the
    unit with C(systemctl restart), waits up to O(timeout) seconds for its CRI plugins, clearing systemd's
    C(start-limit-hit) once (C(systemctl reset-failed) and one start), and then records the fingerprint of the
    effective config in O(state_dir). It never restarts into a config C(config dump) rejects or whose CRI plugins
    fail to load in the load test (C(refused) in RV(restart)).
  - O(step=pending) only decides. No restart is pending when containerd started after the last change of the config,
    every file it imports (and the folders of glob imports) and O(restart_files), and every import could be read;
    nor when the effective config (C(config dump) without its top-level C(imports) line, whose order containerd 1.x
    varies) is the one recorded at nodeguard's last restart and containerd has not started since.
  - O(step=wait) waits up to O(timeout) seconds for the unit to be active and its CRI plugins C(ok), and reports how
    long containerd took to come back (RV(wait)).
  - O(step=restart_check) is O(step=restart) followed by O(step=check) in one call, the usual end of a converge
    (one round trip less); the options of both steps apply. It returns both RV(restart) and RV(readiness); the checks run on whatever containerd
    runs after the restart step, also when the restart was refused. When containerd did not come back after the
    restart, the checks do not wait for it again (the restart's wait spent O(timeout) already).
author:
  - nodeguard maintainers (@nodeguard)
requirements:
  - tomlkit >= 0.7.0 (Python library, for the interpreter Ansible uses on the managed node)
  - systemd (C(systemctl)), and C(ctr) beside the containerd binary or in PATH
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - nodeguard.containerd.common.secrets
  - nodeguard.containerd.common.group_read_only
attributes:
  check_mode:
    support: full
    details:
      - O(step=restart) decides and load-tests, and reports what it would do; it never restarts containerd and
        records nothing.
      - O(step=check) and O(step=wait) do not run C(systemctl reset-failed) and do not import or pull the probe
        image in check mode; probe containers still run (they are removed afterwards). Check mode reuses probe
        stamps (O(probe_reuse_seconds)) but writes or removes none.
  diff_mode:
    support: none
  platform:
    platforms: posix
options:
  step:
    description:
      - V(check) the readiness checks and their report; V(restart) the restart contract; V(pending) its decision
        only; V(wait) wait for containerd and its CRI plugins; V(restart_check) the restart contract, then the
        checks.
    type: str
    choices: [check, pending, restart, restart_check, wait]
    default: check
  path:
    description:
      - The containerd config file containerd is started with.
    type: path
    default: /etc/containerd/config.toml
    aliases: [dest]
  state_dir:
    description:
      - The collection's state folder. O(step=restart) keeps the fingerprint of its last restart there
        (C(containerd-started.sha256)); the ledgers under C(<state_dir>/ledger/) account for drift in O(step=check);
        the stamps of passing probes are in C(<state_dir>/readiness/probes.json) (O(probe_reuse_seconds)).
    type: path
    default: /var/lib/nodeguard
  containerd_bin:
    description:
      - The node's containerd binary, used for C(--version), C(config dump) and the load test; the C(ctr) beside it
        is used when there is one.
      - By default C(containerd) is searched in PATH, then C(/usr/bin), C(/usr/local/bin), C(/opt/bin),
        C(/usr/sbin) and C(/usr/local/sbin).
    type: path
  containerd_version:
    description:
      - Only where there is no containerd binary (for example V(1.7) or V(2.1)); when a binary is found its
        C(--version) is the truth, and a different value is an error.
    type: str
  service:
    description:
      - The systemd unit of containerd.
    type: str
    default: containerd
  starts_since:
    description:
      - A point in time, in seconds since the epoch (node_readiness gives when the run began,
        P(nodeguard.containerd.run_since#lookup)). O(step=check) and O(step=restart_check) then count how often
        systemd started O(service) since then, from the unit's journal (systemd's own C(Started) entries), as
        M(nodeguard.containerd.containerd_info) does, in C(service_starts) of RV(readiness). The fleet report takes
        that count for a node readiness checked in the same run, without a call of its own.
    type: float
  address:
    description:
      - containerd's socket. By default the C(grpc.address) of the effective config, else
        C(/run/containerd/containerd.sock).
    type: str
  timeout:
    description:
      - Seconds to wait for the unit to be active and its CRI plugins C(ok) (O(step=check), O(step=wait), and after
        the restart of O(step=restart)).
    type: float
    default: 60
  interval:
    description:
      - Seconds between two polls while waiting.
    type: float
    default: 0.2
  reset_failed:
    description:
      - O(step=check) and O(step=wait) - when systemd refused to start containerd (C(start-limit-hit)), run
        C(systemctl reset-failed) and start it once. When false, C(start-limit-hit) is the reason of the failed
        check. O(step=restart) always does this once after its own restart.
    type: bool
    default: false
  force:
    description:
      - O(step=restart) - restart even when containerd runs the current config (after a restore of a failed config).
    type: bool
    default: false
  restart_files:
    description:
      - O(step=restart) and O(step=pending) - more files whose change needs a restart (the config and every file it
        imports always count).
    type: list
    elements: path
    default: []
  preflight:
    description:
      - O(step=restart) - load-test the config in isolation before restarting (about a second). When the test cannot
        run on the node (no C(unshare), not root) the restart goes on with a warning, judged by C(config dump) alone.
    type: bool
    default: true
  preflight_timeout:
    description:
      - Seconds the load test may take.
    type: float
    default: 20
  fail:
    description:
      - Fail the task when the outcome is bad, with the report in the result. O(step=check) - a required check
        failed; O(step=restart) - the restart was refused, or containerd did not come back with its CRI plugins;
        O(step=wait) - containerd is not ready; O(step=restart_check) - either. V(false) reports only (the role
        decides itself).
    type: bool
    default: true
  handlers:
    description:
      - O(step=check) - runtime handlers that must be in the effective config. Each item is a name or a dict with
        C(name) and optional C(probe) (bool), C(required) (bool), C(pass_config_path) (bool), C(image) (instead of
        O(probe_image)), C(command) (a list, or a string split as a shell would; instead of O(probe_command)) and
        C(env) (a dict, or a list of C(KEY=VALUE), given to the probe container).
      - 'A GPU handler on a node with C(/dev/nvidia0): C({name: nvidia, image: <an image with glibc>,
        env: {NVIDIA_VISIBLE_DEVICES: all}, command: [nvidia-smi, -L]}). With the sandbox image and no command,
        C(env: {NVIDIA_VISIBLE_DEVICES: all}) alone starts the pause task with the GPUs handed in by the NVIDIA
        runtime.'
    type: list
    elements: raw
    default: [runc]
  probe:
    description:
      - Start a probe container through each expected handler (the default for handlers that do not say).
      - The probes run side by side, at most 4 containers at once; each is bounded by O(probe_timeout).
    type: bool
    default: true
  probe_image:
    description:
      - Image the probe containers run, in O(probe_namespace).
      - By default the node's sandbox (pause) image, the one the effective config names (C(sandbox_image) of config
        version 2, C(pinned_images.sandbox) of versions 3 and 4, from C(config dump)); every kubelet node has it in
        the C(k8s.io) namespace, and its entrypoint C(/pause) runs until it is signalled.
      - An image missing from the namespace is imported from O(probe_archive) when that exists, else pulled with
        C(ctr images pull) (O(probe_pull), through the CRI plugin's C(registry.config_path) hosts folder when it
        has one); not in check mode. When it is still missing the probe fails and says why (O(probe_image_required)).
    type: str
  probe_archive:
    description:
      - Image archive on the node imported with C(ctr images import) when the probe image is missing.
    type: path
  probe_pull:
    description:
      - Pull a missing probe image with C(ctr images pull) (bounded by O(probe_timeout)).
    type: bool
    default: true
  probe_image_required:
    description:
      - When the probe image is missing and cannot be imported or pulled, fail the probe checks (V(true)) or skip
        them, with the reason, as not required (V(false)).
    type: bool
    default: true
  probe_command:
    description:
      - Command of the probe container. Empty (the default) - a C(start) probe, for an image whose entrypoint runs
        until it is signalled (the pause image) - the task is started detached, must be seen running, is stopped
        with SIGTERM (SIGKILL after 10 s) and removed. A command - a C(run) probe - the container runs it and it must
        exit 0 (for example V([/bin/true]) with an image that has it). A handler's own C(command) wins.
    type: list
    elements: str
    default: []
  probe_namespace:
    description:
      - containerd namespace of the probe containers (the kubelet's is C(k8s.io)).
    type: str
    default: k8s.io
  probe_timeout:
    description:
      - Seconds a probe container may take; it is killed and removed after that.
    type: float
    default: 60
  probe_reuse_seconds:
    description:
      - Reuse a handler's probe that passed at most this many seconds ago instead of starting its probe container
        again, when nothing the probe depends on changed since. V(0) (the default) starts every probe on every
        check.
      - A probe that ran and passed leaves a stamp in C(<state_dir>/readiness/probes.json) (mode C(0600), its
        folder C(0700); not in check mode) - when it passed (on the wall clock and on the monotonic clock) and a
        fingerprint of what it depended on - the effective config (C(config dump) of O(path), as the restart
        contract fingerprints it), containerd as a process (the unit's C(MainPID), its start time from systemd and
        the boot), the handler's runtime table in the effective config, the device, inode, size and modification
        time of the files the probe goes through (the shim containerd runs for the handler, such as
        C(containerd-shim-runc-v2) or C(containerd-shim-kata-v2), found in containerd's own PATH or beside it as
        containerd finds it; C(runtime_path); C(options.BinaryName), or C(runc) for a runc-type handler without
        one; C(options.ConfigPath); and, when C(options.ConfigPath) is a TOML file such as a kata configuration,
        each existing file it names by an absolute path anywhere in it, at most 64 - under
        C([hypervisor.<name>]) the hypervisor C(path), C(kernel), C(image), C(initrd), C(firmware),
        C(jailer_path), C(virtio_fs_daemon) and the like; a missing file counts as such), and the probe's command
        line (image, command, environment, namespace, O(pass_config_path)).
      - The stamp is reused only when every part of the fingerprint is the same, it is at most this many seconds
        old, and the C(cri_plugin) check passed in the same check (containerd answers). So any restart of
        containerd or reboot, any change of its effective config, and a replaced or touched shim, runtime binary,
        kata configuration file or file that configuration names (a new guest image or kernel from a kata payload
        updated file by file, an upgraded qemu) probe again; so does a stamp that cannot be read. Files are not
        read for the fingerprint, only stat'ed; a file named nowhere above (a shared library of qemu, a file a
        kata configuration names by a relative path, a kata drop-in configuration) is not covered.
      - The age of a stamp is measured on the monotonic clock of the boot (never less than the wall clock says),
        so a wall clock set back does not make a stamp younger; a stamp written by an earlier version of the
        collection, without that reading, is judged by the wall clock.
      - A reused probe's check stays V(pass) and its reason says how long ago the probe passed; its entry in
        C(probes) of RV(readiness) has C(reused=true) and C(age_seconds).
      - A probe that fails removes its handler's stamp. Once the stamp file exists it is kept up to date by every
        check, also with V(0); with V(0) and no stamp file, nothing is written.
      - The image itself is still looked up in the namespace at each check (a missing image fails the probe as
        without a stamp); its content is not compared, only its name.
    type: float
    default: 0
    version_added: 1.1.0
  pass_config_path:
    description:
      - Pass a non-runc handler's C(options.ConfigPath) to the probe with C(ctr run --runtime-config-path).
        Stand-in kata shims that run the runc shim refuse that option; test nodes set this to V(false).
    type: bool
    default: true
  check_drift:
    description:
      - Run the C(baseline_drift) check. Without O(drift_result), this module compares O(path) with the baseline
        O(baseline_name) in O(baseline_store) itself, with the code of M(nodeguard.containerd.containerd_baseline)
        O(nodeguard.containerd.containerd_baseline#module:state=check) and its default
        O(nodeguard.containerd.containerd_baseline#module:protect) (one module call instead of two), without
        its O(nodeguard.containerd.containerd_baseline#module:load_test) (no second containerd is started on
        the file; the drift is read from the file and its C(config dump), and the other checks ask the running
        containerd).
    type: bool
    default: false
  drift_result:
    description:
      - The registered result of M(nodeguard.containerd.containerd_baseline) O(nodeguard.containerd.containerd_baseline#module:state=check)
        (a dict, or its JSON text), for a check with other options than its defaults; the C(baseline_drift) check
        judges it instead of running the comparison. A result whose message says there is no baseline makes the
        check C(skip).
    type: raw
  drift_accounted:
    description:
      - Extra protected key paths (lists, or dotted strings as TOML writes them) whose drift is expected.
    type: list
    elements: raw
    default: []
  baseline_name:
    description:
      - The baseline's name, in the report, and the baseline O(check_drift=true) compares with when no
        O(drift_result) is given.
    type: str
    default: default
  baseline_store:
    description:
      - The folder of the baselines (as M(nodeguard.containerd.containerd_baseline)'s
        O(nodeguard.containerd.containerd_baseline#module:store)), for O(check_drift=true) without O(drift_result).
    type: path
    default: /var/lib/nodeguard/baselines
  kubernetes:
    description:
      - V(auto) checks the Kubernetes node when kubectl and a kubeconfig exist on the node and skips with the reason
        otherwise; V(true) fails when they are missing; V(false) skips.
    type: str
    choices: [auto, 'true', 'false']
    default: auto
  kubectl:
    description:
      - Path of kubectl on the node; by default it is searched in PATH.
    type: path
  kubeconfig:
    description:
      - Kubeconfig files to try, the first existing wins (then C($KUBECONFIG)).
    type: list
    elements: path
    default: [/etc/kubernetes/admin.conf, /etc/kubernetes/kubelet.conf]
  node_name:
    description:
      - Kubernetes node name; by default the node's hostname.
    type: str
  static_pods:
    description:
      - Static pods that must run on the node, for example C(etcd), C(kube-apiserver).
    type: list
    elements: str
    default: []
  kube_timeout:
    description:
      - Seconds to wait for the node to be Ready and the static pods to run.
    type: float
    default: 60
  optional_checks:
    description:
      - Check names (for example C(probe:nvidia), C(baseline_drift)) whose failure is reported but does not make the
        node not ready.
    type: list
    elements: str
    default: []
  report_path:
    description:
      - O(step=check) - also write the report as JSON on the node at this path (atomically; not in check mode).
    type: path
notes:
  - The readiness report and the restart fact are the same the C(node_readiness) role published before it became a
    composition over this module; the role's C(tasks/restart.yml) (C(tasks_from=restart)) is one call of O(step=restart).
  - The fingerprint record is written only after containerd came back with its CRI plugins, so it always describes a
    containerd that ran that config.
seealso:
  - module: nodeguard.containerd.containerd_preflight
  - module: nodeguard.containerd.containerd_info
  - module: nodeguard.containerd.containerd_baseline
'''

EXAMPLES = r'''
- name: Check the node (fails when a required check fails)
  nodeguard.containerd.containerd_readiness:
    handlers: [runc, nvidia]
    kubernetes: 'false'
  become: true

- name: Probe each handler with the node's sandbox (pause) image; the GPU handler runs nvidia-smi -L
  nodeguard.containerd.containerd_readiness:
    handlers:
      - runc
      - kata-qemu-tdx
      - {name: nvidia, image: nvcr.io/nvidia/cuda:12.6.3-base-ubuntu24.04, env: {NVIDIA_VISIBLE_DEVICES: all}, command: [nvidia-smi, -L]}
    kubernetes: 'false'
  become: true

- name: End of a converge - restart once if needed, then the checks, in one call
  nodeguard.containerd.containerd_readiness:
    step: restart_check
    handlers: [runc, nvidia]
    fail: true
  become: true
  register: ready

- name: End of a converge run often (AWX schedule) - a probe that passed within the hour is not run again
  nodeguard.containerd.containerd_readiness:
    step: restart_check
    handlers: [runc, nvidia, kata-qemu]
    probe_reuse_seconds: 3600
  become: true
  register: ready

- name: Restart containerd once if its effective config changed, never into one it cannot load
  nodeguard.containerd.containerd_readiness:
    step: restart
    restart_files:
      - /etc/containerd/config.toml.d/nydus-snapshotter.toml
  become: true
  register: restart

- name: Would a restart be needed? (reports only)
  nodeguard.containerd.containerd_readiness:
    step: pending
  become: true
  register: decision

- name: Wait for containerd after a reboot, clearing start-limit-hit once
  nodeguard.containerd.containerd_readiness:
    step: wait
    timeout: 120
    reset_failed: true
  become: true

- name: The checks and the drift from the baseline default, reported but not failing the play
  nodeguard.containerd.containerd_readiness:
    check_drift: true
    baseline_name: default
    fail: false
  become: true
  register: ready

- name: The drift judged on a baseline check with its own protect list
  block:
    - name: Compare with the baseline
      nodeguard.containerd.containerd_baseline:
        state: check
        protect: [cri.runtimes.runc]
      register: drift
      failed_when: false
    - name: Readiness
      nodeguard.containerd.containerd_readiness:
        check_drift: true
        drift_result: "{{ drift }}"
        fail: false
      register: ready
  become: true
'''

RETURN = r'''
changed:
  description:
    - V(true) when O(step=restart) or O(step=restart_check) restarted containerd (in check mode, when it would).
  returned: always
  type: bool
msg:
  description: One line - the readiness summary, the restart decision, or the wait's outcome.
  returned: always
  type: str
  sample: "containerd 1.6.20, /etc/containerd/config.toml: 9 passed, 0 failed, 3 skipped: READY"
readiness:
  description:
    - The report (the role's fact C(nodeguard_readiness)). C(ok) (no required check failed), C(failed) and
      C(warnings) (names of failed required and optional checks), C(summary), C(checks) (each with C(name),
      C(status) V(pass)/V(fail)/V(skip), C(required), C(reason)), C(containerd) (C(version), C(config_path),
      C(config_version), C(runtimes), C(default_runtime_name), C(cri_plugins), C(came_back_seconds),
      C(startup_seconds), C(waited_seconds), C(start_limit_hit), C(reset_failed_done), C(journal) (the unit's last
      journal lines when containerd was not ready, else empty), C(sandbox_image), C(imports)), C(probe_image)
      (C(image) the default probe image, C(source), C(images) per image used whether it is present, imported,
      pulled, and the errors), C(probes) (per handler C(kind) V(start) or V(run), C(ok), C(rc), C(seconds),
      C(stdout), C(stderr), C(argv), C(reused) V(false); a start probe also C(status), C(stopped_by),
      C(stop_seconds), C(cleanup_error); with O(probe_reuse_seconds) above 0 also C(not_reused), why the probe ran;
      a probe reused from its stamp instead C(reused) V(true), C(age_seconds), C(passed_at) (UTC) and the C(kind),
      C(rc) and C(seconds) of the probe that passed then, empty C(stdout), C(stderr) and C(argv)), C(drift),
      C(kubernetes) and, with
      O(starts_since), C(service_starts) (C(unit), C(since), C(count), C(error); C(count) is V(null) when the journal
      cannot be read, C(error) says why).
  returned: O(step=check) and O(step=restart_check)
  type: dict
  sample:
    ok: true
    failed: []
    summary: 9 passed, 0 failed, 3 skipped
    checks:
      - {name: containerd_active, status: pass, required: true, reason: containerd active (containerd 1.6.20)}
restart:
  description:
    - The restart fact (the role's C(nodeguard_restart)). C(needed) (a restart was pending or forced), C(refused)
      (not restarted, the config cannot be loaded), C(restarted), C(cri_ok) (containerd came back with its CRI
      plugins), C(seconds) (restart and wait), C(reason) (why, or why refused; after a restart containerd did not
      come back from, also that and the last lines of the unit's journal), C(wait) (the wait's report, as
      RV(wait)), C(journal) (when containerd did not come back, the unit's journal since the restart).
  returned: O(step=restart) and O(step=restart_check)
  type: dict
  sample: {needed: true, refused: false, restarted: true, cri_ok: true, seconds: 1.4, reason: "...", wait: {}}
decision:
  description:
    - The restart decision. C(pending), C(dump_ok) (C(config dump) succeeded), C(fingerprint) (of the effective
      config), C(reason), C(active_state), C(started) (epoch seconds), C(newest_path) and C(newest) (the newest
      change among the watched files), C(walk_errors) (imports that could not be read), C(recorded) and
      C(recorded_at) (the last record).
  returned: O(step=restart), O(step=restart_check) and O(step=pending)
  type: dict
preflight:
  description: The load test before the restart (C(status), C(msg), C(errors), C(seconds), C(required)).
  returned: O(step=restart) and O(step=restart_check) when a restart was needed and O(preflight=true)
  type: dict
wait:
  description:
    - C(ok), C(msg), C(unit), C(active_state), C(sub_state), C(result), C(n_restarts), C(start_limit_hit),
      C(reset_failed_done), C(waited_seconds), C(polls), C(came_back_seconds) (from the unit's stop to ready),
      C(startup_seconds), C(up_for_seconds), C(cri_plugins), C(containerd_version), C(recorded) (the fingerprint
      file written, after a restart), C(journal) (when not ready, the last lines of the unit's journal, each
      the process name, its pid and the message) and C(journal_error) (why the journal could not be read).
  returned: O(step=wait)
  type: dict
'''

import json
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import atomic_write
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    exit_result,
    json_safe,
    require_tomlkit,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import (
    RecordingContext, containerd_facts, service_start_facts)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import sibling_ctr, which
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.report import readiness
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.restart import pending, restart
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import DEFAULT_ADDRESS, wait_ready

COMMON_OPTIONS = ('path', 'state_dir', 'containerd_bin', 'containerd_version', 'lock_timeout', 'validate', 'backup',
                  'secret_keys')


def step_check(module, ctx, p, version_text):
    report = readiness(ctx, p, version_text, module.check_mode)
    if p['starts_since'] is not None:
        # after the checks (and after the restart of step restart_check): the count includes every start so far
        report['service_starts'] = service_start_facts(module, p['service'], p['starts_since'])
    if p['report_path'] and not module.check_mode:
        atomic_write(p['report_path'], (json.dumps(json_safe(report), indent=4, sort_keys=True) + '\n').encode(),
                     mode=0o644)
    msg = 'containerd %s, %s: %s: %s' % (version_text or '?', p['path'], report['summary'],
                                         'READY' if report['ok'] else 'NOT READY')
    failed = p['fail'] and not report['ok']
    if failed:
        msg += ': ' + '; '.join('[%s] %s' % (c['name'], c['reason']) for c in report['checks']
                                if c['status'] == 'fail' and c['required'])
    return dict(changed=False, msg=msg, readiness=report), failed


def step_restart(module, ctx, p, version_text):
    opts = dict(path=p['path'], state_dir=p['state_dir'], unit=p['service'], restart_files=p['restart_files'],
                force=p['force'], preflight=p['preflight'], preflight_timeout=p['preflight_timeout'],
                timeout=p['timeout'], ctr=p['ctr'], address=p['address'])
    fact, decision, preflight = restart(ctx, opts, module.check_mode)
    if fact['wait']:
        fact['wait']['containerd_version'] = version_text
    if fact['refused']:
        msg = ('not restarting containerd: %s. The running containerd is left as it is. Fix the config '
               '(playbooks/repair.yml), then run again.' % fact['reason'])
    elif fact['restarted'] and not fact['cri_ok']:
        msg = 'containerd did not come back with the CRI plugin loaded after the restart: %s' % fact['wait']['msg']
    elif fact['restarted']:
        msg = 'containerd restarted (%s); %s' % (fact['reason'], fact['wait']['msg'])
    elif fact['needed']:
        msg = 'containerd would be restarted (check mode): %s' % fact['reason']
    else:
        msg = 'no restart needed: %s' % fact['reason']
    result = dict(changed=bool(fact['restarted'] or (module.check_mode and fact['needed'] and not fact['refused'])),
                  msg=msg, restart=fact, decision=decision)
    if preflight is not None:
        result['preflight'] = preflight
    return result, p['fail'] and (fact['refused'] or (fact['restarted'] and not fact['cri_ok']))


def step_pending(module, ctx, p, version_text):
    decision = pending(ctx, p['path'], p['state_dir'], p['service'], p['restart_files'])
    return dict(changed=False, msg=decision['reason'], decision=decision), False


def step_wait(module, ctx, p, version_text):
    res = wait_ready(p['service'], p['ctr'], p['address'] or DEFAULT_ADDRESS, ctx.containerd_version, p['timeout'],
                     p['interval'], reset_failed=p['reset_failed'] and not module.check_mode)
    res['containerd_version'] = version_text
    return dict(changed=False, msg=res['msg'], wait=res), p['fail'] and not res['ok']


def step_restart_check(module, ctx, p, version_text):
    result, restart_failed = step_restart(module, ctx, p, version_text)
    fact = result['restart']
    checks = dict(p)
    if fact['restarted'] and not fact['cri_ok']:
        checks['timeout'] = 0.0  # the restart's wait spent the timeout already: report, do not wait twice
    check_result, check_failed = step_check(module, ctx, checks, version_text)
    result['readiness'] = check_result['readiness']
    result['msg'] = '%s; %s' % (result['msg'], check_result['msg'])
    return result, restart_failed or check_failed


STEPS = dict(check=step_check, restart=step_restart, pending=step_pending, wait=step_wait,
             restart_check=step_restart_check)


def main():
    argument_spec = dict(
        step=dict(type='str', default='check', choices=sorted(STEPS)),
        service=dict(type='str', default='containerd'),
        starts_since=dict(type='float'),
        address=dict(type='str'),
        timeout=dict(type='float', default=60.0),
        interval=dict(type='float', default=0.2),
        reset_failed=dict(type='bool', default=False),
        force=dict(type='bool', default=False),
        restart_files=dict(type='list', elements='path', default=[]),
        preflight=dict(type='bool', default=True),
        preflight_timeout=dict(type='float', default=20.0),
        fail=dict(type='bool', default=True),
        handlers=dict(type='list', elements='raw', default=['runc']),
        probe=dict(type='bool', default=True),
        probe_image=dict(type='str'),
        probe_archive=dict(type='path'),
        probe_pull=dict(type='bool', default=True),
        probe_image_required=dict(type='bool', default=True),
        probe_command=dict(type='list', elements='str', default=[]),
        probe_namespace=dict(type='str', default='k8s.io'),
        probe_timeout=dict(type='float', default=60.0),
        probe_reuse_seconds=dict(type='float', default=0.0),
        pass_config_path=dict(type='bool', default=True, no_log=False),
        check_drift=dict(type='bool', default=False),
        drift_result=dict(type='raw'),
        drift_accounted=dict(type='list', elements='raw', default=[]),
        baseline_name=dict(type='str', default='default'),
        baseline_store=dict(type='path', default='/var/lib/nodeguard/baselines'),
        kubernetes=dict(type='str', default='auto', choices=['auto', 'true', 'false']),
        kubectl=dict(type='path'),
        kubeconfig=dict(type='list', elements='path',
                        default=['/etc/kubernetes/admin.conf', '/etc/kubernetes/kubelet.conf']),
        node_name=dict(type='str'),
        static_pods=dict(type='list', elements='str', default=[]),
        kube_timeout=dict(type='float', default=60.0),
        optional_checks=dict(type='list', elements='str', default=[]),
        report_path=dict(type='path'),
    )
    for key in COMMON_OPTIONS:
        argument_spec[key] = dict(COMMON_ARGUMENT_SPEC[key])
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    require_tomlkit(module)
    p = dict(module.params)
    ctx = RecordingContext(module, p['path'])
    try:
        version_text = containerd_facts(ctx)['version']
        p['ctr'] = sibling_ctr(ctx.containerd_bin) if ctx.containerd_bin else which('ctr')
        result, failed = STEPS[p['step']](module, ctx, p, version_text)
    except ConfigError as exc:
        module.fail_json(msg=str(exc).replace(' Nothing was written.', ''))
    except Exception as exc:  # a clear failure, never a traceback on stdout
        module.fail_json(msg='containerd_readiness (step %s) failed on %s: %s' % (p['step'], p['path'], exc),
                         exception=traceback.format_exc())
    for warning in ctx.warnings:
        module.warn(warning)
    if failed:
        module.fail_json(**json_safe(result))
    exit_result(module, ctx, result)


if __name__ == '__main__':
    main()
