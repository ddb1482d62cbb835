# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readiness checks and their report (containerd_readiness step=check; the fact nodeguard_readiness).

Each check is {name, status pass/fail/skip, required, reason}; the report
says ok when no required check failed. The checks, in order:
containerd_active, config_dump, imports_exist, imports_unique, cri_plugin,
handler:<name> and probe:<name> per expected handler, proxy_plugin:<name>
per proxy plugin of the effective config (nydus: does containerd-nydus-grpc
answer), baseline_drift, kubernetes_node_ready and static_pod:<name>.

The probes run, by default, the node's sandbox image: the one the effective
config names (``sandbox_image`` of config version 2, ``pinned_images.sandbox``
of 3 and 4), which every kubelet node has in the ``k8s.io`` namespace. With
probe_reuse_seconds, a handler's probe that passed recently is reused when
nothing it depends on changed (``stamps.ProbeStamps``): containerd's identity
is read after the wait and before any probe runs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import CRI_V2, CRI_V3_IMAGES
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.drift import (
    baseline_check,
    evaluate_drift,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.kube import kubernetes
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.probe import (
    handlers as expected_handlers,
    SETTLE_SECONDS,
    probe_image,
    run_probes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.proxy import proxy_checks
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.restart import dump_fingerprint
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import (
    DEFAULT_ADDRESS,
    cri_plugin_ids,
    cri_status,
    main_process,
    plugins_ls,
    wait_ready,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.stamps import ProbeStamps, process_path
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.tree import (
    Tree,
    config_dump,
    dump_runtimes,
    parse_dump,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in


class Checks(object):
    def __init__(self, optional):
        self.items = []
        self.optional = set(optional or [])

    def add(self, name, status, reason, required=True):
        self.items.append(dict(name=name, status=status, reason=reason,
                               required=bool(required) and name not in self.optional))

    def count(self, status):
        return sum(c['status'] == status for c in self.items)


def dump_images(dump):
    """(sandbox image, registry hosts folder) of the CRI plugin in a config dump (None when it names none)."""
    if (dump.get('version') or 1) >= 3:
        images = get_in(dump, ('plugins', CRI_V3_IMAGES)) or {}
        sandbox = get_in(images, ('pinned_images', 'sandbox'))
    else:
        images = get_in(dump, ('plugins', CRI_V2)) or {}
        sandbox = images.get('sandbox_image')
    # config_path may list several folders (':'); ctr takes one
    hosts = (get_in(images, ('registry', 'config_path')) or '').split(':')[0]
    return sandbox or None, hosts or None


def read_config(ctx, p):
    """The config side, before any wait: the tree, the live config (config dump), its runtimes and socket."""
    path = p['path']
    info = dict(tree=Tree(path, ctx.containerd_version), dump_error='', effective_version=None, runtimes={},
                default_runtime_name=None, dump=None, sandbox_image=None, hosts_dir=None, dump_fingerprint=None)
    rc, out, err = config_dump(ctx, path)
    info['dump_rc'] = rc
    dump = None
    if rc != 0:
        info['dump_error'] = (err.strip().splitlines() or [''])[-1] if err else out.strip()[-400:]
    else:
        dump, why = parse_dump(out)
        if dump is None:
            info.update(dump_rc=-1, dump_error=why)
    if dump is not None:
        info['effective_version'] = dump.get('version')
        info['runtimes'], info['default_runtime_name'] = dump_runtimes(dump)
        info['sandbox_image'], info['hosts_dir'] = dump_images(dump)
        info['dump'] = dump
        info['dump_fingerprint'] = dump_fingerprint(out)
    info['address'] = p['address'] or get_in(dump or {}, ('grpc', 'address')) or DEFAULT_ADDRESS
    return info


def read_live(ctx, p, info, check_mode, ready):
    """The daemon side: CRI plugin status, the expected handlers with their probe command lines, the probe image
    (only when containerd is ready: no probe runs otherwise, and each ctr call on a dead socket waits 10 s)."""
    rows, info['plugins_error'] = plugins_ls(p['ctr'], info['address'])
    ids = cri_plugin_ids(ctx.containerd_version, rows)
    info['cri_plugins'] = cri_status(rows, ids) if rows is not None else dict((pid, 'unknown') for pid in ids)
    # the image the user named, else the node's sandbox image
    info['probe_image'] = p['probe_image'] or info['sandbox_image']
    info['probe_image_source'] = 'probe_image' if p['probe_image'] else 'sandbox image of the effective config'
    opts = dict(ctr=p['ctr'], address=info['address'], namespace=p['probe_namespace'],
                probe_image=info['probe_image'], probe_command=p['probe_command'],
                pass_config_path=p['pass_config_path'], hosts_dir=info['hosts_dir'], pull_timeout=p['probe_timeout'])
    info['handlers'] = expected_handlers(p['handlers'], info['runtimes'], opts, p['probe'])
    info['images'] = {}
    wanted = sorted(set(h['probe_image'] for h in info['handlers'] if h['probe'] and h['present'] and h['probe_image']))
    for image in wanted if p['ctr'] and ready else []:
        info['images'][image] = probe_image(dict(opts, probe_image=image), p['probe_archive'],
                                            may_import=not check_mode, pull=p['probe_pull'])
    return info


def _check_tree(add, info, p):
    if info['dump_rc'] == 0:
        add('config_dump', 'pass', 'containerd config dump of %s succeeded (version %s)'
            % (p['path'], info['effective_version']))
    else:
        add('config_dump', 'fail', 'containerd --config %s config dump failed: %s'
            % (p['path'], info['dump_error'] or info['dump_rc']))
    tree = info['tree']
    if tree.parse_error:
        add('imports_exist', 'fail', 'cannot read imports: %s' % tree.parse_error)
        add('imports_unique', 'fail', 'cannot read imports: %s' % tree.parse_error)
        return
    n_entries = len(tree.entries)
    if tree.missing:
        add('imports_exist', 'fail', 'missing import(s): %s' % ', '.join(tree.missing))
    elif tree.errors:
        add('imports_exist', 'fail', '; '.join(tree.errors))
    else:
        add('imports_exist', 'pass', '%d import entr%s, every non-glob one exists'
            % (n_entries, 'y' if n_entries == 1 else 'ies'))
    if tree.duplicates:
        add('imports_unique', 'fail', 'imported more than once: %s' % ', '.join(tree.duplicates))
    else:
        add('imports_unique', 'pass', 'no file imported twice')
    # containerd loads a file once, so a self-import runs; said, never required
    for warning in tree.warnings:
        add('imports_self', 'fail', warning, required=False)


def _check_handlers(add, info, wait, p, stamps):
    # the probes of all handlers run side by side (each its own container), the
    # checks are added in the handlers' order; a stamp of a probe that passed may stand in for one
    verdicts, to_probe, reused = [], [], {}
    for handler in info['handlers']:
        name, required = handler['name'], handler['required']
        if handler['present']:
            desc = handler.get('runtime_type') or '?'
            if handler.get('runtime_path'):
                desc += ' via ' + handler['runtime_path']
            if (handler.get('options') or {}).get('BinaryName'):
                desc += ' BinaryName=' + handler['options']['BinaryName']
            found = ('pass', 'runtime %s in the effective config (%s)' % (name, desc), required)
        else:
            has = ', '.join(sorted(info['runtimes'])) or 'none'
            found = ('fail', 'no runtime %s in the effective config (has: %s)' % (name, has), required)
        verdicts.append((handler, found, _probe_verdict(handler, info, wait, p)))
        if verdicts[-1][2] is None:
            reused[name] = stamps.reused(handler, info['runtimes'].get(name))
            if reused[name] is None:
                to_probe.append(handler)
    probes = run_probes([(h['name'], h['probe_argv'], h['probe_id']) for h in to_probe], p['probe_timeout'])
    stamps.note(probes)
    probes.update((name, res) for name, res in reused.items() if res is not None)
    for handler, found, verdict in verdicts:
        name = handler['name']
        add('handler:' + name, *found)
        if verdict is None:
            res = probes[name]
            notes = ('; ' + '; '.join(handler['probe_notes'])) if handler['probe_notes'] else ''
            reason = _reused_reason(handler, res, p) if res.get('reused') else _probe_reason(handler, res)
            verdict = (('pass' if res['ok'] else 'fail'), reason + notes, handler['required'])
        add('probe:' + name, *verdict)
    return probes


def _probe_reason(handler, res):
    name, image = handler['name'], handler['probe_image']
    last = (res['stderr'].strip().splitlines() or res['stdout'].strip().splitlines() or [''])[-1]
    if res.get('kind') != 'start':
        if res['ok']:
            return 'probe container (%s) exited 0 in %.2f s through %s' % (image, res['seconds'], name)
        return 'probe container (%s) through %s: rc=%s %s' % (image, name, res['rc'], last)
    if res['rc'] != 0:
        return 'probe task (%s) did not start through %s: rc=%s %s' % (image, name, res['rc'], last)
    # a task still RUNNING after SIGTERM and SIGKILL was seen running: the stop is what failed
    if not res['ok'] and res['status'] != 'RUNNING':
        return ('probe task (%s) started through %s but was not running %.1f s later (status %s)'
                % (image, name, SETTLE_SECONDS, res['status'] or 'gone'))
    stop = ('stopped by %s in %.2f s' % (res['stopped_by'], res['stop_seconds']) if res['stopped_by']
            else 'not stopped by SIGTERM nor SIGKILL')
    reason = 'probe task (%s) started through %s in %.2f s, seen running, %s' % (image, name, res['seconds'], stop)
    if res.get('cleanup_error'):
        reason += '; its container could not be removed: %s' % res['cleanup_error']
    return reason


def _reused_reason(handler, res, p):
    what = 'probe task' if res.get('kind') == 'start' else 'probe container'
    return ('%s (%s) passed through %s %d s ago (%s); nothing it depends on changed since (probe_reuse_seconds=%g)'
            % (what, handler['probe_image'], handler['name'], res['age_seconds'], res['passed_at'],
               p['probe_reuse_seconds']))


def probe_stamps(ctx, p, info, cri_ok):
    """The stamps of earlier passing probes, with what this check's probes depend on in common: the effective
    config's fingerprint and containerd as a process (read before any probe runs)."""
    stamps = ProbeStamps(p['state_dir'], p.get('probe_reuse_seconds') or 0.0)
    stamps.daemon_answers = cri_ok
    if stamps.active and info['dump_fingerprint']:
        process = main_process(p['service'])
        if process is not None:
            search_path = process_path(process['pid'])
            stamps.common = dict(config=info['dump_fingerprint'], containerd=process,
                                 path=os.environ.get('PATH', '') if search_path is None else search_path,
                                 beside=os.path.dirname(ctx.containerd_bin) if ctx.containerd_bin else None)
    return stamps


def _probe_verdict(handler, info, wait, p):
    """The probe check of a handler that is not probed (status, reason, required), or None: probe it."""
    name, required = handler['name'], handler['required']
    if not handler['probe']:
        return ('skip', 'probe disabled for this handler', False)
    if not handler['present']:
        return ('fail', 'handler %s not in the effective config' % name, required)
    if not wait['ok']:
        return ('fail', 'containerd not ready: %s' % wait['msg'], required)
    reason = _image_missing(handler, info, p)
    if reason is None:
        return None
    if p['probe_image_required']:
        return ('fail', reason, required)
    return ('skip', reason + ' (probe_image_required is false)', False)


def _image_missing(handler, info, p):
    """Why the handler's probe image cannot be used, or None when it is in the namespace."""
    image = handler['probe_image']
    if not image:
        return ('no probe image: the effective config names no sandbox image (%s) and no image was given; set '
                'node_readiness_probe_image or the handler\'s image' % (info['dump_error'] or 'config dump has none'))
    state = info['images'].get(image) or {}
    if state.get('probe_image_present'):
        return None
    what = 'the sandbox image of the effective config' if image == info['sandbox_image'] else 'probe image'
    reason = '%s %s is not in containerd namespace %s' % (what, image, p['probe_namespace'])
    if not p['ctr']:
        return reason + ' (no ctr binary to look)'
    if state.get('probe_image_import_skipped'):
        return reason + ' (not imported or pulled in check mode)'
    if state.get('probe_image_import_error'):
        reason += '; import of %s failed: %s' % (p['probe_archive'], state['probe_image_import_error'])
    if state.get('probe_image_pull_error'):
        reason += '; pull failed: %s' % state['probe_image_pull_error']
    elif not p['probe_pull']:
        reason += '; not pulled (probe_pull is false)'
    return reason


def _tree_files(tree):
    files = [os.path.abspath(tree.path)]
    for entry in tree.entries:
        files.extend(f for f in (entry['files'] if entry['glob'] else [entry['path']]) if f not in files)
    return files


def _check_drift(add, info, p, drift_result):
    if not p['check_drift']:
        add('baseline_drift', 'skip', 'disabled (node_readiness_check_drift: false)', False)
        return None
    drift = evaluate_drift(drift_result, p['state_dir'], _tree_files(info['tree']), p['drift_accounted'],
                           p['baseline_name'])
    if drift is None:
        add('baseline_drift', 'fail', 'drift check enabled but no containerd_baseline result was given')
    else:
        add('baseline_drift', drift['status'], drift['reason'], drift['status'] != 'skip')
    return drift


def _check_kubernetes(add, p):
    if p['kubernetes'] == 'false':
        add('kubernetes_node_ready', 'skip', 'disabled (node_readiness_kubernetes: false)', False)
        return None
    kube = kubernetes(p['kubectl'], p['kubeconfig'], p['node_name'], p['static_pods'], p['kube_timeout'])
    if not kube['ran']:
        status = 'fail' if p['kubernetes'] == 'true' else 'skip'
        add('kubernetes_node_ready', status, kube['reason'], status == 'fail')
        return kube
    add('kubernetes_node_ready', 'pass' if kube['ready'] else 'fail', 'node %s: %s' % (kube['node'], kube['reason']))
    for pod, res in sorted(kube['static_pods'].items()):
        add('static_pod:' + pod, 'pass' if res['ok'] else 'fail', res['reason'])
    return kube


def readiness(ctx, p, version_text, check_mode):
    """Every check, one report (the fact nodeguard_readiness). p: the module's parameters, ctr resolved."""
    checks = Checks(p['optional_checks'])
    add = checks.add
    # first, as the separate containerd_baseline call ran before this module (given a result, that one)
    drift_result = p['drift_result']
    if p['check_drift'] and drift_result is None:
        drift_result = baseline_check(ctx.module, p['path'], p['baseline_store'], p['baseline_name'], ctx=ctx)
    info = read_config(ctx, p)
    # on the socket the config names; reset-failed is a change, not made in check mode
    wait = wait_ready(p['service'], p['ctr'], info['address'], ctx.containerd_version, p['timeout'], p['interval'],
                      reset_failed=p['reset_failed'] and not check_mode)
    read_live(ctx, p, info, check_mode, ready=wait['ok'])
    if wait['active_state'] == 'active':
        add('containerd_active', 'pass', '%s active (containerd %s)' % (p['service'], version_text))
    else:
        add('containerd_active', 'fail', '%s: %s' % (p['service'], wait['msg']))
    _check_tree(add, info, p)
    cri = wait['cri_plugins'] if wait['ok'] else info['cri_plugins']
    bad = dict((k, v) for k, v in cri.items() if v != 'ok')
    if cri and not bad:
        add('cri_plugin', 'pass', ', '.join('%s ok' % k for k in sorted(cri)))
    else:
        detail = ', '.join('%s=%s' % kv for kv in sorted(bad.items())) or info.get('plugins_error') or 'no plugin list'
        add('cri_plugin', 'fail', 'CRI plugin not ok: %s' % detail)
    stamps = probe_stamps(ctx, p, info, bool(cri and not bad))
    probes = _check_handlers(add, info, wait, p, stamps)
    stamps.save(check_mode, ctx.warn)
    if info['dump'] is not None:
        for check in proxy_checks(info['dump'], info['runtimes']):
            add(*check)
    drift = _check_drift(add, info, p, drift_result)
    kube = _check_kubernetes(add, p)
    failed = [c['name'] for c in checks.items if c['status'] == 'fail' and c['required']]
    # the report is also written to report_path, which Ansible's masking never sees: no secret in it
    return secrets.redact_noted(dict(
        ok=not failed, failed=failed,
        warnings=[c['name'] for c in checks.items if c['status'] == 'fail' and not c['required']],
        summary='%d passed, %d failed, %d skipped' % (checks.count('pass'), checks.count('fail'), checks.count('skip')),
        checks=checks.items,
        containerd=dict(version=version_text, config_path=p['path'], config_version=info['tree'].config_version,
                        runtimes=sorted(info['runtimes']), default_runtime_name=info['default_runtime_name'],
                        cri_plugins=cri, came_back_seconds=wait.get('came_back_seconds'),
                        startup_seconds=wait.get('startup_seconds'), waited_seconds=wait.get('waited_seconds'),
                        start_limit_hit=wait.get('start_limit_hit'), reset_failed_done=wait.get('reset_failed_done'),
                        journal=wait.get('journal') or [], sandbox_image=info['sandbox_image'],
                        imports=info['tree'].report()),
        probe_image=dict(image=info['probe_image'], source=info['probe_image_source'], images=info['images']),
        probes=probes, drift=drift, kubernetes=kube))
