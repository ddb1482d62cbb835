"""A podman node for the benchmarks (not one itself: `make bench` skips _*.py).

One node booted like the Molecule platforms (systemd as PID 1, no network,
the ulimits this machine's podman needs), reached through nsenter as
molecule/coco reaches its nodes (~2 ms a command instead of ~250 ms of
podman exec), prepared with molecule/coco/prepare.yml (the stand-ins for the
NVIDIA runtime and the kata payload).

The inventory holds the node's PID as a number, read once after the boot
(no bench reboots its node). The Molecule scenarios' container_pid lookup
(molecule/shared/lookup_plugins) is templated before every task, about 4 ms
each: a cost of the test harness, not of a playbook, that would weigh on a
playbook of 60 tasks eight times as much as on one of 7.
"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time

from _common import REPO, collections_path


def pending(what, why):
    """The bench cannot run here yet: say why and exit 0 (not a failure of the code)."""
    print('%s: PENDING: %s' % (what, why))
    sys.exit(0)


def sh(cmd, **kw):
    kw.setdefault('capture_output', True)
    kw.setdefault('text', True)
    return subprocess.run(cmd, **kw, check=False)


def ansible_playbook(what):
    for cand in (os.path.join(REPO, '.venv', 'bin', 'ansible-playbook'),
                 os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), shutil.which('ansible-playbook')):
        if cand and os.access(cand, os.X_OK):
            return cand
    pending(what, 'ansible-playbook not found (make deps)')
    return None


def prerequisites(what, image, paths=()):
    if not shutil.which('podman'):
        pending(what, 'podman is not installed (make deps)')
    if sh(['podman', 'image', 'exists', image]).returncode:
        pending(what, 'image %s does not exist (make images)' % image)
    for rel in ('playbooks/site.yml', 'roles/gpu_toolkit', 'roles/coco', 'molecule/coco/prepare.yml',
                'molecule/shared/prepare.yml') + tuple(paths):
        if not os.path.exists(os.path.join(REPO, rel)):
            pending(what, '%s does not exist yet' % rel)


class Node(object):
    """One podman node and the ansible-playbook runs against it."""

    def __init__(self, name, image, work):
        self.name = name
        self.image = image
        self.work = work
        self.log = os.path.join(work, 'ansible.log')
        self.inventory = os.path.join(work, 'inventory.json')
        self.pb_bin = None
        self.last_cpu = None
        # more environment for ansible-playbook (a bench's callback, say)
        self.extra_env = {}

    def run(self, *cmd, **kw):
        return sh(['podman', 'exec', self.name] + list(cmd), **kw)

    def boot(self):
        sh(['podman', 'rm', '-f', self.name])
        proc = sh(['podman', 'run', '-d', '--name', self.name, '--hostname', self.name, '--privileged',
                   '--systemd=always', '--ulimit', 'nofile=16384:16384', '--ulimit', 'nproc=16384:16384',
                   '--network', 'none', '--tmpfs', '/var/lib/containerd:rw,size=1g', self.image, '/sbin/init'])
        if proc.returncode:
            sys.exit('podman run failed: %s' % proc.stderr)
        deadline = time.time() + 120
        state = ''
        while time.time() < deadline:
            state = self.run('systemctl', 'is-system-running').stdout.strip()
            if state in ('running', 'degraded'):
                return
            time.sleep(1)
        sys.exit('the node did not boot (systemctl is-system-running: %s)' % state)

    def pid(self):
        """The host PID of the node's init (nsenter's target)."""
        proc = sh(['podman', 'container', 'inspect', '--format', '{{.State.Pid}}', self.name])
        if proc.returncode or not proc.stdout.strip().isdigit():
            sys.exit('podman inspect %s failed: %s' % (self.name, proc.stderr))
        return int(proc.stdout.strip())

    def remove(self):
        sh(['podman', 'rm', '-f', self.name])

    def write_inventory(self, extra_vars=None):
        pid = self.pid()
        hostvars = {'coco_payload_archive': os.path.join(self.work, 'kata-payload.tar.gz'),
                    'coco_test_pristine': '/var/lib/nodeguard-test/config.toml.pristine',
                    'coco_check_node': False,  # the kata stand-in shim runs no VM: no TDX/SNP to check for
                    'node_readiness_pass_config_path': False,
                    'node_readiness_probe_image_required': True,
                    'gpu_toolkit_runtime_binary': '/usr/local/bin/nvidia-container-runtime',
                    # the payload layout molecule/coco/prepare.yml builds (kata 3.x, as bench/minimal expects)
                    'coco_payload_layout': '3'}
        hostvars.update(extra_vars or {})
        with open(self.inventory, 'w') as f:
            json.dump({'all': {'hosts': {self.name: {'ansible_connection': 'community.docker.nsenter',
                                                     'ansible_nsenter_pid': pid,
                                                     'ansible_python_interpreter': '/usr/bin/python3'}},
                               'vars': hostvars}}, f)

    def env(self):
        return dict(os.environ, MOLECULE_PROJECT_DIRECTORY=REPO, MOLECULE_EPHEMERAL_DIRECTORY=self.work,
                    ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
                    ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR='1', ANSIBLE_FORCE_COLOR='0',
                    ANSIBLE_LOOKUP_PLUGINS=os.path.join(REPO, 'molecule', 'shared', 'lookup_plugins'),
                    **self.extra_env)

    def playbook(self, path, extra=()):
        """Run one playbook; (wall seconds, recap dict of this node, tasks started).

        self.last_cpu: the CPU seconds (user + system) of ansible-playbook and
        every process it waited for, the node's module runs included (nsenter
        runs them as its descendants); not the containerd daemon's own work.
        """
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.monotonic()
        proc = sh([self.pb_bin, '-i', self.inventory, os.path.join(REPO, path), '-e', 'target=all'] + list(extra),
                  env=self.env(), timeout=3600)
        wall = time.monotonic() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.last_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        with open(self.log, 'a') as f:
            f.write(proc.stdout + proc.stderr)
        if proc.returncode:
            sys.exit('%s failed (log: %s):\n%s' % (path, self.log, proc.stdout[-4000:]))
        recap = {}
        found = re.search(r'^%s\s+:\s+(.*)$' % re.escape(self.name), proc.stdout, re.M)
        if found:
            recap = {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', found.group(1))}
        return wall, recap, len(re.findall(r'^TASK \[', proc.stdout, re.M))

    def prepare(self):
        self.pb_bin = ansible_playbook('bench')
        self.boot()
        self.write_inventory()
        self.playbook('molecule/coco/prepare.yml')

    def clock(self):
        return float(self.run('date', '+%s.%N').stdout.strip())

    def journal(self, since):
        """(epoch, message) of the containerd unit's journal since `since`."""
        out = self.run('journalctl', '-u', 'containerd', '-o', 'json', '--no-pager', '--since',
                       '@%.6f' % since).stdout
        lines = []
        for line in out.splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            msg = rec.get('MESSAGE')
            if isinstance(msg, list):   # journald's JSON gives non-UTF-8 messages as byte arrays
                msg = bytes(msg).decode('utf-8', 'replace')
            lines.append((int(rec['__REALTIME_TIMESTAMP']) / 1e6, msg if isinstance(msg, str) else ''))
        return lines

    def starts(self, since, until):
        """containerd starts in [since, until), from the node's journal."""
        return len([t for t, m in self.journal(since) if since <= t < until and m.startswith('Started containerd')])

    def sha256(self, path):
        return self.run('sha256sum', path).stdout.split()[0]
