# -*- coding: utf-8 -*-
"""_readiness_kube: the node's Ready condition and its static pods, with
kubectl answered by the test (in process): which kubeconfig is used, what
each answer means, and the bounded wait for a node that becomes Ready."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import kube


def node_json(status='True', reason='KubeletReady', message=None, extra=()):
    cond = {'type': 'Ready', 'status': status}
    if reason is not None:
        cond['reason'] = reason
    if message is not None:
        cond['message'] = message
    return json.dumps({'status': {'conditions': list(extra) + [cond]}})


def pods_json(pods, node='n1'):
    items = []
    for name, (phase, ready) in pods.items():
        items.append({'metadata': {'name': '%s-%s' % (name, node)},
                      'status': {'phase': phase, 'conditions': [{'type': 'PodScheduled', 'status': 'True'},
                                                                {'type': 'Ready', 'status': ready}]}})
    return json.dumps({'items': items})


class Kubectl(object):
    """Answers `get node` from a list (the last repeats) and `get pods` from one answer."""

    def __init__(self, nodes, pods=(0, '{"items": []}', '')):
        self.nodes = list(nodes)
        self.pods = pods
        self.calls = []

    def __call__(self, argv, timeout=30):
        self.calls.append((list(argv), timeout))
        assert len(self.calls) < 20, 'kubectl asked again and again: the wait does not end'
        if argv[5:7] == ['get', 'node']:
            answer = self.nodes.pop(0) if len(self.nodes) > 1 else self.nodes[0]
            return answer if isinstance(answer, tuple) else (0, answer, '')
        if argv[5:7] == ['get', 'pods']:
            return self.pods
        raise AssertionError(argv)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """An executable kubectl path and a kubeconfig; sleeps recorded, not slept."""
    kubectl = tmp_path / 'kubectl'
    kubectl.write_text('#!/bin/sh\nexit 99\n')
    kubectl.chmod(0o755)
    conf = tmp_path / 'admin.conf'
    conf.write_text('kind: Config\n')
    sleeps = []
    monkeypatch.setattr(kube.time, 'sleep', sleeps.append)
    monkeypatch.delenv('KUBECONFIG', raising=False)

    def use(answers):
        monkeypatch.setattr(kube, 'run', answers)
        return answers
    return dict(kubectl=str(kubectl), conf=str(conf), sleeps=sleeps, use=use, tmp=tmp_path)


def test_a_ready_node_with_running_static_pods(env):
    k = env['use'](Kubectl([node_json()], (0, pods_json({'etcd': ('Running', 'True'),
                                                         'kube-apiserver': ('Running', 'True')}), '')))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', ['etcd', 'kube-apiserver'], 30)
    assert res == dict(ran=True, node='n1', kubeconfig=env['conf'], ready=True, reason='Ready=True (KubeletReady)',
                       static_pods={'etcd': dict(ok=True, reason='phase=Running ready=True'),
                                    'kube-apiserver': dict(ok=True, reason='phase=Running ready=True')})
    base = [env['kubectl'], '--kubeconfig', env['conf'], '--request-timeout', '10s']
    assert k.calls == [(base + ['get', 'node', 'n1', '-o', 'json'], 20),
                       (base + ['get', 'pods', '-n', 'kube-system', '-o', 'json'], 20)]
    assert env['sleeps'] == []


def test_a_static_pod_not_running_or_not_ready_or_absent_is_named(env):
    env['use'](Kubectl([node_json()], (0, pods_json({'etcd': ('Running', 'False'), 'kube-scheduler': ('Pending', 'True'),
                                                     'kube-apiserver': ('Running', 'True')}, node='other'), '')))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', ['etcd', 'kube-scheduler', 'kube-controller-manager'], 0)
    assert res['static_pods'] == {
        'etcd': dict(ok=False, reason='pod etcd-n1 not found in kube-system'),
        'kube-scheduler': dict(ok=False, reason='pod kube-scheduler-n1 not found in kube-system'),
        'kube-controller-manager': dict(ok=False, reason='pod kube-controller-manager-n1 not found in kube-system')}
    env['use'](Kubectl([node_json()], (0, pods_json({'etcd': ('Running', 'False'), 'kube-scheduler': ('Pending', 'True'),
                                                     'kube-apiserver': ('Running', 'True')}), '')))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', ['etcd', 'kube-scheduler', 'kube-apiserver'], 0)
    assert res['static_pods'] == {'etcd': dict(ok=False, reason='phase=Running ready=False'),
                                  'kube-scheduler': dict(ok=False, reason='phase=Pending ready=True'),
                                  'kube-apiserver': dict(ok=True, reason='phase=Running ready=True')}


@pytest.mark.parametrize('answer', [(1, '', 'forbidden'), (0, 'not json', '')])
def test_pods_kubectl_cannot_list_are_not_found(env, answer):
    env['use'](Kubectl([node_json()], answer))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', ['etcd'], 0)
    assert res['ready'] and res['static_pods'] == {'etcd': dict(ok=False, reason='pod etcd-n1 not found in kube-system')}


def test_no_static_pods_asked_no_pods_listed(env):
    k = env['use'](Kubectl([node_json()]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['static_pods'] == {} and len(k.calls) == 1


def test_not_ready_says_kubelets_reason_or_message(env):
    env['use'](Kubectl([node_json('False', 'KubeletNotReady')]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['ran'] and res['ready'] is False and res['reason'] == 'Ready=False (KubeletNotReady)'
    env['use'](Kubectl([node_json('False', None, 'container runtime network not ready')]))
    assert kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)['reason'] == \
        'Ready=False (container runtime network not ready)'
    env['use'](Kubectl([node_json('Unknown', None, None)]))
    assert kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)['reason'] == 'Ready=Unknown ()'


def test_only_the_ready_condition_counts(env):
    other = [{'type': 'MemoryPressure', 'status': 'True'}, {'type': 'DiskPressure', 'status': 'False'}]
    env['use'](Kubectl([node_json('False', 'KubeletNotReady', extra=other)]))
    assert kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)['ready'] is False
    env['use'](Kubectl([json.dumps({'status': {'conditions': other}})]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['ready'] is False and res['reason'] == 'Ready=None ()'


def test_kubectl_failing_or_talking_nonsense_is_not_ready(env):
    env['use'](Kubectl([(1, '', 'error: ' + 'x' * 400 + ' the end\n')]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['ready'] is False
    assert res['reason'] == 'kubectl get node n1 failed: ' + ('error: ' + 'x' * 400 + ' the end')[-300:]
    env['use'](Kubectl([(1, 'Unable to connect to the server\n', '')]))
    assert kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)['reason'] == \
        'kubectl get node n1 failed: Unable to connect to the server'
    env['use'](Kubectl(['<html>proxy</html>']))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['ready'] is False and res['reason'].startswith('kubectl output not JSON: ')


def test_the_wait_polls_every_two_seconds_until_ready(env):
    k = env['use'](Kubectl([node_json('False', 'KubeletNotReady'), node_json('False', 'KubeletNotReady'), node_json()]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 600)
    assert res['ready'] and len(k.calls) == 3
    assert env['sleeps'] == [2, 2]


def test_the_wait_also_waits_for_the_static_pods(env):
    class Pods(Kubectl):
        def __call__(self, argv, timeout=30):
            if argv[5:7] == ['get', 'pods']:
                self.pods = (0, pods_json({'etcd': ('Running', 'True' if len(self.calls) > 2 else 'False')}), '')
            return Kubectl.__call__(self, argv, timeout)
    env['use'](Pods([node_json()]))
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', ['etcd'], 600)
    assert res['static_pods']['etcd']['ok'] and env['sleeps'] == [2]


def test_the_node_name_defaults_to_the_hostname(env):
    k = env['use'](Kubectl([node_json()]))
    assert kube.kubernetes(env['kubectl'], [env['conf']], None, [], 0)['node'] == os.uname()[1]
    assert k.calls[0][0][7] == os.uname()[1]


def test_the_first_existing_kubeconfig_then_kubeconfig_env(env, monkeypatch):
    env['use'](Kubectl([node_json()]))
    missing = str(env['tmp'] / 'missing.conf')
    assert kube.kubernetes(env['kubectl'], ['', missing, env['conf']], 'n1', [], 0)['kubeconfig'] == env['conf']
    from_env = env['tmp'] / 'env.conf'
    from_env.write_text('')
    monkeypatch.setenv('KUBECONFIG', str(from_env))
    assert kube.kubernetes(env['kubectl'], [missing], 'n1', [], 0)['kubeconfig'] == str(from_env)
    assert kube.kubernetes(env['kubectl'], None, 'n1', [], 0)['kubeconfig'] == str(from_env)
    res = kube.kubernetes(env['kubectl'], [env['conf']], 'n1', [], 0)
    assert res['kubeconfig'] == env['conf']


def test_without_a_kubeconfig_it_does_not_run_and_says_where_it_looked(env):
    missing = [str(env['tmp'] / 'a.conf'), str(env['tmp'] / 'b.conf')]
    assert kube.kubernetes(env['kubectl'], missing + [''], 'n1', [], 0) == dict(
        ran=False, reason='no kubeconfig found (looked at: %s, %s)' % tuple(missing))


def test_kubectl_must_be_an_executable_absolute_path(env, monkeypatch):
    monkeypatch.setenv('PATH', str(env['tmp'] / 'empty'))
    not_found = dict(ran=False, reason='kubectl not found on the node')
    plain = env['tmp'] / 'plain'
    plain.write_text('')
    assert kube.kubernetes(str(plain), [env['conf']], 'n1', [], 0) == not_found        # not executable
    assert kube.kubernetes('kubectl', [env['conf']], 'n1', [], 0) == not_found        # not a path
    monkeypatch.setattr(kube, 'which', lambda name, extra=(): env['kubectl'] if name == 'kubectl' else None)
    env['use'](Kubectl([node_json()]))
    res = kube.kubernetes(None, [env['conf']], 'n1', [], 0)                            # found in PATH
    assert res['ran'] and res['ready']
