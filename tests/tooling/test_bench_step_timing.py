# -*- coding: utf-8 -*-
"""The bench's step_timing callback (bench/callback_plugins): a real
ansible-playbook run on the local connection records each task with its
kind and seconds, and bench/converge.py sums them per kind."""

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'bench'))

import converge  # noqa: E402  (bench/ is not a package)

PLAYBOOK = """\
- hosts: localhost
  gather_facts: false
  tasks:
    - name: a fact
      ansible.builtin.set_fact:
        fact: 1
    - name: a module on the node
      ansible.builtin.command: "true"
      changed_when: true
      notify: a handler
    - name: a skipped debug
      ansible.builtin.debug:
        msg: never
      when: false
    - name: an include
      ansible.builtin.include_tasks: included.yml
    - name: a skipped include
      ansible.builtin.include_tasks: included.yml
      when: false
  handlers:
    - name: a handler
      ansible.builtin.command: "true"
      changed_when: false
"""


def run_playbook(tmp_path):
    (tmp_path / 'site.yml').write_text(PLAYBOOK)
    (tmp_path / 'included.yml').write_text('- name: an assert\n  ansible.builtin.assert:\n    that: [true]\n'
                                           '    quiet: true\n')
    timing = tmp_path / 'timing.jsonl'
    env = dict(os.environ, ANSIBLE_CALLBACK_PLUGINS=converge.CALLBACKS, ANSIBLE_CALLBACKS_ENABLED='step_timing',
               NG_STEP_TIMING_FILE=str(timing), ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-c', 'local', '-e', 'ansible_python_interpreter=%s' % sys.executable,
                           str(tmp_path / 'site.yml')], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return timing


def test_each_task_is_recorded_with_its_kind(tmp_path):
    timing = run_playbook(tmp_path)
    run = json.loads(timing.read_text().splitlines()[-1])
    kinds = [(task['name'], task['kind']) for task in run['tasks']]
    assert kinds == [('a fact', 'controller'), ('a module on the node', 'node'), ('a skipped debug', 'skipped'),
                     ('an include', 'include'), ('an assert', 'controller'), ('a skipped include', 'skipped'),
                     ('a handler', 'node')]
    assert all(task['seconds'] > 0 for task in run['tasks'])
    assert run['playbook_seconds'] >= sum(task['seconds'] for task in run['tasks']) - 0.01


def test_converge_sums_the_kinds_and_ansible_start(tmp_path):
    timing = run_playbook(tmp_path)
    run = json.loads(timing.read_text().splitlines()[-1])
    wall = run['playbook_seconds'] + 1.5
    kinds = converge.time_by_kind(str(timing), wall)
    assert [kinds[kind][0] for kind in converge.KINDS] == [2, 2, 1, 2]
    assert abs(kinds['start'][1] - 1.5) < 1e-6
    total = sum(kinds[kind][1] for kind in converge.KINDS)
    assert abs(total - sum(task['seconds'] for task in run['tasks'])) < 1e-6
