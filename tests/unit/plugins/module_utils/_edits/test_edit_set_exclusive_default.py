# -*- coding: utf-8 -*-
"""exclusive and a runtime it would release that is the CRI default by another's change: refused before
anything is written when the release is sure to refuse it (refuse_default_release), on real files and saved
ledgers, and the refusal's text in each form (default_removal_refused).

tests/module/test_containerd_config_exclusive.py runs whole calls against real containerd.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import read_bytes, sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import (
    exclusive_plan,
    refuse_default_release,
    sets_default,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import default_removal_refused
from helpers.context import CRI_V2_PATH, RUNTIMES_V2_PATH, FakeContext

DEFAULT = list(CRI_V2_PATH) + ['containerd', 'default_runtime_name']
DEFAULT_DOTTED = 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name'
TABLE = {'owner': 'gpu', 'resource': 'runtime:nvidia', 'kind': 'table', 'path': list(RUNTIMES_V2_PATH) + ['nvidia']}
V2 = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "%s"\n\n'
      '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
      '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "io.containerd.runc.v2"\n')


def default_record(owner, resource, value='"nvidia"', prior='"runc"'):
    return {'owner': owner, 'resource': resource, 'kind': 'key', 'path': DEFAULT, 'prior': prior, 'value': value}


def saved(path, state_dir, text, records):
    """path holding text, and its ledger holding records, as a call that wrote the file leaves them."""
    with open(path, 'w') as f:
        f.write(text)
    ledger = Ledger(state_dir, path)
    for rec in records:
        ledger.add(rec)
    ledger.save(sha256_bytes(read_bytes(path)))
    return path


def node(tmp_path, records, default='nvidia'):
    """config.toml (version 2) whose default runtime is default, its ledger holding records; the params of
    gpu's exclusive install of nvidia-cdi alone."""
    tmp_path.mkdir(exist_ok=True)
    state_dir = str(tmp_path / 'state')
    path = saved(str(tmp_path / 'config.toml'), state_dir, V2 % default, records)
    return dict(path=path, state_dir=state_dir, owner='gpu', state='present', exclusive=True, dropins=[],
                runtimes=[dict(name='nvidia-cdi')], settings=[], imports=[])


def refused(params, ver=(1, 7)):
    """The refusal refuse_default_release raises for params, or None."""
    ctx = FakeContext(containerd_version=ver)
    try:
        refuse_default_release(ctx, params, exclusive_plan(ctx, params))
    except ConfigError as exc:
        return exc
    return None


@pytest.mark.parametrize('stack,setter', [([default_record('ops', 'runtime:nvidia')], 'ops'),
                                          ([default_record('ops', 'setting:' + DEFAULT_DOTTED)], 'ops'),
                                          ([], 'no recorded owner'),
                                          ([default_record('gpu', 'runtime:nvidia'), default_record('ops', 'x')], 'ops')])
def test_a_released_default_kept_by_another_is_refused_naming_file_exclusive_and_fixes(tmp_path, stack, setter):
    """By another owner's record on top (the release cannot undo it), or by hand (no record)."""
    params = node(tmp_path, [TABLE] + stack)
    exc = refused(params)
    assert str(exc) == (
        '%s: exclusive: true releases runtime nvidia (owner gpu recorded it, the call\'s runtimes do not name it), '
        'but nvidia is the default runtime (default_runtime_name, set by %s), so removing it would stop the CRI '
        'plugin from loading. Nothing was written. Fix: make another runtime the default first, or keep nvidia by '
        'naming it in runtimes.' % (params['path'], setter))
    assert exc.given_details() == dict(key='exclusive')


@pytest.mark.parametrize('stack', [
    [default_record('gpu', 'runtime:nvidia')],                     # gpu's own change: the release puts it back
    [default_record('ops', 'x'), default_record('gpu', 'setting:' + DEFAULT_DOTTED)],  # the release decides
])
def test_a_default_the_owner_changed_last_is_left_to_the_release(tmp_path, stack):
    assert refused(node(tmp_path, [TABLE] + stack)) is None


def test_only_the_owner_s_released_table_that_is_the_default_counts(tmp_path):
    ops = [default_record('ops', 'runtime:nvidia')]
    # nvidia named: not released
    assert refused(dict(node(tmp_path / 'a', [TABLE] + ops), runtimes=[dict(name='nvidia')])) is None
    # the default is another runtime
    assert refused(node(tmp_path / 'b', [TABLE] + ops, default='runc')) is None
    # gpu changed nvidia but did not create it: the release keeps the table, so the default is no matter
    changed = dict(TABLE, kind='key', path=TABLE['path'] + ['privileged_without_host_devices'], prior=None,
                   value='true')
    assert refused(node(tmp_path / 'c', [changed] + ops)) is None


