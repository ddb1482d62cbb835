# -*- coding: utf-8 -*-
"""The text scanner's details the mutation run found untested: a key outside the fast path, a comment inside
an array, the blanks between a value and its comment, a value right after "=", and render_value's default."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlText, render_value, scan


def doc(text):
    return TomlText(text, parse_toml(text))


def test_a_quoted_key_with_an_escape_is_read_by_the_careful_loop():
    text = '"a\\u0041b" = 1\n'
    (entry,) = [e for e in scan(text) if e.kind == 'keyval']
    assert entry.path == ('aAb',) and entry.raw_parts == ('"a\\u0041b"',)
    d = doc(text)
    d.set_value(('aAb',), 2)
    assert d.text == '"a\\u0041b" = 2\n'
    d.verify(parse_toml)


def test_a_comment_inside_an_array_is_part_of_its_value():
    text = 'a = [\n  1, # one\n  2,\n]\nb = 3\n'
    keyvals = [e for e in scan(text) if e.kind == 'keyval']
    assert [e.path for e in keyvals] == [('a',), ('b',)]
    assert text[keyvals[0].value_start:keyvals[0].value_end] == '[\n  1, # one\n  2,\n]'


def test_a_new_value_keeps_the_blanks_before_the_comment():
    d = doc('a = 1   # one\nb = "x"\t# two\n')
    d.set_value(('a',), 20)
    d.set_value(('b',), 'y')
    assert d.text == 'a = 20   # one\nb = "y"\t# two\n'
    d.verify(parse_toml)


def test_a_value_written_right_after_the_equals_sign():
    d = doc('a =10\nb ="xy"\n')
    assert d.set_value(('a',), 20) == '10'
    assert d.set_value(('b',), 'z') == '"xy"'
    assert d.text == 'a =20\nb ="z"\n'
    d.verify(parse_toml)


def test_render_value_writes_a_basic_string_unless_told_literal():
    assert render_value('/etc/cdi') == '"/etc/cdi"'
    assert render_value(['a', {'k': 'v'}]) == '["a", { k = "v" }]'
    assert render_value('/etc/cdi', True) == "'/etc/cdi'"
