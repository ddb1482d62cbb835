# -*- coding: utf-8 -*-
"""_setting_edit's refusals called directly: a raw key that is no TOML key, a key
that names a table, and a batch entry's refusal naming its entry.

The module tests check these only by a word of the message; here the whole
message, the ``key`` a failed module returns and the untouched text are pinned.
"""

import os

import pytest

from helpers.context import FakeContext

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.setting import (
    SettingBatch,
    apply_setting,
    resolve_key,
    setting_entries,
)

CRI = 'plugins."io.containerd.grpc.v1.cri"'
TEXT = 'version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    enable_cdi = false\n'


def doc_and_ledger(tmp_path):
    path = os.path.join(str(tmp_path), 'config.toml')
    return ConfigDocument(path, TEXT), Ledger(str(tmp_path / 'state'), path)


@pytest.mark.parametrize('key, why', [
    ('plugins."io.containerd.grpc.v1.cri', 'unexpected text after the key at offset 35'),
    ('plugins..enable_cdi', 'key expected at offset 8'),
])
def test_a_raw_key_that_is_not_a_toml_key_is_refused_with_the_parse_error(tmp_path, key, why):
    doc, _ledger = doc_and_ledger(tmp_path)
    with pytest.raises(ConfigError) as err:
        resolve_key(doc, dict(key=key, raw=True))
    assert str(err.value) == ('%s: key %r is not a dotted TOML key (%s). Fix: write it as in the file, e.g. '
                              'plugins."io.containerd.grpc.v1.cri".enable_cdi.' % (doc.path, key, why))
    assert err.value.given_details() == dict(key=key)


def test_a_key_that_names_a_table_is_refused_and_the_table_is_left_alone(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path)
    with pytest.raises(ConfigError) as err:
        apply_setting(doc, ledger, FakeContext(), dict(key=CRI, value=True, state='present', raw=True, owner='gpu'))
    assert str(err.value) == ('%s: %s is a table, not a value. Fix: name a key inside it.' % (doc.path, CRI))
    assert err.value.given_details() == dict(key=CRI)
    assert doc.text == TEXT and ledger.records == []


def test_a_batch_entry_s_refusal_names_its_index_and_key(tmp_path):
    # the second entry names a table: the refusal says which entry of settings it is
    doc, ledger = doc_and_ledger(tmp_path)
    entries = setting_entries(dict(owner='gpu', state='present', settings=[
        dict(key=CRI + '.enable_cdi', value=True, raw=True),
        dict(key=CRI, value=1, raw=True)]))
    with pytest.raises(ConfigError) as err:
        SettingBatch(entries, 'gpu')(doc, ledger, FakeContext())
    assert str(err.value) == ('settings[1] (%s): %s: %s is a table, not a value. Fix: name a key inside it.'
                              % (CRI, doc.path, CRI))
    assert err.value.given_details() == dict(key='settings[1]')
