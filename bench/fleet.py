#!/usr/bin/env python
"""Fleet converge at scale: wall time with forks 1 vs forks = nodes, time per
node, growth from 3 to 12 nodes, podman memory per node, and the AWX-shaped
job (ansible-runner, serial 2) with its no-op re-run and where its time goes.

For each size N (NG_FLEET_SIZES, default 3,6,12; a size the machine's free
memory or inotify instances cannot hold is left out, saying so): N podman
nodes booted like the Molecule platforms (bench/_node.py; images cycling
bookworm/1.6, trixie/1.7, ctd21/2.1), prepared with
molecule/shared/prepare.yml, then playbooks/site.yml (gpu_toolkit present,
coco skip, nodeguard_serial N so forks alone decides how many nodes run at
once) with forks 1 and with forks N, each followed by the uninstall (timed
too) so the next converge starts from the same bytes; with forks N also a
no-op re-run. Every converge must restart containerd exactly once per node,
a re-run never (journal). Memory: `podman stats` of each node after its
converge (the container's cgroup: systemd, journald, containerd).

For the sizes of NG_FLEET_RUNNER_SIZES (default 6): the same playbook as an
AWX job runs it, through ansible-runner (a private data dir, the job's
events, the fleet report in its artifacts), nodeguard_serial 2 and the
runner's default forks (5): converge, no-op re-run, uninstall; the re-run's
ten costliest tasks and its time per play (profile_tasks).

    .venv/bin/python bench/fleet.py           # NG_FLEET_SIZES=3,6,12 NG_FLEET_KEEP=1 keeps the nodes
"""

import json
import os
import re
import sys
import tempfile
import time

from _common import REPO
from _node import Node, ansible_playbook, prerequisites, sh

SIZES = [int(x) for x in os.environ.get('NG_FLEET_SIZES', '3,6,12').split(',')]
RUNNER_SIZES = [int(x) for x in os.environ.get('NG_FLEET_RUNNER_SIZES', '6').split(',') if x]
RUNNER_SERIAL = int(os.environ.get('NG_FLEET_RUNNER_SERIAL', '2'))
# a node: systemd, journald, containerd (about 35 MB) and its probes' shims, with room to spare
NODE_MB = 250
# containerd 2.1 takes several inotify instances; past about 17 nodes a host's 128 run out
INOTIFY_PER_NODE = 7
IMAGES = ['localhost/ng-node:bookworm', 'localhost/ng-node:trixie', 'localhost/ng-node:ctd21']
SITE = {'gpu_toolkit_runtime_binary': '/usr/local/bin/nvidia-container-runtime',
        'node_readiness_probe_image_required': True, 'node_readiness_pass_config_path': False,
        'nodeguard_max_fail_percentage': 0, 'nodeguard_become': False, 'coco_state': 'skip'}
UNITS = {'b': 1, 'kb': 1e3, 'mb': 1e6, 'gb': 1e9, 'kib': 1024, 'mib': 1024 ** 2, 'gib': 1024 ** 3}


def available_mb():
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) // 1024
    return 0


def fits(size):
    """None when the machine can hold size nodes now, else why not."""
    free = available_mb()
    if size * NODE_MB > free:
        return 'needs about %d MB for %d nodes, %d MB available' % (size * NODE_MB, size, free)
    with open('/proc/sys/fs/inotify/max_user_instances') as f:
        instances = int(f.read())
    if size * INOTIFY_PER_NODE > instances:
        return 'needs about %d inotify instances, fs.inotify.max_user_instances is %d' % (
            size * INOTIFY_PER_NODE, instances)
    return None


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

    def converge(self, forks, state, restarts=1):
        since = {n.name: n.clock() for n in self.nodes}
        wall = self.playbook('playbooks/site.yml', forks,
                             dict(SITE, gpu_toolkit_state=state, nodeguard_serial=len(self.nodes)))
        self.check_starts(since, restarts)
        return wall

    def check_starts(self, since, restarts):
        for n in self.nodes:
            started = n.starts(since[n.name], n.clock() + 1)
            assert started == restarts, '%s: containerd started %d times in one run (expected %d)' % (
                n.name, started, restarts)

    def runner_job(self, state, name, profile=False):
        """playbooks/site.yml as AWX runs a job: ansible-runner, a private data dir, serial RUNNER_SERIAL."""
        import ansible_runner
        pdd = os.path.join(self.work, 'runner-%s' % name)
        os.makedirs(os.path.join(pdd, 'env'))
        env = dict(self.nodes[0].env())
        env.pop('ANSIBLE_CONFIG', None)
        envvars = {'ANSIBLE_COLLECTIONS_PATH': env['ANSIBLE_COLLECTIONS_PATH'], 'ANSIBLE_NOCOLOR': '1'}
        if profile:
            envvars['ANSIBLE_CALLBACKS_ENABLED'] = 'ansible.posix.profile_tasks'
        extra = dict(SITE, target='all', gpu_toolkit_state=state, nodeguard_serial=RUNNER_SERIAL)
        since = {n.name: n.clock() for n in self.nodes}
        path = os.environ.get('PATH', '')
        os.environ['PATH'] = os.path.dirname(self.pb) + os.pathsep + path
        try:
            start = time.monotonic()
            runner = ansible_runner.run(private_data_dir=pdd, playbook=os.path.join(REPO, 'playbooks', 'site.yml'),
                                        inventory=self.inventory, extravars=extra, envvars=envvars, quiet=True,
                                        timeout=7200)
            wall = time.monotonic() - start
        finally:
            os.environ['PATH'] = path
        out = runner.stdout.read()
        with open(os.path.join(self.work, 'ansible.log'), 'a') as f:
            f.write(out)
        if runner.status != 'successful':
            sys.exit('runner job %s: %s (log: %s):\n%s' % (name, runner.status, self.work, out[-4000:]))
        report = os.path.join(pdd, 'artifacts', runner.config.ident, 'nodeguard-fleet-report.json')
        assert os.path.isfile(report), 'no fleet report in the job artifacts: %s' % report
        return wall, since, runner, out

    def remove(self):
        for n in self.nodes:
            n.remove()


