# -*- coding: utf-8 -*-
"""_secrets: which config values are secrets, how they reach no_log_values, redacted copies of a baseline."""

import json
import os
import stat

import pytest
import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import makedirs_private
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import export_copy
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
# fresh_secrets_state is an autouse fixture: imported, it runs for every test here
from helpers.secrets import FakeModule, fresh_secrets_state  # noqa: F401 pylint: disable=unused-import

V2 = '''version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example.com".auth]
  username = "robot"
  password = "pa\\"ss-word-1"
  auth = ''
[plugins."io.containerd.grpc.v1.cri".registry.auths."old.example.com"]
  identitytoken = "tok-2"
[plugins."io.containerd.grpc.v1.cri".registry.headers]
  X-Key = ["hdr-3"]
'''
V3 = '''version = 3
[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]
  username = 'robot'
  identitytoken = 'tok-4'
'''


def data(text):
    return tomlkit.parse(text).unwrap()


def test_the_builtin_paths_are_the_registry_credentials_of_v2_and_v3():
    v2 = dict((secrets.dotted_path(p), v) for p, v in secrets.secret_leaves(data(V2)))
    assert sorted(v2.values()) == ['', 'pa"ss-word-1', 'tok-2']
    v3 = [v for _p, v in secrets.secret_leaves(data(V3))]
    assert v3 == ['tok-4']
    # user names and other keys are no secrets
    assert 'robot' not in secrets.secret_values(data(V2)) | secrets.secret_values(data(V3))
    assert 'hdr-3' not in secrets.secret_values(data(V2))


def test_a_value_is_masked_as_written_too():
    values = secrets.secret_values(data(V2))
    # the decoded value, and its TOML/JSON spelling (a diff shows the text, a ledger the JSON)
    assert 'pa"ss-word-1' in values and 'pa\\"ss-word-1' in values
    assert '' not in values  # an empty value is no secret to mask (it would mask everything)
    # nor one of 1-3 characters: masked everywhere, it would mangle every message
    assert secrets.secret_values(data(V2.replace('tok-2', 'ab'))) == set(['pa"ss-word-1', 'pa\\"ss-word-1'])


@pytest.mark.parametrize('text,parts', [
    ('plugins."io.containerd.grpc.v1.cri".registry.headers',
     ('plugins', 'io.containerd.grpc.v1.cri', 'registry', 'headers')),
    ("a.'b.c'.*.d", ('a', 'b.c', '*', 'd')),
    (' a . b ', ('a', 'b')),
])
def test_secret_keys_are_dotted_toml_paths_with_stars(text, parts):
    assert secrets.split_pattern(text) == parts


@pytest.mark.parametrize('bad', ['a..b', 'a.b c', '"open', 'a.', ''])
def test_a_bad_secret_key_is_refused_with_the_fix(bad):
    with pytest.raises(secrets.SecretKeyError) as exc:
        secrets.parse_patterns([bad])
    assert 'secret_keys' in str(exc.value) and 'Fix' in str(exc.value)


def test_a_user_path_naming_a_table_makes_all_under_it_secret():
    patterns = secrets.parse_patterns(['plugins.*.registry.headers'])
    assert 'hdr-3' in secrets.secret_values(data(V2), patterns)


def test_bind_puts_everything_noted_into_no_log_values():
    secrets.note_data(data(V2))  # before the module exists (a reader at import time)
    module = FakeModule(secret_keys=['plugins.*.registry.headers'],
                        key='plugins."io.containerd.cri.v1.images".registry.configs.r.auth.password', value='new-pw-5',
                        content=V3)
    secrets.bind(module)
    assert {'pa"ss-word-1', 'tok-2', 'new-pw-5', 'tok-4'} <= module.no_log_values
    secrets.note_data(data(V2))
    assert 'hdr-3' in module.no_log_values  # the module's own secret_keys
    assert 'robot' not in module.no_log_values


def test_a_logical_setting_key_or_a_plain_value_is_not_noted():
    module = FakeModule(key='images.snapshotter', value='overlayfs',
                        settings=[dict(key='cri.enable_cdi', value=True)])
    secrets.bind(module)
    assert not module.no_log_values


