# -*- coding: utf-8 -*-
"""_ownership.release called directly on hand-built ledgers: each record kind is
undone by its own rule, and the heirs of what stays are the right owners.

The property machine (test_ownership_machine.py) and the module tests drive
release through real edits; these pin the choices it makes among records of
several kinds and owners side by side: which other owners a table removal
warns about, who inherits a helper section or a written-out runc table that
must stay, and that a key, a table, a builtin and a section are each released
once, by their own rule.
"""

import pytest

from helpers.context import CRI_V2_PATH as CRI, RUNTIMES_V2_DOTTED as RT_DOTTED, RUNTIMES_V2_PATH as RT, doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import (
    check_batch_entries,
    release,
)

THREE_RUNTIMES = '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.aaa]
  runtime_type = "io.containerd.aaa.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata.options]
    ConfigPath = "/opt/kata/ops.toml"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.zzz]
  runtime_type = "io.containerd.zzz.v2"
'''


def released(doc, ledger, owner, resource):
    warnings = []
    summary = release(doc, ledger, owner, resource, warnings.append)
    return summary, warnings


def test_a_table_removal_warns_about_other_owners_inside_it_only(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, THREE_RUNTIMES)
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    # other owners' keys in the runtimes before and after kata (sorting on both sides), and one inside it
    ledger.record_key('gpu', 'setting:a', RT + ('aaa', 'runtime_type'), '"x"', '"io.containerd.aaa.v2"')
    ledger.record_key('gpu', 'setting:z', RT + ('zzz', 'runtime_type'), '"x"', '"io.containerd.zzz.v2"')
    ledger.record_key('ops', 'setting:c', RT + ('kata', 'options', 'ConfigPath'), None, '"/opt/kata/ops.toml"')
    # a record of the table itself is not a change inside it
    ledger.add({'owner': 'gpu', 'resource': 'setting:k', 'kind': 'section', 'path': RT + ('kata',)})
    summary, warnings = released(doc, ledger, 'coco', 'runtime:kata')
    assert warnings == ['%s: ops changed %s.kata.options.ConfigPath inside %s.kata, which coco created and now '
                        'removes' % (doc.path, RT_DOTTED, RT_DOTTED)]
    assert summary == dict(deleted_tables=[RT_DOTTED + '.kata'], restored_keys=[], kept_keys=[])
    assert doc.toml.get(RT + ('kata',)) is None
    # the neighbours and their records are untouched
    assert doc.toml.get(RT + ('aaa', 'runtime_type')) == 'io.containerd.aaa.v2'
    assert sorted(r['path'][-2] for r in ledger.records if r['kind'] == 'key') == ['aaa', 'zzz']


RUNC_WRITTEN_OUT = '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
'''


@pytest.mark.parametrize('other', ['nvidia', 'runsc'])  # sorting before and after runc
def test_a_written_out_runc_stays_while_another_runtime_needs_it_and_passes_to_its_owner(tmp_path, other):
    """containerd 1.x: runc was written out beside kata (coco's builtin); nvidia (gpu's) still needs it."""
    doc, ledger = doc_and_ledger(tmp_path, RUNC_WRITTEN_OUT.replace('nvidia', other))
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'builtin', 'path': RT + ('runc',)})
    ledger.add({'owner': 'gpu', 'resource': 'runtime:nvidia', 'kind': 'table', 'path': RT + (other,)})
    # a newer record of another kind at the runtimes level does not make its owner the heir
    ledger.add({'owner': 'ops', 'resource': 'setting:s', 'kind': 'section', 'path': RT + (other,)})
    # the GPU case: gpu also set a key inside runc; that does not make runc a section of gpu's
    ledger.record_key('gpu', 'runtime:runc', RT + ('runc', 'runtime_type'), '"x"', '"io.containerd.runc.v2"')
    summary, warnings = released(doc, ledger, 'coco', 'runtime:kata')
    assert summary == dict(deleted_tables=[RT_DOTTED + '.kata'], restored_keys=[], kept_keys=[])
    assert warnings == []
    assert doc.toml.get(RT + ('runc', 'runtime_type')) == 'io.containerd.runc.v2'
    heirs = [(r['owner'], r['resource']) for r in ledger.records if r['kind'] == 'builtin']
    assert heirs == [('gpu', 'runtime:nvidia')]
    assert sorted((r['owner'], r['kind']) for r in ledger.records) == [
        ('gpu', 'builtin'), ('gpu', 'key'), ('gpu', 'table'), ('ops', 'section')]


def test_the_last_runtime_takes_the_written_out_runc_with_it(tmp_path):
    text = RUNC_WRITTEN_OUT.split('\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]', maxsplit=1)[0]
    doc, ledger = doc_and_ledger(tmp_path, text)
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.add({'owner': 'coco', 'resource': 'runtime:kata', 'kind': 'builtin', 'path': RT + ('runc',)})
    summary, _warnings = released(doc, ledger, 'coco', 'runtime:kata')
    assert summary['deleted_tables'] == [RT_DOTTED + '.kata', RT_DOTTED + '.runc']
    assert doc.toml.get(RT) in ({}, None) and ledger.records == []


SECTION = '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.aaa.options]
  X = 1

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata.options]
  A = 1
  B = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.zzz.options]
  Y = 1
