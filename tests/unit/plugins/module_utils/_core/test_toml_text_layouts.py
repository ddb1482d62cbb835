# -*- coding: utf-8 -*-
"""Where an edit lands and how it looks, in the layouts real files have:
the file's key indent (4 spaces, tabs, none), nested headers, a parent
added after its children, a new sibling after the last one with the same
blank lines, tables written with dotted keys, CRLF files, and what goes
when a table is deleted (its sections, its dotted keys elsewhere, the
parents nothing defines any more).

Each case checks the whole text after the edit and that it parses to the
data the edit promised (verify)."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    render_key,
    render_value,
)


def text_of(text):
    return TomlText(text, parse_toml(text))


def checked(doc):
    doc.verify(parse_toml)
    return doc.text


# ------------------------------------------------------------------ the file's indent
def test_a_new_section_takes_the_files_most_common_key_indent():
    doc = text_of('version = 2\n[plugins]\n    [plugins.a]\n        x = 1\n        y = 2\n'
                  '    [plugins.b]\n      z = 1\n')
    doc.add_section(('plugins', 'c'), [('k', 1)])
    assert checked(doc).endswith('    [plugins.b]\n      z = 1\n    [plugins.c]\n        k = 1\n')


def test_a_new_nested_header_is_indented_two_spaces_past_its_nearest_ancestor():
    doc = text_of('[plugins]\n    [plugins.cri]\n        x = 1\n')
    doc.add_section(('plugins', 'cri', 'containerd'), [('k', 1)])
    assert checked(doc) == '[plugins]\n    [plugins.cri]\n        x = 1\n      [plugins.cri.containerd]\n          k = 1\n'


@pytest.mark.parametrize('src, added', [
    ('version = 2\n', 'version = 2\n\n[plugins.x]\nk = 1\n'),                    # no indent anywhere
    ('[[proxy]]\n  name = "a"\n', '[[proxy]]\n  name = "a"\n\n[plugins.x]\n  k = 1\n'),  # only [[...]] keys
    ('', '[plugins.x]\nk = 1\n'),                                              # an empty file
    ('\n', '[plugins.x]\nk = 1\n\n'),                                          # a file of a blank line
])
def test_a_file_without_indented_tables_gets_its_own_habit(src, added):
    doc = text_of(src)
    doc.add_section(('plugins', 'x'), [('k', 1)])
    assert checked(doc) == added


def test_a_key_of_an_empty_section_is_indented_under_its_header():
    doc = text_of('version = 2\n[a]\n  x = 1\n  [a.b]\n  [a.c]\n    y = 1\n')
    doc.set_value(('a', 'b', 'k'), 1)
    assert checked(doc) == 'version = 2\n[a]\n  x = 1\n  [a.b]\n    k = 1\n  [a.c]\n    y = 1\n'


# ------------------------------------------------------------------ the file's spelling
def test_a_new_path_keeps_the_spelling_of_a_prefix_after_top_level_keys():
    """Quoting follows the file's habit (here '...'), but a prefix the file spells is reused as spelled."""
    doc = text_of("version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\n  a = 'x'\n  b = 'y'\n")
    doc.add_section(('plugins', 'io.containerd.cri.v1.runtime', 'containerd'), [('k', 'v')])
    assert checked(doc).endswith("\n[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n  k = 'v'\n")


@pytest.mark.parametrize('src, path, header', [
    ('version = 2\n[metrics]\n  address = ""\n', ('plugins', 'x'), '[plugins.x]'),
    ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  x = 1\n', ('plugins', 'io.containerd.monitor.v1.cgroups'),
     '[plugins."io.containerd.monitor.v1.cgroups"]'),
])
def test_a_new_path_takes_only_the_prefix_it_shares(src, path, header):
    doc = text_of(src)
    doc.add_section(path, [('k', 1)])
    assert header + '\n' in checked(doc)


