# -*- coding: utf-8 -*-
"""containerd_preflight, run as Ansible runs it, against the real containerd 1.6, 1.7 and 2.1."""

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from helpers.common import (
    COLLECTIONS_ROOT,
    CONTAINERD_1,
    CONTAINERD_17,
    CONTAINERD_2,
    FIXTURES,
    REPO,
    silent_containerd,
)
from helpers.modules import PlainModuleRunner

BINARIES = {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}

GOOD = {
    2: 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
       '  runtime_type = "io.containerd.runc.v2"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
       '  SystemdCgroup = true\n',
    3: "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
       "  runtime_type = 'io.containerd.runc.v2'\n",
}

# nvidia-ctk v1.17.8 `runtime configure` on Debian 12's shipped config, as the toolkit wrote it
with open(os.path.join(FIXTURES, 'nvidia-ctk',
                       'ctk-v1.17.8-nvidia-ctk-debian-shipped-config-default.configured.config.toml')) as _f:
    CTK = _f.read()


@pytest.fixture
def run_module(workdir):
    """conftest's runner without the state_dir it adds for the editing modules (containerd_preflight has none)."""
    return PlainModuleRunner(workdir)


def binary(version):
    if not BINARIES[version]:
        pytest.fail('containerd %s is not on this machine: run `make deps`' % version)
    return BINARIES[version]


