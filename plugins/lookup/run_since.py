# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""run_since: when this run began, in seconds since the epoch, on the controller.

One rule for every place that counts containerd's starts "since the run
began": node_readiness (containerd_readiness starts_since) and the fleet
report. Both must get the same number, so the rule gives a stable one: a
moment fixed at the run's start, never "now minus an age".
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: run_since
author:
  - nodeguard maintainers (@nodeguard)
version_added: 1.0.0
short_description: When this playbook run began, in seconds since the epoch
description:
  - Returns one number, the moment this run began, on the controller. The fleet report counts the containerd starts
    in each node's journal since then, and M(nodeguard.containerd.containerd_readiness) (its O(nodeguard.containerd.containerd_readiness#module:starts_since))
    counts them with the same number, so a node that readiness checked needs no second call at the report.
  - The rule, first that applies. O(since) when given. Else, under ansible-runner (AWX), the time of the job's
    first event in O(events_dir) (its C(job_events) folder, the event with the lowest counter). Else the start of the
    topmost C(ansible-playbook) process above this one (Linux C(/proc), else C(ps)), rounded up to the second (the
    boot time and C(ps) give whole seconds, so the moment is never before the process started and a containerd restart
    just before the run does not count; from C(ps), up to two seconds after it). Else the time of the call.
  - Each value but the last is fixed for the whole run, so every call in a run returns the same number.
options:
  since:
    description:
      - A moment given by the caller, in seconds since the epoch (for example the start of a failed job whose report
        this run writes). Empty means not given.
    type: str
    default: ''
  events_dir:
    description:
      - The job's artifacts folder under ansible-runner (its C(job_events) folder holds the job's events).
      - Empty means none.
    type: path
    default: ''
    env:
      - name: AWX_ISOLATED_DATA_DIR
notes:
  - Runs on the controller only.
"""

EXAMPLES = r"""
- name: Count the containerd starts since this run began
  nodeguard.containerd.containerd_info:
    starts_since: "{{ lookup('nodeguard.containerd.run_since') }}"

- name: Since a moment the caller knows
  ansible.builtin.debug:
    msg: "{{ lookup('nodeguard.containerd.run_since', since=fleet_report_since) }}"
"""

RETURN = r"""
_raw:
  description:
    - One element, the moment the run began, in seconds since the epoch (a float, to the millisecond).
  type: list
  elements: float
"""

import calendar
import glob
import json
import os
import re
import subprocess
import time

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

PLAYBOOK = 'ansible-playbook'


def first_event_time(events_dir):
    """The time of the job's first event (lowest counter) in events_dir/job_events, or None.

    The runner may hold a partial and a full file of one event: of the files
    with the lowest counter, the first (by name) that has a time counts.
    """
    files = {}
    for path in glob.glob(os.path.join(events_dir, 'job_events', '*.json')):
        head = os.path.basename(path).split('-', 1)[0]
        if head.isdigit():
            files.setdefault(int(head), []).append(path)
    for path in sorted(files[min(files)]) if files else []:
        try:
            with open(path) as f:
                created = json.load(f).get('created')
        except (IOError, OSError, ValueError, AttributeError):
            continue
        # ansible-runner writes UTC as 2026-12-05T16:19:23.123456 (an offset may follow)
        found = re.match(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?', created if isinstance(created, str) else '')
        if found:
            seconds = calendar.timegm(time.strptime(found.group(1), '%Y-%m-%dT%H:%M:%S'))
            return seconds + float('0' + (found.group(2) or '.0'))
    return None


def _proc_parent_and_start(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    # after the command: state, ppid, ... starttime is field 22 of stat, the 20th after ')'
    return int(fields[1]), int(fields[19])


def _proc_cmdline(pid):
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        return f.read().replace(b'\0', b' ').decode('utf-8', 'replace')


def _boot_time():
    with open('/proc/stat') as f:
        for line in f:
            if line.startswith('btime '):
                return int(line.split()[1])
    raise OSError('no btime in /proc/stat')


def playbook_start_from_proc(pid):
    """Start of the topmost ansible-playbook process above pid (itself included), from /proc; None if none."""
    start = None
    while pid > 1:
        parent, ticks = _proc_parent_and_start(pid)
        if PLAYBOOK in _proc_cmdline(pid):
            start = ticks
        pid = parent
    if start is None:
        return None
    # btime is the boot time cut to the second: + 1 so the moment is never before the process started (a
    # containerd restart just before the run must not count), and at most a second after it
    return round(_boot_time() + 1 + start / float(os.sysconf('SC_CLK_TCK')), 2)


def _ps(pid, field):
    out = subprocess.run(['ps', '-o', '%s=' % field, '-p', str(pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, universal_newlines=True, check=False).stdout
    return out.strip()


def playbook_start_from_ps(pid):
    """The same from ps (a controller without /proc, macOS): lstart, to the second; None if none."""
    start = None
    while pid > 1:
        if PLAYBOOK in _ps(pid, 'args'):
            start = _ps(pid, 'lstart')
        parent = _ps(pid, 'ppid')
        if not parent.isdigit():
            break
        pid = int(parent)
    if not start:
        return None
    # lstart is cut to the second, and Linux's ps adds its boot time cut to the second: + 2 keeps the moment
    # from coming before the process's start (measured: lstart up to 1.4 s before it)
    return float(time.mktime(time.strptime(' '.join(start.split()), '%a %b %d %H:%M:%S %Y'))) + 2


def run_since(since='', events_dir=''):
    """The rule of the lookup (DOCUMENTATION), as a number."""
    if since not in (None, ''):
        try:
            return float(since)
        except (TypeError, ValueError):
            raise AnsibleLookupError('run_since: since must be seconds since the epoch, not %r' % (since,))
    if events_dir:
        found = first_event_time(events_dir)
        if found is not None:
            return round(found, 6)
    try:
        found = playbook_start_from_proc(os.getpid()) if os.path.isdir('/proc/self') else None
    except (IOError, OSError, ValueError, IndexError):
        found = None
    if found is None:
        try:
            found = playbook_start_from_ps(os.getpid())
        except (OSError, ValueError):
            found = None
    return found if found is not None else round(time.time(), 3)


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        return [run_since(self.get_option('since'), self.get_option('events_dir'))]
