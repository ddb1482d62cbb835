# -*- coding: utf-8 -*-
"""What the text layer refuses, and how it says so: a line the scanner
cannot read (named by its offset), and edits that TOML or nodeguard cannot
make as a splice (a value over a table, a key inside an inline table, a
section that exists already).  Each refusal leaves the text as it was; the
modules put the message after "cannot <edit> (...)" for the user."""

import pytest

from helpers.common import fixture_text
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    scan,
    set_in,
)


def text_of(text):
    return TomlText(text, parse_toml(text))


INLINE = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
          '  options = { SystemdCgroup = true, extra = { a = 1 } }\n'
          '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.sub]\n    y = 1\n')
RUNC = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes', 'runc')


# ------------------------------------------------------------------ the scanner
@pytest.mark.parametrize('text, message', [
    ('version = 2\na = "x\n', 'unterminated string at offset 16'),
    ('version = 2\na = """x\n', 'unterminated string at offset 16'),
    ('version = 2\na = [1,\n', 'unterminated array or inline table at offset 16'),
    ('version = 2\nx = {a = 1\n', 'unterminated array or inline table at offset 16'),
    ('version = 2\n[plugins\n', 'unterminated table header at offset 12'),
    ('version = 2\n[[proxy]\n', 'unterminated table header at offset 12'),
    ('version = 2\nsnapshotter overlayfs\n', '"=" expected at offset 24'),
])
def test_a_line_the_scanner_cannot_read_is_refused_by_its_offset(text, message):
    with pytest.raises(TomlLayoutError) as exc:
        scan(text)
    assert str(exc.value) == message


# ------------------------------------------------------------------ edits
def test_a_table_cannot_be_set_as_a_value():
    doc = text_of(INLINE)
    with pytest.raises(TomlLayoutError) as exc:
        doc.set_value(RUNC + ('sub',), 1)
    assert str(exc.value) == ('plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.sub is a table or is '
                              'written inline; it cannot be set as a value')
    assert doc.text == INLINE


def test_a_key_inside_an_inline_table_is_left_for_the_user_to_remove():
    doc = text_of(INLINE)
    with pytest.raises(TomlLayoutError) as exc:
        doc.delete_value(RUNC + ('options', 'SystemdCgroup'))
    assert str(exc.value) == ('plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.SystemdCgroup '
                              'is written inside an inline table; remove it by hand')
    assert doc.text == INLINE


def test_deleting_a_key_that_is_not_there_changes_nothing():
    doc = text_of(INLINE)
    assert doc.delete_value(RUNC + ('BinaryName',)) is None
    assert doc.text == INLINE and doc.data == parse_toml(INLINE)


def test_a_section_that_exists_is_not_added_again():
    doc = text_of(INLINE)
    with pytest.raises(TomlLayoutError) as exc:
        doc.add_section(RUNC + ('sub',), [('z', 2)])
    assert str(exc.value) == '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.sub] exists already'
    assert doc.text == INLINE


def test_only_a_table_can_be_copied():
    doc = text_of(INLINE)
    with pytest.raises(TomlLayoutError) as exc:
        doc.copy_table(RUNC + ('sub', 'y'), RUNC[:-1] + ('nvidia',))
    assert str(exc.value) == '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.sub.y] is not a table'
    assert doc.text == INLINE


def test_a_table_nested_in_an_inline_table_is_left_for_the_user_to_remove():
    doc = text_of(INLINE)
    with pytest.raises(TomlLayoutError) as exc:
        doc.delete_table(RUNC + ('options', 'extra'))
    assert str(exc.value) == ('plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options.extra is '
                              'written inline; remove it by hand')
    assert doc.text == INLINE and doc.data == parse_toml(INLINE)


def test_deleting_a_table_that_is_not_there_changes_nothing():
    doc = text_of(INLINE)
    assert doc.delete_table(RUNC[:-1] + ('kata',)) is False
    assert doc.text == INLINE and doc.data == parse_toml(INLINE)


def test_a_key_cannot_be_set_through_an_array():
    data = {'proxy': [{'name': 'a'}]}
    with pytest.raises(TomlLayoutError) as exc:
        set_in(data, ('proxy', 'name'), 'b')
    assert str(exc.value) == 'proxy is not a table (it is an array or a value)'
    assert data == {'proxy': [{'name': 'a'}]}


# ------------------------------------------------------------------ top-level keys
def test_a_top_level_key_of_a_file_of_tables_goes_before_the_first_table():
    src = '# containerd config\n\n[plugins.a]\n  x = 1\n\n[plugins.b]\n  y = 1\n'
    doc = text_of(src)
    assert doc.set_value(('version',), 2) is None
    assert doc.text == '# containerd config\nversion = 2\n\n[plugins.a]\n  x = 1\n\n[plugins.b]\n  y = 1\n'
    doc.verify(parse_toml)
    doc.delete_value(('version',))
    assert doc.text == src


def test_a_top_level_key_of_a_file_of_comments_goes_at_the_end():
    doc = text_of('# nothing here yet\n')
    doc.set_value(('version',), 3)
    assert doc.text == '# nothing here yet\nversion = 3\n'


def test_a_key_inside_an_array_of_tables_is_refused_and_the_text_kept():
    """containerd 2.x's default config has [[...unpack_config]]: setting a key there was a TypeError
    ("list indices must be integers") after the new section had been spliced into the text."""
    src = fixture_text('v3_default.toml')
    doc = text_of(src)
    with pytest.raises(TomlLayoutError) as exc:
        doc.set_value(('plugins', 'io.containerd.transfer.v1.local', 'unpack_config', 'snapshotter'), 'nydus')
    assert str(exc.value) == ('plugins."io.containerd.transfer.v1.local".unpack_config is not a table '
                              '(it is an array or a value)')
    assert doc.text == src and doc.data == parse_toml(src)
