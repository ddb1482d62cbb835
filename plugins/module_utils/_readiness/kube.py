# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes side of readiness: the node's Ready condition and its static pods, through kubectl."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import which
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import run


def _static_pods(base, node, names):
    prc, pout, _perr = run(base + ['get', 'pods', '-n', 'kube-system', '-o', 'json'], timeout=20)
    try:
        items = json.loads(pout).get('items', []) if prc == 0 else []
    except ValueError:
        items = []
    pods = {}
    for name in names:
        pod = next((i for i in items if i.get('metadata', {}).get('name') == '%s-%s' % (name, node)), None)
        if pod is None:
            pods[name] = (False, 'pod %s-%s not found in kube-system' % (name, node))
            continue
        phase = pod.get('status', {}).get('phase')
        conds = pod.get('status', {}).get('conditions', [])
        ready = any(c.get('type') == 'Ready' and c.get('status') == 'True' for c in conds)
        pods[name] = (phase == 'Running' and ready, 'phase=%s ready=%s' % (phase, ready))
    return pods


def kubernetes(kubectl, kubeconfigs, node_name, static_pods, timeout):
    """Node Ready and static pods, when kubectl and a kubeconfig exist ({ran: false, reason} otherwise)."""
    kubectl = kubectl or which('kubectl', extra=('/usr/bin', '/usr/local/bin', '/usr/sbin', '/usr/local/sbin',
                                                 '/opt/bin'))
    if not (kubectl and os.path.isabs(kubectl) and os.access(kubectl, os.X_OK)):
        return dict(ran=False, reason='kubectl not found on the node')
    candidates = [c for c in (kubeconfigs or []) if c]
    if os.environ.get('KUBECONFIG'):
        candidates.append(os.environ['KUBECONFIG'])
    kubeconfig = next((c for c in candidates if os.path.exists(c)), None)
    if not kubeconfig:
        return dict(ran=False, reason='no kubeconfig found (looked at: %s)' % ', '.join(candidates))
    node = node_name or os.uname()[1]
    base = [kubectl, '--kubeconfig', kubeconfig, '--request-timeout', '10s']
    deadline = time.monotonic() + timeout
    while True:
        rc, out, err = run(base + ['get', 'node', node, '-o', 'json'], timeout=20)
        if rc == 0:
            try:
                conds = json.loads(out).get('status', {}).get('conditions', [])
                cond = next((c for c in conds if c.get('type') == 'Ready'), {})
                ready = cond.get('status') == 'True'
                reason = 'Ready=%s (%s)' % (cond.get('status'), cond.get('reason') or cond.get('message') or '')
            except ValueError as exc:
                ready, reason = False, 'kubectl output not JSON: %s' % exc
        else:
            ready, reason = False, 'kubectl get node %s failed: %s' % (node, (err or out).strip()[-300:])
        pods = _static_pods(base, node, static_pods) if static_pods else {}
        if (ready and all(v[0] for v in pods.values())) or time.monotonic() >= deadline:
            break
        time.sleep(2)
    return dict(ran=True, node=node, kubeconfig=kubeconfig, ready=bool(ready), reason=reason,
                static_pods=dict((k, dict(ok=v[0], reason=v[1])) for k, v in pods.items()))
