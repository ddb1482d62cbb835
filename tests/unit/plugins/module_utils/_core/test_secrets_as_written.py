# -*- coding: utf-8 -*-
"""_secrets: a secret is masked as its file spells it. TOML has many spellings of one value (a \\u escape, a
literal or multi-line string, an escaped quote, a number in hex); containerd reads them all as the value, and a
diff or a copy of the file shows the spelling, so the spelling is masked too."""

import json

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
# fresh_secrets_state is an autouse fixture: imported, it runs for every test here
from helpers.secrets import FakeModule, fresh_secrets_state  # noqa: F401 pylint: disable=unused-import

AUTH = "[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n"
PASSWORD = ['plugins', 'io.containerd.cri.v1.images', 'registry', 'configs', 'reg.example.com', 'auth', 'password']
MASK = secrets.MASK


def config(value_text):
    """A version 3 config whose registry password is value_text (a TOML value as written in the file)."""
    return "version = 3\n" + AUTH + "  username = 'robot'\n  password = %s\n" % value_text


def masked(text):
    return secrets.redact_text(text, secrets.text_values(text))


# (the password as written, what containerd reads, the masked text)
SPELLINGS = [
    ('"hunter2-\\u0041cme"', 'hunter2-Acme', '"%s"' % MASK),
    ('"S3CRET-\\U00000046"', 'S3CRET-F', '"%s"' % MASK),
    ('"quo\\"ted-\\u0021"', 'quo"ted-!', '"%s"' % MASK),
    ('"tab\\tbed-pw"', 'tab\tbed-pw', '"%s"' % MASK),
    ("'lit\\eral-pw'", 'lit\\eral-pw', "'%s'" % MASK),
    ('"""\nmulti-\\\n   line-pw"""', 'multi-line-pw', '"""\n%s"""' % MASK),
    ("'''\nraw-multi-pw'''", 'raw-multi-pw', "'''\n%s'''" % MASK),
    ('0x3039abcd', 0x3039abcd, MASK),
    ('12_345_678', 12345678, MASK),
]


@pytest.mark.parametrize('written,value,redacted', SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_a_secret_is_masked_whatever_its_spelling(written, value, redacted):
    text = config(written)
    assert secrets.secret_leaves(parse_toml(text)) == [(tuple(PASSWORD), value)]
    assert masked(text) == config(redacted)


def test_a_multi_line_secret_in_a_file_with_crlf_line_ends_keeps_its_line_break():
    text = config('"""\nml-\\\n  pw-crlf"""').replace('\n', '\r\n')
    assert masked(text) == config('"""\n%s"""' % MASK).replace('\n', '\r\n')


def test_a_secret_spelled_in_an_inline_table_and_in_a_dotted_key_is_masked():
    text = ("version = 2\n[plugins.'io.containerd.grpc.v1.cri'.registry.configs]\n"
            "  'a.example.com'.auth.password = \"dotted-\\u0041\"\n"
            "  'c.example.com' = { auth = { password = \"inline-\\u0043\", identitytoken = 'tok\\en-4' } }\n")
    assert masked(text) == text.replace('dotted-\\u0041', MASK).replace('inline-\\u0043', MASK).replace(
        'tok\\en-4', MASK)


def test_every_item_of_a_secret_array_is_masked_as_written():
    headers = 'plugins."io.containerd.grpc.v1.cri".registry.headers'
    text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.headers]\n'
            '  X-Api-Key = ["key-\\u0031111", \'key-2222\', """key-\\U00000033333"""]\n')
    values = secrets.text_values(text, secrets.parse_patterns([headers]))
    assert secrets.redact_text(text, values) == (
        'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.headers]\n'
        '  X-Api-Key = ["%s", \'%s\', """%s"""]\n' % (MASK, MASK, MASK))


