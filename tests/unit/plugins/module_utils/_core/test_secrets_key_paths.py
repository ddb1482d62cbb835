# -*- coding: utf-8 -*-
"""_secrets: the secret_keys option's dotted TOML paths, spelled every way TOML allows a key."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets


@pytest.mark.parametrize('text,parts', [
    ('plugins."hdr\\"quoted\\"".token', ('plugins', 'hdr"quoted"', 'token')),
    ('plugins."a\\\\b".token', ('plugins', 'a\\b', 'token')),
    ("plugins.'C:\\'.token", ('plugins', 'C:\\', 'token')),
    ("plugins.'say \"hi\"'.token", ('plugins', 'say "hi"', 'token')),
])
def test_quoted_keys_keep_their_escapes_and_literal_backslashes(text, parts):
    assert secrets.split_pattern(text) == parts


@pytest.mark.parametrize('text', ['a."".b', "a.''.b"])
def test_an_empty_quoted_key_is_a_key(text):
    assert secrets.split_pattern(text) == ('a', '', 'b')


def test_a_user_path_with_an_escaped_quote_makes_that_value_secret():
    patterns = secrets.parse_patterns(['plugins."x\\"y".token'])
    data = {'plugins': {'x"y': {'token': 'quoted-key-secret'}, 'xy': {'token': 'plain-value'}}}
    assert secrets.secret_values(data, patterns) == {'quoted-key-secret'}


def test_a_leading_dot_is_refused_as_an_empty_key_at_offset_0():
    with pytest.raises(secrets.SecretKeyError) as exc:
        secrets.parse_patterns(['.registry.headers'])
    assert "(bad key '' at offset 0)" in str(exc.value)


def test_a_path_given_twice_or_a_built_in_one_given_again_is_kept_once():
    builtin = 'plugins."io.containerd.grpc.v1.cri".registry.configs.*.auth.password'
    patterns = secrets.parse_patterns(['plugins.x.token', builtin, 'plugins.x.token'])
    assert patterns == secrets.BUILTIN_PATTERNS + (('plugins', 'x', 'token'),)


@pytest.mark.parametrize('text,parts', [
    # TOML reads "C:\\" as C:\ : the backslashes pair up, the quote ends the key
    ('plugins."C:\\\\".token', ('plugins', 'C:\\', 'token')),
    ('plugins."a\\\\\\\\".token', ('plugins', 'a\\\\', 'token')),
    # an odd run: the last backslash escapes the quote
    ('plugins."a\\\\\\"b".token', ('plugins', 'a\\"b', 'token')),
    ('"\\\\"', ('\\',)),
])
def test_a_quote_after_an_even_run_of_backslashes_ends_the_key(text, parts):
    assert secrets.split_pattern(text) == parts


def test_a_quote_after_an_odd_run_of_backslashes_leaves_the_key_open():
    with pytest.raises(secrets.SecretKeyError) as exc:
        secrets.parse_patterns(['plugins."a\\\\\\".token'])
    assert '(unterminated quote at offset 8)' in str(exc.value)


def test_a_user_path_whose_key_ends_in_a_backslash_makes_that_value_secret():
    patterns = secrets.parse_patterns(['plugins."C:\\\\".token'])
    data = {'plugins': {'C:\\': {'token': 'backslash-key-secret'}, 'C:': {'token': 'plain-value'}}}
    assert secrets.secret_values(data, patterns) == {'backslash-key-secret'}


def test_blanks_between_a_quoted_key_and_its_dot_are_skipped_one_by_one():
    assert secrets.split_pattern('"a" .b') == ('a', 'b')
    assert secrets.split_pattern('"a"  .b') == ('a', 'b')


def test_a_key_not_followed_by_a_dot_is_refused_naming_the_offset():
    with pytest.raises(ValueError) as err:
        secrets.split_pattern('"a" b')
    assert str(err.value) == '"." expected at offset 4'
