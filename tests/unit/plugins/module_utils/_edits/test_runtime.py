# -*- coding: utf-8 -*-
"""_runtime_edit called directly: where a new runtime inherits from, and what an
uninstall does with the default runtime, a runtime nobody recorded and a
forced removal.

tests/module/test_containerd_runtime.py runs the module on real files and
containerd; these set up the ledger stacks (two owners' defaults, a runtime
shipped by the image) exactly.
"""

import pytest

from helpers.context import CRI_V2_PATH as CRI, RUNTIMES_V2_DOTTED as RT_DOTTED, RUNTIMES_V2_PATH as RT, doc_and_ledger
from helpers.context import FakeContext

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import (
    RuntimeBatch,
    _inherit_source,
    runtime_absent,
)

DEFAULT = CRI + ('containerd', 'default_runtime_name')


def config(default, *names):
    text = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
    if default:
        text += '  default_runtime_name = "%s"\n' % default
    for name in names:
        text += '\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.%s]\n  runtime_type = "io.containerd.%s.v2"\n' \
            % (name, name)
    return text


def absent(doc, ledger, name, owner, force=False):
    ctx = FakeContext()
    out = runtime_absent(doc, ledger, ctx, dict(name=name, owner=owner, force=force))
    return out, ctx.warnings


# ------------------------------------------------------------------ where a new runtime starts from
@pytest.mark.parametrize('new', ['kata', 'youki'])  # sorting before and after the default
def test_a_new_runtime_starts_from_the_default_runtime(tmp_path, new):
    doc, _ledger = doc_and_ledger(tmp_path, config('nvidia', 'runc', 'nvidia'))
    assert _inherit_source(doc, dict(name=new), FakeContext()) == 'nvidia'


def test_the_default_itself_starts_from_runc_and_without_runc_from_nothing(tmp_path):
    doc, _ledger = doc_and_ledger(tmp_path, config('nvidia', 'runc', 'nvidia'))
    assert _inherit_source(doc, dict(name='nvidia'), FakeContext()) == 'runc'
    doc, _ledger = doc_and_ledger(tmp_path, config(None, 'kata'))
    ctx = FakeContext()
    assert _inherit_source(doc, dict(name='nvidia'), ctx) is None
    assert ctx.warnings == ["%s: no runtime 'runc' to inherit settings from; nvidia starts empty" % doc.path]


# ------------------------------------------------------------------ uninstall
def test_a_runtime_nobody_recorded_is_kept_with_a_warning(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, config('runc', 'runc', 'nvidia'))
    out, warnings = absent(doc, ledger, 'nvidia', 'gpu')
    assert out == dict(removed=False, restored=[], kept=[RT_DOTTED + '.nvidia'])
    assert len(warnings) == 1 and 'no ledger record' in warnings[0]
    assert doc.toml.get(RT + ('nvidia',)) is not None


@pytest.mark.parametrize('default', ['aaa', 'runc'])  # sorting before and after kata
def test_a_forced_removal_leaves_another_default_alone(tmp_path, default):
    doc, ledger = doc_and_ledger(tmp_path, config(default, 'aaa', 'kata', 'runc'))
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    out, _warnings = absent(doc, ledger, 'kata', 'gpu', force=True)
    assert doc.toml.get(RT + ('kata',)) is None and doc.default_runtime() == default
    assert ledger.records == []
    assert out['removed'] is True


def test_a_forced_removal_of_the_default_brings_back_the_oldest_recorded_default(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, config('kata', 'runc', 'nvidia', 'kata'))
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.record_key('gpu', 'runtime:nvidia', DEFAULT, '"runc"', '"nvidia"')
    ledger.record_key('coco', 'runtime:kata', DEFAULT, '"nvidia"', '"kata"')
    absent(doc, ledger, 'kata', 'ops', force=True)
    assert doc.default_runtime() == 'runc' and ledger.key_stack(DEFAULT) == []


def test_the_owner_whose_default_is_on_top_removes_its_runtime_and_puts_the_default_back(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, config('kata', 'runc', 'nvidia', 'kata'))
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.record_key('gpu', 'runtime:nvidia', DEFAULT, '"runc"', '"nvidia"')
    ledger.record_key('coco', 'runtime:kata', DEFAULT, '"nvidia"', '"kata"')
    out, warnings = absent(doc, ledger, 'kata', 'coco')
    assert out['removed'] is True and warnings == []
    assert doc.default_runtime() == 'nvidia' and doc.toml.get(RT + ('kata',)) is None


def test_an_owner_whose_runtime_another_made_the_default_is_refused(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, config('kata', 'runc', 'kata'))
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.record_key('coco', 'runtime:kata', DEFAULT, '"runc"', '"kata"')
    ledger.record_key('ops', 'setting:d', DEFAULT, '"kata"', '"kata"')
    with pytest.raises(ConfigError) as err:
        absent(doc, ledger, 'kata', 'coco')
    assert 'is the default runtime (default_runtime_name, set by ops)' in str(err.value)


# ------------------------------------------------------------------ a batch's merged result
def test_the_default_of_a_split_batch_is_the_last_steps():
    entries = [dict(name='a', state='present', owner='o', index=0),
               dict(name='b', state='present', owner='o', index=1)]
    batch = RuntimeBatch(entries, 'o')
    steps = [dict(runtimes=[dict(name='a', created=True)], default_runtime_name='runc'),
             dict(runtimes=[dict(name='b', created=True)], default_runtime_name='b')]
    assert batch.combine(dict(changed=True), steps)['default_runtime_name'] == 'b'
    one = RuntimeBatch(entries[:1], 'o')
    assert 'default_runtime_name' not in one.combine(dict(changed=True), steps[:1])
