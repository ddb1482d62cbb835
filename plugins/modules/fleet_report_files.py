#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: fleet_report_files
short_description: Write the fleet report's files on the controller
version_added: 0.3.0
description:
  - Writes each entry of O(files) as a file in the folder O(dir) on the controller, atomically (a temporary file
    in the same folder, fsync, rename, fsync of the folder), creating the folder when it does not exist.
  - A file whose bytes and mode are already those asked for is not rewritten.
  - Used by the C(nodeguard.containerd.fleet_report) role for the report's JSON and HTML files. It runs on the
    controller only (an action plugin), so it costs no module run on any host.
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
      - The folder on the controller.
    type: path
    required: true
  files:
    description:
      - File names (no folder part) and their text.
    type: dict
    required: true
  mode:
    description:
      - The mode of each file, as an octal string such as V('0644') or a number.
    type: raw
    default: '0644'
seealso:
  - module: nodeguard.containerd.containerd_info
'''

EXAMPLES = r'''
- name: Write the report as JSON and HTML into the job's artifacts folder
  nodeguard.containerd.fleet_report_files:
    dir: "{{ playbook_dir }}/artifacts"
    files:
      report.json: "{{ report | to_nice_json }}\n"
      report.html: "{{ lookup('ansible.builtin.template', 'report.html.j2') }}"
  run_once: true
'''

RETURN = r'''
files:
  description: The paths of all files of O(files).
  returned: success
  type: list
  elements: str
  sample: [/runner/artifacts/1/report.html, /runner/artifacts/1/report.json]
written:
  description: The paths written by this call.
  returned: success
  type: list
  elements: str
unchanged:
  description: The paths that already had the bytes and mode asked for.
  returned: success
  type: list
  elements: str
'''
