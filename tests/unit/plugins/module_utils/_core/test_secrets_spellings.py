# -*- coding: utf-8 -*-
"""_secrets: the texts a secret value is masked as (its length, its type, its TOML and JSON spellings), and how
a report or a diff is redacted with them."""

import decimal
import json

import pytest
import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets


def config(value_text):
    """A version 3 config whose registry password is value_text (a TOML value as written in the file)."""
    return ("version = 3\n[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n"
            "  username = 'robot'\n  password = %s\n" % value_text)


def noted(value_text):
    return secrets.secret_values(tomlkit.parse(config(value_text)).unwrap())


def test_a_secret_of_four_characters_is_masked_and_one_of_three_is_not():
    # docs/secrets.md: "a secret value of fewer than 4 characters is not masked"
    assert noted('"abcd"') == {'abcd'}
    assert noted('"abc"') == set()
    # the length counts without the blanks around it: "  ab " would mask every "ab"
    assert noted('"  ab "') == set()


@pytest.mark.parametrize('value_text', ['true', 'false'])
def test_a_boolean_secret_is_not_masked_as_true_or_false(value_text):
    """Masking the words True / False would mangle every message and return value of the run."""
    assert noted(value_text) == set()


def test_a_numeric_secret_is_masked_as_its_digits():
    assert noted('12345678') == {'12345678'}
    assert noted('31415.9265') == {'31415.9265'}


def test_a_secret_key_without_a_value_in_plain_data_is_not_masked_as_the_word_none():
    """Plain data (a caller's dicts, not parsed TOML) may hold None: it has no text to mask."""
    data = {'plugins': {'io.containerd.cri.v1.images': {'registry': {'configs': {'reg.example.com': {
        'auth': {'password': None, 'identitytoken': 'token-5678'}}}}}}}
    assert secrets.secret_values(data) == {'token-5678'}


def test_a_value_toml_has_no_type_for_is_masked_as_its_text():
    data = {'plugins': {'io.containerd.cri.v1.images': {'registry': {'configs': {'reg.example.com': {
        'auth': {'password': decimal.Decimal('27182.818')}}}}}}}
    assert secrets.secret_values(data) == {'27182.818'}


def test_a_toml_diff_never_shows_a_secret_with_a_quote_and_a_non_ascii_letter():
    text = config('"p\u00e4\\"ssw\u00f6rd-1"')
    assert 'p\u00e4\\"ssw\u00f6rd-1' in text  # as the file (and so a diff of it) spells it
    redacted = secrets.redact_text(text, secrets.secret_values(tomlkit.parse(text).unwrap()))
    assert 'ssw\u00f6rd' not in redacted
    assert redacted == config('"%s"' % secrets.MASK)


def test_a_json_report_never_shows_a_non_ascii_secret_escaped():
    values = noted('"p\u00e4ssw\u00f6rt-2"')
    report = json.dumps({'msg': 'password set to p\u00e4ssw\u00f6rt-2'})  # ensure_ascii: p\\u00e4ssw\\u00f6rt-2
    assert 'ssw\\u00f6rt-2' in report
    assert secrets.redact_text(report, values) == json.dumps({'msg': 'password set to %s' % secrets.MASK})


def test_a_secret_holding_another_is_masked_whole_not_half():
    values = {'tok-1234', 'tok-1234-long-secret'}
    text = 'old tok-1234-long-secret, new tok-1234'
    assert secrets.redact_text(text, values) == 'old %s, new %s' % (secrets.MASK, secrets.MASK)
    assert secrets.redact({'a': [text]}, values) == {'a': ['old %s, new %s' % (secrets.MASK, secrets.MASK)]}
