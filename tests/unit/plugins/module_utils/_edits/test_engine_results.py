# -*- coding: utf-8 -*-
"""What the engine reports and reads around a write: a result
Ansible can send whatever the edit returned, the ledger records of a tree
whose config.toml cannot be read, whether an uninstall goes on, and the
owner/group/mode a candidate is created with.
"""

import datetime
import grp

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    _owner_records_left,
    exit_result,
    json_safe,
    stat_owner,
    tree_records,
    unique_in_order,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from helpers.context import FakeContext
from helpers.common import fixture_text, read
from helpers.engine import edit_run, setting, started
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight


class Ended(Exception):
    def __init__(self, how, result):
        super(Ended, self).__init__(how)
        self.how = how
        self.result = result


class Module(object):
    def __init__(self, **params):
        self.params = params

    def exit_json(self, **result):
        raise Ended('exit', result)

    def fail_json(self, **result):
        raise Ended('fail', result)


# ------------------------------------------------------------------ a result Ansible can send
class Odd(object):
    """A value of no TOML or JSON type (what a buggy edit might return)."""

    def __str__(self):
        return 'odd value'


def test_a_result_is_made_of_plain_json_types_whatever_the_edit_returned():
    value = dict(raw=b'snapshotter = "\xff"', odd=Odd(), when=datetime.date(2026, 12, 5), keys=('a', 1))
    assert json_safe(value) == dict(raw=u'snapshotter = "\ufffd"', odd='odd value', when='2026-12-05',
                                    keys=['a', 1])


def test_a_result_that_cannot_be_sent_fails_naming_what_was_written():
    # the file is in place: the run must say so even when its own result is broken
    looped = []
    looped.append(looped)
    with pytest.raises(Ended) as ended:
        exit_result(Module(), FakeContext(path='/etc/containerd/config.toml', owner='gpu', containerd_version=(1, 6),
                                          written=['/etc/containerd/config.toml']),
                    dict(changed=True, loop=looped))
    assert ended.value.how == 'fail'
    result = ended.value.result
    assert result['msg'].startswith('nodeguard could not report its result (RecursionError: ')
    assert 'Already written before this failure, and in effect with their ledgers: /etc/containerd/config.toml' \
        in result['msg']
    assert result['changed'] is True and result['written'] == ['/etc/containerd/config.toml']
    assert 'Traceback' in result['exception']


# ------------------------------------------------------------------ the records of a tree that cannot be read
def recorded(state, path, owner='gpu'):
    """A ledger for path holding one key record of owner, saved for the file as it is."""
    ledger = Ledger(state, path)
    ledger.add({'owner': owner, 'resource': 'setting:x', 'kind': 'key', 'path': ['x'], 'prior': None,
                'value': '1'})
    with open(path, 'rb') as f:
        ledger.save(sha256_bytes(f.read()))
    return ledger.records


@pytest.mark.parametrize('text', [
    b'imports = ["conf.d/*.toml"]\n',  # no version: containerd 1.x's old layout, refused by the model
    b'version = 2\nplugins = 5\n',  # plugins is not a table
    b'version = 2\n# \xff\n',  # not UTF-8
])
def test_a_config_that_cannot_be_read_gives_its_own_ledgers_records(tmp_path, text):
    path = str(tmp_path / 'config.toml')
    with open(path, 'wb') as f:
        f.write(text)
    state = str(tmp_path / 'state')
    records = recorded(state, path)
    assert tree_records(state, path, (1, 6)) == records
    # and an uninstall stops there: the next step could not read the file either
    assert _owner_records_left(Module(state_dir=state), FakeContext(path=path, owner='gpu', containerd_version=(1, 6))) is False


def test_an_uninstall_goes_on_while_a_file_of_the_tree_holds_the_owners_records(tmp_path):
    dropin = tmp_path / '10-gpu.toml'
    dropin.write_text('version = 2\n')
    path = str(tmp_path / 'config.toml')
    with open(path, 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % dropin)
    state = str(tmp_path / 'state')
    records = recorded(state, str(dropin))
    assert tree_records(state, path, (1, 6)) == records
    assert _owner_records_left(Module(state_dir=state), FakeContext(path=path, owner='gpu', containerd_version=(1, 6))) is True
    assert _owner_records_left(Module(state_dir=state), FakeContext(path=path, owner='other', containerd_version=(1, 6))) is False


# ------------------------------------------------------------------ the candidate's owner, group and mode
def test_the_candidate_gets_the_group_and_mode_asked_for_before_it_is_renamed():
    module = Module()
    root_group = grp.getgrgid(0).gr_name
    assert stat_owner(module, dict(group=root_group, mode='0640')) == (None, 0, 0o640)
    assert stat_owner(module, dict(group='0', mode=0o600)) == (None, 0, 0o600)
    # a symbolic mode is applied after the rename (set_fs_attributes_if_different)
    assert stat_owner(module, dict(file_owner='0', mode='u=rw,g=r')) == (0, None, None)
    assert stat_owner(module, dict(group=None, mode=None)) == (None, None, None)


def test_a_group_that_does_not_exist_fails_naming_it():
    with pytest.raises(Ended) as ended:
        stat_owner(Module(), dict(group='no-such-group-ng'))
    assert ended.value.result == dict(msg="group: no such group 'no-such-group-ng'")


def test_the_file_owner_is_a_uid_or_a_user_name_and_an_unknown_user_fails_naming_it():
    assert stat_owner(Module(), dict(file_owner='root'))[0] == 0
    with pytest.raises(Ended) as ended:
        stat_owner(Module(), dict(file_owner='no-such-user-ng'))
    assert ended.value.result == dict(msg="file_owner: no such user 'no-such-user-ng'")


def test_facts_read_in_order_keep_their_first_occurrence():
    assert unique_in_order(['runc', 'nvidia', 'runc', 'kata', 'nvidia']) == ['runc', 'nvidia', 'kata']


# ------------------------------------------------------------------ a backup, and the load test summary
def test_a_backup_is_the_file_as_it_was_before_the_write(main_only, capsys):
    before = read(main_only['path'])
    res = setting(main_only, capsys, key='images.snapshotter', value='native', backup=True)
    assert res['changed'] and res['file'] == main_only['path']
    assert res['backup_file'] != main_only['path'] and read(res['backup_file']) == before
    assert "snapshotter = 'native'" in read(main_only['path'])


def test_validate_load_alone_returns_no_load_test_summary(tmp_path, capsys, monkeypatch):
    # load_tested is the summary a caller asked for (containerd_baseline's repair), not validate: load's
    etc = tmp_path / 'etc'
    etc.mkdir()
    (etc / 'config.toml').write_text(fixture_text('v2_kubeadm.toml'))
    node = dict(path=str(etc / 'config.toml'), state=str(tmp_path / 'state'), tmp=str(tmp_path))
    calls = started(monkeypatch, _preflight.STATUS_OK)
    res = edit_run(node, capsys, validate='load')
    assert res['changed'] and len(calls) == 1
    assert 'load_tested' not in res