def test_ledger_priors_of_secret_keys_are_noted(tmp_path):
    ledger = Ledger(str(tmp_path), str(tmp_path / 'config.toml'))
    ledger.record_key('gpu', 'setting:x', ['plugins', 'io.containerd.grpc.v1.cri', 'registry', 'configs', 'h', 'auth',
                                           'password'], '"old-pw-6"', '"new-pw-7"')
    ledger.save('0' * 64)
    module = FakeModule()
    secrets.bind(module)
    Ledger.load(str(tmp_path), str(tmp_path / 'config.toml'))
    assert {'old-pw-6', 'new-pw-7'} <= module.no_log_values
    # the state folder and its ledger folder are private
    assert stat.S_IMODE(os.stat(str(tmp_path / 'ledger')).st_mode) == 0o700


def test_changed_secrets_name_the_paths_never_the_values():
    before = data(V2)
    after = data(V2.replace('tok-2', 'tok-9'))
    assert secrets.changed_secrets(before, after) == [
        'plugins."io.containerd.grpc.v1.cri".registry.auths."old.example.com".identitytoken']
    assert secrets.changed_secrets(before, before) == []


def test_redact_masks_whole_values_in_reports():
    report = {'a': ['x tok-2 y', {'b': 'pa"ss-word-1'}], 'n': 3}
    assert secrets.redact(report, {'tok-2', 'pa"ss-word-1'}) == {'a': ['x ******** y', {'b': '********'}], 'n': 3}


def test_makedirs_private_creates_each_missing_folder_0700(tmp_path):
    makedirs_private(str(tmp_path / 'a' / 'b'))
    assert stat.S_IMODE(os.stat(str(tmp_path / 'a')).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(str(tmp_path / 'a' / 'b')).st_mode) == 0o700
    makedirs_private(str(tmp_path / 'a' / 'b'))  # again: nothing to do


def test_export_copy_masks_every_file_and_exact_keeps_them(tmp_path):
    folder = tmp_path / 'default' / '20250101T000000.000000Z'
    (folder / 'files').mkdir(parents=True)
    (folder / 'files' / '000-config.toml').write_text(V2)
    (folder / 'ledger.json').write_text(json.dumps({'records': [{'kind': 'key', 'path': [
        'plugins', 'io.containerd.grpc.v1.cri', 'registry', 'configs', 'h', 'auth', 'password'],
        'prior': '"gone-pw-8"', 'value': '"x"'}]}))
    (folder / 'manifest.json').write_text('{"format": 1}')
    dest = tmp_path / 'out' / 'copy'
    copied = dict(export_copy(str(tmp_path / 'default'), str(dest), secrets.BUILTIN_PATTERNS))
    assert copied['20250101T000000.000000Z/files/000-config.toml'] == 2
    config = (dest / '20250101T000000.000000Z' / 'files' / '000-config.toml').read_text()
    assert 'tok-2' not in config and 'pa\\"ss-word-1' not in config and 'username = "robot"' in config
    assert 'reg.example.com' in config  # the ledger's short value "x" is not masked
    assert 'gone-pw-8' not in (dest / '20250101T000000.000000Z' / 'ledger.json').read_text()
    for root, dirs, names in os.walk(str(tmp_path / 'out')):
        assert all(stat.S_IMODE(os.stat(os.path.join(root, d)).st_mode) == 0o700 for d in dirs)
        assert all(stat.S_IMODE(os.stat(os.path.join(root, n)).st_mode) == 0o600 for n in names)
    exact = tmp_path / 'exact'
    export_copy(str(tmp_path / 'default'), str(exact), secrets.BUILTIN_PATTERNS, exact=True)
    assert (exact / '20250101T000000.000000Z' / 'files' / '000-config.toml').read_text() == V2
    nothing = tmp_path / 'checked'
    export_copy(str(tmp_path / 'default'), str(nothing), secrets.BUILTIN_PATTERNS, check_mode=True)
    assert not nothing.exists()