def test_a_call_that_changes_the_default_is_left_to_the_release(tmp_path):
    stack = [TABLE, default_record('ops', 'runtime:nvidia')]
    made = dict(node(tmp_path / 'a', stack), runtimes=[dict(name='nvidia-cdi', default=True)])
    assert refused(made) is None
    key = dict(node(tmp_path / 'b', stack), settings=[dict(key='cri.default_runtime_name', value='runc')])
    assert refused(key) is None


def test_sets_default_reads_runtimes_and_settings_in_each_spelling():
    assert sets_default(dict(runtimes=[dict(name='a'), dict(name='b', default=True)], settings=[]))
    assert not sets_default(dict(runtimes=[dict(name='a', default=False), dict(name='b')], settings=[]))
    assert not sets_default(dict(runtimes=None, settings=None))
    assert sets_default(dict(runtimes=[], settings=[dict(key='cri.default_runtime_name')]))
    assert sets_default(dict(runtimes=[], settings=[dict(key=DEFAULT_DOTTED, raw=True)]))
    # a table above the key, in the version 3 layout
    assert sets_default(dict(runtimes=[], settings=[dict(key="plugins.'io.containerd.cri.v1.runtime'.containerd",
                                                         raw=True)]))
    assert not sets_default(dict(runtimes=[], settings=[dict(key='cri.enable_cdi'),
                                                        dict(key=DEFAULT_DOTTED + '_not', raw=True)]))


DROPIN = ("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'nvidia'\n"
          "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
          "  runtime_type = 'io.containerd.runc.v2'\n")
V3_DEFAULT = ['plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'default_runtime_name']


def test_the_file_that_holds_the_table_and_the_default_is_named(tmp_path):
    """On containerd 2.x a drop-in holds gpu's nvidia and ops' default: the refusal names the drop-in; a drop-in
    the call itself writes (its content is the call's) is left to the release."""
    state_dir = str(tmp_path / 'state')
    dropin = saved(str(tmp_path / 'gpu.toml'), state_dir, DROPIN, [
        dict(TABLE, path=V3_DEFAULT[:3] + ['runtimes', 'nvidia']), dict(default_record('ops', 'x'), path=V3_DEFAULT)])
    path = saved(str(tmp_path / 'config.toml'), state_dir, 'version = 3\nimports = ["%s"]\n' % dropin, [])
    params = dict(path=path, state_dir=state_dir, owner='gpu', state='present', dropins=[], runtimes=[],
                  settings=[], imports=[dropin])
    exc = refused(params, ver=(2, 1))
    assert str(exc).startswith('%s: exclusive: true releases runtime nvidia' % dropin) and 'set by ops' in str(exc)
    assert refused(dict(params, dropins=[dict(path=os.path.join(str(tmp_path), '.', 'gpu.toml'))]), (2, 1)) is None


def test_each_form_of_the_refusal_names_its_option_and_its_fixes():
    entry = dict(name='nvidia', owner='gpu')
    late = default_removal_refused('/c.toml', dict(entry, released_by='exclusive'), 'ops', tuple(DEFAULT))
    assert 'Nothing was written' not in str(late) and late.given_details() == dict(key='exclusive')
    assert "The release comes after the install: the install's changes are kept, the release's are not written. " \
        'Fix: make another runtime the default first, or keep nvidia by naming it in runtimes.' in str(late)
    every = default_removal_refused('/c.toml', dict(entry, released_by='release_all'), 'ops', tuple(DEFAULT))
    assert str(every) == (
        '/c.toml: release_all: true releases runtime nvidia (owner gpu recorded it), but nvidia is the default '
        'runtime (default_runtime_name, set by ops), so removing it would stop the CRI plugin from loading. Fix: '
        'make another runtime the default first, or name it in runtimes with force: true to remove it and the '
        'default_runtime_name key.')
    assert every.given_details() == dict(key='release_all')
    given = default_removal_refused('/c.toml', entry, 'ops', tuple(DEFAULT))
    assert str(given).endswith('Fix: make another runtime the default first, or set force: true to remove it and '
                               'the default_runtime_name key.')
    assert given.given_details() == dict(key=DEFAULT_DOTTED)
