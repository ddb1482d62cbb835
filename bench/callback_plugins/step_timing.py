# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a playbook run's time goes, for bench/converge.py: one JSON object per run.

Enabled by the bench only (ANSIBLE_CALLBACKS_ENABLED=step_timing with
ANSIBLE_CALLBACK_PLUGINS pointing here); the file is NG_STEP_TIMING_FILE.
A task's time runs from its start to the next task's start (or the end of
the playbook), as profile_tasks measures it; its kind says what it cost:

  node        a module that ran on the node (a result came back and the
              action is not one of the controller's own)
  controller  an action the controller runs alone (set_fact, assert, debug,
              the role argument checks, set_stats, fail, meta)
  include     include_tasks / include_role / import_* that ran (the tasks
              they bring are counted on their own)
  skipped     skipped on every host (an include too)

The object also has the playbook's time from its start to its end; the
caller's wall time minus that is Ansible's own start (Python, loading and
parsing). Recording is a clock read per callback: it adds nothing measurable.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = '''
name: step_timing
type: aggregate
short_description: time per task and kind of task, as JSON, for the bench
description:
  - Appends one JSON object per playbook run to the file in E(NG_STEP_TIMING_FILE) - the tasks with their
    kind and seconds, and the playbook's own time.
requirements:
  - enabled in the configuration (callbacks_enabled)
'''

import json
import os
import time

from ansible.plugins.callback import CallbackBase

INCLUDES = frozenset(('include_tasks', 'include_role', 'import_tasks', 'import_role', 'include_vars'))
CONTROLLER = frozenset(('set_fact', 'assert', 'debug', 'fail', 'meta', 'set_stats', 'validate_argument_spec',
                        'add_host', 'group_by', 'pause', 'fleet_report_files'))


def short_action(action):
    """ansible.builtin.set_fact -> set_fact (and a collection's action likewise)."""
    return (action or '').rsplit('.', 1)[-1]


def kind_of(action, statuses):
    """node / controller / include / skipped, from the action and what each host said."""
    name = short_action(action)
    if statuses and all(status == 'skipped' for status in statuses):
        return 'skipped'
    if name in INCLUDES:
        return 'include'
    return 'controller' if name in CONTROLLER else 'node'


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = 'aggregate'
    CALLBACK_NAME = 'step_timing'
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super(CallbackModule, self).__init__()
        self._started = None
        self._tasks = []

    def _close_task(self, now):
        if self._tasks and self._tasks[-1]['seconds'] is None:
            task = self._tasks[-1]
            task['seconds'] = round(now - task.pop('start'), 4)
            task['kind'] = kind_of(task['action'], task.pop('statuses'))

    def v2_playbook_on_start(self, playbook):
        self._started = time.monotonic()

    def v2_playbook_on_task_start(self, task, is_conditional):
        now = time.monotonic()
        self._close_task(now)
        self._tasks.append(dict(name=task.get_name(), action=task.action, start=now, statuses=[], seconds=None))

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def _status(self, status):
        if self._tasks and self._tasks[-1]['seconds'] is None:
            self._tasks[-1]['statuses'].append(status)

    def v2_runner_on_ok(self, result):
        self._status('ok')

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._status('failed')

    def v2_runner_on_skipped(self, result):
        self._status('skipped')

    def v2_runner_on_unreachable(self, result):
        self._status('unreachable')

    def v2_playbook_on_stats(self, stats):
        now = time.monotonic()
        self._close_task(now)
        path = os.environ.get('NG_STEP_TIMING_FILE')
        if not path or self._started is None:
            return
        with open(path, 'a') as f:
            f.write(json.dumps(dict(playbook_seconds=round(now - self._started, 4), tasks=self._tasks)) + '\n')
