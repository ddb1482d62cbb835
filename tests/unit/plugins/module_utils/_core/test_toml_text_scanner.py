# -*- coding: utf-8 -*-
"""Where the scanner says a key or a value ends, for the spellings TOML
allows and the edges of a file: empty and quote-ended multi-line strings,
backslashes at the end of a string, keys spelled with escapes and raw tabs,
a file that starts with a blank line or ends without a newline.

The raw value the scanner finds is what an owner records to undo a change
(restore_raw puts exactly these bytes back), so each case checks that span
and that the line after it is still read as its own key.
"""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    parse_dotted_key,
    render_value,
    scan,
)


def text_of(text):
    return TomlText(text, parse_toml(text))


# ------------------------------------------------------------------ values
@pytest.mark.parametrize('raw', [
    '""""""',               # an empty multi-line string
    "''''''",
    '"""x\\""""',           # an escaped quote, then the closing quotes
    '"""x""""',             # one quote of content right before the closing quotes
    "'C:\\'",               # a literal string ends at its quote, backslash or not
    '"C:\\\\"',             # an escaped backslash right before the closing quote
    '"say \\"hi\\" twice"',
])
def test_a_string_value_is_read_to_its_closing_quote(raw):
    text = 'a = %s\nb = 1\n' % raw
    doc = text_of(text)
    assert doc.raw_value(('a',)) == raw and doc.raw_value(('b',)) == '1'
    prior = doc.set_value(('a',), 'new')
    assert prior == raw and doc.text.startswith('a = ')
    doc.restore_raw(('a',), prior)
    assert doc.text == text


def test_a_multi_line_string_at_the_very_end_of_a_file_is_read():
    doc = text_of('version = 2\ndescription = """gpu\nnode"""')
    assert doc.raw_value(('description',)) == '"""gpu\nnode"""'
    doc.set_value(('description',), 'cpu node')
    assert doc.text == 'version = 2\ndescription = "cpu node"'


def test_a_string_cut_off_by_the_end_of_the_text_is_refused():
    with pytest.raises(TomlLayoutError) as exc:
        scan('version = 2\na = "x')
    assert str(exc.value) == 'unterminated string at offset 16'


# ------------------------------------------------------------------ lines
def test_a_file_that_starts_with_a_blank_line_is_read_line_by_line():
    text = '\n[plugins.x]\n  a = 1\n'
    assert [(e.kind, e.start, e.end) for e in scan(text)] == [('blank', 0, 1), ('header', 1, 13), ('keyval', 13, 21)]
    doc = text_of(text)
    doc.set_value(('plugins', 'x', 'b'), 2)
    assert doc.text == '\n[plugins.x]\n  a = 1\n  b = 2\n'


# ------------------------------------------------------------------ keys
@pytest.mark.parametrize('key, parts', [
    ('"\\"gpu\\"".b', ('"gpu"', 'b')),       # an escaped quote first
    ('"\\"".b', ('"', 'b')),                 # a key that is one escaped quote
    ('"say \\"hi\\"".b', ('say "hi"', 'b')),
    ("'x'.\"\\u0041\"", ('x', 'A')),         # a literal part before one with an escape
    ("''.\"\\u0041\"", ('', 'A')),           # an empty literal part
    ('"gpu\\u0041"', ('gpuA',)),             # an escape in the last part
    ('"a\tb"."c\\u0041"', ('a\tb', 'cA')),   # a raw tab (JSON refuses it) beside an escape
])
def test_a_dotted_key_with_escapes_reads_as_toml_reads_it(key, parts):
    assert parse_dotted_key(key) == parts
    assert list(parse_toml('%s = 1\n' % key)) == [parts[0]]


@pytest.mark.parametrize('key, message', [
    ('plugins.', 'key expected at offset 8'),
    ('plugins..cri', 'key expected at offset 8'),
    ('plugins.=', 'key expected at offset 8'),
])
def test_a_dotted_key_with_an_empty_part_is_refused_by_offset(key, message):
    with pytest.raises(TomlLayoutError) as exc:
        parse_dotted_key(key)
    assert str(exc.value) == message


def test_a_key_spelled_with_a_raw_tab_and_an_escape_is_edited_in_place():
    text = '[plugins."gpu\tone"."\\u0041"]\n  x = 1\n'
    doc = text_of(text)
    doc.set_value(('plugins', 'gpu\tone', 'A', 'x'), 2)
    assert doc.text == '[plugins."gpu\tone"."\\u0041"]\n  x = 2\n'
    doc.verify(parse_toml)


def test_blanks_after_the_last_line_of_a_file_are_a_blank_entry():
    text = 'version = 2\n[a]\n  x = 1\n  '
    assert [e.kind for e in scan(text)] == ['keyval', 'header', 'keyval', 'blank']
    doc = text_of(text)
    doc.set_value(('a', 'y'), 2)
    assert doc.text == 'version = 2\n[a]\n  x = 1\n  y = 2\n  '


# ------------------------------------------------------------------ keys outside the fast path, comments in arrays, blanks before comments
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
