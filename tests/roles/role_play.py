# -*- coding: utf-8 -*-
"""One role of the collection through ansible-playbook (local connection), as the role tests run it.

role_tasks() is the tasks part of the play: the role in a block whose rescue
keeps the failure message, then one copy task that writes what the test reads
(the failure and the given facts, as JSON). run_playbook() runs a play with the
checkout's collection and ansible.cfg, optionally with another containerd
first in PATH.
"""

import json
import os
import subprocess
import sys

from conftest import COLLECTIONS_ROOT, REPO

TASKS = '''  tasks:
    - name: The role
      block:
        - name: Run {role}
          ansible.builtin.include_role:
            name: nodeguard.containerd.{role}
          vars: {role_vars}
        - name: Note success
          ansible.builtin.set_fact:
            test_failure: ""
      rescue:
        - name: Keep the failure message
          ansible.builtin.set_fact:
            test_failure: "{{{{ ansible_failed_result.msg | default('failed') }}}}"
    - name: What the test reads
      check_mode: false
      ansible.builtin.copy:
        dest: {out}
        mode: "0644"
        content: "{{{{ {{'failure': test_failure, {reads}}} | to_json }}}}"
'''


# The head of a gpu_toolkit play on localhost: its config, state folder, baselines and runtime binary (format
# placeholders path, state, store, binary); a test adds its own vars below it.
GPU_TOOLKIT_HEAD = '''
- name: {name}
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    gpu_toolkit_config_path: {{path}}
    gpu_toolkit_state_dir: {{state}}
    gpu_toolkit_baseline_store: {{store}}
    gpu_toolkit_runtime_binary: {{binary}}
'''


def stand_in(workdir, name='nvidia-container-runtime', mode=0o755):
    """A runtime binary under workdir/bin that does nothing (GPU_TOOLKIT_HEAD's binary by default); its path."""
    path = os.path.join(workdir, 'bin', name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write('#!/bin/sh\nexit 0\n')
    os.chmod(path, mode)
    return path


def gpu_toolkit_head(name):
    """GPU_TOOLKIT_HEAD for a play called name, its other placeholders left for str.format."""
    return GPU_TOOLKIT_HEAD.format(name=name)


def role_tasks(role, role_vars, out, reads):
    """The play's tasks: role (its short name) with role_vars; out gets {'failure': ..., **reads}.

    reads: the rest of the written dict as Jinja text, e.g. "'info': __x_info | default({})".
    """
    return TASKS.format(role=role, role_vars=json.dumps(role_vars), out=out, reads=reads)


def run_playbook(workdir, text, containerd_dir=None, extra_args=()):
    """Write text as workdir/play.yml and run it on localhost with the test's interpreter (and extra_args, e.g.
    --check); the process."""
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write(text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    if containerd_dir:
        env['PATH'] = containerd_dir + os.pathsep + env.get('PATH', '')
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play] + list(extra_args),
                          capture_output=True, text=True, env=env, timeout=600, check=False)