'''


def test_a_helper_section_that_still_holds_another_owners_key_passes_to_that_owner(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, SECTION)
    options = RT + ('kata', 'options')
    ledger.record_key('coco', 'setting:a', options + ('A',), None, '1')
    ledger.add({'owner': 'coco', 'resource': 'setting:a', 'kind': 'section', 'path': options})
    ledger.record_key('gpu', 'setting:b', options + ('B',), None, '2')
    # newer records that are not keys inside the section: none of them inherits it
    ledger.add({'owner': 'ops', 'resource': 't', 'kind': 'table', 'path': options + ('T',)})
    ledger.add({'owner': 'ops', 'resource': 'b', 'kind': 'builtin', 'path': options + ('U',)})
    ledger.record_key('early', 'setting:x', RT + ('aaa', 'options', 'X'), None, '1')
    ledger.record_key('late', 'setting:y', RT + ('zzz', 'options', 'Y'), None, '1')
    summary, warnings = released(doc, ledger, 'coco', 'setting:a')
    assert summary == dict(deleted_tables=[], restored_keys=[RT_DOTTED + '.kata.options.A'], kept_keys=[])
    assert warnings == []
    assert doc.toml.get(options) == {'B': 2}
    sections = [(r['owner'], r['resource'], tuple(r['path'])) for r in ledger.records if r['kind'] == 'section']
    assert sections == [('gpu', 'setting:b', options)]


def test_each_kind_of_one_owners_records_is_released_once_by_its_own_rule(tmp_path):
    """A key in a section the owner created, in a table it created, beside the written-out runc."""
    doc, ledger = doc_and_ledger(tmp_path, RUNC_WRITTEN_OUT + '\n[plugins."io.containerd.grpc.v1.cri"]\n'
                                 '  enable_cdi = true\n')
    ledger.add({'owner': 'coco', 'resource': 'r', 'kind': 'table', 'path': RT + ('kata',)})
    ledger.add({'owner': 'coco', 'resource': 'r', 'kind': 'builtin', 'path': RT + ('runc',)})
    ledger.record_key('coco', 'r', CRI + ('enable_cdi',), None, 'true')
    ledger.add({'owner': 'gpu', 'resource': 'n', 'kind': 'table', 'path': RT + ('nvidia',)})
    summary, warnings = released(doc, ledger, 'coco', 'r')
    assert summary == dict(deleted_tables=[RT_DOTTED + '.kata'],
                           restored_keys=['plugins."io.containerd.grpc.v1.cri".enable_cdi'], kept_keys=[])
    assert warnings == []
    assert doc.toml.get(CRI + ('enable_cdi',)) is None
    assert doc.toml.get(RT + ('runc', 'runtime_type')) == 'io.containerd.runc.v2'
    assert sorted((r['owner'], r['kind']) for r in ledger.records) == [('gpu', 'builtin'), ('gpu', 'table')]


# ------------------------------------------------------------------ a batch's entries
def test_mixed_states_are_refused_listing_every_entry_under_its_state():
    present = ''.join(['pre', 'sent'])  # two equal states that are different string objects
    entries = [dict(name='a', state='present'), dict(name='b', state=present), dict(name='c', state='absent')]
    with pytest.raises(ConfigError) as err:
        check_batch_entries(entries, 'runtimes', 'name', 'runtime', 'adds or removes')
    assert str(err.value) == ('runtimes: absent: c; present: a, b. One call either adds or removes. Nothing was '
                              'written. Fix: give the present and the absent runtimes in two calls.')


# ------------------------------------------------------------------ a hand edit over the newest owner
HAND_EDITED = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "m"\n'
KEY = CRI + ('sandbox_image',)


def stacked(tmp_path, first, second):
    """Owner a wrote first (prior, value), owner b wrote over it; then the operator wrote "m" by hand."""
    doc, ledger = doc_and_ledger(tmp_path, HAND_EDITED)
    ledger.record_key('a', 'setting:s', KEY, *first)
    ledger.record_key('b', 'setting:s', KEY, *second)
    return doc, ledger


@pytest.mark.parametrize('prior', ['"a"', '"z"'])  # sorting before and after the operator's value
def test_a_hand_edit_equal_to_an_older_owners_value_still_supersedes_its_prior(tmp_path, prior):
    doc, ledger = stacked(tmp_path, (prior, '"m"'), ('"m"', '"b"'))
    _summary, warnings = released(doc, ledger, 'b', 'setting:s')
    assert len(warnings) == 1 and 'someone else changed it since' in warnings[0]
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    # a's undo gives back what is there (the operator's "m"), not its own prior
    assert doc.toml.get(KEY) == 'm' and warnings == []
    assert summary['restored_keys'] == ['plugins."io.containerd.grpc.v1.cri".sandbox_image']


@pytest.mark.parametrize('value', ['"a"', '"z"'])
def test_a_hand_edit_equal_to_an_older_owners_prior_is_given_back_without_a_warning(tmp_path, value):
    doc, ledger = stacked(tmp_path, ('"m"', value), (value, '"c"'))
    released(doc, ledger, 'b', 'setting:s')
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert doc.toml.get(KEY) == 'm' and warnings == [] and summary['kept_keys'] == []
