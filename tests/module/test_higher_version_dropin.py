# -*- coding: utf-8 -*-
"""A version 3 drop-in under a version 2 config.toml, on the real containerd 2.1: 2.1 runs it, the config.toml
man page forbids it and 2.3 does not start on it.  Writers refuse it (the node would break at its 2.3 upgrade)
naming both files and both fixes; containerd_info reports it as a problem and does not fail."""

import os

import tomlkit

from helpers.common import CONTAINERD_2, assert_containerd_accepts, read

V2_CRI = 'io.containerd.grpc.v1.cri'
V3_RT = 'io.containerd.cri.v1.runtime'
MAIN = 'version = 2\nimports = ["%s"]\n\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n'
DROPIN = ('version = 3\n\n[plugins."%s".containerd.runtimes.gpu]\n  runtime_type = "io.containerd.runc.v2"\n'
          % V3_RT)


def _tree(workdir):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    main, dropin = os.path.join(etc, 'config.toml'), os.path.join(etc, 'gpu.toml')
    with open(dropin, 'w') as f:
        f.write(DROPIN)
    with open(main, 'w') as f:
        f.write(MAIN % (dropin, V2_CRI))
    return main, dropin


def _says_2_1_runs_it_and_both_fixes(msg, main, dropin):
    assert '%s has version = 3, higher than the main config %s (version = 2)' % (dropin, main) in msg, msg
    assert 'containerd 2.1 runs it today, but containerd 2.3 and later do not start on it' in msg, msg
    assert 'write the drop-in with version = 2' in msg and 'or raise %s to version = 3' % main in msg, msg


def test_containerd_2_1_runs_the_higher_version_drop_in(workdir):
    assert CONTAINERD_2, 'run make deps'
    main, _dropin = _tree(workdir)
    merged = tomlkit.parse(assert_containerd_accepts(main, CONTAINERD_2)).unwrap()
    assert 'gpu' in merged['plugins'][V3_RT]['containerd']['runtimes']  # what the refusal protects is real today


def test_containerd_info_reports_it_as_a_problem_and_does_not_fail(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_info', path=main, containerd_bin=CONTAINERD_2)
    assert not res.get('failed') and not res.get('changed'), res
    [problem] = [p for p in res['problems'] if 'higher than the main config' in p]
    _says_2_1_runs_it_and_both_fixes(problem, main, dropin)
    assert res['imports']['files'] == [main, dropin]


def test_a_write_is_refused_naming_both_files_and_the_fix_and_nothing_is_written(run_module, workdir):
    main, dropin = _tree(workdir)
    before = read(main, 'rb'), read(dropin, 'rb')
    res = run_module('containerd_runtime', expect_fail=True, path=main, name='kata', containerd_bin=CONTAINERD_2,
                     runtime_type='io.containerd.kata.v2')
    _says_2_1_runs_it_and_both_fixes(res['msg'], main, dropin)
    assert (read(main, 'rb'), read(dropin, 'rb')) == before
    left = [n for n in os.listdir(os.path.dirname(main)) if not n.endswith('.nodeguard.lock')]
    assert sorted(left) == ['config.toml', 'gpu.toml']  # no temporary file left behind
