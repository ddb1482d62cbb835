#!/usr/bin/env python
"""The fleet report at fleet size: time to build it from the job's events and
the hostvars, by job events (500, 2,000, 8,000 on 12 nodes) and by nodes (100, 400:
20 events a node; NG_REPORT_EVENTS, NG_REPORT_NODES), on realistic inputs (the ones the report's
pinned test uses: tests/unit/plugins/action/fleet_report_input.py).

Side by side in one run, medians of NG_BENCH_REPS:
- python: the report as the role builds it now (plugins/plugin_utils/fleet_report.py: events, rows, JSON, HTML,
  printed lines), in process;
- role: the whole role through ansible-playbook on N inventory hosts (no node asked: fleet_report_collect false),
  minus the same playbook with a no-op in place of the role (ansible-playbook's own start);
- templates: the role's former Jinja templates (events.json.j2, rows.json.j2, report.html.j2, report.txt.j2, from
  git history) rendered through ansible-playbook the same way (NG_REPORT_TEMPLATES=0 skips them: 8,000 events
  take minutes).

    .venv/bin/python bench/fleet_report.py
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from _common import REPO, collections_path

sys.path.insert(0, collections_path())
sys.path.insert(0, os.path.join(REPO, 'tests', 'unit', 'plugins', 'action'))

import fleet_report_input  # noqa: E402  (after the path above)
from ansible_collections.nodeguard.containerd.plugins.plugin_utils import fleet_report as fr  # noqa: E402

REPS = int(os.environ.get('NG_BENCH_REPS', '3'))
EVENTS = [int(x) for x in os.environ.get('NG_REPORT_EVENTS', '500,2000,8000').split(',')]
NODES = [int(x) for x in os.environ.get('NG_REPORT_NODES', '100,400').split(',')]
TEMPLATES = os.environ.get('NG_REPORT_TEMPLATES', '1') != '0'
PLAYBOOK = os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')

ROLE = '''
- name: Fleet report
  hosts: all
  gather_facts: false
  tasks:
    - name: The report
      ansible.builtin.include_role:
        name: nodeguard.containerd.fleet_report
      when: not noop | bool
    - name: Nothing (ansible-playbook's own cost)
      ansible.builtin.debug:
        msg: noop
      run_once: true
      when: noop | bool
'''

OLD = '''
- name: Fleet report
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Events
      ansible.builtin.set_fact:
        __fleet_report_events: "{{ lookup('ansible.builtin.template', T + '/events.json.j2') | from_json }}"
    - name: Rows
      ansible.builtin.set_fact:
        fleet_report_result: "{{ lookup('ansible.builtin.template', T + '/rows.json.j2') | from_json }}"
    - name: Files
      ansible.builtin.set_fact:
        __out: "{{ [(fleet_report_result | to_nice_json), lookup('ansible.builtin.template', T + '/report.html.j2'),
                    lookup('ansible.builtin.template', T + '/report.txt.j2')] | length }}"
'''


def python_build(c):
    hv = c['hostvars']
    get = hv.get
    start = time.perf_counter()
    events = fr.read_events(c['events_dir'], c['play'])
    events['since'] = c['since']
    events['counted'] = fr.counted_nodes(c['hosts'], lambda h: get(h, {}), c['failed_hosts'], c['since'],
                                         c['service'], events['hosts'])
    info = dict((r['item'], r) for r in c['info']['results'] if 'item' in r)
    report = fr.build_report(c['title'], c['play'], c['hosts'], lambda h: get(h, {}), c['failed_hosts'], events, info)
    fr.to_json_text(report)
    fr.html_page(report)
    fr.text_lines(report)
    return time.perf_counter() - start


def make_case(work, size, events):
    c = fleet_report_input.case(os.path.join(work, 'job'), size=size, events=events, serial=max(1, size // 4),
                                starts=True)
    hv = c['hostvars']
    counted = fr.counted_nodes(c['hosts'], lambda h: hv.get(h, {}), c['failed_hosts'], c['since'], c['service'],
                               fr.read_events(c['events_dir'], c['play'])['hosts'])
    c['info'] = fleet_report_input.info_of(c['hosts'], counted)
    inventory = {'all': {'hosts': dict((h, dict(hv.get(h, {}), ansible_connection='local',
                                                ansible_python_interpreter=sys.executable)) for h in c['hosts'])}}
    with open(os.path.join(work, 'inventory.json'), 'w') as f:
        json.dump(inventory, f)
    return c


def playbook(work, name, text, extra, profile=False):
    path = os.path.join(work, name)
    with open(path, 'w') as f:
        f.write(text)
    with open(os.path.join(work, 'extra.json'), 'w') as f:
        json.dump(extra, f)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_LOCALHOST_WARNING='0',
               ANSIBLE_FORKS='5', ANSIBLE_NOCOLOR='1')
    env.pop('ANSIBLE_CONFIG', None)
    if profile:
        env['ANSIBLE_CALLBACKS_ENABLED'] = 'ansible.posix.profile_tasks'
    start = time.perf_counter()
    proc = subprocess.run([PLAYBOOK, '-i', os.path.join(work, 'inventory.json'), path,
                           '-e', '@' + os.path.join(work, 'extra.json')],
                          capture_output=True, text=True, env=env, timeout=3600, check=False)
    wall = time.perf_counter() - start
    if proc.returncode:
        sys.exit('%s failed:\n%s' % (name, (proc.stdout + proc.stderr)[-4000:]))
    tasks = []
    for line in proc.stdout.splitlines():
        found = re.match(r'^(?:nodeguard\.containerd\.fleet_report : )?(.+?) -{2,} ([\d.]+)s$', line)
        if found:
            tasks.append((found.group(1), float(found.group(2))))
    return (wall, tasks) if profile else (wall, None)


PER_NODE = ('Validating arguments', 'Ask each node readiness did not count', 'The report')


def role_seconds(work, c):
    """The role's seconds (minus ansible-playbook's own start), and of them those of its run-once steps (events,
    rows and files, fact, print, set_stats) and of its per-node tasks (argument validation, include, the
    per-node read), from the profile_tasks callback."""
    extra = {'fleet_report_collect': False, 'fleet_report_events_dir': c['events_dir'],
             'fleet_report_since': str(c['since']), 'fleet_report_dir': os.path.join(work, 'out'),
             'fleet_report_print': True}
    runs, noop = [], []
    for _rep in range(REPS):
        runs.append(playbook(work, 'role.yml', ROLE, dict(extra, noop=False), profile=True))
        noop.append(playbook(work, 'role.yml', ROLE, dict(extra, noop=True))[0])
    wall = statistics.median(r[0] for r in runs) - statistics.median(noop)
    once = statistics.median(sum(t for name, t in r[1] if not name.startswith(PER_NODE) and 'Nothing' not in name)
                             for r in runs)
    per_node = statistics.median(sum(t for name, t in r[1] if name.startswith(PER_NODE)) for r in runs)
    return wall, once, per_node


def old_templates(work):
    """The role's templates as they were before the report was built in Python."""
    deleted = subprocess.run(['git', '-C', REPO, 'log', '--diff-filter=D', '-1', '--format=%H', '--',
                              'roles/fleet_report/templates/rows.json.j2'],
                             capture_output=True, text=True, check=True).stdout.strip()
    folder = os.path.join(work, 'templates')
    os.makedirs(folder)
    for name in ('events.json.j2', 'rows.json.j2', 'report.html.j2', 'report.txt.j2'):
        text = subprocess.run(['git', '-C', REPO, 'show', '%s^:roles/fleet_report/templates/%s' % (deleted, name)],
                              capture_output=True, text=True, check=True).stdout
        with open(os.path.join(folder, name), 'w') as f:
            f.write(text)
    return folder


