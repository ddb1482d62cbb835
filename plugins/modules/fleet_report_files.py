#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: fleet_report_files
short_description: Build and write the fleet report's files on the controller
version_added: 1.0.0
description:
  - Writes each entry of O(files) as a file in the folder O(dir) on the controller, atomically (a temporary file
    in the same folder, fsync, rename, fsync of the folder).
  - The folder is made when only it is missing. A folder whose parent is missing (most often a volume that is not
    mounted, where the files would be lost with the job's container) or that cannot be written fails, naming the
    folder and what to do.
  - A file whose bytes and mode are already those asked for is not rewritten.
  - Used by the C(nodeguard.containerd.fleet_report) role, in two more steps. O(build=events) reads the job's
    ansible-runner events (time spent, changed and failed tasks per node), when the run began (the rule of the lookup
    P(nodeguard.containerd.run_since#lookup)) and which nodes' readiness check already counted containerd's starts.
    O(build=report) makes one row per node from hostvars, those events and containerd_info's answers, and writes it
    as C(<name>.json) and a self-contained C(<name>.html) into O(dir). Both are one pass over their input, so a job
    of thousands of events and hundreds of nodes takes well under a second.
  - It runs on the controller only (an action plugin), so it costs no module run on any host.
  - The report changes no node, so the task never reports a change.
author:
  - nodeguard maintainers (@nodeguard)
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.flow
attributes:
  check_mode:
    support: full
    details: The report describes the run and changes no host, so it is written in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
  action:
    support: full
  async:
    support: none
  bypass_host_loop:
    support: none
options:
  dir:
    description:
      - The folder on the controller. Required unless O(build=events).
    type: path
  files:
    description:
      - File names (no folder part) and their text. Required unless O(build) is given.
    type: dict
  mode:
    description:
      - The mode of each file, as an octal string such as V('0644') or a number.
    type: raw
    default: '0644'
  build:
    description:
      - V(events) - return the job's events per node, when the run began and the nodes counted (RV(events)); write
        nothing.
      - V(report) - build the report from O(events), hostvars and containerd_info's answers, and write it into O(dir)
        as O(name)C(.json) and O(name)C(.html).
      - Not given - write O(files).
    version_added: 1.0.0
    type: str
    choices: [events, report]
  hosts:
    description:
      - The nodes of the report, in this order. A list, a JSON list, or text with the names separated by commas or
        newlines (an AWX survey sends every answer as text). Blank text means the play's hosts.
      - Required with O(build).
    version_added: 1.0.0
    type: raw
  failed_hosts:
    description:
      - The nodes that failed earlier in the run, given as O(hosts) is.
    version_added: 1.0.0
    type: raw
  events_dir:
    description:
      - An ansible-runner artifacts folder whose C(job_events/) hold the job's events. Empty - none.
      - With O(build=events).
    version_added: 1.0.0
    type: str
    default: ''
  since:
    description:
      - Epoch seconds from which containerd starts count as restarts. Empty - when this run began, by the rule of the
        lookup P(nodeguard.containerd.run_since#lookup). With O(build=events).
    version_added: 1.0.0
    type: str
    default: ''
  service:
    description:
      - The containerd unit whose starts readiness counted. With O(build=events).
    version_added: 1.0.0
    type: str
    default: containerd
  events:
    description:
      - The RV(events) of an earlier O(build=events) call. Required with O(build=report).
    version_added: 1.0.0
    type: dict
  info:
    description:
      - containerd_info's answers as a loop registers them (C(results), each with C(item), the node). With
        O(build=report).
    version_added: 1.0.0
    type: raw
  info_var:
    description:
      - The name of the variable each node registered containerd_info's answer in. With O(build=report).
    version_added: 1.0.0
    type: str
  title:
    description:
      - Title of the report. With O(build=report).
    version_added: 1.0.0
    type: str
    default: nodeguard fleet report
  name:
    description:
      - File name of the report without its extension. With O(build=report).
    version_added: 1.0.0
    type: str
    default: nodeguard-fleet-report
seealso:
  - module: nodeguard.containerd.containerd_info
  - plugin: nodeguard.containerd.run_since
    plugin_type: lookup
'''

EXAMPLES = r'''
- name: Write two files into the job's artifacts folder
  nodeguard.containerd.fleet_report_files:
    dir: "{{ playbook_dir }}/artifacts"
    files:
      report.json: "{{ report | to_nice_json }}\n"
      notes.txt: "{{ notes }}"
  run_once: true

- name: Read the job's events
  nodeguard.containerd.fleet_report_files:
    build: events
    hosts: "{{ ansible_play_hosts_all }}"
    events_dir: "{{ lookup('ansible.builtin.env', 'AWX_ISOLATED_DATA_DIR') }}"
  run_once: true
  register: fleet_events

- name: Build the report and write it as JSON and HTML on a volume that outlives the job
  nodeguard.containerd.fleet_report_files:
    build: report
    dir: /var/lib/awx/reports
    hosts: "{{ fleet_events.hosts }}"
    events: "{{ fleet_events.events }}"
  run_once: true
'''

RETURN = r'''
files:
  description: The paths of all files written or left as they were.
  returned: unless O(build=events)
  type: list
  elements: str
  sample: [/runner/artifacts/1/report.html, /runner/artifacts/1/report.json]
written:
  description: The paths written by this call.
  returned: unless O(build=events)
  type: list
  elements: str
unchanged:
  description: The paths that already had the bytes and mode asked for.
  returned: unless O(build=events)
  type: list
  elements: str
events:
  description:
    - C(available) (an events folder was given), C(hosts) (per node - C(seconds), C(tasks), C(changed), C(failed)
      task names, C(last_failed), C(rescued), C(unreachable)), C(since) and C(counted) (the nodes whose readiness
      check counted containerd's starts since then, in the rollout's last batch).
  returned: O(build=events)
  type: dict
hosts:
  description: O(hosts) as a list.
  returned: O(build=events)
  type: list
  elements: str
failed_hosts:
  description: O(failed_hosts) as a list.
  returned: O(build=events)
  type: list
  elements: str
since:
  description: When the run began, in seconds since the epoch.
  returned: O(build=events)
  type: float
counted:
  description: The nodes whose starts readiness counted; the others need containerd_info.
  returned: O(build=events)
  type: list
  elements: str
report:
  description: The report as written to the JSON file - title, generated, since, stopped, summary and rows.
  returned: O(build=report)
  type: dict
lines:
  description: The report as a table of text, one line per element.
  returned: O(build=report)
  type: list
  elements: str
'''
