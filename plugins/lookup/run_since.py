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
    topmost C(ansible-playbook) process above this one, itself included (Linux C(/proc), else C(ps)), plus one
    second (C(/proc)'s boot time is cut to the second, so the moment is never before the process started and a
    containerd restart just before the run does not count; it is at most a second after the start) or two from
    C(ps) (whole seconds on top of that). Else the time of the call, with a warning.
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
      - The job's artifacts folder under ansible-runner (its C(job_events) folder holds the job's events; the files
        named C(<counter>-<uuid>.json) count).
      - Empty means none.
    type: str
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
    - One element, the moment the run began, in seconds since the epoch (a float; to the microsecond from a job
      event, to the hundredth of a second from C(/proc)).
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
from ansible.utils.display import Display

display = Display()

PLAYBOOK = 'ansible-playbook'


# the runner's file of one event: <counter>-<uuid>.json (a partial one is <uuid>-partial.json)
EVENT_FILE = re.compile(r'^(\d+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$')
CREATED = re.compile(r'(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?')


def first_event_time(events_dir):
    """The time of the job's first event (the lowest counter) in events_dir/job_events, or None."""
    first = None
    for path in glob.glob(os.path.join(events_dir, 'job_events', '*.json')):
        found = EVENT_FILE.match(os.path.basename(path))
        if found and (first is None or int(found.group(1)) < first[0]):
            first = (int(found.group(1)), path)
    if first is None:
        return None
    try:
        with open(first[1]) as f:
            created = json.load(f).get('created')
        # ansible-runner writes UTC as 2026-12-05T16:19:23.123456 (an offset may follow)
        found = CREATED.match(created if isinstance(created, str) else '')
        if not found:
            return None
        seconds = calendar.timegm(time.strptime(found.group(1), '%Y-%m-%dT%H:%M:%S'))
    except (IOError, OSError, ValueError, AttributeError):
        return None
    return seconds + float('0' + (found.group(2) or '.0'))


def is_playbook(argv):
    """A process of ansible-playbook: its program (argv[0]), or the script its interpreter runs (argv[1])."""
    return any(os.path.basename(arg) == PLAYBOOK for arg in argv[:2])


def _proc_parent_and_start(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    # after the command: state, ppid, ... starttime is field 22 of stat, the 20th after ')'
    return int(fields[1]), int(fields[19])


def _proc_argv(pid):
    with open('/proc/%d/cmdline' % pid, 'rb') as f:
        return f.read().decode('utf-8', 'replace').split('\0')


def _boot_time():
    with open('/proc/stat') as f:
        for line in f:
            if line.startswith('btime '):
                return int(line.split()[1])
    raise OSError('no btime in /proc/stat')


def playbook_start_from_proc(pid):
    """Start of the topmost ansible-playbook process above pid (itself included), from /proc; None if none.

    Up to PID 1 included: ansible-playbook may be PID 1 (a container's command), and then its forked workers
    must find it too.
    """
    start = None
    while pid > 0:
        parent, ticks = _proc_parent_and_start(pid)
        if is_playbook(_proc_argv(pid)):
            start = ticks
        pid = parent
    if start is None:
        return None
    # btime is the boot time cut to the second: + 1 so the moment is never before the process started (a
    # containerd restart just before the run must not count), and at most a second after it
    return round(_boot_time() + 1 + start / float(os.sysconf('SC_CLK_TCK')), 2)


def _ps_table():
    """{pid: (ppid, lstart, argv)} of every process, from one ps (C locale: lstart as 'Sat Dec  5 16:19:23 2026')."""
    out = subprocess.run(['ps', '-A', '-o', 'pid=', '-o', 'ppid=', '-o', 'lstart=', '-o', 'args='],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True, check=False,
                         env=dict(os.environ, LC_ALL='C')).stdout
    table = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[0].isdigit() and fields[1].isdigit():
            table[int(fields[0])] = (int(fields[1]), ' '.join(fields[2:7]), fields[7:])
    return table


def playbook_start_from_ps(pid):
    """The same from ps (a controller without /proc, macOS): lstart, to the second; None if none."""
    table = _ps_table()
    start = None
    while pid in table:
        parent, lstart, argv = table[pid]
        if is_playbook(argv):
            start = lstart
        if parent == pid:
            break
        pid = parent
    if not start:
        return None
    # lstart is cut to the second, and Linux's ps adds its boot time cut to the second: + 2 keeps the moment
    # from coming before the process's start (measured: lstart up to 1.4 s before it)
    return float(time.mktime(time.strptime(start, '%a %b %d %H:%M:%S %Y'))) + 2


def run_since(since='', events_dir=''):
    """The rule of the lookup (DOCUMENTATION), as a number; None when nothing gives the moment."""
    if since not in (None, ''):
        try:
            return float(since)
        except (TypeError, ValueError):
            raise AnsibleLookupError('run_since: since must be seconds since the epoch, not %r' % (since,))
    if events_dir:
        found = first_event_time(os.path.expanduser(events_dir))
        if found is not None:
            return round(found, 6)
    try:
        return playbook_start_from_proc(os.getpid())
    except (IOError, OSError, ValueError, IndexError):
        pass    # no /proc (macOS), or it cannot be read: ps
    try:
        return playbook_start_from_ps(os.getpid())
    except (OSError, ValueError):
        return None


class LookupModule(LookupBase):

    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        found = run_since(self.get_option('since'), self.get_option('events_dir'))
        if found is None:
            # each call would give another number: counts since the run began would not agree
            display.warning('run_since: no ansible-playbook process above this one and no job events: the time of '
                            'this call is used, which moves from call to call. Give the moment (fleet_report_since, '
                            'node_readiness_starts_since) for counts that agree.')
            found = round(time.time(), 3)
        return [found]
