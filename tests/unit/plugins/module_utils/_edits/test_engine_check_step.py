# -*- coding: utf-8 -*-
"""The check step where a restore needs containerd to load the candidate
(dump_must_load): the refusal names the containerd version, the file as the
node knows it (not the temporary mirror) and the last lines containerd said.

A real containerd 1.6 refuses such trees only for reasons the module tests
cover one by one; here each answer is set up exactly (stdout only, stderr
only, silence, five lines, an unknown version).
"""

from types import SimpleNamespace

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import Checked, check_with_containerd
from helpers.common import CONTAINERD_1, read
from helpers.engine import setting
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight

MIRROR = '/tmp/nodeguard-mirror-x1/etc/containerd'


def real(text):
    """The mirror's paths as the node's (what a restore passes)."""
    return text.replace(MIRROR, '/etc/containerd')


def failing_dump(tmp_path, out, err, version=(1, 6)):
    """A context whose validate command passes and whose ``config dump`` fails with out/err."""
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        return (1, out, err) if cmd[-2:] == ['config', 'dump'] else (0, '', '')

    binary = tmp_path / 'containerd'
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    return SimpleNamespace(containerd_bin=str(binary), run_command=run_command, containerd_version=version), calls


def refusal(ctx, **kw):
    checked = check_with_containerd(ctx, Checked(), MIRROR + '/config.toml', '/bin/true %s', dump_must_load=True,
                                    real=real, **kw)
    assert checked.stage == 'validate' and len(checked.problems) == 1
    assert checked.checked == ['validate command']  # the user's command ran and passed first
    return checked.problems[0]


def test_a_tree_containerd_cannot_load_names_the_node_path_and_its_last_three_lines(tmp_path):
    err = ''.join('line %d in %s/conf.d/x.toml\n' % (i, MIRROR) for i in range(1, 6))
    ctx, calls = failing_dump(tmp_path, 'ignored stdout\n', err)
    assert refusal(ctx) == (
        'containerd 1.6 cannot load /etc/containerd/config.toml: "containerd config dump" failed (rc=1): '
        'line 3 in /etc/containerd/conf.d/x.toml | line 4 in /etc/containerd/conf.d/x.toml | '
        'line 5 in /etc/containerd/conf.d/x.toml')
    assert calls[-1] == [ctx.containerd_bin, '--config', MIRROR + '/config.toml', 'config', 'dump']


def test_the_name_shown_replaces_the_candidates(tmp_path):
    ctx, _calls = failing_dump(tmp_path, '', 'bad\n', version=(2, 1))
    assert refusal(ctx, shown='/etc/containerd/config.toml (candidate)') == (
        'containerd 2.1 cannot load /etc/containerd/config.toml (candidate): "containerd config dump" failed '
        '(rc=1): bad')


@pytest.mark.parametrize('out, err, said', [
    ('failed to load plugin\n\n', '', 'failed to load plugin'),  # containerd wrote to stdout only
    ('', '', 'no output'),
])
def test_a_refusal_without_stderr_says_what_stdout_said_or_that_nothing_was_said(tmp_path, out, err, said):
    ctx, _calls = failing_dump(tmp_path, out, err, version=None)
    assert refusal(ctx) == ('containerd unknown cannot load /etc/containerd/config.toml: "containerd config dump" '
                            'failed (rc=1): %s' % said)


# ------------------------------------------------------------------ which config dump confirms the change
def answering(tmp_path, answers):
    """A context whose commands answer by their first word or 'config dump'; the calls are kept."""
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        return answers['dump'] if cmd[-2:] == ['config', 'dump'] else answers['command']

    binary = tmp_path / 'containerd'
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    return SimpleNamespace(containerd_bin=str(binary), run_command=run_command, containerd_version=(1, 6)), calls


def test_validate_auto_asks_containerd_once_and_its_dump_confirms_the_change(tmp_path):
    ctx, calls = answering(tmp_path, dict(dump=(0, 'version = 2\nroot = "/r"\n', '')))
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), 'auto')
    assert checked.problems == [] and checked.how == 'config dump'
    assert checked.dump == {'version': 2, 'root': '/r'} and checked.checked == ['config dump']
    assert calls == [[ctx.containerd_bin, '--config', str(tmp_path / 'candidate'), 'config', 'dump']]


def test_a_validate_commands_output_is_not_taken_for_containerds_dump(tmp_path):
    ctx, calls = answering(tmp_path, dict(command=(0, 'all good\n', ''), dump=(0, 'version = 2\nroot = "/r"\n', '')))
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), '/usr/local/bin/check %s')
    assert checked.problems == [] and checked.how == 'config dump'
    assert checked.dump == {'version': 2, 'root': '/r'}
    assert checked.checked == ['validate command', 'config dump'] and len(calls) == 2