def templates_seconds(work, c, folder):
    extra = {'T': folder, 'fleet_report_hosts': c['hosts'], 'fleet_report_failed_hosts': c['failed_hosts'],
             'fleet_report_events_dir': c['events_dir'], 'fleet_report_since': str(c['since']),
             'fleet_report_service': c['service'], 'fleet_report_title': c['title'], '__fleet_report_info': c['info']}
    with_templates = playbook(work, 'old.yml', OLD, extra)[0]
    empty = playbook(work, 'old.yml', OLD.split('    - name: Events', maxsplit=1)[0] + '    - name: Nothing\n'
                     '      ansible.builtin.debug:\n        msg: noop\n', extra)[0]
    return with_templates - empty


def measure(label, size, events, rows, folder):
    work = tempfile.mkdtemp(prefix='ng-bench-report-')
    try:
        c = make_case(work, size, events)
        count = len(os.listdir(os.path.join(c['events_dir'], 'job_events')))
        py = statistics.median(python_build(c) for _rep in range(max(REPS, 5)))
        role, once, per_node = role_seconds(work, c)
        old = templates_seconds(work, c, folder) if folder else None
        row = {'case': label, 'nodes': size, 'event_files': count, 'python_s': round(py, 3),
               'role_s': round(role, 2), 'role_run_once_s': round(once, 2), 'role_per_node_tasks_s': round(per_node, 2),
               'templates_s': round(old, 1) if old is not None else None,
               'python_per_100_nodes_s': round(py * 100 / size, 3), 'role_per_100_nodes_s': round(role * 100 / size, 2),
               'run_once_per_100_nodes_s': round(once * 100 / size, 2),
               'load_avg': round(os.getloadavg()[0], 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    rows = []
    work = tempfile.mkdtemp(prefix='ng-bench-report-old-')
    try:
        folder = old_templates(work) if TEMPLATES else None
        for events in EVENTS:
            measure('%d events' % events, 12, events, rows, folder)
        for nodes in NODES:
            measure('%d nodes' % nodes, nodes, 20 * nodes, rows, folder if nodes <= 100 else None)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print('\n| case | nodes | event files | python build | templates (before) | role: run-once steps '
          '| role: per-node tasks | role in all | run-once steps per 100 nodes | load avg |')
    print('|---|---|---|---|---|---|---|---|---|---|')
    for r in rows:
        print('| %s | %d | %d | %.3f s | %s | %.2f s | %.2f s | %.2f s | %.2f s | %.1f |' % (
            r['case'], r['nodes'], r['event_files'], r['python_s'],
            '%.1f s' % r['templates_s'] if r['templates_s'] is not None else '-', r['role_run_once_s'],
            r['role_per_node_tasks_s'], r['role_s'], r['run_once_per_100_nodes_s'], r['load_avg']))
    out = os.path.join(REPO, 'build', 'bench', 'fleet_report.json')
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, 'w') as f:
        json.dump(rows, f, indent=1)
    print('figures: %s' % out)


if __name__ == '__main__':
    main()
