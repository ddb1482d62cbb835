# -*- coding: utf-8 -*-
"""Values in and out of the text layer: what render_value writes for each
Python type, what plain() makes of every tomlkit item (dates, times and
booleans of older tomlkits included), and when two raw values are the same.

A value nodeguard writes must read back as the same value, and a value it
returns to Ansible must be plain Python (tomlkit's own types break result
serialisation)."""

import datetime

import pytest
import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    parse_raw_value,
    plain,
    raw_values_match,
    render_value,
)


def text_of(text):
    return TomlText(text, parse_toml(text))


# ------------------------------------------------------------------ writing
@pytest.mark.parametrize('value, basic, literal', [
    ({'BinaryName': '/usr/bin/nvidia-container-runtime', 'SystemdCgroup': True},
     '{ BinaryName = "/usr/bin/nvidia-container-runtime", SystemdCgroup = true }',
     "{ BinaryName = '/usr/bin/nvidia-container-runtime', SystemdCgroup = true }"),
    ({'io.containerd.runc.v2': {}}, '{ "io.containerd.runc.v2" = {} }', "{ 'io.containerd.runc.v2' = {} }"),
    ({}, '{}', '{}'),
    ([{'a': 1}, {}], '[{ a = 1 }, {}]', '[{ a = 1 }, {}]'),
])
def test_an_inline_table_is_written_in_the_files_quoting(value, basic, literal):
    assert render_value(value) == basic and render_value(value, literal=True) == literal
    assert parse_toml('v = %s\n' % basic) == {'v': value} == parse_toml('v = %s\n' % literal)


def test_a_dict_value_is_set_as_an_inline_table_and_read_back():
    doc = text_of("version = 3\n[plugins.'x']\n  a = 'one'\n")
    doc.set_value(('plugins', 'x', 'labels'), {'team': 'gpu'})
    assert doc.text == "version = 3\n[plugins.'x']\n  a = 'one'\n  labels = { team = 'gpu' }\n"
    doc.verify(parse_toml)


@pytest.mark.parametrize('value, name', [(None, 'NoneType'), (datetime.date(2024, 1, 2), 'date'), (b'x', 'bytes')])
def test_a_value_toml_cannot_hold_as_written_is_refused_by_type(value, name):
    with pytest.raises(TomlLayoutError) as exc:
        render_value(value)
    assert str(exc.value) == 'cannot write a value of type %s' % name


# ------------------------------------------------------------------ reading
@pytest.mark.parametrize('raw, value', [
    ('1979-05-27', datetime.date(1979, 5, 27)),
    ('07:32:00.5', datetime.time(7, 32, 0, 500000)),
    ('1979-05-27T07:32:00', datetime.datetime(1979, 5, 27, 7, 32)),
    ('true', True),
    ("'x'", 'x'),
])
def test_a_raw_value_reads_as_plain_python(raw, value):
    got = parse_raw_value(raw)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize('item, value', [
    (tomlkit.item(True), True),
    (tomlkit.item(False), False),
    (tomlkit.parse('d = 1979-05-27')['d'], datetime.date(1979, 5, 27)),
    (tomlkit.parse('t = 07:32:00')['t'], datetime.time(7, 32)),
])
def test_tomlkit_items_become_plain_python(item, value):
    got = plain(item)
    assert got == value and type(got) is type(value)


class Wrapper(object):
    """An item that holds its value (as tomlkit < 0.11's items do)."""

    def __init__(self, value):
        self.value = value


def test_an_item_that_wraps_its_value_is_unwrapped():
    assert plain(Wrapper(7)) == 7 and plain(Wrapper(Wrapper('x'))) == 'x'


@pytest.mark.parametrize('item, name', [(object(), 'object'), (Wrapper(None), 'Wrapper'), (None, 'NoneType')])
def test_a_value_of_no_toml_type_is_refused_by_its_type(item, name):
    with pytest.raises(TomlLayoutError) as exc:
        plain(item)
    assert str(exc.value) == 'cannot read a TOML value of type %s' % name


def test_an_item_that_is_its_own_value_is_refused_not_looped_on():
    class Selfish(object):
        @property
        def value(self):
            return self
    with pytest.raises(TomlLayoutError) as exc:
        plain(Selfish())
    assert str(exc.value) == 'cannot read a TOML value of type Selfish'


# ------------------------------------------------------------------ comparing
@pytest.mark.parametrize('a, b, same', [
    ('"runc"', "'runc'", True),          # the same string in the other quoting
    ('1', '1', True),
    ('1', '1.0', False),                 # 1 is not 1.0 to containerd
    ('true', '1', False),
    ('1', None, False),                  # a key against no key
    (None, '1', False),
    (None, None, True),
    ('1', '[', False),                   # a value that does not parse is no match
    ('[1, 2]', '[1,2]', True),
])
def test_raw_values_match_when_they_hold_the_same_value_of_the_same_type(a, b, same):
    assert raw_values_match(a, b) is same
