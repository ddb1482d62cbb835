#!/usr/bin/env python
"""What nodeguard's safety costs a node's converge: site.yml against a hand-made playbook.

On one podman node (localhost/ng-node:bookworm, containerd 1.6, booted and
prepared as bench/_node.py says), side by side in one run, NG_BENCH_ROUNDS
rounds (default 3), the two families interleaved (their order alternates
each round):

  site     playbooks/site.yml (gpu_toolkit + coco): converge, no-op re-run,
           uninstall (gpu_toolkit_state=absent coco_state=absent)
  minimal  bench/minimal/site.yml: the same edits with unarchive, copy,
           lineinfile, blockinfile and one restart handler, no safety:
           converge, re-run, uninstall

Per step: wall time of ansible-playbook (median over the rounds), tasks
started, containerd starts from the node's journal (site: 1, 0, 1), and the
ratio site / minimal; then the CPU seconds of the same runs (user + system
of ansible-playbook and the processes it waited for, the node's module runs
included) and their ratio. A run is one serial chain of processes (one node,
one task at a time), so its CPU time is close to its wall time on a quiet
machine; on a shared, loaded one, the CPU figures move much less than the
wall times. Each converge must leave containerd running the nvidia
and kata handlers (from `containerd config dump` on the node), and the site
uninstall must give back the pristine bytes; otherwise the bench fails.

Targets (a quiet 2-core machine): no-op re-run <= 6 s, converge
<= 10 s, and <= 1.25x the minimal playbook, judged on the wall times;
printed with the machine's load; they are figures, not a test.

    .venv/bin/python bench/converge.py     # NG_BENCH_ROUNDS=3, NG_BENCH_KEEP=1
"""

import os
import statistics
import sys
import tempfile

try:
    import tomllib
except ImportError:     # Python < 3.11 on the controller
    import tomlkit as tomllib

from _node import Node, ansible_playbook, prerequisites

IMAGE = os.environ.get('NG_BENCH_IMAGE', 'localhost/ng-node:bookworm')
ROUNDS = int(os.environ.get('NG_BENCH_ROUNDS', '3'))
KEEP = os.environ.get('NG_BENCH_KEEP') == '1'
WHAT = 'bench converge (site.yml vs a hand-made playbook)'
CONFIG = '/etc/containerd/config.toml'
PRISTINE = '/var/lib/nodeguard-test/config.toml.pristine'
HANDLERS = {'nvidia', 'kata-qemu', 'kata-qemu-coco-dev', 'kata-qemu-tdx', 'kata-qemu-snp'}
TARGETS = {'converge': 10.0, 're-run': 6.0}
RATIO = 1.25
FAMILIES = {
    'site': ('playbooks/site.yml', {'converge': [], 're-run': [],
                                    'uninstall': ['-e', 'gpu_toolkit_state=absent', '-e', 'coco_state=absent']}),
    'minimal': ('bench/minimal/site.yml', {'converge': [], 're-run': [], 'uninstall': ['-e', 'minimal_state=absent']}),
}
STEPS = ('converge', 're-run', 'uninstall')
RESTARTS = {'converge': 1, 're-run': 0, 'uninstall': 1}


def running_handlers(node):
    """Runtime handlers of the effective config, from the node's own `config dump`."""
    dump = node.run('containerd', 'config', 'dump')
    if dump.returncode:
        sys.exit('containerd config dump failed on the node: %s' % dump.stderr)
    cri = tomllib.loads(dump.stdout)['plugins']['io.containerd.grpc.v1.cri']
    return set(cri['containerd']['runtimes'])


def reset(node):
    """Put the pristine config back after the hand-made uninstall (not timed): both families start alike."""
    if node.sha256(CONFIG) != node.sha256(PRISTINE):
        node.run('cp', PRISTINE, CONFIG)
        node.run('systemctl', 'restart', 'containerd')