def test_a_dump_that_is_not_toml_confirms_nothing_and_says_so(tmp_path):
    ctx, _calls = answering(tmp_path, dict(dump=(0, 'level=warning msg="deprecated"\n[plugins\n', '')))
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), 'auto')
    assert checked.problems == [] and checked.dump is None
    assert checked.how.startswith('config dump output could not be read (')
    assert checked.notes[0].startswith('the config dump could not be read (')


# ------------------------------------------------------------------ when containerd is started on the candidate
@pytest.fixture
def load_tests(monkeypatch):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
    started = []

    def load_test(binary, candidate, **kw):
        started.append(candidate)
        return SimpleNamespace(status='ok', ok=True, seconds=0.1, required=[], errors=[], skipped=None,
                               containerd_version=(1, 6), message=lambda: 'ok')
    monkeypatch.setattr(_preflight, 'load_test', load_test)
    return started


@pytest.mark.parametrize('validate, load_test, starts, notes', [
    ('auto', None, False, []),  # an edit: only validate: load starts containerd
    ('auto', False, False, ['load_test: false: containerd was not started on the tree']),
    ('none', False, False, []),  # validate: none says it already
    ('none', True, False, []),
    ('auto', True, True, []),
    ('load', None, True, []),
])
def test_containerd_is_started_only_when_asked(tmp_path, load_tests, validate, load_test, starts, notes):
    ctx, _calls = answering(tmp_path, dict(dump=(0, 'version = 2\n', '')))
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), validate, load_test=load_test)
    assert bool(load_tests) is starts and checked.notes == notes and checked.problems == []
    assert ('load test' in checked.checked) is starts
    if starts:
        assert checked.load['skipped'] == []


# ------------------------------------------------------------------ the check step with containerd
def checking(tmp_path, answers, version=(1, 6)):
    """A context whose commands answer from answers: {command word: (rc, out, err)}; the calls are kept."""
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        for word, answer in answers.items():
            if word in cmd:
                return answer
        return 0, '', ''

    binary = tmp_path / 'containerd'
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    ctx = SimpleNamespace(containerd_bin=str(binary), run_command=run_command, containerd_version=version)
    return ctx, calls


def test_a_config_dump_killed_by_a_signal_confirms_nothing_and_says_so(tmp_path):
    ctx, calls = checking(tmp_path, {'dump': (-9, '', 'x' * 400 + 'killed')})
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), '/bin/true %s')
    assert checked.problems == [] and checked.dump is None
    assert checked.how == 'config dump failed (rc=-9): ' + ('x' * 400 + 'killed')[-300:]
    assert calls[0] == ['/bin/true', str(tmp_path / 'candidate')] and calls[1][-2:] == ['config', 'dump']


def load_result(status):
    return SimpleNamespace(status=status, ok=status == _preflight.STATUS_OK, seconds=0.1, required=[], errors=[],
                           skipped=[], containerd_version=(1, 6), message=lambda: 'no unshare here',
                           as_dict=lambda: dict(status=status))


def test_a_load_test_that_cannot_run_is_a_note_unless_it_was_required(tmp_path, monkeypatch):
    monkeypatch.setattr(_preflight, 'load_test', lambda *a, **kw: load_result(_preflight.STATUS_CANNOT_RUN))
    ctx, _calls = checking(tmp_path, {'dump': (0, 'version = 2\n', '')})
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), 'auto', load_test=True)
    assert checked.problems == [] and checked.notes == ['load test could not run: no unshare here']
    assert checked.how == 'config dump'
    # validate: load asks for the load test: one that cannot run refuses
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), 'load')
    assert checked.stage == 'load' and checked.problems == ['no unshare here']


def test_a_failed_load_test_refuses(tmp_path, monkeypatch):
    monkeypatch.setattr(_preflight, 'load_test', lambda *a, **kw: load_result(_preflight.STATUS_FAILED))
    ctx, _calls = checking(tmp_path, {'dump': (0, 'version = 2\n', '')})
    checked = check_with_containerd(ctx, Checked(), str(tmp_path / 'candidate'), 'auto', load_test=True)
    assert checked.stage == 'load' and checked.problems == ['no unshare here']
    assert checked.load == dict(status='failed', ok=False, seconds=0.1, required=[], errors=[], skipped=[],
                                containerd_version=(1, 6))


# ------------------------------------------------------------------ which file the read-time and built-in checks judge
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
