# -*- coding: utf-8 -*-
"""An edit whose config rename the node refused (an immutable config.toml) leaves a ledger written for bytes
that never arrived: containerd_info's owned and ledgers both say the owner has nothing there, also once the
attribute is gone again, and the next run installs it for real."""

import os
import shutil
import subprocess

import pytest

from helpers.common import CONTAINERD_1, assert_containerd_accepts, fixture_text

CHATTR = shutil.which('chattr')


def immutable(path, on):
    return subprocess.run([CHATTR, '+i' if on else '-i', path], capture_output=True, check=False).returncode == 0


def test_owned_agrees_with_the_rolled_back_ledger_after_a_refused_rename(run_module, workdir):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write(fixture_text('v2_debian_stock.toml'))
    if CHATTR is None or not immutable(main, True):
        pytest.skip('chattr +i is not permitted here')
    try:
        res = run_module('containerd_runtime', path=main, name='kata2', runtime_type='io.containerd.kata.v2',
                         owner='k', containerd_bin=CONTAINERD_1, expect_fail=True)
        assert 'Operation not permitted' in res['msg'] and main in res['msg']
        assert 'The node refused the write: the file or its folder is immutable' in res['msg']
        assert 'Fix: make the file writable, then run again' in res['msg']
    finally:
        immutable(main, False)
    info = run_module('containerd_info', path=main, owner='k', dump=False, containerd_bin=CONTAINERD_1)
    assert info['owned']['runtimes'] == [] and info['owned']['tables'] == []
    [ledger] = info['ledgers']
    assert ledger['records_by_owner'] == {} and ledger['note'].startswith('rolled the ledger back')
    res = run_module('containerd_runtime', path=main, name='kata2', runtime_type='io.containerd.kata.v2',
                     owner='k', containerd_bin=CONTAINERD_1)
    assert res['changed'] and 'kata2' in assert_containerd_accepts(main)
    info = run_module('containerd_info', path=main, owner='k', dump=False, containerd_bin=CONTAINERD_1)
    assert info['owned']['runtimes'] == ['kata2'] and info['ledgers'][0]['owners'] == ['k']
