# -*- coding: utf-8 -*-
"""release_all's reading of the ledgers (with_owned) called directly: what it adds
to the entries the call names, in which order, and with which force.

tests/module/test_containerd_config_release_all.py runs release_all with
nothing named; here the owner's records and the named entries meet.
"""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import with_owned
from helpers.context import CRI_V2_PATH, GPU_NVIDIA_V2_RECORDS, RUNTIMES_V2_PATH, FakeContext, saved_ledger

CRI = list(CRI_V2_PATH)
RT = list(RUNTIMES_V2_PATH)
ENABLE_CDI = 'plugins."io.containerd.grpc.v1.cri".enable_cdi'


def node(tmp_path, records):
    """config.toml in tmp_path and a saved ledger holding records; the params of a release_all call."""
    path, state_dir = saved_ledger(tmp_path, records)
    return dict(path=path, state_dir=state_dir, owner='gpu', state='absent', release_all=True,
                runtimes=None, settings=None, imports=None)


GPU = GPU_NVIDIA_V2_RECORDS + [
    {'owner': 'gpu', 'resource': 'setting:' + ENABLE_CDI, 'kind': 'key', 'path': CRI + ['enable_cdi'],
     'prior': None, 'value': 'true'},
    {'owner': 'gpu', 'resource': 'import:/etc/containerd/conf.d/gpu.toml', 'kind': 'import',
     'entry': '/etc/containerd/conf.d/gpu.toml', 'added': True, 'created_key': True},
    {'owner': 'ops', 'resource': 'runtime:crun', 'kind': 'table', 'path': RT + ['crun']},
]


def test_release_all_adds_the_owner_s_records_default_first_and_never_forced(tmp_path):
    params = node(tmp_path, GPU)
    out, released = with_owned(FakeContext(containerd_version=(1, 7)), params)
    # the default first, so the prior default is back before the other tables go; none of them forced, each
    # marked as release_all's (a refusal names that option, not an entry of runtimes)
    assert out['runtimes'] == [dict(name='nvidia', force=False, released_by='release_all'),
                               dict(name='runc', force=False, released_by='release_all')]
    assert out['settings'] == [dict(key=ENABLE_CDI, raw=True)]
    assert out['imports'] == ['/etc/containerd/conf.d/gpu.toml']
    assert released == dict(runtimes=['runc', 'nvidia'], tables=['nvidia'], settings=[ENABLE_CDI],
                            imports=['/etc/containerd/conf.d/gpu.toml'])
    assert out['owner'] == 'gpu' and out['path'] == params['path']   # the rest of the call as given


def test_entries_the_call_names_stay_as_given_and_are_not_added_twice(tmp_path):
    params = node(tmp_path, GPU)
    params.update(runtimes=[dict(name='runc', force=True), dict(name='kata')],
                  settings=[dict(key=ENABLE_CDI, raw=True, value=None)], imports=['conf.d/other.toml'])
    out, _released = with_owned(FakeContext(containerd_version=(1, 7)), params)
    assert out['runtimes'] == [dict(name='runc', force=True), dict(name='kata'),
                               dict(name='nvidia', force=False, released_by='release_all')]
    assert out['settings'] == [dict(key=ENABLE_CDI, raw=True, value=None)]
    assert out['imports'] == ['conf.d/other.toml', '/etc/containerd/conf.d/gpu.toml']


def test_an_import_named_in_another_spelling_is_not_added_again(tmp_path):
    params = node(tmp_path, [
        {'owner': 'gpu', 'resource': 'import:' + os.path.join(str(tmp_path), 'conf.d', 'gpu.toml'),
         'kind': 'import', 'entry': 'conf.d/gpu.toml', 'added': True, 'created_key': False}])
    params['imports'] = ['./conf.d/gpu.toml']
    out, released = with_owned(FakeContext(containerd_version=(1, 7)), params)
    assert out['imports'] == ['./conf.d/gpu.toml']
    assert released['imports'] == [os.path.join(str(tmp_path), 'conf.d', 'gpu.toml')]