def digest(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns


@pytest.mark.parametrize('version,layout', [('1.6', 2), ('1.7', 2), ('2.1', 3)])
@pytest.mark.parametrize('check', [False, True])
def test_good_config_passes_in_check_mode_too(run_module, config, version, layout, check):
    path = config(GOOD[layout])
    before = digest(path)
    r = run_module('containerd_preflight', check=check, path=path, containerd_bin=binary(version))
    assert r['changed'] is False
    assert r['status'] == 'ok'
    assert r['containerd_version'].startswith(version + '.')
    assert set(r['required'].values()) == {'ok'}
    assert len(r['required']) == (3 if layout == 3 else 1)
    assert r['errors'] == [] and r['method'] == 'ctr'
    assert digest(path) == before
    assert not os.path.exists(os.path.join(os.path.dirname(path), '.config.toml.nodeguard.lock'))


def test_toolkit_config_fails_naming_file_plugin_and_containerd_error(run_module, config):
    path = config(CTK)
    dump = subprocess.run([binary('1.6'), '--config', path, 'config', 'dump'], capture_output=True, timeout=60, check=False)
    assert dump.returncode == 0  # config dump says yes
    r = run_module('containerd_preflight', expect_fail=True, path=path, containerd_bin=binary('1.6'))
    assert r['changed'] is False
    assert r['status'] == 'failed'
    assert path in r['msg'] and 'io.containerd.grpc.v1.cri' in r['msg']
    assert 'no corresponding runtime configured in `containerd.runtimes`' in r['msg']
    assert r['required'] == {'io.containerd.grpc.v1.cri': 'error'}


def test_type_error_fails_with_containerd_words(run_module, config):
    path = config('version = 2\n[plugins."io.containerd.gc.v1.scheduler"]\n  pause_threshold = 1\n')
    r = run_module('containerd_preflight', expect_fail=True, check=True, path=path, containerd_bin=binary('1.6'))
    assert r['status'] == 'failed'
    assert "Can't convert 1(int64) to float64" in r['msg'] and path in r['msg']


def test_missing_import_on_21(run_module, config, workdir):
    missing = os.path.join(workdir, 'absent.toml')
    path = config("version = 3\nimports = ['%s']\n" % missing)
    r = run_module('containerd_preflight', expect_fail=True, path=path, containerd_bin=binary('2.1'))
    assert r['status'] == 'failed'
    assert 'open %s: no such file or directory' % missing in r['msg']


def test_required_plugins_option(run_module, config):
    path = config(GOOD[2])
    r = run_module('containerd_preflight', expect_fail=True, path=path, containerd_bin=binary('1.7'),
                   required_plugins=['io.containerd.grpc.v1.cri', 'io.containerd.snapshotter.v1.zfs'])
    assert r['status'] == 'failed'
    assert r['required'] == {'io.containerd.grpc.v1.cri': 'ok', 'io.containerd.snapshotter.v1.zfs': 'missing'}
    assert 'io.containerd.snapshotter.v1.zfs' in r['msg']
    r = run_module('containerd_preflight', path=path, containerd_bin=binary('1.7'),
                   required_plugins=['io.containerd.grpc.v1.cri', 'io.containerd.internal.v1.opt'])
    assert r['status'] == 'ok' and r['required']['io.containerd.internal.v1.opt'] == 'ok'


def test_devmapper_is_reported_skipped(run_module, config, workdir):
    root = os.path.join(workdir, 'dm-root')
    path = config("version = 3\n[plugins.'io.containerd.cri.v1.images']\n  snapshotter = 'devmapper'\n"
                  "[plugins.'io.containerd.snapshotter.v1.devmapper']\n  pool_name = 'ng-pool'\n"
                  "  root_path = '%s'\n" % root)
    r = run_module('containerd_preflight', path=path, containerd_bin=binary('2.1'))
    assert r['status'] == 'ok'
    assert any('names the devmapper snapshotter' in s for s in r['not_checked'])
    assert not os.path.exists(root)


def test_cannot_run_is_a_failure_not_a_pass(run_module, config, workdir):
    path = config(GOOD[2])
    r = run_module('containerd_preflight', expect_fail=True, path=path,
                   containerd_bin=os.path.join(workdir, 'no-containerd'))
    assert r['status'] == 'cannot_run' and r['changed'] is False
    assert 'cannot run' in r['msg'] and 'no-containerd' in r['msg']


def test_timeout(run_module, config, workdir):
    path = config(GOOD[3])
    r = run_module('containerd_preflight', expect_fail=True, path=path,
                   containerd_bin=silent_containerd(workdir, binary('2.1')), timeout=1)
    assert r['status'] == 'timeout', r['msg']
    assert 'did not answer within 1.0s' in r['msg']


PLAY = '''
- name: Preflight as a playbook uses it
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Broken config ({bad})
      nodeguard.containerd.containerd_preflight:
        path: {bad}
        containerd_bin: {ctd}
      register: broken
      failed_when: broken.status not in ['ok', 'cannot_run']
      ignore_errors: true
    - name: Test that cannot run
      nodeguard.containerd.containerd_preflight:
        path: {good}
        containerd_bin: {nobin}
      register: cannot
      failed_when: cannot.status not in ['ok', 'cannot_run']
    - name: Good config with a device snapshotter
      nodeguard.containerd.containerd_preflight:
        path: {dm}
        containerd_bin: {ctd}
      register: good
      check_mode: true
    - name: Report
      ansible.builtin.debug:
        msg: "RESULT {{{{ [broken is failed, broken is skipped, broken.status, cannot is failed, cannot.status,
              good is failed, good is skipped, good.status, good.changed, good.not_checked | length > 0] | to_json }}}}"
'''


def test_through_ansible_playbook_failed_when_and_check_mode(config, workdir):
    """failed_when on `status` works (a top-level `skipped` in the result
    would make Ansible call the task skipped and ignore failed_when)."""
    bad = config(CTK, 'bad.toml')
    good = config(GOOD[2], 'good.toml')
    dm = config('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "devmapper"\n',
                'dm.toml')
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write(PLAY.format(bad=bad, good=good, dm=dm, ctd=binary('1.6'), nobin=os.path.join(workdir, 'nope')))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    found = re.search(r'RESULT (\[.*?\])', proc.stdout)
    assert found, proc.stdout[-3000:]
    assert json.loads(found.group(1).replace('\\"', '"')) == [
        True, False, 'failed', False, 'cannot_run', False, False, 'ok', False, True]
