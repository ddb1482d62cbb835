# -*- coding: utf-8 -*-
"""The text layer's edge cases, each from a real file's habits: keys spelled
with spaces and escapes, arrays of tables, multi-line strings that end in
quotes or backslashes, trailing blanks and CRLF lines, literal-string files
and indented headers.

test_toml_text.py checks edits against round trips; these pin how the scanner
reads each spelling, so an edit lands where the file has the key.
"""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    _parse_key,
    skip_string,
    scan,
)


def text_of(text):
    return TomlText(text, parse_toml(text))


# ------------------------------------------------------------------ keys
def test_a_header_spelled_with_spaces_quotes_and_escapes():
    text = '[ plugins . "io.containerd.grpc.v1.cri" . \'x.y\' . "a\\"b" ]\n'
    header = scan(text)[0]
    assert header.path == ('plugins', 'io.containerd.grpc.v1.cri', 'x.y', 'a"b')
    assert header.raw_parts == ('plugins', '"io.containerd.grpc.v1.cri"', "'x.y'", '"a\\"b"')


def test_a_quoted_key_ends_at_its_own_quote():
    parts, raws, pos = _parse_key('"a" = 1', 0)
    assert (parts, raws, pos) == (('a',), ('"a"',), 4)  # at the '=', after the blank
    with pytest.raises(TomlLayoutError):
        _parse_key('"a\n" = 1', 0)


def test_each_array_of_tables_element_has_its_own_path():
    text = '[[proxy]]\n  name = "a"\n[[proxy]]\n  name = "b"\n[[other]]\n'
    assert [e.path for e in scan(text) if e.kind == 'header'] == [('proxy', '[0]'), ('proxy', '[1]'),
                                                                  ('other', '[0]')]


# ------------------------------------------------------------------ strings
@pytest.mark.parametrize('text, end', [
    ('"""ab\\"""cd""" = 1', 14),     # an escaped quote run is content
    ('"""ab\\\\""" = 1', 10),        # an escaped backslash: the quotes close
    ('"""a""""" = 1', 9),            # up to two quotes before the close belong to the content
    ("'''a\\''' = 1", 8),            # no escapes in literal strings
])
def test_a_multi_line_string_ends_where_toml_says(text, end):
    assert skip_string(text, 0) == end


# ------------------------------------------------------------------ line ends
def test_a_bare_value_ends_before_trailing_blanks_and_the_cr():
    text = 'a = 12 \t\r\nb = true\r\n'
    entries = [e for e in scan(text) if e.kind == 'keyval']
    assert [text[e.value_start:e.value_end] for e in entries] == ['12', 'true']


def test_text_after_a_value_that_is_no_comment_is_refused():
    for text in ('a = "x" y\n', '[a] y\n'):
        with pytest.raises(TomlLayoutError):
            scan(text)
    assert [e.kind for e in scan('a = 1 # one\n')] == ['keyval']


def test_a_file_of_lf_lines_gets_lf_lines_even_with_one_crlf():
    doc = text_of('a = 1\r\nb = 2\n')
    doc.set_value(('c',), 3)
    assert doc.text == 'a = 1\r\nb = 2\nc = 3\n'


def test_a_crlf_file_gets_crlf_lines_and_loses_them_whole():
    original = 'a = 1\r\nb = 2'
    doc = text_of(original)
    doc.set_value(('c',), 3)
    assert doc.text == 'a = 1\r\nb = 2\r\nc = 3'
    doc.delete_value(('c',))
    assert doc.text == original


# ------------------------------------------------------------------ the file's style
def test_a_file_of_literal_strings_gets_literal_strings():
    doc = text_of("[a]\n  x = 'one'\n  y = 'two'\n  z = \"three\"\n")
    assert doc.literal_style() is True
    doc.set_value(('a', 'w'), 'four')
    assert "w = 'four'" in doc.text


def test_a_file_of_basic_strings_gets_basic_strings():
    doc = text_of('[a]\n  x = "one"\n  y = \'two\'\n  z = "three"\n')
    assert doc.literal_style() is False


def test_a_nested_header_is_indented_under_its_nearest_ancestor():
    doc = text_of('[a]\n  x = 1\n  [a.b]\n    y = 1\n')
    assert doc._header_indent(('a', 'b', 'c', 'd')) == '    ' + '  '
    assert doc._header_indent(('a', 'q')) == '  '
    assert text_of('[a]\nx = 1\n')._header_indent(('a', 'b', 'c')) == ''


def test_a_new_path_reuses_the_longest_spelled_prefix():
    doc = text_of("[plugins.'io.containerd.grpc.v1.cri']\n  x = 1\n[plugins.'io.containerd.grpc.v1.cri'.containerd]\n"
                  "  y = 1\n")
    assert doc.render_path(('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes')) == \
        "plugins.'io.containerd.grpc.v1.cri'.containerd.runtimes"


def test_a_new_key_goes_after_the_sections_last_key_past_blank_lines_and_comments():
    doc = text_of('[a]\n  x = 1\n\n  # the second\n  y = 2\n\n[b]\n  z = 1\n')
    doc.set_value(('a', 'w'), 3)
    assert doc.text == '[a]\n  x = 1\n\n  # the second\n  y = 2\n  w = 3\n\n[b]\n  z = 1\n'


def test_a_header_with_only_a_distant_ancestor_is_indented_by_its_depth():
    doc = text_of('[a]\n  x = 1\n  [a.b]\n    y = 1\n')
    assert doc._header_indent(('a', 'q', 'r')) == '    '


def test_the_first_spelling_of_a_prefix_wins():
    doc = text_of('[plugins."cri"]\n  x = 1\n[plugins.\'cri\'.other]\n  y = 1\n')
    assert doc.render_path(('plugins', 'cri', 'new')) == 'plugins."cri".new'


# ---------------------------------------------------------------- literal keys, and what an entry says it is
def test_a_literal_key_is_single_quoted_when_it_can_be():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import render_key
    assert render_key('io.containerd.grpc.v1.cri', literal=True) == "'io.containerd.grpc.v1.cri'"
    assert render_key('io.containerd.grpc.v1.cri') == '"io.containerd.grpc.v1.cri"'
    assert render_key("it's", literal=True) == '"it\'s"'
    assert render_key('del\x7f', literal=True) == '"del\\u007f"'
    assert render_key('runc', literal=True) == 'runc'


def test_a_literal_key_that_runs_past_its_line_is_refused():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlLayoutError, _parse_key
    with pytest.raises(TomlLayoutError) as exc:
        _parse_key("'a\nb' = 1\n", 0)
    assert 'unterminated key at offset 0' in str(exc.value)


def test_an_entry_says_what_it_is():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import scan
    entry = [e for e in scan('[a]\nb = 1\n') if e.kind == 'keyval'][0]
    assert repr(entry) == "Entry(keyval, ('a', 'b'), 4-10)"