@pytest.mark.parametrize('src, single', [
    ("[plugins.'a.b']\n  x = 1\n", True),                 # a quoted key counts
    ("[plugins.'a.b']\n  x = \"v\"\n", False),            # a tie: basic strings
    ("[plugins.\"a.b\"]\n  x = 'v'\n", False),
    ("[plugins.\"a.b\"]\n  x = 'v'\n  y = 'w'\n", True),
])
def test_the_files_quoting_is_what_most_keys_and_strings_use(src, single):
    doc = text_of(src)
    doc.set_value(('plugins', 'a.b', 'new'), 'n')
    assert ("new = 'n'" if single else 'new = "n"') in checked(doc)


def test_a_replaced_string_keeps_its_own_quotes_and_a_new_one_takes_the_files():
    doc = text_of("version = 3\n[a]\n  x = 'one'\n  y = 'two'\n  z = \"three\"\n  n = 1\n")
    doc.set_value(('a', 'z'), 'four')
    doc.set_value(('a', 'n'), 'five')
    assert checked(doc) == "version = 3\n[a]\n  x = 'one'\n  y = 'two'\n  z = \"four\"\n  n = 'five'\n"


def test_literal_quotes_are_used_for_blanks_but_never_for_del():
    assert render_key('gpu runtime', literal=True) == "'gpu runtime'"
    assert render_value('a b', literal=True) == "'a b'"
    assert render_value('del\x7f', literal=True) == '"del\\u007f"'


def test_non_ascii_text_is_written_as_itself():
    assert render_value(u'\u00e9t\u00e9') == u'"\u00e9t\u00e9"' and render_key(u'\u00e9') == u'"\u00e9"'


def test_a_value_written_without_blanks_around_the_equals_sign_is_replaced_in_place():
    doc = text_of('version = 2\n[a]\n  SystemdCgroup=false\n')
    assert doc.set_value(('a', 'SystemdCgroup'), True) == 'false'
    assert checked(doc) == 'version = 2\n[a]\n  SystemdCgroup=true\n'


# ------------------------------------------------------------------ setting values
def test_the_same_value_spelled_otherwise_is_left_as_written():
    doc = text_of('version = 2\n[grpc]\n  max_recv_message_size = 16_777_216\n  uid = 1\n')
    assert doc.set_value(('grpc', 'max_recv_message_size'), 16777216) == '16_777_216'
    assert doc.set_value(('grpc', 'uid'), True) == '1'   # 1 is not true to containerd
    assert checked(doc) == 'version = 2\n[grpc]\n  max_recv_message_size = 16_777_216\n  uid = true\n'


def test_a_key_of_a_table_written_with_dotted_keys_goes_after_the_last_of_them():
    doc = text_of('version = 2\n[p]\n  c.a = 1\n  c.b = 2\n  c.d = 3\n  other = 4\n')
    doc.set_value(('p', 'c', 'e'), 5)
    assert checked(doc) == 'version = 2\n[p]\n  c.a = 1\n  c.b = 2\n  c.d = 3\n  c.e = 5\n  other = 4\n'


def test_a_top_level_key_goes_right_after_the_last_one_before_comments():
    doc = text_of('version = 2\n# the plugins\n\n[a]\n  x = 1\n')
    doc.set_value(('root',), '/var/lib/containerd')
    assert checked(doc) == 'version = 2\nroot = "/var/lib/containerd"\n# the plugins\n\n[a]\n  x = 1\n'


def test_a_top_level_key_goes_before_the_blank_lines_that_open_the_file():
    doc = text_of('\n[a]\n  x = 1\n\n')
    doc.set_value(('version',), 2)
    assert checked(doc) == 'version = 2\n\n[a]\n  x = 1\n\n'


def test_a_deleted_key_is_put_back_as_it_was_written():
    src = 'version = 2\n[r.runc]\n  a = 1\n  b = 0x10\n'
    doc = text_of(src)
    prior = doc.delete_value(('r', 'runc', 'b'))
    assert prior == '0x10' and doc.raw_value(('r', 'runc', 'b')) is None
    doc.restore_raw(('r', 'runc', 'b'), prior)
    assert checked(doc) == src


