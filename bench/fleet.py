#!/usr/bin/env python
"""Fleet converge at scale: wall time with forks 1 vs forks = nodes, time per
node, growth from 3 to 6 nodes, podman memory per node.

For each size N (NG_FLEET_SIZES, default 3,6): N podman nodes booted like the
Molecule platforms (bench/_node.py; images cycling bookworm/1.6, trixie/1.7,
ctd21/2.1), prepared with molecule/shared/prepare.yml, then playbooks/site.yml
(gpu_toolkit present, coco skip, nodeguard_serial N so forks alone decides
how many nodes run at once) with forks 1 and with forks N, each followed by
the uninstall (timed too) so the next converge starts from the same bytes.
Every converge must restart containerd exactly once per node (journal).
Memory: `podman stats` of each node after its converge (the container's
cgroup: systemd, journald, containerd).

    .venv/bin/python bench/fleet.py           # NG_FLEET_SIZES=3,6 NG_FLEET_KEEP=1 keeps the nodes
"""

import json
import os
import re
import sys
import tempfile
import time

from _common import REPO
from _node import Node, ansible_playbook, prerequisites, sh

SIZES = [int(x) for x in os.environ.get('NG_FLEET_SIZES', '3,6').split(',')]
IMAGES = ['localhost/ng-node:bookworm', 'localhost/ng-node:trixie', 'localhost/ng-node:ctd21']
SITE = {'gpu_toolkit_runtime_binary': '/usr/local/bin/nvidia-container-runtime',
        'node_readiness_probe_image_required': True, 'node_readiness_pass_config_path': False,
        'nodeguard_max_fail_percentage': 0, 'nodeguard_become': False, 'coco_state': 'skip'}
UNITS = {'b': 1, 'kb': 1e3, 'mb': 1e6, 'gb': 1e9, 'kib': 1024, 'mib': 1024 ** 2, 'gib': 1024 ** 3}


def memory(name):
    out = sh(['podman', 'stats', '--no-stream', '--format', '{{.MemUsage}}', name]).stdout.strip()
    found = re.match(r'([\d.]+)\s*([a-zA-Z]+)', out)
    return float(found.group(1)) * UNITS.get(found.group(2).lower(), 1) / 1e6 if found else None


class Fleet(object):
    def __init__(self, size, work):
        self.nodes = [Node('ng-bench-fleet-%d' % i, IMAGES[i % len(IMAGES)], work) for i in range(size)]
        self.work = work
        self.inventory = os.path.join(work, 'fleet.json')
        self.pb = ansible_playbook('fleet')

    def boot(self):
        for n in self.nodes:
            n.boot()
        hosts = {}
        for n in self.nodes:
            pid = json.loads(sh(['podman', 'container', 'inspect', n.name]).stdout)[0]['State']['Pid']
            hosts[n.name] = {'ansible_connection': 'community.docker.nsenter', 'ansible_nsenter_pid': pid,
                             'ansible_python_interpreter': '/usr/bin/python3'}
        with open(self.inventory, 'w') as f:
            json.dump({'all': {'hosts': hosts}}, f)

    def playbook(self, path, forks, extra=None):
        env = dict(self.nodes[0].env(), ANSIBLE_FORKS=str(forks))
        start = time.monotonic()
        proc = sh([self.pb, '-i', self.inventory, os.path.join(REPO, path), '-e', 'target=all',
                   '-e', json.dumps(extra or {})], env=env, timeout=7200)
        wall = time.monotonic() - start
        with open(os.path.join(self.work, 'ansible.log'), 'a') as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode:
            sys.exit('%s failed (log: %s):\n%s' % (path, os.path.join(self.work, 'ansible.log'), proc.stdout[-4000:]))
        return wall

    def converge(self, forks, state):
        since = {n.name: n.clock() for n in self.nodes}
        wall = self.playbook('playbooks/site.yml', forks,
                             dict(SITE, gpu_toolkit_state=state, nodeguard_serial=len(self.nodes)))
        for n in self.nodes:
            started = n.starts(since[n.name], n.clock() + 1)
            assert started == 1, '%s: containerd started %d times in one converge' % (n.name, started)
        return wall

    def remove(self):
        for n in self.nodes:
            n.remove()


def main():
    prerequisites('fleet', IMAGES[0], paths=('molecule/shared/prepare.yml',))
    for image in IMAGES[1:]:
        if sh(['podman', 'image', 'exists', image]).returncode:
            print('fleet: PENDING: image %s does not exist (make images)' % image)
            return
    results = []
    for size in SIZES:
        work = tempfile.mkdtemp(prefix='ng-bench-fleet-')
        fleet = Fleet(size, work)
        try:
            t0 = time.monotonic()
            fleet.boot()
            boot = time.monotonic() - t0
            prepare = fleet.playbook('molecule/shared/prepare.yml', size)
            row = {'nodes': size, 'boot_s': round(boot, 1), 'prepare_s': round(prepare, 1)}
            for forks in (1, size):
                row['converge_forks%s_s' % ('1' if forks == 1 else 'N')] = round(fleet.converge(forks, 'present'), 1)
                if forks == size:
                    mem = [memory(n.name) for n in fleet.nodes]
                    row['memory_mb_per_node'] = [round(m) if m else None for m in mem]
                row['uninstall_forks%s_s' % ('1' if forks == 1 else 'N')] = round(fleet.converge(forks, 'absent'), 1)
            row['per_node_forks1_s'] = round(row['converge_forks1_s'] / size, 1)
            row['per_node_forksN_s'] = round(row['converge_forksN_s'] / size, 1)
            row['speedup'] = round(row['converge_forks1_s'] / row['converge_forksN_s'], 2)
            row['load_avg'] = os.getloadavg()[0]
            results.append(row)
            print(json.dumps(row), flush=True)
        finally:
            if os.environ.get('NG_FLEET_KEEP') != '1':
                fleet.remove()
    print('\n| nodes | converge, forks 1 | converge, forks = nodes | speed-up | per node (forks 1 / N) '
          '| uninstall (forks 1 / N) | memory per node (MB) | load avg |')
    print('|---|---|---|---|---|---|---|---|')
    for r in results:
        print('| %d | %.0f s | %.0f s | %.2fx | %.1f / %.1f s | %.0f / %.0f s | %s | %.1f |' % (
            r['nodes'], r['converge_forks1_s'], r['converge_forksN_s'], r['speedup'], r['per_node_forks1_s'],
            r['per_node_forksN_s'], r['uninstall_forks1_s'], r['uninstall_forksN_s'],
            ', '.join(str(m) for m in r['memory_mb_per_node']), r['load_avg']))
    if len(results) > 1:
        a, b = results[0], results[-1]
        print('growth %d -> %d nodes: forks 1 x%.2f, forks = nodes x%.2f' % (
            a['nodes'], b['nodes'], b['converge_forks1_s'] / a['converge_forks1_s'],
            b['converge_forksN_s'] / a['converge_forksN_s']))
    out = os.path.join(REPO, 'build', 'bench', 'fleet.json')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(results, f, indent=1)
    print('figures: %s' % out)


if __name__ == '__main__':
    main()
