# -*- coding: utf-8 -*-
"""Every playbook, run as AWX runs a job template (ansible-runner: private data
dir, inventory, extra vars only, no ansible.cfg of the checkout), refuses to
run without `target`: it fails naming the variable before any
host is contacted, instead of falling back to every host in the inventory.
"""

import glob
import os
import shutil
import sys

import ansible_runner
import pytest

from conftest import COLLECTIONS_ROOT, REPO

PLAYBOOKS = sorted(os.path.basename(p) for p in glob.glob(os.path.join(REPO, 'playbooks', '*.yml')))


@pytest.fixture(autouse=True)
def venv_on_path(monkeypatch):
    # the runner finds ansible-playbook on PATH, as in an execution environment
    monkeypatch.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))


def private_data_dir(tmp_path):
    pdd = tmp_path / 'job'
    shutil.copytree(os.path.join(REPO, 'playbooks'), str(pdd / 'project'))
    (pdd / 'inventory').mkdir()
    # TEST-NET-1: a host that would show as UNREACHABLE if the play ever got to it
    (pdd / 'inventory' / 'hosts').write_text('[k8s_nodes]\nnode-1 ansible_host=192.0.2.1 ansible_connection=ssh\n')
    (pdd / 'env').mkdir()
    return pdd


@pytest.mark.parametrize('playbook', PLAYBOOKS)
def test_a_job_without_target_fails_naming_it_and_reaches_no_host(tmp_path, playbook):
    assert len(PLAYBOOKS) >= 7
    pdd = private_data_dir(tmp_path)
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook=playbook, extravars={'coco_state': 'present'},
                                envvars={'ANSIBLE_COLLECTIONS_PATH': COLLECTIONS_ROOT, 'ANSIBLE_NOCOLOR': '1'},
                                quiet=True, timeout=300)
    out = runner.stdout.read()
    assert runner.status == 'failed' and runner.rc != 0, (runner.status, runner.rc, out[-3000:])
    assert "the extra var 'target' is not set" in out, out[-3000:]
    hosts_seen = [e for e in runner.events if str(e.get('event', '')).startswith('runner_on_')]
    assert hosts_seen == [], hosts_seen[:3]
    assert 'UNREACHABLE' not in out and '192.0.2.1' not in out


def test_with_target_the_same_job_reaches_that_group(tmp_path):
    """The control: with target set, the play does go to the group (and finds the TEST-NET host unreachable)."""
    pdd = private_data_dir(tmp_path)
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook='verify.yml', extravars={'target': 'k8s_nodes'},
                                envvars={'ANSIBLE_COLLECTIONS_PATH': COLLECTIONS_ROOT, 'ANSIBLE_NOCOLOR': '1',
                                         'ANSIBLE_TIMEOUT': '2'},
                                quiet=True, timeout=300)
    out = runner.stdout.read()
    assert runner.status == 'failed', (runner.status, out[-3000:])
    assert [e for e in runner.events if e.get('event') == 'runner_on_unreachable'], out[-3000:]
    assert "target' is not set" not in out
