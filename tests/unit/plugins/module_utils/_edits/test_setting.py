# -*- coding: utf-8 -*-
"""_setting_edit called directly: which raw keys may be managed, the checks of a
key's value, one batch's reported values and the merge of split steps.

The module tests (tests/module/test_containerd_setting.py) run the whole call
on real files and containerd; these pin the branches a module call cannot
reach past its argument spec, and the merge of steps no single file shows.
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


def doc_at(tmp_path, text=TEXT):
    return ConfigDocument(os.path.join(str(tmp_path), 'config.toml'), text)


def ledger_at(tmp_path):
    return Ledger(str(tmp_path / 'state'), os.path.join(str(tmp_path), 'config.toml'))


def one(key, value=None, state='present', raw=True, owner='gpu'):
    return dict(key=key, value=value, state=state, raw=raw, owner=owner)


def runtime_string(text):
    # a string built at run time, as one parsed from a module's JSON arguments
    return ''.join(list(text))


# ------------------------------------------------------------------ raw keys
@pytest.mark.parametrize('key', ['version', 'debug', 'version.level', runtime_string('version') + '.x'])
def test_version_and_top_level_keys_are_refused(tmp_path, key):
    with pytest.raises(ConfigError) as err:
        resolve_key(doc_at(tmp_path), dict(key=key, raw=True))
    assert str(err.value).startswith('%s: key %r cannot be managed with containerd_setting.'
                                     % (doc_at(tmp_path).path, key))
    assert err.value.given_details() == dict(key=key)


@pytest.mark.parametrize('key, path', [
    ('a.version', ('a', 'version')),
    ('zz.level', ('zz', 'level')),
    (CRI + '.enable_cdi', ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi')),
])
def test_any_key_inside_a_table_is_managed(tmp_path, key, path):
    assert tuple(resolve_key(doc_at(tmp_path), dict(key=key, raw=True))) == path


# ------------------------------------------------------------------ one key
def test_a_present_key_without_a_value_is_refused_naming_value(tmp_path):
    doc = doc_at(tmp_path)
    with pytest.raises(ConfigError) as err:
        apply_setting(doc, ledger_at(tmp_path), FakeContext(), one(CRI + '.enable_cdi'))
    assert str(err.value) == ('%s: state=present needs a value for %s.enable_cdi. Fix: give value.'
                              % (doc.path, CRI))
    assert err.value.given_details() == dict(key='value')
    assert doc.text == TEXT


def test_a_batch_entry_state_built_at_run_time_is_still_present():
    params = dict(settings=[dict(key='cri.enable_cdi', value=None, state=runtime_string('present'))],
                  state='absent', owner='gpu')
    with pytest.raises(ConfigError) as err:
        setting_entries(params)
    assert err.value.given_details() == dict(key='settings[0].value')


def test_undoing_a_key_nobody_set_and_nobody_has_is_quiet(tmp_path):
    doc = doc_at(tmp_path)
    ctx = FakeContext()
    out = apply_setting(doc, ledger_at(tmp_path), ctx, one(CRI + '.cdi_spec_dirs', state='absent'))
    assert out['kept'] == [] and out['restored'] == [] and ctx.warnings == []
    out = apply_setting(doc, ledger_at(tmp_path), ctx, one(CRI + '.enable_cdi', state='absent'))
    assert out['kept'] == [CRI + '.enable_cdi'] and len(ctx.warnings) == 1
    assert doc.text == TEXT


# ------------------------------------------------------------------ a batch
def test_a_batch_reports_each_key_as_the_file_holds_it_after_all_entries(tmp_path):
    # two spellings of one key: the first entry's value is the one the second wrote
    doc = doc_at(tmp_path)
    entries = setting_entries(dict(owner='gpu', state='present', settings=[
        dict(key='cri.enable_cdi', value=True, raw=False),
        dict(key=CRI + '.enable_cdi', value='yes', raw=True)]))
    out = SettingBatch(entries, 'gpu')(doc, ledger_at(tmp_path), FakeContext())
    reported = [(s['key'], s['value']) for s in out['settings']]
    assert reported == [('cri.enable_cdi', 'yes'), (CRI + '.enable_cdi', 'yes')]


def test_one_entry_is_one_part_and_several_split_one_each():
    entry = dict(key='a.b', value=1, state='present', raw=True, owner='gpu', index=0)
    assert SettingBatch([entry], 'gpu').parts is None
    parts = SettingBatch([entry, dict(entry, key='a.c', index=1)], 'gpu').parts
    assert [[e['key'] for e in p.entries] for p in parts] == [['a.b'], ['a.c']]


def test_merged_steps_keep_what_each_file_restored_and_kept():
    # an uninstall over config.toml and a drop-in: the key was put back in one, kept in the other
    entries = [dict(key='a.b', value=None, state='absent', raw=True, owner='gpu', index=0),
               dict(key='a.c', value=None, state='absent', raw=True, owner='gpu', index=1)]
    steps = [dict(settings=[dict(key='a.b', value=1, restored=['a.b'], kept=[])]),
             dict(settings=[dict(key='a.b', value=2, restored=[], kept=['a.b']),
                            dict(key='a.c', value=None, restored=['a.c'], kept=[])])]
    result = SettingBatch(entries, 'gpu').combine(dict(changed=True), steps)
    assert result['settings'] == [dict(key='a.b', value=2, restored=['a.b'], kept=['a.b']),
                                  dict(key='a.c', value=None, restored=['a.c'], kept=[])]
    assert result['restored'] == ['a.b', 'a.c'] and result['kept'] == ['a.b']
    assert result['changed'] is True
