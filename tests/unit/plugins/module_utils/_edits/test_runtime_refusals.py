# -*- coding: utf-8 -*-
"""_runtime_edit's refusals called directly: each one's whole message (file, what,
fix), the ``key`` a failed module returns, and a file and ledger left as they were.

The module tests (tests/module/test_runtime_batch.py) check these by the start
of the message only; a batch entry's refusal must also say which entry and
option it is (``runtimes[2].options.X``).
"""

import pytest

from helpers.context import RUNTIMES_V2_PATH as RT, doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import (
    RuntimeBatch,
    apply_runtime,
    batch_entries,
)
from helpers.context import FakeContext

DEFAULT_DOTTED = 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name'


TEXT = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        '\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n')


def refused(tmp_path, text=TEXT, **params):
    doc, ledger = doc_and_ledger(tmp_path, text)
    full = dict(name='nvidia', owner='gpu', state='present')
    full.update(params)
    with pytest.raises(ConfigError) as err:
        apply_runtime(doc, ledger, FakeContext(containerd_version=(2, 1)), full)
    assert doc.text == text and ledger.records == []   # nothing written, nothing recorded
    return str(err.value).replace(doc.path, 'CONFIG'), err.value.given_details()


@pytest.mark.parametrize('params, msg, key', [
    (dict(name='nvidia gpu'),
     "CONFIG: runtime name 'nvidia gpu' is not valid. Fix: use letters, digits, \"-\", \"_\" or \".\" (at most 63, "
     "starting and ending with a letter or digit), as a RuntimeClass handler requires.", 'name'),
    (dict(options={'Binary"Name': '/usr/bin/nvidia-container-runtime'}),
     "CONFIG: options key 'Binary\"Name' is not valid. Fix: use letters, digits, \"-\" and \"_\" only.",
     'options.Binary"Name'),
    (dict(settings={'sandbox mode': 'podsandbox'}),
     "CONFIG: settings key 'sandbox mode' is not valid. Fix: use letters, digits, \"-\" and \"_\" only.",
     'settings.sandbox mode'),
    (dict(settings={'runtime_path': '/opt/bin/shim'}),
     "CONFIG: settings may not hold 'runtime_path'. Fix: use the runtime_path option instead.",
     'settings.runtime_path'),
    (dict(options={'BinaryName': None}),
     'CONFIG: options.BinaryName has no value (null). Fix: give a value; TOML has no null.', 'options.BinaryName'),
    (dict(settings={'sandbox_mode': None}),
     'CONFIG: settings.sandbox_mode has no value (null). Fix: give a value; TOML has no null.',
     'settings.sandbox_mode'),
])
def test_bad_input_is_refused_naming_the_option_and_the_fix(tmp_path, params, msg, key):
    assert refused(tmp_path, **params) == (msg, dict(key=key))


@pytest.mark.parametrize('text, defined', [(TEXT, 'kata, runc'), ('version = 2\n', 'none')])
def test_inheriting_from_a_runtime_the_file_lacks_is_refused_listing_those_it_has(tmp_path, text, defined):
    msg, details = refused(tmp_path, text, inherit='runsc')
    assert msg == ("CONFIG: inherit names runtime 'runsc', which CONFIG does not define (defined: %s). Fix: name "
                   "one of those, or inherit: none." % defined)
    assert details == dict(key='inherit')


def test_default_false_on_a_default_another_owner_made_is_refused(tmp_path):
    # kata is the default, but not by owner gpu's hand: gpu cannot take it back
    text = TEXT.replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
    msg, details = refused(tmp_path, text, name='kata', default=False)
    assert msg == ('CONFIG: kata is the default runtime, but gpu did not make it so. Fix: make another runtime the '
                   'default first.')
    assert details == dict(key=DEFAULT_DOTTED)


def test_default_false_puts_back_the_default_the_owner_replaced(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    ctx = FakeContext(containerd_version=(2, 1))
    apply_runtime(doc, ledger, ctx, dict(name='kata', owner='coco', state='present', default=True))
    assert doc.default_runtime() == 'kata'
    out = apply_runtime(doc, ledger, ctx, dict(name='kata', owner='coco', state='present', default=False))
    assert out['default_runtime_name'] == 'runc' and doc.text == TEXT
    assert ctx.warnings == []


# ------------------------------------------------------------------ a batch names its entry
def batch(*runtimes, **kw):
    return batch_entries(dict(dict(owner='coco', state='present', force=False), runtimes=list(runtimes), **kw))


def test_a_batch_refuses_a_bad_entry_before_any_is_applied_naming_entry_and_option(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    entries = batch(dict(name='kata-qemu'), dict(name='kata-clh'), dict(name='kata-fc', options={'a b': 1}))
    with pytest.raises(ConfigError) as err:
        RuntimeBatch(entries, 'coco')(doc, ledger, FakeContext(containerd_version=(2, 1)))
    assert str(err.value) == ("runtimes[2] (kata-fc): %s: options key 'a b' is not valid. Fix: use letters, digits, "
                              "\"-\" and \"_\" only." % doc.path)
    assert err.value.given_details() == dict(key='runtimes[2].options.a b')
    assert doc.text == TEXT and ledger.records == []


def test_a_batch_entry_refused_while_applied_is_named_with_its_option(tmp_path):
    # the input checks pass; the second entry's inherit is refused when it is applied
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    entries = batch(dict(name='kata-qemu'), dict(name='kata-clh', inherit='runsc'))
    with pytest.raises(ConfigError) as err:
        RuntimeBatch(entries, 'coco')(doc, ledger, FakeContext(containerd_version=(2, 1)))
    assert str(err.value).startswith("runtimes[1] (kata-clh): %s: inherit names runtime 'runsc'" % doc.path)
    assert err.value.given_details() == dict(key='runtimes[1].inherit')


def test_batch_entries_take_the_call_s_state_and_force_unless_given():
    entries = batch(dict(name='a'), dict(name='b', state='absent', force=True), dict(name='c', force=False),
                    state='absent', force=True)
    assert [(e['name'], e['state'], e['force'], e['index']) for e in entries] == [
        ('a', 'absent', True, 0), ('b', 'absent', True, 1), ('c', 'absent', False, 2)]
    assert all(e['owner'] == 'coco' for e in entries)


def test_a_batch_runs_each_entry_s_own_state_and_reports_the_tables_after_all(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    ctx = FakeContext(containerd_version=(2, 1))
    RuntimeBatch(batch(dict(name='kata-qemu')), 'coco')(doc, ledger, ctx)
    entries = [dict(name='kata-qemu', state='absent', owner='coco', force=False, index=0),
               dict(name='kata-clh', state='present', owner='coco', index=1, runtime_type='io.containerd.kata.v2')]
    out = RuntimeBatch(entries, 'coco')(doc, ledger, ctx)
    assert [(r['name'], r['state'], r['runtime']) for r in out['runtimes']] == [
        ('kata-qemu', 'absent', None),
        ('kata-clh', 'present', doc.toml.get(RT + ('kata-clh',)))]
    assert out['runtimes'][1]['runtime']['runtime_type'] == 'io.containerd.kata.v2'
    assert out['removed'] is True and out['created'] is True and out['owner'] == 'coco'
    assert out['default_runtime_name'] == 'runc'
