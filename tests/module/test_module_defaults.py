# -*- coding: utf-8 -*-
"""The action group: module_defaults for group/nodeguard.containerd.containerd.

Run through ansible-playbook (local connection), as users write it: the
options all four modules share are set once for the group.
"""

import os
import re
import subprocess
import sys

import tomlkit

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_17, REPO, assert_containerd_accepts, read

PLAY = '''
- name: Group defaults
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/nodeguard.containerd.containerd:
      path: {path}
      containerd_bin: {ctd17}
      state_dir: {state}
      lock_timeout: 10
  tasks:
    - name: Baseline
      nodeguard.containerd.containerd_baseline:
        state: snapshot
        store: {store}
    - name: Runtime
      nodeguard.containerd.containerd_runtime:
        name: nvidia
        owner: gpu
        options:
          BinaryName: /usr/bin/nvidia-container-runtime
    - name: Setting
      nodeguard.containerd.containerd_setting:
        key: cri.enable_cdi
        value: true
        owner: gpu
    - name: Imports
      nodeguard.containerd.containerd_imports:
        imports: []
        prune_missing: true
'''


def run_play(workdir, text):
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write(text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    recap = re.search(r'localhost\s*:\s*ok=(\d+)\s+changed=(\d+)', proc.stdout)
    return int(recap.group(2))


def test_group_defaults_reach_every_module(workdir, config):
    path = config('v2_kubeadm.toml')
    assert CONTAINERD_17, 'run make deps (containerd 1.7: enable_cdi is not known to 1.6)'
    text = PLAY.format(path=path, state=os.path.join(workdir, 'state'), store=os.path.join(workdir, 'baselines'),
                       ctd17=CONTAINERD_17)
    assert run_play(workdir, text) == 3  # baseline, runtime, setting; the imports list was clean
    data = tomlkit.parse(read(path)).unwrap()['plugins']['io.containerd.grpc.v1.cri']
    assert data['containerd']['runtimes']['nvidia']['options']['BinaryName'] == '/usr/bin/nvidia-container-runtime'
    assert data['enable_cdi'] is True
    assert os.listdir(os.path.join(workdir, 'state', 'ledger'))
    assert_containerd_accepts(path)
    assert run_play(workdir, text) == 0  # idempotent through ansible-playbook
