# -*- coding: utf-8 -*-
"""What an edit may ask the engine's Context about the node:
which containerd binary (PATH first, then the usual install folders) and
which version (the binary's; the containerd_version option only stands in
where there is none, and a contradiction is refused).
"""

from types import SimpleNamespace

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError


def stub(folder, version):
    """An executable containerd in folder answering --version with version."""
    folder.mkdir(exist_ok=True)
    path = folder / 'containerd'
    path.write_text('#!/bin/sh\necho "containerd github.com/containerd/containerd v%s abc"\n' % version)
    path.chmod(0o755)
    return str(path)


def context(on_path=None, version_answer=None, **params):
    calls = []

    def run_command(cmd, environ_update=None):
        calls.append(cmd)
        return 0, 'containerd github.com/containerd/containerd v%s abc\n' % version_answer, ''
    module = SimpleNamespace(params=dict(dict(owner='gpu', containerd_bin=None, containerd_version=None), **params),
                             get_bin_path=lambda name: on_path, run_command=run_command)
    return _engine.Context(module, '/etc/containerd/config.toml'), calls


def test_the_containerd_on_path_comes_before_the_usual_folders(tmp_path, monkeypatch):
    usual = stub(tmp_path / 'opt-bin', '1.6.20')
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [str(tmp_path / 'none'), str(tmp_path / 'opt-bin')])
    on_path = stub(tmp_path / 'path-bin', '1.7.24')
    assert context(on_path=on_path)[0].containerd_bin == on_path
    # none on PATH: the first usual folder that has one
    assert context(on_path=None)[0].containerd_bin == usual


def test_no_containerd_anywhere_is_none(tmp_path, monkeypatch):
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [str(tmp_path)])
    assert context(on_path=None)[0].containerd_bin is None


def test_the_version_is_the_binarys_and_an_agreeing_option_is_fine(tmp_path):
    binary = stub(tmp_path / 'bin', '2.1.9')
    ctx, calls = context(version_answer='2.1.9', containerd_bin=binary, containerd_version='2.1')
    assert ctx.containerd_version == (2, 1)
    assert ctx.containerd_version == (2, 1) and calls == [[binary, '--version']]  # asked once


def test_the_version_option_stands_in_where_there_is_no_binary(tmp_path, monkeypatch):
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [str(tmp_path)])
    ctx, calls = context(containerd_version='1.7')
    assert ctx.containerd_version == (1, 7) and calls == []
    assert context()[0].containerd_version is None


def test_a_version_option_that_contradicts_the_binary_is_refused(tmp_path):
    binary = stub(tmp_path / 'bin', '1.6.20')
    ctx, _calls = context(version_answer='1.6.20', containerd_bin=binary, containerd_version='2.1')
    with pytest.raises(ConfigError) as err:
        ctx.containerd_version
    assert str(err.value).startswith("containerd_version is 2.1, but the node's containerd (%s) is 1.6. Nothing was "
                                     "written." % binary)
    assert err.value.given_details() == dict(key='containerd_version')


def test_an_imports_entry_the_edit_allows_to_be_missing_passes_the_built_in_check(tmp_path, monkeypatch):
    # containerd_imports pruning a missing entry, or adding one with require_exists: false
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [str(tmp_path)])
    gone, other = str(tmp_path / 'gone.toml'), str(tmp_path / 'other.toml')
    ctx, _calls = context(containerd_version='1.6')
    data = {'version': 2, 'imports': [gone, other]}
    ctx.allow_missing_import(gone)
    checked = _engine.check_builtin(ctx, _engine.Checked(), str(tmp_path / 'config.toml'), data)
    assert checked.stage == 'built-in' and len(checked.problems) == 1 and other in checked.problems[0]
    ctx.allow_missing_import(other)
    assert _engine.check_builtin(ctx, _engine.Checked(), str(tmp_path / 'config.toml'), data).problems == []


def test_the_built_in_check_refuses_a_replaced_plugin_table_unless_told_it_is_intended(tmp_path, monkeypatch):
    # containerd_baseline's check and restore call it without allow_plugin_override: 1.x's whole-table
    # replacement by a drop-in is an error there; containerd_imports passes allow_plugin_override: true
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [str(tmp_path)])
    dropin = tmp_path / '10-gc.toml'
    dropin.write_text('version = 2\n[plugins."io.containerd.gc.v1.scheduler"]\n  deletion_threshold = 1\n')
    data = {'version': 2, 'imports': [str(dropin)],
            'plugins': {'io.containerd.gc.v1.scheduler': {'pause_threshold': 1}}}
    ctx, _calls = context(containerd_version='1.6')
    (problem,) = _engine.check_builtin(ctx, _engine.Checked(), str(tmp_path / 'config.toml'), data).problems
    assert 'replaces the whole table' in problem and 'pause_threshold would be lost' in problem
    assert _engine.check_builtin(ctx, _engine.Checked(), str(tmp_path / 'config.toml'), data,
                                 allow_plugin_override=True).problems == []
