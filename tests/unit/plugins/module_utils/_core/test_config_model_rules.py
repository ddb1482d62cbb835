# -*- coding: utf-8 -*-
"""_config_model's small rules called directly: tomlkit versions, where a
duplicate key is, the legacy version 1 refusal, and a lock file that cannot be
opened."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigError,
    TomlParseError,
    _tomlkit_parse,
    _version_tuple,
    bom_refused_message,
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


# ---------------------------------------------------------------- byte order marks, tomlkit errors, version lines
@pytest.mark.parametrize('ver, config_version, reader', [
    ((1, 7), 3, None),                   # 1.x reads a byte order mark
    ((2, 1), 2, 'containerd 2.1'),
    (None, 2, None),                     # a version 2 file may be read by 1.x: no refusal without the binary
    (None, 3, 'containerd 2.x (which reads config version 3)'),
    (None, 4, 'containerd 2.x (which reads config version 4)'),
])
def test_a_byte_order_mark_is_refused_for_the_containerd_that_reads_the_file(ver, config_version, reader):
    msg = bom_refused_message('/etc/containerd/config.toml', ver, config_version)
    if reader is None:
        assert msg is None
    else:
        assert msg.startswith('/etc/containerd/config.toml starts with a UTF-8 byte order mark (bytes EF BB BF), '
                              'which %s cannot parse' % reader), msg


def test_a_tomlkit_error_without_a_place_is_at_line_0_column_0(monkeypatch):
    import tomlkit

    def fail(_text):
        raise ValueError('no place')
    monkeypatch.setattr(tomlkit, 'parse', fail)
    with pytest.raises(TomlParseError) as exc:
        _tomlkit_parse('a = 1\n')
    assert (exc.value.line, exc.value.col) == (0, 0) and 'no place' in str(exc.value)


def test_a_version_that_is_no_integer_is_named_with_the_fix():
    with pytest.raises(ConfigError) as exc:
        detect_version('/etc/containerd/config.toml', {'version': 'two'})
    assert str(exc.value).startswith('/etc/containerd/config.toml: key "version" must be an integer, found \'two\'. '
                                     'Fix: set version = 2')
    assert exc.value.details == {'key': 'version', 'found': 'two'}


@pytest.mark.parametrize('version', [2, 3, 4])
def test_the_versions_nodeguard_edits_are_accepted(version):
    assert detect_version('/etc/containerd/config.toml', {'version': version}) == version
