# -*- coding: utf-8 -*-
"""A secret given inside a whole table (an ``auth`` table as a setting's value, a runtime's options) or kept in an
array of tables never leaves the node through a module's output, nor through the line the module logs on the node
when it starts.

AnsibleModule writes that line (its arguments, no_log ones as a placeholder) to
the node's journal, or to syslog where there is none; here the module runs as
Ansible runs it, with syslog's writer kept to a file, so the test reads the
very line the node would log.
"""

import json
import os
import subprocess

import pytest

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_2, fixture_text, module_result, read
from helpers.modules import NODE_PYTHON

TABLE_PW = 'table-pw-secret-99'
RUNTIME_TOKEN = 'rt-token-secret-42'
AOT_TOKEN = 'aot-token-secret-77'
AUTH_TABLE = 'plugins."io.containerd.cri.v1.images".registry.configs."reg.example.com".auth'
PASSWORD_KEY = AUTH_TABLE + '.password'

# runs a module as `python -m`, with the start-up line it logs (syslog; the journal is not taken) kept in a file
LOGGED_RUN = r'''
import runpy
import sys
import syslog

import ansible.module_utils.basic as basic

LOG = sys.argv[2]


def keep(*args):
    with open(LOG, 'a') as f:
        f.write('%s\n' % (args[-1],))


basic.has_journal = False
syslog.syslog = keep
module = sys.argv[1]
sys.argv = [module, sys.argv[3]]
runpy.run_module('ansible_collections.nodeguard.containerd.plugins.modules.' + module, run_name='__main__')
'''


def run_logged(runner, module, check=False, expect_fail=False, **args):
    """A module's result, as run_module gives it, and the lines it logged on the node."""
    args.update(_ansible_check_mode=check, _ansible_diff=True, _ansible_tmpdir=runner.tmpdir,
                _ansible_remote_tmp=runner.tmpdir, _ansible_keep_remote_files=False, state_dir=runner.state_dir)
    runner.calls += 1
    argfile = os.path.join(runner.tmpdir, 'logged-%d.json' % runner.calls)
    log = os.path.join(runner.tmpdir, 'logged-%d.log' % runner.calls)
    with open(argfile, 'w') as f:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([NODE_PYTHON, '-c', LOGGED_RUN, module, log, argfile], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    result = module_result(module, proc)
    assert bool(result.get('failed')) == expect_fail, result
    logged = read(log) if os.path.exists(log) else ''
    assert 'Invoked with' in logged, (logged, proc.stderr[-2000:])
    return result, logged


@pytest.fixture
def v3_config(config):
    assert CONTAINERD_2, 'run make deps'
    return config('v3_default.toml')


def test_a_whole_auth_table_given_as_a_value_is_masked_and_never_logged(run_module, v3_config):
    original = read(v3_config, 'rb')
    args = dict(path=v3_config, containerd_bin=CONTAINERD_2, key=AUTH_TABLE, owner='reg',
                value=dict(username='robot', password=TABLE_PW))
    # as a logical name the key is refused: the failed result's invocation has the placeholder
    refused, logged = run_logged(run_module, 'containerd_setting', expect_fail=True, **args)
    assert 'unknown logical key' in refused['msg']
    assert refused['invocation']['module_args']['value']['password'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert TABLE_PW not in json.dumps(refused) and TABLE_PW not in logged
    assert 'value=NOT_LOGGING_PARAMETER' in logged
    # as a dotted key it is written: the node's file has the password, the result and the log line do not
    for check in (True, False):
        res, logged = run_logged(run_module, 'containerd_setting', check=check, raw=True, **args)
        assert res['changed'] and res['secrets_changed'] == [PASSWORD_KEY]
        assert TABLE_PW not in json.dumps(res) and TABLE_PW not in logged
        assert 'value=NOT_LOGGING_PARAMETER' in logged
        assert 'password = "********"' in res['diff']['after'].replace("'", '"')
    assert TABLE_PW in read(v3_config)
    res, logged = run_logged(run_module, 'containerd_setting', key=AUTH_TABLE, raw=True, owner='reg',
                             state='absent', path=v3_config, containerd_bin=CONTAINERD_2)
    assert res['changed'] and TABLE_PW not in json.dumps(res) and TABLE_PW not in logged
    assert read(v3_config, 'rb') == original


def test_a_settings_entry_and_a_runtimes_options_holding_a_secret_are_never_logged(run_module, v3_config):
    """containerd_config: an auth table as a settings entry's value, a runtime's options holding a key named in
    secret_keys; containerd_runtime: the same options."""
    token_key = 'plugins.*.containerd.runtimes.*.options.Token'
    kata = dict(name='kata', runtime_type='io.containerd.kata.v2', options=dict(ConfigPath='/etc/kata.toml',
                                                                                Token=RUNTIME_TOKEN))
    res, logged = run_logged(run_module, 'containerd_config', check=True, path=v3_config, containerd_bin=CONTAINERD_2,
                             owner='coco', secret_keys=[token_key], runtimes=[kata],
                             settings=[dict(key=AUTH_TABLE, raw=True, value=dict(username='robot', password=TABLE_PW))])
    assert res['changed'], res
    for secret in (TABLE_PW, RUNTIME_TOKEN):
        assert secret not in json.dumps(res) and secret not in logged, secret
    args = res['invocation']['module_args']
    assert args['settings'][0]['value']['password'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    assert args['runtimes'][0]['options']['Token'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    res, logged = run_logged(run_module, 'containerd_runtime', check=True, path=v3_config, containerd_bin=CONTAINERD_2,
                             owner='coco', secret_keys=[token_key], **kata)
    assert res['changed'], res
    assert RUNTIME_TOKEN not in json.dumps(res) and RUNTIME_TOKEN not in logged
    assert 'options=NOT_LOGGING_PARAMETER' in logged
    # a task that fails before any file is read: its result's invocation has the placeholder
    failed, logged = run_logged(run_module, 'containerd_runtime', expect_fail=True, path=v3_config,
                                containerd_bin=CONTAINERD_2, owner='coco', secret_keys=[token_key], inherit='none-such',
                                **kata)
    assert 'inherit names runtime' in failed['msg']
    assert RUNTIME_TOKEN not in json.dumps(failed) and RUNTIME_TOKEN not in logged
    # without the secret_keys path the token is no secret: the line shows the options as given
    _res, logged = run_logged(run_module, 'containerd_runtime', check=True, path=v3_config,
                              containerd_bin=CONTAINERD_2, owner='coco', **kata)
    assert RUNTIME_TOKEN in logged


def test_a_token_in_an_array_of_tables_under_a_secret_table_is_masked(run_module, config):
    assert CONTAINERD_2, 'run make deps'
    path = config(fixture_text('v3_default.toml') + (
        '\n[[plugins."io.containerd.cri.v1.images".registry.mirror_auths]]\n'
        '  host = "mirror.example.com"\n  token = "%s"\n' % AOT_TOKEN))
    res = run_module('containerd_setting', check=True, diff=True, path=path, key='cri.enable_cdi', value=False,
                     owner='gpu', secret_keys=['plugins."io.containerd.cri.v1.images".registry.mirror_auths'])
    assert res['changed'] and AOT_TOKEN not in json.dumps(res)
    assert 'token = "********"' in res['diff']['before']
