# -*- coding: utf-8 -*-
"""`validate: auto` judges the candidate, not the live file.

The candidate below passes every built-in check (it parses, imports exist,
the default runtime is defined) but containerd's own loader refuses it: a
string where containerd wants an integer (`grpc.max_recv_message_size =
"big"`: 1.6 says "Can't convert big(string) to int", 2.1 "cannot decode TOML
string into ... int").  Only containerd run on the candidate can tell; a
validator that looked at the live file would pass it, and would refuse the
repair of a live file that is broken that way.
"""

import glob
import os

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_2, assert_containerd_accepts, config_dump, read

REFUSALS = {2: "Can't convert big(string) to int", 3: 'cannot decode TOML string'}
FIXTURES = [('v2_kubeadm.toml', 2), ('v3_default.toml', 3)]


def path_with(binary):
    """PATH with this containerd first, so that `auto` finds it."""
    assert binary, 'run make deps (containerd 1.6 and 2.1)'
    return os.path.dirname(binary) + os.pathsep + os.environ.get('PATH', '')


def binary_for(version):
    return CONTAINERD_1 if version == 2 else CONTAINERD_2


def leftovers(path):
    return glob.glob(os.path.join(os.path.dirname(path), '.*nodeguard-tmp'))


@pytest.mark.parametrize('fixture,version', FIXTURES)
def test_auto_refuses_a_candidate_only_containerd_rejects(run_module, config, fixture, version):
    path = config(fixture)
    original = read(path, 'rb')
    res = run_module('containerd_setting', path=path, raw=True, key='grpc.max_recv_message_size', value='big',
                     owner='ops', validate='auto', env={'PATH': path_with(binary_for(version))}, expect_fail=True)
    # containerd ran on the candidate (its name is shown as %s), and said why
    assert 'validation "%s --config %%s config dump" failed' % binary_for(version) in res['msg'], res['msg']
    assert REFUSALS[version] in res['msg'], res['msg']
    assert 'Nothing was written' in res['msg']
    assert read(path, 'rb') == original
    assert leftovers(path) == []
    # the same edit without containerd's judgement is written: only `auto` stood in the way
    res = run_module('containerd_setting', path=path, raw=True, key='grpc.max_recv_message_size', value='big',
                     owner='ops', validate='none', env={'PATH': path_with(binary_for(version))})
    assert res['changed']
    rc, _out, err = config_dump(path, binary_for(version))
    assert rc != 0 and REFUSALS[version] in err


@pytest.mark.parametrize('fixture,version', FIXTURES)
def test_auto_accepts_the_repair_of_a_live_file_containerd_rejects(run_module, config, fixture, version):
    path = config(fixture)
    text = read(path)
    quote = "'" if version == 3 else '"'
    address = 'address = %s/run/containerd/containerd.sock%s' % (quote, quote)
    assert text.count(address) == 1
    broken = text.replace(address, address + '\n  max_recv_message_size = "big"')
    with open(path, 'w') as f:
        f.write(broken)
    rc, _out, err = config_dump(path, binary_for(version))
    assert rc != 0 and REFUSALS[version] in err   # the live file is one containerd refuses
    res = run_module('containerd_setting', path=path, raw=True, key='grpc.max_recv_message_size', value=16777216,
                     owner='ops', validate='auto', env={'PATH': path_with(binary_for(version))})
    assert res['changed'] and res['value'] == 16777216
    assert read(path) == broken.replace('max_recv_message_size = "big"', 'max_recv_message_size = 16777216')
    assert_containerd_accepts(path, binary_for(version))
    assert leftovers(path) == []
