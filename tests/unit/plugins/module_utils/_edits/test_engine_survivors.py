# -*- coding: utf-8 -*-
"""The engine's details the mutation run found untested: the order and number of the four steps, the
documented defaults, the settled read's wait, which file the read-time and built-in checks judge, the file
options of a drop-in, the backup, the load test summary, and the bound of an uninstall's steps."""

import os
import stat

import pytest
import yaml

from conftest import CONTAINERD_1, fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.doc_fragments.common import ModuleDocFragment
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    Transaction,
    _read_settled,
    transaction_result,
)

import test_engine_dropins
from test_engine_dropins import IMAGES, setting
from test_engine_load_test import edit_run, started
from test_engine_parts import context

three = test_engine_dropins.three  # the sibling's fixture, for pytest


# ------------------------------------------------------------------ the four steps
class Ctx(object):
    def __init__(self, path):
        self.path = path
        self.warnings = []

    def warn(self, msg):
        self.warnings.append(msg)


class Module(object):
    def __init__(self, check_mode=False, **params):
        self.params = dict(dict(validate='auto'), **params)
        self.check_mode = check_mode


class Steps(Transaction):
    """A write whose file another program rewrites every time, before the rename."""

    def __init__(self, module, ctx):
        super(Steps, self).__init__(module, ctx)
        self.steps = []

    def open(self):
        self.steps.append('open')

    def build(self):
        self.steps.append('build')

    def needs_write(self):
        self.steps.append('needs_write')
        return True

    def check(self):
        self.steps.append('check')

    def commit(self):
        self.steps.append('commit')
        self.moved = self.path
        return False


def test_a_file_rewritten_under_every_attempt_is_given_up_after_three_and_checked_after_the_build():
    path = '/etc/containerd/config.toml'
    ctx = Ctx(path)
    txn = Steps(Module(), ctx)
    with pytest.raises(ConfigError) as err:
        txn.run()
    assert txn.steps == ['open', 'build', 'needs_write', 'check', 'commit'] * 3
    assert str(err.value).startswith('%s was changed by another program 3 times while nodeguard was editing it'
                                     % path)
    assert ctx.warnings == ['%s changed while nodeguard was editing it; the edit was applied again on the new '
                            'content' % path] * 3


def test_check_mode_of_an_edit_stops_after_the_build_and_checks_nothing():
    txn = Steps(Module(check_mode=True), Ctx('/etc/containerd/config.toml'))
    assert txn.run() == dict(changed=False)
    assert txn.steps == ['open', 'build', 'needs_write']


def test_an_uninstall_writes_at_most_eight_files(monkeypatch):
    # each step writes one file of the tree while the owner's records are left somewhere: the loop is bounded
    runs = []

    def one_write(module, ctx, txn):
        runs.append(txn)
        return dict(changed=True, _wrote=True, file='/etc/containerd/conf.d/%d.toml' % len(runs))
    monkeypatch.setattr(_engine, '_transaction', one_write)
    monkeypatch.setattr(_engine, '_owner_records_left', lambda module, ctx: True)
    transaction_result(Module(state='absent'), Ctx('/etc/containerd/config.toml'), lambda d, lg, c: {}, False, None)
    assert len(runs) == 8


# ------------------------------------------------------------------ options and their documentation
def documented_defaults():
    """{option: default} of the common doc fragments (every editing module extends both)."""
    options = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options'])
    options.update(yaml.safe_load(ModuleDocFragment.SECRETS)['options'])
    return dict((name, doc['default']) for name, doc in options.items() if 'default' in doc)


def test_the_documented_defaults_are_the_argument_specs():
    documented = documented_defaults()
    for name, spec in COMMON_ARGUMENT_SPEC.items():
        if 'default' in spec:
            assert documented.get(name) == spec['default'], name
    assert documented['lock_timeout'] == 30


def test_the_imports_an_edit_allows_to_be_missing_are_a_set_renewed_for_each_edit():
    ctx = context()
    ctx.allow_missing_import('/etc/containerd/conf.d/99-gpu.toml')
    assert ctx.missing_imports_allowed == frozenset(['/etc/containerd/conf.d/99-gpu.toml'])
    ctx._begin_edit()
    assert ctx.missing_imports_allowed == frozenset()


