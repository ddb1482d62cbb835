# -*- coding: utf-8 -*-
"""A readiness report without a node: the daemon side (wait, plugins, probe image, probes, kubectl, drift)
answered by a stand-in that records every call, and a config dump every command answers."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import report as rep
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import CRI_V2
from helpers.common import fixture_text
from helpers.context import FakeContext

# a config dump of a k3s node (its own socket) with runc and a kata handler
DUMP = fixture_text('dump_k3s_runc_kata.toml')


def dump_context(dump=(0, DUMP, '')):
    """The context of a readiness report without a module: every command answers dump."""
    return FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=(1, 7), answer=dump, module=None)


WAIT_OK = dict(ok=True, msg='containerd active, CRI plugins ok', active_state='active',
               cri_plugins={CRI_V2: 'ok'}, came_back_seconds=1.0, startup_seconds=0.5, waited_seconds=0.1,
               start_limit_hit=False, reset_failed_done=False)


class Node(object):
    """What the daemon side answers; every call recorded."""

    def __init__(self, monkeypatch, tmp_path):
        self.wait = dict(WAIT_OK)
        self.rows = [dict(type='io.containerd.grpc.v1', id='cri', status='ok', plugin=CRI_V2)]
        self.plugins_error = None
        self.image = dict(probe_image='img', probe_image_present=True)
        self.probe_results = {}
        self.kube = dict(ran=False, reason='kubectl not found on the node')
        self.calls = {}
        for name in ('wait_ready', 'plugins_ls', 'probe_image', 'run_probes', 'kubernetes', 'baseline_check'):
            monkeypatch.setattr(rep, name, getattr(self, name))
        cfg = tmp_path / 'config.toml'
        cfg.write_text('version = 2\n')
        self.p = dict(path=str(cfg), address=None, ctr='/usr/bin/ctr', probe_namespace='nodeguard',
                      probe_image='img', probe_command=['true'], pass_config_path=True, handlers=['runc'],
                      probe=True, probe_archive=None, probe_pull=False, probe_timeout=30, probe_image_required=True, check_drift=False,
                      state_dir=str(tmp_path / 'state'), drift_accounted=[], baseline_name='pre-gpu',
                      drift_result=None, baseline_store=str(tmp_path / 'store'), kubernetes='auto', kubectl=None,
                      kubeconfig=[], node_name='n1', static_pods=[], kube_timeout=0, optional_checks=[],
                      service='containerd.service', timeout=5, interval=0.1, reset_failed=True)

    def record(self, name, *a, **kw):
        self.calls.setdefault(name, []).append((a, kw))

    def wait_ready(self, *a, **kw):
        self.record('wait_ready', *a, **kw)
        return dict(self.wait)

    def plugins_ls(self, *a):
        self.record('plugins_ls', *a)
        return (list(self.rows) if self.rows is not None else None), self.plugins_error

    def probe_image(self, opts, archive, may_import=True, pull=False):
        self.record('probe_image', opts, archive, may_import=may_import)
        return dict(self.image, probe_image=opts['probe_image'])

    def run_probes(self, probes, timeout):
        self.record('run_probes', probes, timeout)
        return dict((name, self.probe_results.get(name, dict(ok=True, rc=0, seconds=1.25, stdout='', stderr='')))
                    for name, _argv, _pid in probes)

    def kubernetes(self, *a):
        self.record('kubernetes', *a)
        return dict(self.kube)

    def baseline_check(self, *a, **kw):
        self.record('baseline_check', *a, **kw)
        return {'protected_drift': []}

    def report(self, ctx=None, check_mode=False, **p):
        params = dict(self.p)
        params.update(p)
        return rep.readiness(ctx or dump_context(), params, '1.7.22', check_mode)
