# -*- coding: utf-8 -*-
"""Check mode refuses what the run refuses: the built-in checks and the node's config dump judge the
candidate (a temporary copy, removed), and nothing is written: no config, no ledger, no lock file. A check
that finds nothing to change asks containerd nothing, as the run does not."""

import os

from helpers.common import CONTAINERD_1, read

MAIN = '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.gc.v1.scheduler"]
  pause_threshold = 0.02
'''
PAUSE = 'plugins."io.containerd.gc.v1.scheduler".pause_threshold'


def _untouched(path, before, state_dir):
    assert read(path) == before
    assert sorted(os.listdir(os.path.dirname(path))) == ['config.toml'], 'no lock file, no temporary copy'
    assert not os.path.exists(os.path.join(state_dir, 'ledger'))


def test_check_mode_refuses_a_default_runtime_that_names_no_runtime(run_module, config):
    path = config(MAIN)
    res = run_module('containerd_setting', check=True, expect_fail=True, path=path, containerd_bin=CONTAINERD_1,
                     key='cri.default_runtime_name', value='nope')
    assert "default_runtime_name is 'nope' but no runtime table" in res['msg']
    _untouched(path, MAIN, run_module.state_dir)


def test_check_mode_refuses_a_value_the_nodes_config_dump_refuses(run_module, config):
    path = config(MAIN)
    res = run_module('containerd_setting', check=True, expect_fail=True, path=path, containerd_bin=CONTAINERD_1,
                     key=PAUSE, raw=True, value=1)
    assert 'config dump' in res['msg'] and "Can't convert 1(int64) to float64" in res['msg'], res['msg']
    _untouched(path, MAIN, run_module.state_dir)


def test_check_mode_of_an_accepted_change_says_how_containerd_judged_it(run_module, config):
    path = config(MAIN)
    res = run_module('containerd_setting', check=True, path=path, containerd_bin=CONTAINERD_1, key=PAUSE, raw=True,
                     value=0.5)
    assert res['changed'] and res['validated'] == 'config dump'
    _untouched(path, MAIN, run_module.state_dir)


def test_check_mode_that_changes_nothing_asks_containerd_nothing(run_module, config, workdir):
    path = config(MAIN)
    calls = os.path.join(workdir, 'calls')
    wrapper = os.path.join(workdir, 'containerd')
    with open(wrapper, 'w') as f:
        f.write('#!/bin/sh\necho "$*" >> %s\nexec %s "$@"\n' % (calls, CONTAINERD_1))
    os.chmod(wrapper, 0o755)
    res = run_module('containerd_setting', check=True, path=path, containerd_bin=wrapper, key=PAUSE, raw=True,
                     value=0.02)
    assert not res['changed']
    assert 'config dump' not in (read(calls) if os.path.exists(calls) else '')
    res = run_module('containerd_setting', check=True, path=path, containerd_bin=wrapper, key=PAUSE, raw=True,
                     value=0.5)
    assert res['changed'] and 'config dump' in read(calls), 'the wrapper sees the dump of a change'