# ------------------------------------------------------------------ the settled read
class Clock(object):
    def __init__(self):
        self.now = 100.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_an_empty_file_is_read_again_for_one_second(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(_engine, 'time', clock)
    path = tmp_path / 'config.toml'
    path.write_bytes(b'')
    assert _read_settled(str(path)) == b''
    assert 1.0 <= clock.now - 100.0 < 1.06


# ------------------------------------------------------------------ what the checks judge
@pytest.fixture
def main_only(tmp_path):
    etc = tmp_path / 'etc'
    etc.mkdir()
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml'))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def test_a_version_3_config_is_refused_when_it_is_read_for_containerd_16(main_only, capsys):
    assert CONTAINERD_1, 'containerd 1.6 is needed (make deps)'
    before = read(main_only['path'])
    res = setting(main_only, capsys, key='images.snapshotter', value='native', containerd_bin=CONTAINERD_1)
    assert res['failed']
    assert res['msg'].startswith('%s declares version = 3, but the node\'s containerd is 1.6, which reads config '
                                 'version 2 at most' % main_only['path'])
    assert read(main_only['path']) == before


def test_the_built_in_checks_judge_config_tomls_candidate(main_only, capsys):
    # containerd's config dump takes a default runtime that is not defined: only the built-in check refuses it
    before = read(main_only['path'])
    res = setting(main_only, capsys, key='cri.default_runtime_name', value='gpu')
    assert res['failed']
    assert res['msg'].startswith('refusing to write %s: the new config would not load.' % main_only['path'])
    assert "default_runtime_name is 'gpu' but no runtime table of that name is defined" in res['msg']
    assert read(main_only['path']) == before


@pytest.fixture
def node(tmp_path):
    """test_engine_dropins' tree (config.toml importing conf.d/10-site.toml), both files mode 0644."""
    made = test_engine_dropins.make_node(tmp_path)
    for path in (made['path'], made['dropin']):
        os.chmod(path, 0o644)
    return made


def test_the_file_options_are_config_tomls_not_the_drop_ins_the_edit_goes_to(node, capsys):
    res = setting(node, capsys, key='images.snapshotter', value='native', mode='0600')
    assert res['changed'] and res['file'] == node['dropin']
    assert "snapshotter = 'native'" in read(node['dropin'])
    assert stat.S_IMODE(os.stat(node['dropin']).st_mode) == 0o644


# ------------------------------------------------------------------ backup and the load test summary
def test_a_backup_is_the_file_as_it_was_before_the_write(main_only, capsys):
    before = read(main_only['path'])
    res = setting(main_only, capsys, key='images.snapshotter', value='native', backup=True)
    assert res['changed'] and res['file'] == main_only['path']
    assert res['backup_file'] != main_only['path'] and read(res['backup_file']) == before
    assert "snapshotter = 'native'" in read(main_only['path'])


def test_validate_load_alone_returns_no_load_test_summary(tmp_path, capsys, monkeypatch):
    # load_tested is the summary a caller asked for (containerd_baseline's repair), not validate: load's
    etc = tmp_path / 'etc'
    etc.mkdir()
    (etc / 'config.toml').write_text(fixture_text('v2_kubeadm.toml'))
    node = dict(path=str(etc / 'config.toml'), state=str(tmp_path / 'state'), tmp=str(tmp_path))
    calls = started(monkeypatch, _preflight.STATUS_OK)
    res = edit_run(node, capsys, validate='load')
    assert res['changed'] and len(calls) == 1
    assert 'load_tested' not in res


# ------------------------------------------------------------------ edit_in: config
def test_edit_in_config_refuses_a_batch_whose_unchanged_key_a_drop_in_overrides(node, capsys):
    # config.toml already says overlayfs (no byte to change there) while the drop-in decides native; the other
    # key of the batch would change config.toml: the batch is refused whole, naming the key without effect
    with open(node['dropin'], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    before = [read(node['path']), read(node['dropin'])]
    res = setting(node, capsys, settings=[dict(key='images.snapshotter', value='overlayfs'),
                                          dict(key='cri.cdi_spec_dirs', value=['/etc/cdi'])], edit_in='config')
    assert res['failed']
    assert "snapshotter = 'overlayfs' in %s has no effect" % node['path'] in res['msg']
    assert [read(node['path']), read(node['dropin'])] == before


def test_edit_in_config_writes_config_toml_when_two_drop_ins_already_agree(three, capsys):  # noqa: F811
    # each key is decided by its own drop-in, which says what the batch wants: in effect, so no refusal
    # (it was refused as "has no effect: None"); as with one drop-in that agrees, config.toml is written
    with open(three['dropins'][0], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    with open(three['dropins'][1], 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n")
    dropins = [read(p) for p in three['dropins']]
    res = setting(three, capsys, settings=[dict(key='images.snapshotter', value='native'),
                                           dict(key='cri.enable_cdi', value=False)], edit_in='config')
    assert res.get('changed'), res.get('msg')
    assert "snapshotter = 'native'" in read(three['path']) and 'enable_cdi = false' in read(three['path'])
    assert [e['in_effect'] for e in res['effects']] == [True, True]
    assert [read(p) for p in three['dropins']] == dropins
