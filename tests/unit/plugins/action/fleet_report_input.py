# -*- coding: utf-8 -*-
"""A realistic input of the fleet report, made the same way every time: the
hostvars a gated rollout leaves (readiness with its starts count, restart
decisions, kept failures, batches, a stopped batch), containerd_info's
answers for the nodes readiness did not count (some unreachable or failed),
and an ansible-runner job_events folder (several plays, retries, failures
kept or ignored, rescues, unreachable nodes, the report's own play and role,
partial copies of events, events that are not task results)."""

import json
import os
import random

SINCE = 1796488000.25
PLAY = 'Fleet report'
ROLLOUT = 'NVIDIA container runtime in containerd'
VERSIONS = [('1.6.20~ds1', 2), ('1.7.24~ds1', 2), ('2.1.4~ds1', 3)]


def node_names(count):
    return ['fleet-%03d' % i for i in range(count)]


def _readiness(rng, i, since):
    version, config = VERSIONS[i % 3]
    ok = i % 7 != 3
    failed = [] if ok else ['probe:nvidia<script>alert(%d)</script>' % i, 'cri "plugin" & co']
    drift = [None,
             {'status': 'pass', 'unaccounted': [], 'accounted': ['plugins.cri.runtimes.nvidia']},
             {'status': 'fail', 'unaccounted': ['cri.default_runtime_name', 'cri.sandbox_image'], 'accounted': []},
             {'status': 'skip', 'unaccounted': [], 'accounted': []},
             {'status': 'pass', 'unaccounted': [], 'accounted': []},
             {}][i % 6]
    ready = {'ok': ok, 'failed': failed, 'warnings': [],
             'summary': '%d passed, %d failed, 0 skipped' % (9 - len(failed), len(failed)),
             'containerd': {'version': version, 'config_version': config,
                            'runtimes': ['nvidia', 'runc'] if i % 4 else ['runc'],
                            'config_path': '/etc/containerd/config.toml'},
             'drift': drift}
    if i % 5 != 4:
        ready['service_starts'] = {'unit': 'containerd' if i % 11 != 10 else 'k3s',
                                   'since': since if i % 13 != 12 else since - 60,
                                   'count': rng.randint(0, 3), 'error': None}
    return ready


def hostvars_of(nodes, seed=1, serial=4, stop_batch=None, since=SINCE):
    """What a gated rollout (serial nodes a batch) leaves in hostvars; stop_batch stops it at that batch."""
    rng = random.Random(seed)
    hostvars = {}
    batches = [nodes[i:i + serial] for i in range(0, len(nodes), serial)]
    for number, hosts in enumerate(batches, 1):
        if stop_batch is not None and number > stop_batch:
            for h in hosts:
                hostvars[h] = {}   # not reached: untouched
            continue
        failed = [h for h in hosts if nodes.index(h) % 9 == 5]
        stop = stop_batch == number
        for h in hosts:
            i = nodes.index(h)
            hv = {'nodeguard_batch': {'play': ROLLOUT, 'number': str(number) if i % 2 else number, 'hosts': hosts,
                                      'failed': failed, 'max_fail_percentage': 0, 'stop': 'true' if stop else False}}
            if i % 8 != 7:
                hv['nodeguard_readiness'] = _readiness(rng, i, since)
            if i % 3 == 0:
                hv['nodeguard_restart'] = {'restarted': True, 'needed': True, 'refused': False, 'cri_ok': True,
                                           'seconds': round(rng.uniform(0.5, 4), 2),
                                           'reason': 'effective config changed (caf\u00e9 & <tea>)'}
            elif i % 3 == 1:
                hv['nodeguard_restart'] = {'restarted': False, 'reason': ''}
            if h in failed:
                hv['nodeguard_failure'] = {
                    'play': ROLLOUT, 'task': 'Converge the node',
                    'msg': '  gpu_toolkit converge failed on %s: probe through "nvidia" <exit 1>. Rolled back: '
                           'baseline put back; node ready.\n' % h,
                    'rolled_back': i % 2 == 1}
            if i % 10 == 9:
                hv['ansible_failed_task'] = {'name': 'Probe'}
            hostvars[h] = hv
    return hostvars


def info_of(nodes, counted, seed=2):
    """containerd_info's results (as a loop registers them) for every node not counted."""
    rng = random.Random(seed)
    results = []
    for h in nodes:
        if h in counted:
            continue
        i = nodes.index(h)
        if i % 17 == 16:
            results.append({'item': h, 'unreachable': True, 'changed': False,
                            'msg': 'Failed to connect to the host via ssh'})
            continue
        if i % 19 == 18:
            results.append({'item': h, 'failed': True, 'changed': False, 'msg': 'tomlkit is missing'})
            continue
        version, config = VERSIONS[(i + 1) % 3]
        res = {'item': h, 'changed': False, 'failed': False,
               'containerd': {'version': version, 'path': '/usr/bin/containerd'},
               'config': {'version': config, 'sha256': '%064x' % rng.getrandbits(256), 'path': '/etc/containerd'},
               'runtimes': dict((r, {'type': 'io.containerd.runc.v2'}) for r in (['runc', 'nvidia', 'kata-qemu']
                                                                                 [:1 + i % 3]))}
        if i % 6 != 5:
            res['service_starts'] = {'unit': 'containerd', 'since': SINCE, 'count': rng.randint(0, 4)}
        results.append(res)
    results.append({'skipped': True, 'changed': False})   # no item: not a node's answer
    return {'results': results, 'changed': False, 'msg': 'All items completed'}