@pytest.mark.parametrize('src', ['\nb = 2', '\r\nb = 2'])
def test_the_only_key_of_an_unterminated_file_goes_with_the_line_end_before_it(src):
    doc = text_of(src)
    doc.delete_value(('b',))
    assert checked(doc) == ''


# ------------------------------------------------------------------ where a section goes
RUNTIMES = ('version = 2\n[r]\n\n[r.runc]\n  a = 1\n  [r.runc.options]\n    b = 1\n\n[r.crun]\n  a = 2\n\n'
            '[metrics]\n  x = 1\n')


@pytest.mark.parametrize('path, after, text', [
    # a sibling goes after the last one, with the blank line the siblings have
    (('r', 'kata'), '[r.crun]\n  a = 2\n', '\n[r.kata]\n  a = 3\n'),
    # a child goes after its parent's last sub-table, not after the grandparent's
    (('r', 'runc', 'extra'), '    b = 1\n', '  [r.runc.extra]\n    a = 3\n'),
    (('r', 'runc', 'options', 'deep', 'x'), '    b = 1\n', '      [r.runc.options.deep.x]\n        a = 3\n'),
])
def test_a_new_section_goes_after_its_nearest_relatives(path, after, text):
    doc = text_of(RUNTIMES)
    doc.add_section(path, [('a', 3)])
    at = RUNTIMES.index(after) + len(after)
    assert checked(doc) == RUNTIMES[:at] + text + RUNTIMES[at:]


def test_a_parent_added_after_its_children_goes_before_the_first_child():
    doc = text_of('version = 2\n\n[a.b]\n  x = 1\n\n[a.c]\n  y = 1\n')
    doc.add_section(('a',), [('z', 1)])
    assert checked(doc) == 'version = 2\n\n[a]\n  z = 1\n\n[a.b]\n  x = 1\n\n[a.c]\n  y = 1\n'


@pytest.mark.parametrize('path', [('opts', 'sub'), ('x', 'inl', 'sub'), ('x', 'inl', 'b', 'sub'), ('x', 'inl', 'q', 'r')])
def test_a_section_inside_an_inline_table_is_refused_with_the_fix(path):
    src = 'version = 2\nopts = { a = 1 }\n[x]\n  inl = { b = { c = 1 } }\n'
    doc = text_of(src)
    with pytest.raises(TomlLayoutError) as exc:
        doc.add_section(path, [('k', 1)])
    table = '.'.join(path[:1] if path[0] == 'opts' else path[:2])
    assert str(exc.value) == ('%s is written as an inline table ({ ... }), which TOML cannot extend with [%s]; nodeguard '
                              'edits only [table] sections. Fix: rewrite %s as [sections] by hand (one [..] header per '
                              'table), then run again' % (table, '.'.join(path), table))
    assert doc.text == src


# ------------------------------------------------------------------ copying
def test_a_table_is_copied_with_its_blank_lines_in_a_crlf_file_and_deleted_again():
    src = 'version = 2\r\n\r\n[r.runc]\r\n  a = 1\r\n\r\n  [r.runc.options]\r\n    b = 1\r\n'
    doc = text_of(src)
    doc.copy_table(('r', 'runc'), ('r', 'nvidia'))
    assert checked(doc) == src + '\r\n[r.nvidia]\r\n  a = 1\r\n\r\n  [r.nvidia.options]\r\n    b = 1\r\n'
    assert doc.delete_table(('r', 'nvidia')) is True
    assert checked(doc) == src


DOTTED = 'version = 2\n[p]\n  r.runc.type = "x"\n  r.runc.options.b = 1\n  r.runc.options.c = "s"\n'


def test_a_table_written_with_dotted_keys_is_copied_as_sections():
    doc = text_of(DOTTED)
    doc.copy_table(('p', 'r', 'runc'), ('p', 'r', 'nvidia'))
    assert checked(doc) == DOTTED + '[p.r.nvidia]\n  type = "x"\n\n[p.r.nvidia.options]\n  b = 1\n  c = "s"\n'


