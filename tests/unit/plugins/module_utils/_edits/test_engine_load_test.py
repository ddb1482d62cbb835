# -*- coding: utf-8 -*-
"""The load test inside an edit's check step: what a test that
passed but skipped plugins says, where the candidate is started, and how a
failed test is refused under validate: load (the option's own failure)
and under load_test: true (containerd_baseline's repair).

The engine runs in this process on a real file with the real containerd 1.6
for the config dump; the load test itself is set up exactly (starting a
daemon is tests/module's job).
"""

import json
from types import SimpleNamespace

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from conftest import CONTAINERD_1, fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight

SNAPSHOTTER = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter')


@pytest.fixture
def node(tmp_path):
    etc = tmp_path / 'etc'
    etc.mkdir()
    path = etc / 'config.toml'
    path.write_text(fixture_text('v2_kubeadm.toml'))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def started(monkeypatch, status, skipped=()):
    """_preflight.load_test answering status; the calls are kept."""
    calls = []

    def load_test(binary, candidate, **kw):
        calls.append(dict(kw, binary=binary, candidate=candidate))
        return SimpleNamespace(status=status, ok=status == _preflight.STATUS_OK, seconds=0.5, required=['cri'],
                               errors=[] if status == _preflight.STATUS_OK else ['cri: failed to load'],
                               skipped=list(skipped), containerd_version='1.6.20',
                               message=lambda: 'containerd did not start: cri: failed to load',
                               as_dict=lambda: dict(status=status))
    monkeypatch.setattr(_preflight, 'load_test', load_test)
    return calls


def edit_run(node, capsys, load_test=None, **args):
    """run_transaction setting the snapshotter to native, in this process."""
    params = dict(path=node['path'], state_dir=node['state'], owner='coco', containerd_bin=CONTAINERD_1,
                  _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])
    params.update(args)

    def edit(doc, ledger, ctx):
        doc.toml.set_value(SNAPSHOTTER, 'native')
        return {}

    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):  # each run reports only its own
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()
    with patch_module_args(params):
        module = AnsibleModule(argument_spec=dict(_engine.COMMON_ARGUMENT_SPEC, state=dict(type='str')),
                               supports_check_mode=True)
        with pytest.raises(SystemExit):
            _engine.run_transaction(module, edit, load_test=load_test)
    result = json.loads(capsys.readouterr().out)
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return result


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
