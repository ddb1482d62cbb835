# -*- coding: utf-8 -*-
"""containerd_config check_binaries: a runtime whose binary is missing or not executable is refused before
anything is written (check mode too, and before a baseline is taken); a link to an executable is one."""

import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for


def executable(folder, name, mode=0o755):
    path = os.path.join(folder, name)
    with open(path, 'w') as f:
        f.write('#!/bin/sh\nexit 0\n')
    os.chmod(path, mode)
    return path


def install(run_module, path, runtimes, **extra):
    return run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary_of('host'),
                      runtimes=runtimes, check_binaries=True, **extra)


@pytest.fixture
def node(config, workdir):
    path = config('v2_kubeadm.toml')
    tools = os.path.join(workdir, 'tools')
    os.makedirs(tools)
    return path, tools, read(path, 'rb')


def assert_nothing_written(run_module, path, original, workdir):
    assert read(path, 'rb') == original
    assert not os.path.exists(ledger_path_for(run_module.state_dir, path))
    assert not os.path.exists(os.path.join(workdir, 'baselines'))


@pytest.mark.parametrize('check', [False, True])
def test_a_missing_binary_name_is_refused_naming_file_key_path_and_fix(run_module, node, workdir, check):
    path, tools, original = node
    good = executable(tools, 'nvidia-container-runtime')
    missing = os.path.join(tools, 'nvidia-container-runtime.cdi')
    res = install(run_module, path, [dict(name='nvidia', options={'BinaryName': good}),
                                     dict(name='nvidia-cdi', options={'BinaryName': missing})],
                  baseline=dict(name='default', store=os.path.join(workdir, 'baselines')), check=check,
                  expect_fail=True)
    msg = res['msg']
    assert path in msg and 'runtimes[1].options.BinaryName %s does not exist' % missing in msg, msg
    assert 'Nothing was written' in msg and 'install %s as an executable file' % missing in msg and 'check_binaries: false' in msg
    assert 'runtimes[0]' not in msg and res['key'] == 'runtimes[1].options.BinaryName'
    assert res['binaries'] == [dict(key='runtimes[1].options.BinaryName', path=missing, problem='does not exist')]
    assert_nothing_written(run_module, path, original, workdir)


def test_a_file_that_is_not_executable_is_refused(run_module, node, workdir):
    path, tools, original = node
    plain = executable(tools, 'runtime', mode=0o644)
    res = install(run_module, path, [dict(name='nvidia', options={'BinaryName': plain})], expect_fail=True)
    assert 'runtimes[0].options.BinaryName %s is not executable (mode 0644)' % plain in res['msg'], res['msg']
    assert_nothing_written(run_module, path, original, workdir)
    res = install(run_module, path, [dict(name='nvidia', options={'BinaryName': tools})], expect_fail=True)
    assert '%s is not a regular file' % tools in res['msg']
    assert_nothing_written(run_module, path, original, workdir)


def test_a_missing_runtime_path_and_a_dangling_link_are_refused(run_module, node, workdir):
    path, tools, original = node
    link = os.path.join(tools, 'shim')
    os.symlink(os.path.join(tools, 'gone'), link)
    res = install(run_module, path, [dict(name='kata', runtime_type='io.containerd.kata.v2', runtime_path=link)],
                  expect_fail=True)
    assert 'runtimes[0].runtime_path %s does not exist (a link to %s)' % (link, os.path.join(tools, 'gone')) \
        in res['msg'], res['msg']
    assert_nothing_written(run_module, path, original, workdir)


def test_a_link_to_an_executable_is_accepted(run_module, node):
    path, tools, _original = node
    target = executable(tools, 'nvidia-container-runtime')
    link = os.path.join(tools, 'nvidia-container-runtime.cdi')
    os.symlink(target, link)
    res = install(run_module, path, [dict(name='nvidia-cdi', options={'BinaryName': link})])
    assert res['changed'] and link in read(path)
    assert_containerd_accepts(path, binary_of('host'))


def test_a_name_without_a_folder_is_the_first_executable_in_path(run_module, node, workdir):
    """A file of that name that is not executable earlier in PATH is passed over, as containerd and the shim
    pass it over; with no executable one at all, the first file is named."""
    path, tools, original = node
    earlier = os.path.join(workdir, 'earlier')
    os.makedirs(earlier)
    executable(earlier, 'ng-test-runtime', mode=0o644)
    executable(tools, 'ng-test-runtime')
    executable(earlier, 'ng-test-plain', mode=0o644)
    env = dict(PATH=os.pathsep.join([earlier, tools, os.environ.get('PATH', '')]))
    res = install(run_module, path, [dict(name='plain', options={'BinaryName': 'ng-test-plain'})], env=env,
                  expect_fail=True)
    assert 'runtimes[0].options.BinaryName ng-test-plain is not executable (mode 0644)' in res['msg'], res['msg']
    assert_nothing_written(run_module, path, original, workdir)
    res = install(run_module, path, [dict(name='found', options={'BinaryName': 'ng-test-runtime'})], env=env)
    assert res['changed'] and 'ng-test-runtime' in read(path)
    assert_containerd_accepts(path, binary_of('host'))


def test_without_check_binaries_a_missing_binary_is_written(run_module, node):
    path, tools, _original = node
    missing = os.path.join(tools, 'absent')
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary_of('host'),
                     runtimes=[dict(name='nvidia', options={'BinaryName': missing})])
    assert res['changed'] and missing in read(path)