# ------------------------------------------------------------------ deleting
def test_a_table_written_with_dotted_keys_is_deleted_line_by_line():
    doc = text_of(DOTTED)
    assert doc.delete_table(('p', 'r', 'runc')) is True
    assert checked(doc) == 'version = 2\n[p]\n'


@pytest.mark.parametrize('src, left', [
    # sections that stand together go as one block, the comment between them too
    ('version = 2\n[r.runc]\n  a = 1\n# options follow\n[r.runc.options]\n  b = 1\n[r.kata]\n  a = 2\n',
     'version = 2\n[r.kata]\n  a = 2\n'),
    ('version = 2\n[r.runc]\n  a = 1\n\n[r.runc.x]\n  b = 1\n\n[r.runc.y]\n  c = 1\n\n[z]\n', 'version = 2\n\n[z]\n'),
    # sections with another table between them go one by one; the other table stays
    ('version = 2\n[r.runc]\n  a = 1\n\n[other]\n  o = 1\n\n[r.runc.options]\n  b = 1\n',
     'version = 2\n\n[other]\n  o = 1\n'),
    ('version = 2\n[r.runc]\n  a = 1\n[r.runc.x]\n  b = 1\n[other]\n  o = 1\n[r.runc.y]\n  c = 1\n',
     'version = 2\n[other]\n  o = 1\n'),
    ('version = 2\n[r.runc]\n  a = 1\n[other]\n  o = 1\n[r.runc.x]\n  b = 1\n[r.runc.y]\n  c = 1\n',
     'version = 2\n[other]\n  o = 1\n'),
    ('version = 2\n[r.runc]\n  a = 1\n[other]\n[r.runc.options]\n  b = 1\n', 'version = 2\n[other]\n'),
    # an empty section, and one right before another table
    ('version = 2\n[r.runc]\n[r.kata]\n  a = 1\n', 'version = 2\n[r.kata]\n  a = 1\n'),
    ('version = 2\n[r.runc]\n  a = 1\n# options follow\n[r.runc.options]\n[r.kata]\n', 'version = 2\n[r.kata]\n'),
])
def test_a_deleted_table_takes_its_sections_and_nothing_else(src, left):
    doc = text_of(src)
    assert doc.delete_table(('r', 'runc')) is True
    assert checked(doc) == left


@pytest.mark.parametrize('src, path, data', [
    ('version = 2\n[a.b.c]\n  x = 1\n', ('a', 'b', 'c'), {'version': 2}),
    ('version = 2\n[a.b.c.d]\n  x = 1\n[a.e]\n  y = 1\n', ('a', 'b', 'c', 'd'), {'version': 2, 'a': {'e': {'y': 1}}}),
    ('version = 2\n[a]\n[a.b]\n  x = 1\n', ('a', 'b'), {'version': 2, 'a': {}}),   # [a] itself stays
])
def test_a_deleted_table_takes_the_parents_only_it_defined(src, path, data):
    doc = text_of(src)
    doc.delete_table(path)
    doc.verify(parse_toml)
    assert doc.data == data


def test_an_empty_section_header_is_removed_and_its_sub_tables_stay():
    src = 'version = 2\n[a]\n\n[a.b]\n  x = 1\n[c]\n  y = 1\n[e]\n'
    doc = text_of(src)
    assert doc.remove_empty_section(('a',)) is True
    assert doc.remove_empty_section(('c',)) is False       # it holds a key
    assert doc.remove_empty_section(('zz',)) is False      # there is no such section
    assert checked(doc) == 'version = 2\n\n[a.b]\n  x = 1\n[c]\n  y = 1\n[e]\n'
    assert doc.remove_empty_section(('e',)) is True
    assert checked(doc) == 'version = 2\n\n[a.b]\n  x = 1\n[c]\n  y = 1\n'
    assert doc.data == {'version': 2, 'a': {'b': {'x': 1}}, 'c': {'y': 1}}