def write_events(folder, nodes, count, seed=3, starts=False):
    """About count job events of a rollout over nodes, written as ansible-runner does (job_events/<counter>-<uuid>.json,
    and a few <uuid>-partial.json copies); starts: each result after its node's runner_on_start, as in a real job."""
    rng = random.Random(seed)
    starts_rng = random.Random(seed + 100)
    events_dir = os.path.join(folder, 'job_events')
    os.makedirs(events_dir)
    counter = 0

    def uuid():
        return '%08x-%04x-4%03x-8%03x-%012x' % (rng.getrandbits(32), rng.getrandbits(16), rng.getrandbits(12),
                                                rng.getrandbits(12), rng.getrandbits(48))

    def write(event, data, partial=False):
        nonlocal counter
        if starts and event.startswith('runner_on_'):
            counter += 1
            start = {'uuid': '%032x' % starts_rng.getrandbits(128), 'counter': counter, 'event': 'runner_on_start',
                     'event_data': {'host': data['host'], 'task': data.get('task'), 'play': data.get('play')}}
            with open(os.path.join(events_dir, '%d-%s.json' % (counter, start['uuid'])), 'w') as f:
                json.dump(start, f)
        counter += 1
        ev = {'uuid': uuid(), 'counter': counter, 'event': event, 'event_data': data,
              'created': '2026-12-05T16:19:%02d.%06d' % (counter // 1000 % 60, counter % 1000000)}
        with open(os.path.join(events_dir, '%d-%s.json' % (counter, ev['uuid'])), 'w') as f:
            json.dump(ev, f)
        if partial:
            with open(os.path.join(events_dir, '%s-partial.json' % ev['uuid']), 'w') as f:
                json.dump(ev, f)

    write('playbook_on_start', {})
    tasks = ['Check the runtime list', 'Read containerd', 'Write the drop-in', 'Restart containerd', 'Probe',
             'Probe', 'probe', 'Keep the failure', 'Stop the rollout when too many nodes of this batch failed']
    per_event = max(1, count // max(1, len(nodes)))
    t = 0
    while counter < count:
        task = tasks[t % len(tasks)]
        play = ROLLOUT if t % 23 != 22 else 'Read what each node runs'
        write('playbook_on_task_start', {'task': task, 'play': play})
        for i, h in enumerate(nodes):
            if counter >= count:
                break
            if rng.random() < 1.0 / per_event * 4:
                continue
            roll = rng.random()
            data = {'host': h, 'task': task, 'play': play, 'duration': round(rng.uniform(0.01, 3.5), 6),
                    'role': 'nodeguard.containerd.gpu_toolkit' if t % 2 else None, 'res': {'changed': False}}
            if roll < 0.03 and task.lower() == 'probe':
                data['ignore_errors'] = i % 2 == 0
                write('runner_on_failed', data, partial=i % 4 == 0)
            elif roll < 0.04 and i % 17 == 16:
                write('runner_on_unreachable', data)
            elif roll < 0.2:
                data['res'] = {'changed': 'yes' if i % 2 else True}
                write('runner_on_ok', data)
            elif roll < 0.3:
                write('runner_on_skipped', data)
            elif roll < 0.32:
                data['duration'] = None
                write('runner_on_ok', data)
            else:
                write('runner_on_ok', data, partial=roll > 0.97)
        t += 1
    # the report's own play and role are left out of the counts
    for h in nodes[:3]:
        write('runner_on_ok', {'host': h, 'task': 'Check readiness', 'play': PLAY, 'duration': 5.0,
                               'res': {'changed': True}})
        write('runner_on_ok', {'host': h, 'task': 'Build the rows', 'play': 'other',
                               'role': 'nodeguard.containerd.fleet_report', 'duration': 5.0, 'res': {'changed': True}})
    write('runner_on_ok', {'host': '', 'task': 'no host', 'play': ROLLOUT, 'duration': 1.0})
    return folder


def case(folder, size=12, events=800, serial=4, stop_batch=None, with_events=True, seed=1, rollout=True,
         starts=False):
    """One report's whole input: hosts, failed hosts, events folder, since, service, hostvars (rollout: False - a
    run that is not a rollout, such as verify.yml: no batches, no kept failures)."""
    nodes = node_names(size)
    hostvars = hostvars_of(nodes, seed=seed, serial=serial, stop_batch=stop_batch)
    if not rollout:
        for hv in hostvars.values():
            hv.pop('nodeguard_batch', None)
            hv.pop('nodeguard_failure', None)
    failed_hosts = [h for h in nodes if nodes.index(h) % 15 == 14]
    events_dir = write_events(folder, nodes[:size - 1], events, seed=seed + 2, starts=starts) if with_events else ''
    return {'hosts': nodes, 'failed_hosts': failed_hosts, 'events_dir': events_dir, 'since': SINCE,
            'service': 'containerd', 'hostvars': hostvars, 'play': PLAY, 'title': 'fleet <report> & "co"'}
