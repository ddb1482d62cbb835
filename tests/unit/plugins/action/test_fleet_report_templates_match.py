# -*- coding: utf-8 -*-
"""The fleet report built in Python (plugins/plugin_utils/fleet_report.py) gives
the same events, rows, JSON file, HTML page and printed lines as the role's
Jinja templates did, on realistic inputs (fleet_report_input.py)."""

import json
import os
import subprocess
import sys

import pytest

from conftest import COLLECTIONS_ROOT, REPO

from ansible_collections.nodeguard.containerd.plugins.plugin_utils import fleet_report as fr

import fleet_report_input

TEMPLATES = os.path.join(REPO, 'roles', 'fleet_report', 'templates')

OLD = '''
- name: Fleet report
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Events
      ansible.builtin.set_fact:
        __fleet_report_events: "{{ lookup('ansible.builtin.template', T + '/events.json.j2') | from_json }}"
    - name: Events file
      ansible.builtin.copy:
        content: "{{ __fleet_report_events | to_json }}"
        dest: "{{ out }}/events.json"
        mode: "0644"
    - name: Rows
      ansible.builtin.set_fact:
        fleet_report_result: "{{ lookup('ansible.builtin.template', T + '/rows.json.j2') | from_json }}"
    - name: JSON
      ansible.builtin.copy:
        content: "{{ (fleet_report_result | to_nice_json) ~ '\\n' }}"
        dest: "{{ out }}/report.json"
        mode: "0644"
    - name: HTML
      ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', T + '/report.html.j2') }}"
        dest: "{{ out }}/report.html"
        mode: "0644"
    - name: Lines
      ansible.builtin.copy:
        content: "{{ lookup('ansible.builtin.template', T + '/report.txt.j2') | trim | split('\\n') | to_json }}"
        dest: "{{ out }}/lines.json"
        mode: "0644"
'''


def render_old(tmp_path, c, info):
    """The templates' output for the case c, through ansible-playbook (the templates need Ansible's lookups)."""
    out = tmp_path / 'old'
    out.mkdir()
    inventory = {'all': {'hosts': dict((h, dict(c['hostvars'].get(h, {}), ansible_connection='local'))
                                       for h in c['hosts'])}}
    (tmp_path / 'inventory.json').write_text(json.dumps(inventory))
    (tmp_path / 'old.yml').write_text(OLD)
    extra = {'T': TEMPLATES, 'out': str(out), 'fleet_report_hosts': c['hosts'],
             'fleet_report_failed_hosts': c['failed_hosts'], 'fleet_report_events_dir': c['events_dir'],
             'fleet_report_since': str(c['since']), 'fleet_report_service': c['service'],
             'fleet_report_title': c['title'], '__fleet_report_info': info}
    (tmp_path / 'extra.json').write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'),
                           '-i', str(tmp_path / 'inventory.json'), str(tmp_path / 'old.yml'),
                           '-e', '@' + str(tmp_path / 'extra.json')],
                          capture_output=True, text=True, env=env, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return dict((name, (out / name).read_text()) for name in ('events.json', 'report.json', 'report.html',
                                                               'lines.json'))


def render_new(c, info_results, generated):
    events = fr.read_events(c['events_dir'], c['play'])
    hv = c['hostvars']
    events['since'] = c['since']
    events['counted'] = fr.counted_nodes(c['hosts'], lambda h: hv.get(h, {}), c['failed_hosts'], c['since'],
                                         c['service'], events['hosts'])
    info = dict((r['item'], r) for r in info_results['results'] if 'item' in r)
    report = fr.build_report(c['title'], c['play'], c['hosts'], lambda h: hv.get(h, {}), c['failed_hosts'], events,
                             info, generated=generated)
    return events, report


CASES = {
    'rollout': dict(size=12, events=900),
    'stopped': dict(size=14, events=700, serial=3, stop_batch=2, seed=4),
    'no-events': dict(size=9, with_events=False, serial=2, stop_batch=3, seed=5),
    'not-a-rollout': dict(size=16, events=2000, seed=7, rollout=False),
    'serial-one': dict(size=7, events=300, serial=1, stop_batch=6, seed=6),
}


@pytest.mark.parametrize('name', sorted(CASES))
def test_python_report_equals_the_templates(tmp_path, name):
    c = fleet_report_input.case(str(tmp_path / 'job'), **CASES[name])
    events = fr.read_events(c['events_dir'], c['play'])
    hv = c['hostvars']
    counted = fr.counted_nodes(c['hosts'], lambda h: hv.get(h, {}), c['failed_hosts'], c['since'], c['service'],
                               events['hosts'])
    info = fleet_report_input.info_of(c['hosts'], counted)
    old = render_old(tmp_path, c, info)
    old_events = json.loads(old['events.json'])
    old_report = json.loads(old['report.json'])
    new_events, new_report = render_new(c, info, old_report['generated'])
    assert new_events == old_events
    assert new_report == old_report
    assert fr.to_json_text(new_report) == old['report.json']
    assert fr.html_page(new_report) == old['report.html']
    assert fr.text_lines(new_report) == json.loads(old['lines.json'])
    # the case is one that shows the report's paths
    statuses = set(r['status'] for r in new_report['rows'])
    assert len(statuses) >= 3, statuses
