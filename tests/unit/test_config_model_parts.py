# -*- coding: utf-8 -*-
"""_config_model's small rules called directly: tomlkit versions, where a
duplicate key is, the legacy version 1 refusal, and a lock file that cannot be
opened."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import (
    ConfigError,
    TomlParseError,
    _version_tuple,
    detect_version,
    lock_or_fail,
    parse_error_message,
    parse_toml,
)


@pytest.mark.parametrize('text, version', [
    ('0.11.4', (0, 11, 4)), ('0.9.2', (0, 9, 2)), ('0.7', (0, 7, 0)), ('1', (1, 0, 0)),
    ('1.2.3.4', (1, 2, 3)), ('0.13.0rc1', (0, 13, 0)), ('dev', (0, 0, 0)),
])
def test_tomlkit_versions_compare_as_three_numbers(text, version):
    assert _version_tuple(text) == version


def test_a_key_defined_twice_is_located():
    with pytest.raises(TomlParseError) as err:
        parse_toml('version = 2\n[a]\n  x = 1\n  x = 2\n')
    assert (err.value.line, err.value.col) == (4, 8), (err.value.line, err.value.col, str(err.value))
    assert parse_error_message('/etc/containerd/config.toml', err.value).startswith(
        '/etc/containerd/config.toml is not valid TOML: line 4, column 8:')


def test_version_1_is_refused_as_the_legacy_layout():
    with pytest.raises(ConfigError) as err:
        detect_version('/etc/containerd/config.toml', {'version': 1})
    assert 'declares version = 1 (legacy layout, plugins.cri)' in str(err.value)
    assert err.value.given_details() == dict(key='version', found=1)


def test_a_lock_file_that_cannot_be_made_is_named_with_the_fix(tmp_path):
    path = os.path.join(str(tmp_path), 'gone', 'config.toml')
    with pytest.raises(ConfigError) as err:
        lock_or_fail(path, 1)
    assert str(err.value).startswith('cannot lock %s: ' % path) and 'Fix: run as root (become: true).' in str(err.value)
    assert err.value.given_details() == dict(key='path')
