# -*- coding: utf-8 -*-
"""The coco role through ansible-playbook (local connection), as its role tests run it: run_coco() runs the role
on a config and returns what it worked out (its facts) and its failure; tree() says what a run wrote."""

import hashlib
import json
import os

from conftest import read
from role_play import role_tasks, run_playbook

# the play's head; role_play.role_tasks() adds the role and what the test reads
PLAY = '''
- name: coco, local
  hosts: localhost
  connection: local
  gather_facts: false
'''
READS = ("'facts': {"
         "'placement': __coco_placement | default(none), 'ctd_major': __coco_ctd_major | default(none), "
         "'config_version': __coco_config_version | default(none), "
         "'images_table': __coco_images_table | default(none), 'runtimes_table': __coco_runtimes_table | default(none), "
         "'runtimes': __coco_runtimes | default(none), 'handlers': coco_handlers | default(none), "
         "'entries': __coco_runtime_entries | default(none), 'required': __coco_payload_required | default(none), "
         "'dropins': __coco_dropins_wanted | default(none), 'anything': __coco_anything_on_node | default(none), "
         "'complete': __coco_complete_on_node | default(none), 'kube': __coco_kube | default(none), "
         "'start': __coco_node_start | default(none), 'config': __coco_info.config | default(none)}")


def run_coco(workdir, path, role_vars, containerd_dir=None):
    out = os.path.join(workdir, 'out.json')
    base = dict(coco_state='absent', coco_config_path=path, coco_state_dir=os.path.join(workdir, 'state'),
                coco_dropin_dir=os.path.join(workdir, 'etc', 'config.toml.d'),
                coco_install_dir=os.path.join(workdir, 'opt', 'kata'),
                coco_baseline_store=os.path.join(workdir, 'baselines'), coco_flush=False, coco_kubernetes='false')
    base.update(role_vars)
    proc = run_playbook(workdir, PLAY + role_tasks('coco', base, out, READS), containerd_dir)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    changed = [t.split(']', 1)[0] for t in proc.stdout.split('\nTASK [')[1:] if '\nchanged: ' in t]
    assert changed == ['What the test reads'], changed
    return json.loads(read(out))


def run_present(workdir, path, containerd_dir=None, extra_args=(), reads="'none': none", **role):
    """coco_state present on a node under workdir (its own folders; no flush, no Kubernetes, no node check; the
    class kata-qemu unless role says otherwise): (what the test reads, with 'failure'; the play's output)."""
    role_vars = dict(coco_state='present', coco_config_path=path, coco_state_dir=os.path.join(workdir, 'state'),
                     coco_dropin_dir=os.path.join(workdir, 'etc', 'config.toml.d'),
                     coco_install_dir=os.path.join(workdir, 'opt', 'kata'),
                     coco_baseline_store=os.path.join(workdir, 'baselines'), coco_flush=False,
                     coco_kubernetes='false', coco_check_node=False, coco_runtime_classes=['kata-qemu'])
    role_vars.update(role)
    out = os.path.join(workdir, 'out.json')
    proc = run_playbook(workdir, PLAY + role_tasks('coco', role_vars, out, reads), containerd_dir, extra_args)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    return json.loads(read(out)), proc.stdout


def tree(workdir):
    """Every file under workdir but the play and its output, with its hash: what a run wrote."""
    out = {}
    for folder, _dirs, files in os.walk(workdir):
        for name in files:
            full = os.path.join(folder, name)
            if name not in ('play.yml', 'out.json'):
                out[full] = hashlib.sha256(open(full, 'rb').read()).hexdigest()
    return out
