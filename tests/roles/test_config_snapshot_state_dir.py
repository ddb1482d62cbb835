# -*- coding: utf-8 -*-
"""config_snapshot with a custom state_dir: the snapshot stores
the ledger of that folder and a restore puts that ledger back, so the next run
neither warns that it "rolled the ledger back" nor forgets what an owner added.

Through ansible-playbook (local connection) with the role itself, on a real
config validated by containerd 1.6; no systemd here, so the restore's restart
is off.
"""

import json
import os
import subprocess
import sys

from conftest import COLLECTIONS_ROOT, REPO, assert_containerd_accepts, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

PLAY = '''
- name: config_snapshot with a custom state_dir
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    nodeguard_state_dir: {state}
    config_snapshot_path: {path}
    config_snapshot_store: {store}
    config_snapshot_restart: false
    config_snapshot_backup: false
  # path only: state_dir is given per task, as the install roles do
  # (gpu_toolkit_state_dir, coco_state_dir), so the role has to know it too
  module_defaults:
    group/nodeguard.containerd.containerd:
      path: {path}
  tasks:
    - name: Owner gpu adds nvidia before the baseline
      nodeguard.containerd.containerd_runtime:
        name: nvidia
        owner: gpu
        state_dir: {state}
        options: {{BinaryName: /usr/bin/nvidia-container-runtime}}
    - name: Baseline (role; the ledger under the custom state_dir goes with it)
      ansible.builtin.include_role:
        name: nodeguard.containerd.config_snapshot
    - name: Owner coco adds kata after the baseline
      nodeguard.containerd.containerd_runtime:
        name: kata
        owner: coco
        state_dir: {state}
        runtime_type: io.containerd.kata.v2
        inherit: none
    - name: Restore (role)
      ansible.builtin.include_role:
        name: nodeguard.containerd.config_snapshot
        tasks_from: restore
    - name: Ledger right after the restore
      ansible.builtin.slurp:
        src: "{{{{ ledger_file }}}}"
      register: after_restore
      vars:
        ledger_file: "{{{{ lookup('ansible.builtin.fileglob', '{state}/ledger/*.json') }}}}"
    - name: The next run, for coco again
      nodeguard.containerd.containerd_runtime:
        name: kata
        owner: coco
        state_dir: {state}
        runtime_type: io.containerd.kata.v2
        inherit: none
      register: coco_again
    - name: And gpu's uninstall, which must still know what gpu added
      nodeguard.containerd.containerd_runtime:
        name: nvidia
        owner: gpu
        state_dir: {state}
        state: absent
      register: gpu_absent
    - name: What the test reads
      ansible.builtin.copy:
        dest: {out}
        mode: "0644"
        content: "{{{{ {{'restore': config_snapshot_restore_result, 'ledger': after_restore.content | b64decode | from_json,
          'coco_again': coco_again, 'gpu_absent': gpu_absent}} | to_json }}}}"
'''


def run_play(workdir, template, path, state):
    """ansible-playbook (local connection) on the play template; the play's result file, parsed."""
    out = os.path.join(workdir, 'out.json')
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write(template.format(path=path, state=state, store=os.path.join(workdir, 'baselines'), out=out))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play],
                          capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return proc, json.loads(read(out))


def test_restore_puts_back_the_ledger_of_the_custom_state_dir(workdir, config):
    path = config('v2_kubeadm.toml')
    original = read(path)
    state = os.path.join(workdir, 'custom-state')
    proc, res = run_play(workdir, PLAY, path, state)
    assert res['restore']['changed']
    owners = sorted(set(r['owner'] for r in res['ledger']['records']))
    assert owners == ['gpu'], 'the restored ledger is not the one of the snapshot: %s' % owners
    # the next run starts from a ledger that agrees with the config: no rollback
    warnings = [w if isinstance(w, str) else json.dumps(w) for r in ('coco_again', 'gpu_absent')
                for w in res[r].get('warnings', [])]
    assert not [w for w in warnings if 'rolled' in w or 'ledger' in w], warnings
    assert res['coco_again']['changed'] and res['coco_again'].get('created')
    assert res['gpu_absent']['changed'] and res['gpu_absent'].get('removed')
    assert 'nvidia' not in read(path) and 'kata' in read(path)
    assert_containerd_accepts(path)
    # nothing went to the default folder
    assert not os.path.exists(ledger_path_for('/var/lib/nodeguard', path))
    assert original != read(path)


RESTORE_WITH_RESTART = '''
- name: config_snapshot restore hands its state_dir to the restart contract
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    nodeguard_state_dir: {state}
    config_snapshot_path: {path}
    config_snapshot_store: {store}
    config_snapshot_backup: false
    # no systemd here: the restart of this unit fails and the wait gives up at once
    config_snapshot_service: nodeguard-test-no-such-unit
    node_readiness_restart_retries: 1
  tasks:
    - name: Baseline
      ansible.builtin.include_role:
        name: nodeguard.containerd.config_snapshot
    - name: A change the restore takes back
      nodeguard.containerd.containerd_setting:
        path: {path}
        state_dir: {state}
        key: images.disable_snapshot_annotations
        value: false
        owner: test
    - name: Restore with its restart (the contract is included)
      ansible.builtin.include_role:
        name: nodeguard.containerd.config_snapshot
        tasks_from: restore
    - name: What the test reads
      ansible.builtin.copy:
        dest: {out}
        mode: "0644"
        content: "{{{{ {{'restore': config_snapshot_restore_result, 'restart': nodeguard_restart,
          'state_dir': config_snapshot_resolved_state_dir}} | to_json }}}}"
'''


def test_restore_restarts_through_the_contract_with_its_state_dir(workdir, config):
    """The restore includes the restart contract with nodeguard_state_dir set
    from config_snapshot_state_dir, whose default is nodeguard_state_dir: once
    a recursive template that failed every restore (CI, readiness scenario)."""
    path = config('v2_kubeadm.toml')
    original = read(path)
    state = os.path.join(workdir, 'play-state')
    proc, res = run_play(workdir, RESTORE_WITH_RESTART, path, state)
    assert 'Recursive loop' not in proc.stdout + proc.stderr
    assert res['restore']['changed']
    assert read(path) == original
    assert res['state_dir'] == state
    # the contract ran: forced, tried the (missing) unit, and says the CRI is not back
    assert res['restart']['needed'] and res['restart']['restarted'], res['restart']
    assert not res['restart']['cri_ok'], res['restart']
