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
included) and their ratio; then where each step's time goes, from the
bench's step_timing callback (bench/callback_plugins, on both sides): the
tasks that ran a module on the node, those the controller ran alone, the
includes and the skipped tasks, each with their count and seconds, and
Ansible's own start; last, per step, what 1.25x allows on top of the
hand-made playbook against what site.yml's restart-and-check step
(containerd_readiness: the restart when needed, the load test of the config
in an isolated containerd, a probe container per handler) costs beyond the
hand-made restart handler. A run is one serial chain of processes (one node,
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

import json
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
KINDS = ('node', 'controller', 'include', 'skipped')
# the step of each family that restarts containerd (and, on the site side, checks the node)
RESTART_ACTIONS = ('containerd_readiness', 'systemd_service')
CALLBACKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'callback_plugins')


def time_by_kind(timing_file, wall):
    """{kind: (tasks, seconds)} of the last run step_timing recorded, 'start': Ansible's own start, and
    'restart': the seconds of the step that restarts containerd (site: containerd_readiness, which also
    load-tests the config in an isolated containerd and probes each handler; hand-made: the restart handler)."""
    with open(timing_file) as f:
        run = json.loads(f.read().splitlines()[-1])
    out = dict((kind, [0, 0.0]) for kind in KINDS)
    out['restart'] = [0, 0.0]
    for task in run['tasks']:
        out[task['kind']][0] += 1
        out[task['kind']][1] += task['seconds']
        if task['kind'] == 'node' and task['action'].rsplit('.', 1)[-1] in RESTART_ACTIONS:
            out['restart'][0] += 1
            out['restart'][1] += task['seconds']
    out['start'] = [1, max(wall - run['playbook_seconds'], 0.0)]
    return out


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
        kinds = time_by_kind(node.extra_env['NG_STEP_TIMING_FILE'], wall)
        out[step] = (wall, tasks, restarts, recap.get('changed'), node.last_cpu, kinds)
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


def print_time_by_kind(runs):
    """Per step and family, the median seconds (and tasks) of each kind of task, and of Ansible's start."""
    print('  where the time goes (median seconds, tasks in brackets):')
    columns = ('step', 'family', 'node', 'controller', 'include', 'skipped', 'start')
    print('  %-10s %-8s %13s %13s %13s %13s %7s' % columns)
    for step in STEPS:
        for family in runs:
            cells = []
            for kind in KINDS + ('start',):
                secs = statistics.median(r[step][5][kind][1] for r in runs[family])
                count = runs[family][-1][step][5][kind][0]
                cells.append('%5.2f' % secs if kind == 'start' else '%5.2f (%3d)' % (secs, count))
            print('  %-10s %-8s %13s %13s %13s %13s %7s' % tuple([step, family] + cells))


def print_restart_step(runs):
    """Per step: what 1.25x allows on top of the hand-made playbook, against what the site's restart-and-check
    step alone costs beyond the hand-made restart (the isolated load test, the probes, the checks)."""
    print('  the restart-and-check step against the 1.25x allowance (median seconds):')
    for step in STEPS:
        minimal = statistics.median(r[step][0] for r in runs['minimal'])
        site_step = statistics.median(r[step][5]['restart'][1] for r in runs['site'])
        hand_step = statistics.median(r[step][5]['restart'][1] for r in runs['minimal'])
        print('  %-10s allowance %.2f  site containerd_readiness %.2f  hand-made restart %.2f  beyond it %.2f'
              % (step, minimal * (RATIO - 1), site_step, hand_step, site_step - hand_step))


def main():
    prerequisites(WHAT, IMAGE, ('bench/minimal/site.yml',))
    node = Node('ng-bench-site-%d' % os.getpid(), IMAGE, tempfile.mkdtemp(prefix='ng-bench-site-'))
    problems = []
    runs = {'site': [], 'minimal': []}
    node.extra_env = dict(ANSIBLE_CALLBACK_PLUGINS=CALLBACKS, ANSIBLE_CALLBACKS_ENABLED='step_timing',
                          NG_STEP_TIMING_FILE=os.path.join(node.work, 'step-timing.jsonl'))
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
    print_time_by_kind(runs)
    print_restart_step(runs)
    print('  targets: %s (they are judged on a quiet machine)' % ('all met' if met else 'not all met'))
    for problem in problems:
        print('  WRONG: %s' % problem)
    print('  result: %s (ansible log: %s)' % ('as promised' if not problems else 'NOT as promised', node.log))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
