# -*- coding: utf-8 -*-
"""What the imports editor refuses, and how: entries that are no path, an
``imports`` that is no array of strings, and array text the splicer cannot read
(a ConfigError naming the file, never a mangled line).

containerd's own parser rejects most of these layouts first, so the splicer's
refusals are reached here by handing it the text (insert_raw, remove_raw) or a
document whose imports line it cannot read.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import (
    ImportsArray,
    apply_imports,
    insert_raw,
    remove_raw,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlLayoutError
from helpers.context import FakeContext


def doc_at(tmp_path, text):
    return ConfigDocument(os.path.join(str(tmp_path), 'config.toml'), text)


def add(tmp_path, text, entries, **kw):
    doc = doc_at(tmp_path, text)
    params = dict(imports=entries, owner='coco', state='present', position='append', require_exists=False,
                  prune_missing=False, allow_plugin_override=False)
    params.update(kw)
    return doc, apply_imports(doc, Ledger(str(tmp_path / 'state'), doc.path), FakeContext(containerd_version=(1, 7)), params)


# ------------------------------------------------------------------ entries
@pytest.mark.parametrize('entry, msg', [
    ('  ', "imports entry '  ' is empty. Fix: give a file path or a glob."),
    ('/etc/containerd/conf.d/a.toml\n[plugins]', "imports entry '/etc/containerd/conf.d/a.toml\\n[plugins]' holds a "
     "control character (a newline?). Fix: give a plain file path or glob."),
    ('/etc/containerd/conf.d/\x7fa.toml', "imports entry '/etc/containerd/conf.d/\\x7fa.toml' holds a control "
     "character (a newline?). Fix: give a plain file path or glob."),
])
def test_an_entry_that_is_no_path_is_refused_before_anything_is_written(tmp_path, entry, msg):
    text = 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n'
    with pytest.raises(ConfigError) as err:
        add(tmp_path, text, ['/etc/containerd/conf.d/*.toml', entry])
    assert str(err.value) == '%s: %s' % (doc_at(tmp_path, text).path, msg)
    assert err.value.given_details() == dict(key='imports')


@pytest.mark.parametrize('line, found', [
    ('imports = "/etc/containerd/conf.d/*.toml"', "'/etc/containerd/conf.d/*.toml'"),
    ('imports = 3', '3'),
])
def test_an_imports_key_that_is_not_an_array_is_refused_with_the_fix(tmp_path, line, found):
    doc = doc_at(tmp_path, 'version = 2\n%s\n' % line)
    with pytest.raises(ConfigError) as err:
        ImportsArray(doc)
    assert str(err.value) == ('%s: "imports" must be an array of file paths, found %s. Nothing was written. Fix: '
                              'write it as imports = ["/etc/containerd/conf.d/*.toml"].' % (doc.path, found))
    assert err.value.given_details() == dict(key='imports')


# ------------------------------------------------------------------ array text the splicer cannot read
@pytest.mark.parametrize('raw, why', [
    ('[1]', 'imports holds a value that is not a string at offset 1'),
    ('["/a.toml" "/b.toml"]', '"," or "]" expected in imports at offset 11'),
    ('["/a.toml"', '"," or "]" expected in imports at offset 10'),
    ('"/a.toml"', 'imports is not an array'),
    # a comment that runs to the end of the text: nothing after it can close the array
    ('[  # drop-ins', 'unterminated imports array'),
    ('["/a.toml"  # nydus', '"," or "]" expected in imports at offset 19'),
])
def test_array_text_that_cannot_be_read_is_refused_not_spliced(raw, why):
    for edit in (lambda: insert_raw(raw, 0, '"/x.toml"'), lambda: remove_raw(raw, 0)):
        with pytest.raises(TomlLayoutError) as err:
            edit()
        assert str(err.value) == why


def test_a_stray_character_on_the_closing_line_still_gets_the_entry_inside_the_brackets():
    # only a comment inside, and the closing line is not blank: the entry goes right before "]"
    assert insert_raw('[  # none yet\n\r]', 0, '"/x.toml"') == '[  # none yet\n\r"/x.toml"]'


@pytest.mark.parametrize('unreadable', ['["/a.toml" "/b.toml"]', '[1]'])
def test_an_imports_line_the_splicer_cannot_read_fails_naming_the_file_and_writes_nothing(tmp_path, unreadable):
    text = 'version = 2\nimports = ["/a.toml", "/b.toml"]\n'
    doc = doc_at(tmp_path, text)
    arr = ImportsArray(doc)
    real = doc.toml.raw_value
    doc.toml.raw_value = lambda path: unreadable if path == ('imports',) else real(path)   # as if misread
    why = ('imports holds a value that is not a string at offset 1' if unreadable == '[1]'
           else '"," or "]" expected in imports at offset 11')
    for do, what in ((lambda: arr.insert(2, '/c.toml'), 'add /c.toml'), (lambda: arr.remove(1), 'remove /b.toml')):
        with pytest.raises(ConfigError) as err:
            do()
        assert str(err.value) == ('%s: cannot %s in "imports" (%s). Nothing was written; please report the layout '
                                  'of the imports line.' % (doc.path, what, why))
        assert err.value.given_details() == dict(key='imports')
    assert doc.text == text


def test_an_imports_key_not_written_as_a_key_line_is_refused(tmp_path):
    doc = doc_at(tmp_path, 'version = 2\nimports = ["/a.toml"]\n')
    doc.toml.find_keyval = lambda path: None   # a layout the text model does not see as a top-level key line
    with pytest.raises(ConfigError) as err:
        ImportsArray(doc)
    assert str(err.value) == ('%s: "imports" is not written as a top-level key line; nodeguard cannot edit it. '
                              'Nothing was written.' % doc.path)
    assert err.value.given_details() == dict(key='imports')