def one_family(node, family, problems):
    path, extras = FAMILIES[family]
    out = {}
    for step in STEPS:
        since = node.clock()
        wall, recap, tasks = node.playbook(path, extras[step])
        restarts = node.starts(since, node.clock() + 0.001)
        out[step] = (wall, tasks, restarts, recap.get('changed'), node.last_cpu)
        missing = HANDLERS - running_handlers(node) if step == 'converge' else set()
        if missing:
            problems.append('%s converge: handlers %s missing from config dump' % (family, sorted(missing)))
        if family == 'site' and restarts != RESTARTS[step]:
            problems.append('site %s restarted containerd %d times (want %d)' % (step, restarts, RESTARTS[step]))
    if family == 'site' and node.sha256(CONFIG) != node.sha256(PRISTINE):
        problems.append('site uninstall did not give back the pristine bytes of %s' % CONFIG)
    if family == 'minimal':
        reset(node)
    return out


def prepare(node):
    """Node.prepare, with the payload layout molecule/coco/prepare.yml asks for (kata 3.x, as bench/minimal)."""
    node.pb_bin = ansible_playbook(WHAT)
    node.boot()
    node.write_inventory({'coco_payload_layout': '3'})
    node.playbook('molecule/coco/prepare.yml')


def main():
    prerequisites(WHAT, IMAGE, ('bench/minimal/site.yml',))
    node = Node('ng-bench-site-%d' % os.getpid(), IMAGE, tempfile.mkdtemp(prefix='ng-bench-site-'))
    problems = []
    runs = {'site': [], 'minimal': []}
    try:
        prepare(node)
        for rnd in range(ROUNDS):
            for family in (('site', 'minimal') if rnd % 2 == 0 else ('minimal', 'site')):
                runs[family].append(one_family(node, family, problems))
    finally:
        if not KEEP:
            node.remove()
    load = open('/proc/loadavg').read().split()[:3]
    print('%s on %s, %d rounds, load average %s' % (WHAT, IMAGE, ROUNDS, ' '.join(load)))
    header = ('step', 'site.yml: median s (tasks, restarts)', 'minimal: median s (tasks, restarts)', 'ratio')
    print('  %-10s %-30s %-30s %s' % header)
    met = True
    for step in STEPS:
        med = {f: statistics.median(r[step][0] for r in runs[f]) for f in runs}
        last = {f: runs[f][-1][step] for f in runs}
        ratio = med['site'] / med['minimal']
        target = TARGETS.get(step)
        verdict = []
        if target is not None:
            verdict.append('<= %.0f s: %s' % (target, 'met' if med['site'] <= target else 'NOT met'))
            met = met and med['site'] <= target
        verdict.append('<= %.2fx: %s' % (RATIO, 'met' if ratio <= RATIO else 'NOT met'))
        met = met and ratio <= RATIO
        print('  %-10s %6.1f (%3d tasks, %d restarts)        %6.1f (%3d tasks, %d restarts)        %.2fx  %s'
              % (step, med['site'], last['site'][1], last['site'][2], med['minimal'], last['minimal'][1],
                 last['minimal'][2], ratio, '; '.join(verdict)))
    for family in runs:
        print('  %s walls: %s' % (family, '; '.join(
            ', '.join('%s %.1f' % (s, r[s][0]) for s in STEPS) for r in runs[family])))
    print('  CPU seconds (median; ansible-playbook and the processes it waited for, node side included):')
    for step in STEPS:
        cpu = {f: statistics.median(r[step][4] for r in runs[f]) for f in runs}
        ratio = cpu['site'] / cpu['minimal']
        print('  %-10s site %5.1f  minimal %5.1f  ratio %.2fx' % (step, cpu['site'], cpu['minimal'], ratio))
    print('  targets: %s (they are judged on a quiet machine)' % ('all met' if met else 'not all met'))
    for problem in problems:
        print('  WRONG: %s' % problem)
    print('  result: %s (ansible log: %s)' % ('as promised' if not problems else 'NOT as promised', node.log))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
