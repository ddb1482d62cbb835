# -*- coding: utf-8 -*-
"""_runtime_edit's uninstall called directly: a second uninstall, a runtime that
is not there, one another owner created, and whose change of the default counts
as this owner's (three owners' defaults stacked).

Complements test_runtime.py, which covers forced removals
and two owners' defaults.
"""

import pytest

from helpers.context import CRI_V2_PATH as CRI, RUNTIMES_V2_DOTTED as RT_DOTTED, RUNTIMES_V2_PATH as RT, doc_and_ledger
from helpers.context import FakeContext

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import runtime_absent, runtime_present

DEFAULT = CRI + ('containerd', 'default_runtime_name')
TEXT = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "%s"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n')


def absent(doc, ledger, name, owner, force=False):
    ctx = FakeContext()
    out = runtime_absent(doc, ledger, ctx, dict(name=name, owner=owner, force=force))
    return out, ctx.warnings


def test_a_second_uninstall_of_a_runtime_the_owner_only_changed_does_nothing_and_says_nothing(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT % 'runc')
    runtime_present(doc, ledger, FakeContext(), dict(name='runc', owner='gpu', settings={'sandbox_mode': 'podsandbox'}))
    out, warnings = absent(doc, ledger, 'runc', 'gpu')
    assert out == dict(removed=False, restored=[RT_DOTTED + '.runc.sandbox_mode'], kept=[]) and warnings == []
    assert doc.text == TEXT % 'runc'
    # a retry: the owner's undo is remembered, so it is not told the runtime is someone else's
    assert absent(doc, ledger, 'runc', 'gpu') == (dict(removed=False, restored=[], kept=[]), [])
    assert [r['kind'] for r in ledger.records] == ['released']


def test_uninstalling_a_runtime_that_is_not_there_changes_nothing(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT % 'runc')
    assert absent(doc, ledger, 'nvidia', 'gpu') == (dict(removed=False, restored=[], kept=[]), [])
    assert doc.text == TEXT % 'runc'


def test_a_runtime_another_owner_added_is_refused_naming_that_owner_and_the_fix(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT % 'runc')
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    with pytest.raises(ConfigError) as err:
        absent(doc, ledger, 'kata', 'gpu')
    assert str(err.value) == ('%s: runtime kata was not added by owner gpu (created by: coco). nodeguard removes only '
                              'what an owner added, so it is left alone. Fix: run with the owner that added it, or '
                              'set force: true to delete it anyway.' % doc.path)
    assert err.value.given_details() == dict(key=RT_DOTTED + '.kata')
    assert doc.text == TEXT % 'runc'


def stacked(tmp_path, *setters):
    """kata, created by coco, is the default; each (owner, resource) of setters changed the default in turn."""
    doc, ledger = doc_and_ledger(tmp_path, TEXT % 'kata')
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    prior = '"runc"'
    for owner, resource in setters:
        ledger.record_key(owner, resource, DEFAULT, prior, '"kata"')
        prior = '"kata"'
    return doc, ledger


def test_the_newest_of_three_defaults_being_the_owner_s_own_lets_it_remove_its_runtime(tmp_path):
    doc, ledger = stacked(tmp_path, ('gpu', 'runtime:nvidia'), ('ops', 'setting:d'), ('coco', 'runtime:kata'))
    out, warnings = absent(doc, ledger, 'kata', 'coco')
    assert out['removed'] is True and warnings == []
    assert doc.toml.get(RT + ('kata',)) is None


def test_the_default_set_by_the_owner_s_setting_is_not_its_runtime_s_so_it_is_refused(tmp_path):
    # coco made kata the default through containerd_setting, not as part of the runtime: releasing the
    # runtime would not put that default back, so the default would name a runtime that is gone
    doc, ledger = stacked(tmp_path, ('gpu', 'runtime:nvidia'), ('coco', 'setting:%s' % '.'.join(DEFAULT)))
    with pytest.raises(ConfigError) as err:
        absent(doc, ledger, 'kata', 'coco')
    assert 'is the default runtime (default_runtime_name, set by coco)' in str(err.value)
    assert doc.toml.get(RT + ('kata',)) is not None


def test_a_refusal_names_the_owner_of_the_newest_default(tmp_path):
    doc, ledger = stacked(tmp_path, ('gpu', 'runtime:nvidia'), ('ops', 'setting:d'), ('sre', 'setting:e'))
    with pytest.raises(ConfigError) as err:
        absent(doc, ledger, 'kata', 'coco')
    assert str(err.value) == (
        '%s: kata is the default runtime (default_runtime_name, set by sre), so removing it would stop the CRI '
        'plugin from loading. Fix: make another runtime the default first, or set force: true to remove it and '
        'the default_runtime_name key.' % doc.path)
    assert err.value.given_details() == dict(key='plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name')
