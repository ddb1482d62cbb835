# -*- coding: utf-8 -*-
"""The load test inside an edit's check step: what a test that
passed but skipped plugins says, where the candidate is started, and how a
failed test is refused under validate: load (the option's own failure)
and under load_test: true (containerd_baseline's repair).

The engine runs in this process on a real file with the real containerd 1.6
for the config dump; the load test itself is set up exactly (starting a
daemon is tests/module's job).
"""

import pytest

from helpers.engine import edit_run, started
from helpers.common import fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight


@pytest.fixture
def node(tmp_path):
    etc = tmp_path / 'etc'
    etc.mkdir()
    path = etc / 'config.toml'
    path.write_text(fixture_text('v2_kubeadm.toml'))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def test_a_load_test_that_skipped_plugins_passes_and_warns_about_each(node, capsys, monkeypatch):
    calls = started(monkeypatch, _preflight.STATUS_OK, skipped=['io.containerd.snapshotter.v1.btrfs', 'tracing'])
    res = edit_run(node, capsys, load_test=True)
    assert res['changed'] and 'snapshotter = "native"' in read(node['path'])
    skipped = ('io.containerd.snapshotter.v1.btrfs', 'tracing')
    assert ['%s: the load test skipped %s' % (node['path'], s) for s in skipped] == \
        [w for w in res['warnings'] if 'the load test skipped' in w]
    assert res['load_tested']['load_test']['skipped'] == ['io.containerd.snapshotter.v1.btrfs', 'tracing']
    assert 'load test' in res['load_tested']['checked']
    # the candidate is started as config.toml itself: a config that imports itself sees the candidate
    assert len(calls) == 1 and calls[0]['as_path'] == node['path'] and calls[0]['candidate'] != node['path']


def test_a_failed_load_test_under_validate_load_is_the_options_refusal(node, capsys, monkeypatch):
    started(monkeypatch, _preflight.STATUS_FAILED)
    before = read(node['path'])
    res = edit_run(node, capsys, validate='load')
    assert res['failed'] and res['key'] == 'validate'
    assert res['msg'] == ('refusing to write %s: validate: load - containerd did not start: cri: failed to load '
                          'Nothing was written.' % node['path'])
    assert read(node['path']) == before


def test_a_failed_repair_load_test_says_containerd_would_not_load_the_config(node, capsys, monkeypatch):
    started(monkeypatch, _preflight.STATUS_FAILED)
    before = read(node['path'])
    res = edit_run(node, capsys, load_test=True)
    assert res['failed'] and 'key' not in res
    assert res['msg'] == ('refusing to write %s: with the change in place containerd would not load the config. '
                          'containerd did not start: cri: failed to load Nothing was written.' % node['path'])
    assert res['load_test'] == dict(status='failed') and res['check_errors']
    assert read(node['path']) == before