def test_a_short_secret_is_not_masked_in_any_spelling():
    """docs/secrets.md: a value of fewer than 4 characters is not masked; nor is its longer escaped spelling."""
    assert secrets.text_values(config('"\\u0061bc"')) == set()
    # beside a secret that is masked (the file's spellings are read then), and as a ledger keeps it
    text = config('"\\u0061bc"') + "  identitytoken = 'token-5678'\n"
    assert secrets.text_values(text) == {'token-5678'}
    assert secrets.record_values([dict(kind='key', path=PASSWORD, prior='"\\u0061bc"', value=None)]) == set()


def test_a_value_that_is_no_secret_keeps_its_spelling():
    text = config('"pw-\\u0041bcd"').replace("username = 'robot'", 'username = "rob\\u006ft"')
    assert masked(text) == config('"%s"' % MASK).replace("username = 'robot'", 'username = "rob\\u006ft"')


def test_a_run_notes_the_spelling_of_a_file_it_reads(tmp_path):
    path = tmp_path / 'dropin.toml'
    path.write_text(config('"hunter2-\\u0041cme"'))
    module = FakeModule(dropin=str(path))
    secrets.bind(module)
    assert 'hunter2-\\u0041cme' in module.no_log_values and 'hunter2-Acme' in module.no_log_values


def test_a_file_read_with_its_data_notes_both_its_values_and_their_spelling(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text(config('"hunter2-\\u0041cme"'))
    module = FakeModule()
    secrets.bind(module)
    secrets.note_file(str(path), data=parse_toml(path.read_text()))
    assert set(['hunter2-Acme', 'hunter2-\\u0041cme']) <= module.no_log_values


def test_a_ledger_record_of_a_spelled_secret_is_masked_in_its_json_file():
    """A ledger keeps the prior value as the file wrote it; its copy (JSON) doubles the backslash."""
    records = [dict(kind='key', path=PASSWORD, prior='"hunter2-\\u0041cme"', value='"new-pw-1234"')]
    ledger = json.dumps({'records': records}, indent=1)
    assert 'hunter2-\\\\u0041cme' in ledger
    redacted = secrets.redact_text(ledger, secrets.record_values(records))
    assert 'hunter2' not in redacted and 'new-pw' not in redacted
    assert json.loads(redacted)['records'][0]['prior'] == '"%s"' % MASK


def refuse(_text):
    raise ValueError('refused')


def test_a_text_the_line_scan_cannot_lay_out_is_read_whole_by_tomlkit(monkeypatch):
    monkeypatch.setattr(secrets, 'scan', refuse)
    monkeypatch.setattr(secrets, '_SPELLED', {})
    assert masked(config('"hunter2-\\u0041cme"')) == config('"%s"' % MASK)


def test_a_text_neither_scan_nor_tomlkit_reads_still_gives_its_values(monkeypatch):
    """The spelling comes from the scan and tomlkit; when both fail on a text parse_toml read, the values remain."""
    import tomlkit

    monkeypatch.setattr(secrets, 'scan', refuse)
    monkeypatch.setattr(tomlkit, 'parse', refuse)
    monkeypatch.setattr(secrets, '_SPELLED', {})
    assert secrets.text_values(config('"hunter2-\\u0041cme"')) == {'hunter2-Acme'}


def test_a_secret_in_an_array_of_tables_is_masked_as_written():
    """Keys of a [[...]] element are at the array's own path: a secret_keys path names them without an index."""
    text = ('version = 2\n[[plugins."io.containerd.transfer.v1.local".unpack_config]]\n  platform = "linux/amd64"\n'
            '  token = "tok-\\u0031111"\n[[plugins."io.containerd.transfer.v1.local".unpack_config]]\n'
            '  token = \'tok-2222\'\n')
    patterns = secrets.parse_patterns(['plugins."io.containerd.transfer.v1.local".unpack_config.token'])
    redacted = secrets.redact_text(text, secrets.text_values(text, patterns))
    assert redacted == text.replace('tok-\\u0031111', MASK).replace('tok-2222', MASK)
