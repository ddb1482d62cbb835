# -*- coding: utf-8 -*-
"""check_binaries' judgement of each runtime binary, on real files: which keys are looked at, what counts as an
executable (links followed, a name without a folder looked up in PATH) and the one refusal naming them all.

tests/module/test_containerd_config_check_binaries.py runs whole calls.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import (
    binaries_of,
    binary_problem,
    refuse_missing_binaries,
)


def program(folder, name, mode=0o755):
    path = os.path.join(str(folder), name)
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n')
    os.chmod(path, mode)
    return path


def test_binary_name_and_runtime_path_of_each_entry_are_looked_at():
    runtimes = [dict(name='a', options={'BinaryName': '/x', 'ConfigPath': '/c'}, runtime_path='/shim'),
                dict(name='b'), dict(name='c', options={'BinaryName': ''}),
                dict(name='d', options=None, runtime_path='/d')]
    assert binaries_of(runtimes) == [('runtimes[0].options.BinaryName', '/x'), ('runtimes[0].runtime_path', '/shim'),
                                     ('runtimes[3].runtime_path', '/d')]
    assert binaries_of(None) == []


def test_what_counts_as_an_executable(tmp_path):
    good = program(tmp_path, 'good')
    plain = program(tmp_path, 'plain', mode=0o600)
    link = str(tmp_path / 'link')
    os.symlink(good, link)
    dangling = str(tmp_path / 'dangling')
    os.symlink(str(tmp_path / 'gone'), dangling)
    assert binary_problem(good) is None and binary_problem(link) is None
    assert binary_problem(plain) == 'is not executable (mode 0600)'
    assert binary_problem(str(tmp_path / 'gone')) == 'does not exist'
    assert binary_problem(dangling) == 'does not exist (a link to %s)' % (tmp_path / 'gone')
    assert binary_problem(str(tmp_path)) == 'is not a regular file'
    assert binary_problem('bin/good') == 'is not an absolute path'
    assert binary_problem(7) == 'is not a path (int)'


def test_a_name_without_a_folder_is_looked_up_in_path(tmp_path, monkeypatch):
    program(tmp_path, 'my-runtime')
    program(tmp_path, 'my-plain', mode=0o644)
    monkeypatch.setenv('PATH', str(tmp_path))
    assert binary_problem('my-runtime') is None
    assert binary_problem('my-plain') == 'is not executable (mode 0644)'
    assert binary_problem('no-such-runtime-here').startswith('is in none of the folders of PATH (/usr/local/sbin')
    assert binary_problem('sh') is None  # the folders systemd gives containerd count too


def test_a_name_in_path_is_the_first_executable_as_containerd_looks_it_up(tmp_path, monkeypatch):
    """As Go's exec.LookPath: a file that is not executable earlier in PATH is passed over; only when no folder
    has an executable one does the first regular file name the problem."""
    first, second = tmp_path / 'a', tmp_path / 'b'
    first.mkdir()
    second.mkdir()
    program(first, 'my-runtime', mode=0o644)
    program(second, 'my-runtime')
    program(first, 'my-plain', mode=0o644)
    program(second, 'my-plain', mode=0o600)
    monkeypatch.setenv('PATH', os.pathsep.join([str(first), str(second)]))
    assert binary_problem('my-runtime') is None
    assert binary_problem('my-plain') == 'is not executable (mode 0644)'


def test_one_refusal_names_the_file_every_bad_key_and_the_fix(tmp_path):
    good = program(tmp_path, 'good')
    missing = str(tmp_path / 'missing')
    plain = program(tmp_path, 'plain', mode=0o644)
    params = dict(path='/etc/containerd/config.toml', runtimes=[
        dict(name='a', options={'BinaryName': good}), dict(name='b', options={'BinaryName': missing}),
        dict(name='c', runtime_path=plain)])
    with pytest.raises(ConfigError) as err:
        refuse_missing_binaries(params)
    assert str(err.value) == (
        'refusing to write /etc/containerd/config.toml: runtimes[1].options.BinaryName %s does not exist; '
        'runtimes[2].runtime_path %s is not executable (mode 0644). A runtime whose binary is missing or not '
        'executable fails every container started through it. Nothing was written. Fix: install %s, %s as an '
        'executable file, point runtimes[1].options.BinaryName, runtimes[2].runtime_path at one that exists, or '
        'set check_binaries: false.' % (missing, plain, missing, plain))
    assert err.value.given_details() == dict(key='runtimes[1].options.BinaryName', binaries=[
        dict(key='runtimes[1].options.BinaryName', path=missing, problem='does not exist'),
        dict(key='runtimes[2].runtime_path', path=plain, problem='is not executable (mode 0644)')])
    refuse_missing_binaries(dict(params, runtimes=params['runtimes'][:1]))
