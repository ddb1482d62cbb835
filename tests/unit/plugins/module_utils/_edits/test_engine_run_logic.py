# -*- coding: utf-8 -*-
"""_engine.run_logic: the one place a module outside run_transaction (containerd_config, containerd_dropin) turns
its logic's outcome into exit_json or a clear fail_json."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import LockTimeout
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import run_logic
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import LedgerError
from helpers.context import FakeContext

CONFIG = '/etc/containerd/config.toml'
DROPIN = '/etc/containerd/config.toml.d/nydus.toml'


class Ended(Exception):
    def __init__(self, how, result):
        super(Ended, self).__init__(how)
        self.how = how
        self.result = result


class Module(object):
    """What run_logic uses of AnsibleModule: exit_json and fail_json end the run, warn collects."""

    def __init__(self):
        self.warned = []

    def warn(self, msg):
        self.warned.append(msg)

    def exit_json(self, **result):
        raise Ended('exit', result)

    def fail_json(self, **result):
        raise Ended('fail', result)


def end(logic, ctx=None, **kwargs):
    module = Module()
    with pytest.raises(Ended) as ended:
        run_logic(module, ctx or FakeContext(path=CONFIG), logic, 'containerd_x', **kwargs)
    return ended.value.how, ended.value.result, module.warned


def raising(exc):
    def logic():
        raise exc
    return logic


def test_a_result_exits_with_the_warnings_of_the_run():
    how, result, warned = end(lambda: dict(changed=True, n=1), FakeContext(path=CONFIG, warnings=['kept a key']))
    assert how == 'exit' and result == dict(changed=True, n=1)
    assert warned == ['kept a key']


def test_a_config_error_fails_with_its_message_and_the_details_it_has():
    how, result, dummy = end(raising(ConfigError('x.toml: bad key. Fix: y.', key='settings[0].key', line=None)))
    assert how == 'fail'
    assert result == dict(msg='x.toml: bad key. Fix: y.', key='settings[0].key')


@pytest.mark.parametrize('exc', [LedgerError('ledger damaged: fix it'), LockTimeout('lock held by pid 7')])
def test_a_damaged_ledger_or_a_held_lock_fails_with_its_own_message(exc):
    how, result, dummy = end(raising(exc))
    assert how == 'fail' and result == dict(msg=str(exc))


def test_anything_else_names_the_module_and_the_config_with_the_traceback():
    how, result, dummy = end(raising(ValueError('boom')))
    assert how == 'fail'
    assert result['msg'] == 'containerd_x failed on %s: boom' % CONFIG
    assert 'ValueError: boom' in result['exception']


def test_the_subject_given_is_named_instead_of_the_config():
    how, result, dummy = end(raising(ValueError('boom')), subject=DROPIN)
    assert result['msg'] == 'containerd_x failed on %s: boom' % DROPIN


def test_a_failure_after_a_write_names_the_written_files_and_is_a_change():
    how, result, dummy = end(raising(ConfigError('second file refused. Fix: z.')), FakeContext(path=CONFIG, written=[DROPIN]))
    assert how == 'fail' and result['changed'] is True and result['written'] == [DROPIN]
    assert result['msg'].startswith('second file refused. Fix: z. Already written before this failure')
    assert DROPIN in result['msg']
