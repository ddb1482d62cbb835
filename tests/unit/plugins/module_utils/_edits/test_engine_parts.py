# -*- coding: utf-8 -*-
"""Small parts of _engine called directly: the containerd_version option, the
containerd_bin check, the settled read of a file being rewritten, the UTF-8
refusal, and what the check step makes of a config dump or load test that
cannot say yes or no.

The module tests run these through real modules and real containerd; here
each outcome is set up exactly (a dump killed by a signal, a load test that
cannot run), which a real node gives only by accident.
"""

import threading
import time
from types import SimpleNamespace

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    Checked,
    Context,
    _decode,
    _parse_version_option,
    _read_settled,
    check_with_containerd,
)


# ------------------------------------------------------------------ the containerd_version option
@pytest.mark.parametrize('given, version', [('1.7', (1, 7)), ('v2.1.4', (2, 1)), ('2', (2, 0)), (' 1.6 ', (1, 6))])
def test_the_version_option_is_major_and_minor(given, version):
    assert _parse_version_option(given) == version


@pytest.mark.parametrize('given', ['latest', '1.x', ''])
def test_a_version_option_that_is_no_version_is_refused_naming_the_option(given):
    with pytest.raises(ConfigError) as err:
        _parse_version_option(given)
    assert str(err.value) == 'containerd_version must look like 1.7 or 2.1, got %r' % given
    assert err.value.given_details() == dict(key='containerd_version')


# ------------------------------------------------------------------ containerd_bin
def context(**params):
    module = SimpleNamespace(params=dict(dict(owner='gpu', containerd_bin=None), **params), check_mode=False,
                             get_bin_path=lambda name: None)
    return Context(module, '/etc/containerd/config.toml')


def test_a_containerd_bin_that_is_not_an_executable_file_is_refused(tmp_path):
    plain = tmp_path / 'containerd'
    plain.write_text('#!/bin/sh\n')
    folder = tmp_path / 'bin'
    folder.mkdir()  # executable (searchable), but not a file
    for given in (str(plain), str(folder), str(tmp_path / 'missing')):
        with pytest.raises(ConfigError) as err:
            context(containerd_bin=given).containerd_bin
        assert str(err.value).startswith('containerd_bin: %s is not an executable file. Nothing was written.' % given)
        assert err.value.given_details() == dict(key='containerd_bin')
    plain.chmod(0o755)
    assert context(containerd_bin=str(plain)).containerd_bin == str(plain)


# ------------------------------------------------------------------ reading a file another tool is rewriting
def test_an_empty_read_is_read_again_until_the_writer_is_done(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text('')
    later = threading.Timer(0.3, lambda: path.write_text('version = 2\n'))
    later.start()
    try:
        assert _read_settled(str(path), wait=5.0) == b'version = 2\n'
    finally:
        later.cancel()


def test_a_file_that_stays_empty_is_empty_after_the_wait(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text('')
    start = time.monotonic()
    assert _read_settled(str(path), wait=0.3) == b''
    assert 0.3 <= time.monotonic() - start < 3


def test_a_file_that_is_not_utf8_is_refused_naming_the_byte():
    with pytest.raises(ConfigError) as err:
        _decode('/etc/containerd/config.toml', b'version = 2\n# \xff\n')
    assert str(err.value).startswith('/etc/containerd/config.toml is not UTF-8 text (byte 14): it is not a '
                                     'containerd config. Nothing was written.')


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
