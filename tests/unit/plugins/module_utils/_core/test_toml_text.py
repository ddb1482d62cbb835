# -*- coding: utf-8 -*-
"""The format-preserving editor: every edit is a splice, every undo restores bytes."""

import pytest
import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    parse_dotted_key,
    render_key,
    render_value,
    scan,
)


def parse(text):
    return tomlkit.parse(text).unwrap()


def doc(text):
    return TomlText(text, parse(text))


STYLES = {
    'indented': (
        'version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n'
        '    [plugins."io.containerd.grpc.v1.cri".containerd]\n      default_runtime_name = "runc"\n'
        '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
        '        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
        '          runtime_type = "io.containerd.runc.v2"  # the default\n'
        '          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
        '            SystemdCgroup = true\n\n# comment that belongs to [metrics]\n[metrics]\n  address = ""\n'),
    'flat': (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\nSystemdCgroup = true\n'),
    'crlf': (
        'version = 2\r\n\r\n[plugins."io.containerd.grpc.v1.cri".containerd]\r\n  default_runtime_name = "runc"\r\n'
        '\r\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\r\n'
        '  runtime_type = "io.containerd.runc.v2"\r\n'),
    'dotted': (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  containerd.default_runtime_name = "runc"\n'
        '  containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'),
    'no-final-newline': (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"'),
}
CTD = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd')


@pytest.mark.parametrize('style', sorted(STYLES))
def test_add_runtime_and_remove_gives_original_bytes(style):
    src = STYLES[style]
    d = doc(src)
    d.add_section(CTD + ('runtimes', 'kata'), [('runtime_type', 'io.containerd.kata.v2')])
    d.set_value(CTD + ('runtimes', 'kata', 'options', 'ConfigPath'), '/opt/kata/c.toml')
    prior = d.set_value(CTD + ('default_runtime_name',), 'kata')
    d.verify(parse)
    assert parse(d.text)['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']['kata'] == {
        'runtime_type': 'io.containerd.kata.v2', 'options': {'ConfigPath': '/opt/kata/c.toml'}}
    d.restore_raw(CTD + ('default_runtime_name',), prior)
    d.delete_table(CTD + ('runtimes', 'kata'))
    d.verify(parse)
    assert d.text == src


@pytest.mark.parametrize('style', ['indented', 'flat'])
def test_copy_table_keeps_comments_and_style(style):
    src = STYLES[style]
    d = doc(src)
    d.copy_table(CTD + ('runtimes', 'runc'), CTD + ('runtimes', 'nvidia'))
    d.verify(parse)
    nv = parse(d.text)['plugins']['io.containerd.grpc.v1.cri']['containerd']['runtimes']['nvidia']
    assert nv['options']['SystemdCgroup'] is True
    if style == 'indented':
        assert '          runtime_type = "io.containerd.runc.v2"  # the default\n' \
               '          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]' in d.text
        # the comment before [metrics] stays with [metrics]
        assert d.text.endswith('\n# comment that belongs to [metrics]\n[metrics]\n  address = ""\n')
    d.delete_table(CTD + ('runtimes', 'nvidia'))
    assert d.text == src


def test_new_key_goes_after_last_key_not_after_trailing_comment():
    d = doc(STYLES['indented'])
    d.set_value(CTD + ('runtimes', 'runc', 'options', 'BinaryName'), '/x')
    assert '            SystemdCgroup = true\n            BinaryName = "/x"\n\n# comment' in d.text


def test_value_replacement_keeps_comment_and_quote_style():
    d = doc("version = 3\n[a]\n  s = 'one'   # note\n  n = 1\n")
    d.set_value(('a', 's'), 'two')
    d.set_value(('a', 'n'), 2)
    assert d.text == "version = 3\n[a]\n  s = 'two'   # note\n  n = 2\n"


def test_literal_style_falls_back_to_basic_when_needed():
    d = doc("version = 3\n[a]\n  s = 'one'\n")
    d.set_value(('a', 's'), "it's")
    assert parse(d.text)['a']['s'] == "it's"


def test_dotted_parent_gets_dotted_key():
    d = doc(STYLES['dotted'])
    d.set_value(CTD + ('snapshotter',), 'overlayfs')
    d.verify(parse)
    assert '  containerd.snapshotter = "overlayfs"\n' in d.text


def test_inline_table_is_refused_clearly():
    d = doc('version = 2\n[x]\n  options = { a = 1 }\n')
    with pytest.raises(TomlLayoutError, match='inline'):
        d.set_value(('x', 'options', 'b'), 2)


@pytest.mark.parametrize('value', ['a"b', 'x\n[evil]\ny = "', 'back\\slash', "q'uote", 'tab\there', '\u00e9\u4e2d'])
def test_rendered_values_cannot_escape(value):
    for literal in (False, True):
        text = 'k = %s\n' % render_value(value, literal)
        assert parse(text) == {'k': value}


@pytest.mark.parametrize('key', ['bare-key_1', 'io.containerd.grpc.v1.cri', 'a"b', 'x]\n[y', "it's"])
def test_rendered_keys_cannot_escape(key):
    for literal in (False, True):
        assert parse('%s = 1\n' % render_key(key, literal)) == {key: 1}


def test_scan_multiline_values_and_strings():
    text = ('imports = [\n  "/a.toml", # first\n  "/b.toml",\n]\ns = """multi\n[not a header]\n"""\n'
            "t = '''x'''\n[tbl]\nk = 1\n")
    entries = [e for e in scan(text) if e.kind in ('keyval', 'header')]
    assert [e.path for e in entries] == [('imports',), ('s',), ('t',), ('tbl',), ('tbl', 'k')]


def test_array_of_tables_is_not_mistaken_for_a_table():
    d = doc('version = 3\n[[p.list]]\n  a = 1\n[[p.list]]\n  a = 2\n[p.other]\n  b = 1\n')
    assert d.find_header(('p', 'list')) is None
    d.set_value(('p', 'other', 'c'), 2)
    d.verify(parse)


def test_parse_dotted_key():
    assert parse_dotted_key('plugins."io.containerd.grpc.v1.cri".enable_cdi') == (
        'plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi')
    assert parse_dotted_key("plugins.'x'.y") == ('plugins', 'x', 'y')
    with pytest.raises(TomlLayoutError):
        parse_dotted_key('plugins."open')


def test_verify_catches_a_wrong_promise():
    d = doc('a = 1\n')
    d.data['a'] = 2
    with pytest.raises(TomlLayoutError):
        d.verify(parse)


def test_top_level_key_added_before_tables_and_removed():
    src = '# head\nversion = 2\n\n[plugins.x]\n  a = 1\n'
    d = doc(src)
    prior = d.set_value(('imports',), ['/etc/containerd/conf.d/*.toml'])
    assert d.text.startswith('# head\nversion = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n\n[plugins.x]')
    d.restore_raw(('imports',), prior)
    assert d.text == src