def where_the_time_goes(runner, out):
    """The ten costliest tasks of a run (profile_tasks) and the seconds of each play (from the job's events)."""
    tasks = []
    for line in out.splitlines():
        found = re.match(r'^(.+?) -{2,} ([\d.]+)s$', line.strip())
        if found:
            tasks.append((float(found.group(2)), found.group(1)))
    plays, first, last = {}, {}, {}
    for e in runner.events:
        play = (e.get('event_data') or {}).get('play')
        created = e.get('created')
        if play and created:
            first.setdefault(play, created)
            last[play] = created
    for play in first:
        t0 = time.mktime(time.strptime(first[play][:19], '%Y-%m-%dT%H:%M:%S')) + float('0' + first[play][19:26])
        t1 = time.mktime(time.strptime(last[play][:19], '%Y-%m-%dT%H:%M:%S')) + float('0' + last[play][19:26])
        plays[play] = round(t1 - t0, 1)
    return sorted(tasks, reverse=True)[:10], plays


def runner_series(fleet, size):
    row = {'nodes': size, 'serial': RUNNER_SERIAL}
    wall, since, _r, _o = fleet.runner_job('present', 'converge')
    fleet.check_starts(since, 1)
    row['converge_s'] = round(wall, 1)
    wall, since, runner, out = fleet.runner_job('present', 'noop', profile=True)
    fleet.check_starts(since, 0)
    row['noop_s'] = round(wall, 1)
    tasks, plays = where_the_time_goes(runner, out)
    row['noop_plays_s'] = plays
    row['noop_top_tasks'] = [[round(t, 2), name[:100]] for t, name in tasks]
    wall, since, _r, _o = fleet.runner_job('absent', 'uninstall')
    fleet.check_starts(since, 1)
    row['uninstall_s'] = round(wall, 1)
    row['load_avg'] = round(os.getloadavg()[0], 1)
    return row


def main():
    prerequisites('fleet', IMAGES[0], paths=('molecule/shared/prepare.yml',))
    for image in IMAGES[1:]:
        if sh(['podman', 'image', 'exists', image]).returncode:
            print('fleet: PENDING: image %s does not exist (make images)' % image)
            return
    results, runs = [], []
    print('memory: %d MB available (free -m), %d inotify instances' % (
        available_mb(), int(open('/proc/sys/fs/inotify/max_user_instances').read())), flush=True)
    for size in SIZES:
        why = fits(size)
        if why:
            print('fleet: %d nodes left out: %s' % (size, why), flush=True)
            continue
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
                    row['noop_forksN_s'] = round(fleet.converge(forks, 'present', restarts=0), 1)
                row['uninstall_forks%s_s' % ('1' if forks == 1 else 'N')] = round(fleet.converge(forks, 'absent'), 1)
            row['per_node_forks1_s'] = round(row['converge_forks1_s'] / size, 1)
            row['per_node_forksN_s'] = round(row['converge_forksN_s'] / size, 1)
            row['speedup'] = round(row['converge_forks1_s'] / row['converge_forksN_s'], 2)
            row['load_avg'] = os.getloadavg()[0]
            results.append(row)
            print(json.dumps(row), flush=True)
            if size in RUNNER_SIZES:
                run = runner_series(fleet, size)
                runs.append(run)
                print(json.dumps(run), flush=True)
        finally:
            if os.environ.get('NG_FLEET_KEEP') != '1':
                fleet.remove()
    print('\n| nodes | converge, forks 1 | converge, forks = nodes | speed-up | per node (forks 1 / N) '
          '| no-op re-run, forks = nodes | uninstall (forks 1 / N) | memory per node (MB) | load avg |')
    print('|---|---|---|---|---|---|---|---|---|')
    for r in results:
        print('| %d | %.0f s | %.0f s | %.2fx | %.1f / %.1f s | %.0f s | %.0f / %.0f s | %s-%s | %.1f |' % (
            r['nodes'], r['converge_forks1_s'], r['converge_forksN_s'], r['speedup'], r['per_node_forks1_s'],
            r['per_node_forksN_s'], r['noop_forksN_s'], r['uninstall_forks1_s'], r['uninstall_forksN_s'],
            min(m for m in r['memory_mb_per_node'] if m), max(m for m in r['memory_mb_per_node'] if m),
            r['load_avg']))
    for r in runs:
        print('\nansible-runner, %d nodes, serial %d: converge %.0f s, no-op re-run %.0f s, uninstall %.0f s '
              '(load %.1f)' % (r['nodes'], r['serial'], r['converge_s'], r['noop_s'], r['uninstall_s'], r['load_avg']))
        print('no-op re-run per play: %s' % ', '.join('%s %.1f s' % kv for kv in r['noop_plays_s'].items()))
        for t, name in r['noop_top_tasks']:
            print('  %6.2f s  %s' % (t, name))
    if len(results) > 1:
        a, b = results[0], results[-1]
        print('growth %d -> %d nodes: forks 1 x%.2f, forks = nodes x%.2f' % (
            a['nodes'], b['nodes'], b['converge_forks1_s'] / a['converge_forks1_s'],
            b['converge_forksN_s'] / a['converge_forksN_s']))
    out = os.path.join(REPO, 'build', 'bench', 'fleet.json')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        json.dump({'forks': results, 'runner': runs}, f, indent=1)
    print('figures: %s' % out)


if __name__ == '__main__':
    main()
