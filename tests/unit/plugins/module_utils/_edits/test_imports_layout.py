# -*- coding: utf-8 -*-
"""Array layouts the generated arrays of test_imports.py do not make:
several entries on one line of a multi-line array. An entry that shares its
line is cut out of the line (its neighbours stay), and a new one joins the
line of the entry it follows. Also: comments, separators, and finding an
entry by any of its spellings.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import (
    ImportsArray,
    insert_raw,
    remove_raw,
)

SHARED = '[\n  "/a.toml", "/b.toml"\n]'


@pytest.mark.parametrize('index, left', [(0, '[\n  "/b.toml"\n]'), (1, '[\n  "/a.toml"\n]')])
def test_an_entry_sharing_its_line_goes_without_its_neighbour(index, left):
    assert remove_raw(SHARED, index) == left


@pytest.mark.parametrize('index, grown', [
    (0, '[\n  "/x.toml", "/a.toml", "/b.toml"\n]'),
    (1, '[\n  "/a.toml", "/x.toml", "/b.toml"\n]'),
    (2, '[\n  "/a.toml", "/b.toml", "/x.toml"\n]'),
])
def test_a_new_entry_joins_the_shared_line_and_goes_again_without_a_trace(index, grown):
    assert insert_raw(SHARED, index, '"/x.toml"') == grown
    assert remove_raw(grown, index) == SHARED


@pytest.mark.parametrize('raw, appended', [
    # the last entry's comment stays on its line; the comma goes before it
    ('[\n  "/a.toml" # nydus\n]', '[\n  "/a.toml", # nydus\n  "/x.toml"\n]'),
    # blanks around a comma (one space, a tab) still make an entry's own line
    ('[\n  "/a.toml" , # nydus\n  "/b.toml"\t# kata\n]',
     '[\n  "/a.toml" , # nydus\n  "/b.toml",\t# kata\n  "/x.toml"\n]'),
    ('[\n  "/a.toml"\t,\t# nydus\n  "/b.toml" # kata\n]',
     '[\n  "/a.toml"\t,\t# nydus\n  "/b.toml", # kata\n  "/x.toml"\n]'),
])
def test_an_entry_appended_after_commented_lines_gets_its_own_line(raw, appended):
    last = raw.count('.toml"')
    assert insert_raw(raw, last, '"/x.toml"') == appended
    assert remove_raw(appended, last) == raw


@pytest.mark.parametrize('raw, grown', [
    ('["/a.toml","/b.toml"]', '["/a.toml","/b.toml","/x.toml"]'),
    ("['/a.toml' , '/b.toml']", "['/a.toml' , '/b.toml' , \"/x.toml\"]"),
    # the separator of the first pair on one line, not the line break of a multi-line array
    ('[\n  "/a.toml",\n  "/b.toml",   "/c.toml"\n]', '[\n  "/a.toml",\n  "/b.toml",   "/c.toml",   "/x.toml"\n]'),
])
def test_an_entry_added_on_a_line_is_separated_as_the_file_separates_its_entries(raw, grown):
    last = raw.count('.toml')
    assert insert_raw(raw, last, '"/x.toml"') == grown
    assert remove_raw(grown, last) == raw


@pytest.mark.parametrize('raw, grown', [
    ('[  # drop-ins\n]', '[  # drop-ins\n  "/x.toml",\n]'),
    ('[#\n]', '[#\n  "/x.toml",\n]'),
    ('[\n  # none yet\n  ]', '[\n  # none yet\n    "/x.toml",\n  ]'),
])
def test_the_first_entry_of_an_array_of_comments_gets_a_line_before_the_bracket(raw, grown):
    # the comments stay whole (the entry never lands inside one), and removing the entry gives the text back
    assert insert_raw(raw, 0, '"/x.toml"') == grown
    assert remove_raw(grown, 0) == raw


@pytest.mark.parametrize('raw, left', [
    ('[ "/a.toml" ]', '[]'),
    ('[ "/a.toml", ]', '[]'),
    ("['/a.toml',]", '[]'),
    ('["/a.toml", # nydus\n]', '[ # nydus\n]'),   # the comment after the comma stays whole
])
def test_the_last_entry_of_a_one_line_array_leaves_an_empty_array(raw, left):
    assert remove_raw(raw, 0) == left


def test_an_entry_is_found_by_any_spelling_containerd_reads_the_same(tmp_path):
    doc = ConfigDocument(os.path.join(str(tmp_path), 'config.toml'),
                         'version = 2\nimports = ["conf.d/a.toml", "/etc/containerd/b.toml"]\n')
    arr = ImportsArray(doc)
    # a relative entry is keyed by the path containerd resolves it to (beside config.toml)
    assert arr.keys() == [os.path.join(str(tmp_path), 'conf.d', 'a.toml'), '/etc/containerd/b.toml']


@pytest.mark.parametrize('text, grown', [
    # the quoting most entries use; a tie goes to basic strings
    ('version = 2\nimports = ["/a.toml"]\n', 'version = 2\nimports = ["/a.toml", "/x.toml"]\n'),
    ("version = 2\nimports = ['/a.toml']\n", "version = 2\nimports = ['/a.toml', '/x.toml']\n"),
    ("version = 2\nimports = ['/a.toml', \"/b.toml\"]\n", "version = 2\nimports = ['/a.toml', \"/b.toml\", \"/x.toml\"]\n"),
    ("version = 2\nimports = ['/a.toml', '/b.toml', \"/c.toml\"]\n",
     "version = 2\nimports = ['/a.toml', '/b.toml', \"/c.toml\", '/x.toml']\n"),
    # no entries to go by: the file's own style (containerd 2.x writes literal strings)
    ("version = 3\nroot = '/var/lib/containerd'\nimports = []\n",
     "version = 3\nroot = '/var/lib/containerd'\nimports = ['/x.toml']\n"),
    ('version = 3\nroot = "/var/lib/containerd"\nimports = []\n',
     'version = 3\nroot = "/var/lib/containerd"\nimports = ["/x.toml"]\n'),
])
def test_a_new_entry_is_quoted_as_the_file_quotes_its_entries(tmp_path, text, grown):
    doc = ConfigDocument(os.path.join(str(tmp_path), 'config.toml'), text)
    arr = ImportsArray(doc)
    arr.insert(len(arr.entries), '/x.toml')
    assert doc.text == grown


@pytest.mark.parametrize('raw', [
    '[\n  "/a.toml" , # nydus\n  "/b.toml"\t# kata\n]',
    '[\n  "/a.toml"\t,\t# nydus\n  "/b.toml" # kata\n]',
    '[\n  "/a.toml",   # nydus\n  "/b.toml"\n]',
])
def test_an_entry_inserted_before_a_commented_line_gets_a_line_of_its_own(raw):
    # blanks and a comment after an entry's comma still leave that entry alone on its line
    first = insert_raw(raw, 0, '"/x.toml"')
    assert first == raw.replace('[\n', '[\n  "/x.toml",\n', 1)
    assert remove_raw(first, 0) == raw
