# -*- coding: utf-8 -*-
"""After a delete, TomlText forgets the parent tables that only the deleted part defined ([a.b.c] alone
defines a and a.b), and keeps every parent something else in the text still defines: the data it promises is
what the edited text parses to."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlText


def _doc(text):
    return TomlText(text, parse_toml(text))


def _edited(doc):
    doc.verify(parse_toml)   # the text parses to the promised data
    return doc.data


@pytest.mark.parametrize('text, delete', [
    ('version = 2\n\n[a.b.c]\n  x = 1\n', lambda doc: doc.delete_table(('a', 'b', 'c'))),
    ('version = 2\na.b.c = 1\n', lambda doc: doc.delete_value(('a', 'b', 'c'))),
], ids=['delete_table', 'delete_value of a dotted key'])
def test_parents_only_the_deleted_part_defined_are_gone(text, delete):
    doc = _doc(text)
    delete(doc)
    data = _edited(doc)
    assert 'a' not in data
    assert data == {'version': 2}


def test_an_emptied_section_removed_takes_its_implicit_parents_along():
    doc = _doc('version = 2\n\n[a.b.c]\n')
    assert doc.remove_empty_section(('a', 'b', 'c'))
    assert _edited(doc) == {'version': 2}


def test_a_parent_with_a_header_of_its_own_stays():
    doc = _doc('version = 2\n\n[a]\n\n[a.b.c]\n  x = 1\n')
    doc.delete_table(('a', 'b', 'c'))
    assert _edited(doc) == {'version': 2, 'a': {}}


def test_a_parent_another_table_still_defines_stays():
    doc = _doc('version = 2\n\n[a.b.c]\n  x = 1\n\n[a.d]\n  y = 2\n')
    doc.delete_table(('a', 'b', 'c'))
    assert _edited(doc) == {'version': 2, 'a': {'d': {'y': 2}}}


def test_a_parent_a_dotted_key_still_defines_stays():
    doc = _doc('version = 2\n\n[a]\n  b.z = 3\n\n[a.b.c]\n  x = 1\n')
    doc.delete_table(('a', 'b', 'c'))
    assert _edited(doc) == {'version': 2, 'a': {'b': {'z': 3}}}
