# -*- coding: utf-8 -*-
"""_secrets: values in arrays (of tables, of values) under a secret path, and secrets a task gives inside a whole
table (a setting's value, a runtime's options, a ledger's recorded table)."""

import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
# fresh_secrets_state is an autouse fixture: imported, it runs for every test here
from helpers.secrets import FakeModule, fresh_secrets_state  # noqa: F401 pylint: disable=unused-import

MIRROR_AUTHS = 'plugins."io.containerd.cri.v1.images".registry.mirror_auths'
AOT = '''version = 3
[[plugins."io.containerd.cri.v1.images".registry.mirror_auths]]
  host = "mirror-a.example.com"
  token = "aot-token-secret-77"
[[plugins."io.containerd.cri.v1.images".registry.mirror_auths]]
  host = "mirror-b.example.com"
  token = "aot-token-secret-78"
  scopes = [["pull-scope-1"], ["push-scope-2"]]
[plugins."io.containerd.cri.v1.images".registry.headers]
  X-Keys = ["hdr-key-1", "hdr-key-2"]
'''
AUTH_TABLE = ('plugins', 'io.containerd.cri.v1.images', 'registry', 'configs', 'reg.example.com', 'auth')


def doc(text=AOT):
    return tomlkit.parse(text)


def test_every_value_of_an_array_of_tables_under_a_secret_table_is_a_secret():
    patterns = secrets.parse_patterns([MIRROR_AUTHS])
    assert secrets.secret_values(doc(), patterns) == {'aot-token-secret-77', 'aot-token-secret-78',
                                                      'mirror-a.example.com', 'mirror-b.example.com',
                                                      'pull-scope-1', 'push-scope-2'}
    # plain data (a config parsed and unwrapped) reads the same
    assert secrets.secret_values(doc().unwrap(), patterns) == secrets.secret_values(doc(), patterns)


def test_a_path_into_an_array_of_tables_names_that_key_of_every_table():
    patterns = secrets.parse_patterns([MIRROR_AUTHS + '.token'])
    leaves = secrets.secret_leaves(doc(), patterns)
    token = tuple(secrets.split_pattern(MIRROR_AUTHS + '.token'))
    assert leaves == [(token, 'aot-token-secret-77'), (token, 'aot-token-secret-78')]


def test_every_item_of_an_array_of_values_under_a_secret_table_is_a_secret():
    patterns = secrets.parse_patterns(['plugins.*.registry.headers'])
    assert secrets.secret_values(doc(), patterns) == {'hdr-key-1', 'hdr-key-2'}


def test_an_array_of_tables_is_no_secret_unless_a_path_names_it():
    assert secrets.secret_values(doc()) == set()


def test_a_bound_run_masks_the_tokens_of_an_array_of_tables():
    module = FakeModule(secret_keys=[MIRROR_AUTHS])
    secrets.bind(module)
    secrets.note_data(doc())
    assert {'aot-token-secret-77', 'aot-token-secret-78'} <= module.no_log_values


def test_a_changed_token_in_an_array_of_tables_is_named_once():
    patterns = secrets.parse_patterns([MIRROR_AUTHS + '.token'])
    changed = secrets.changed_secrets(doc(), doc(AOT.replace('secret-78', 'secret-79')), patterns)
    assert changed == [MIRROR_AUTHS + '.token']
    assert secrets.changed_secrets(doc(), doc(), patterns) == []
    # a table added to the array, or one taken away, changes the secret too
    fewer = AOT.split('[[', 2)
    assert secrets.changed_secrets(doc(), doc(fewer[0] + '[[' + fewer[1]), patterns) == [MIRROR_AUTHS + '.token']


def test_a_whole_auth_table_a_task_gives_notes_its_secrets_only():
    module = FakeModule(key=secrets.dotted_path(AUTH_TABLE), value=dict(username='robot', password='table-pw-1'),
                        settings=[dict(key=secrets.dotted_path(AUTH_TABLE[:3]),
                                       value={'configs': {'r': {'auth': {'auth': 'table-auth-2'}}}})])
    secrets.bind(module)
    assert module.no_log_values == {'table-pw-1', 'table-auth-2'}


def test_a_runtimes_options_a_task_gives_note_the_secrets_a_user_path_names():
    module = FakeModule(secret_keys=['plugins.*.containerd.runtimes.*.options.Token'], name='nvidia',
                        options=dict(BinaryName='/usr/bin/nvidia-container-runtime', Token='rt-token-3'),
                        runtimes=[dict(name='kata', options=dict(Token='rt-token-4'), settings=dict(x='kept-5'))])
    secrets.bind(module)
    assert module.no_log_values == {'rt-token-3', 'rt-token-4'}


def test_a_logical_key_a_user_path_names_notes_its_value():
    module = FakeModule(secret_keys=['plugins."io.containerd.grpc.v1.cri".containerd.snapshotter'],
                        key='images.snapshotter', value='snap-secret-6')
    secrets.bind(module)
    assert module.no_log_values == {'snap-secret-6'}


def test_a_recorded_table_value_notes_the_secrets_under_it():
    """A ledger keeps the prior and the value of a whole table a setting replaced, as TOML inline tables."""
    records = [dict(kind='key', path=list(AUTH_TABLE), prior='{username = "robot", password = "old-pw-7"}',
                    value='{username = "robot", auth = "new-auth-8"}')]
    assert secrets.record_values(records) == {'old-pw-7', 'new-auth-8'}
    # a table that holds no secret path notes nothing
    records = [dict(kind='key', path=list(AUTH_TABLE[:3]) + ['mirrors'], prior=None, value='{endpoint = "long-9"}')]
    assert secrets.record_values(records) == set()
