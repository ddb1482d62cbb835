# -*- coding: utf-8 -*-
"""A transaction's steps (open, build, needs_write, check, commit): their order, how often a write is
tried again when another program rewrites the file, check mode, and the bound of an uninstall's writes."""

import pytest
from helpers.context import FakeContext
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import Transaction, transaction_result


# ------------------------------------------------------------------ a transaction: its steps, their order and how often they run
class Module(object):
    def __init__(self, check_mode=False, **params):
        self.params = dict(dict(validate='auto'), **params)
        self.check_mode = check_mode


class Steps(Transaction):
    """A write whose file another program rewrites every time, before the rename."""

    def __init__(self, module, ctx):
        super(Steps, self).__init__(module, ctx)
        self.steps = []

    def open(self):
        self.steps.append('open')

    def build(self):
        self.steps.append('build')

    def needs_write(self):
        self.steps.append('needs_write')
        return True

    def check(self):
        self.steps.append('check')

    def commit(self):
        self.steps.append('commit')
        self.moved = self.path
        return False


def test_a_file_rewritten_under_every_attempt_is_given_up_after_three_and_checked_after_the_build():
    path = '/etc/containerd/config.toml'
    ctx = FakeContext(path=path)
    txn = Steps(Module(), ctx)
    with pytest.raises(ConfigError) as err:
        txn.run()
    assert txn.steps == ['open', 'build', 'needs_write', 'check', 'commit'] * 3
    assert str(err.value).startswith('%s was changed by another program 3 times while nodeguard was editing it'
                                     % path)
    assert ctx.warnings == ['%s changed while nodeguard was editing it; the edit was applied again on the new '
                            'content' % path] * 3


def test_check_mode_of_an_edit_that_would_write_runs_the_check_and_stops_before_the_commit():
    txn = Steps(Module(check_mode=True), FakeContext(path='/etc/containerd/config.toml'))
    assert txn.run() == dict(changed=False)
    assert txn.steps == ['open', 'build', 'needs_write', 'check']


class NothingToWrite(Steps):
    def needs_write(self):
        self.steps.append('needs_write')
        return False


@pytest.mark.parametrize('check_mode', [False, True], ids=['run', 'check mode'])
def test_an_edit_with_nothing_to_write_is_not_checked_in_either_mode(check_mode):
    txn = NothingToWrite(Module(check_mode=check_mode), FakeContext(path='/etc/containerd/config.toml'))
    txn.run()
    assert txn.steps == ['open', 'build', 'needs_write']


def test_an_uninstall_writes_at_most_eight_files(monkeypatch):
    # each step writes one file of the tree while the owner's records are left somewhere: the loop is bounded
    runs = []

    def one_write(module, ctx, txn):
        runs.append(txn)
        return dict(changed=True, _wrote=True, file='/etc/containerd/conf.d/%d.toml' % len(runs))
    monkeypatch.setattr(_engine, '_transaction', one_write)
    monkeypatch.setattr(_engine, '_owner_records_left', lambda module, ctx: True)
    transaction_result(Module(state='absent'), FakeContext(path='/etc/containerd/config.toml'), lambda d, lg, c: {}, False, None)
    assert len(runs) == 8
