# -*- coding: utf-8 -*-
"""_ownership.set_owned and release on one owner's several changes: each key
and helper section of the owner is undone, also after one of them was handed
over or kept, newest first; a value already there is not recorded as a change.

test_ownership_release.py pins the choices among several owners' records of
different kinds; these pin the walk over one owner's records of one kind.
"""

from helpers.context import CRI_V2_PATH as CRI, RUNTIMES_V2_PATH as RT, doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ownership import (
    dotted,
    release,
    set_owned,
)

BASE = '''version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.8"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
'''
SANDBOX = CRI + ('sandbox_image',)
CDI = CRI + ('enable_cdi',)


def released(doc, ledger, owner, resource):
    warnings = []
    summary = release(doc, ledger, owner, resource, warnings.append)
    return summary, warnings


def test_set_owned_says_whether_it_changed_the_file(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    assert set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'example.org/pause:1') is True
    assert doc.toml.get(SANDBOX) == 'example.org/pause:1'
    text = doc.text
    assert set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'example.org/pause:1') is False
    assert doc.text == text


def test_a_value_already_there_is_not_recorded_as_the_owners_change(tmp_path):
    """Nobody changed the key: the owner wants what is there, and its undo must leave the key alone."""
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    assert set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'registry.k8s.io/pause:3.8') is False
    assert ledger.records == [] and ledger.dirty is False
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert summary == dict(deleted_tables=[], restored_keys=[], kept_keys=[]) and warnings == []
    assert doc.text == BASE


def test_undo_gives_back_an_owners_keys_newest_change_first(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    set_owned(doc, ledger, 'a', 'setting:s', CDI, True)
    set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'example.org/pause:1')
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert summary['restored_keys'] == [dotted(SANDBOX), dotted(CDI)] and warnings == []
    assert doc.text == BASE


def test_a_key_handed_over_to_a_newer_owner_does_not_stop_the_undo_of_the_owners_older_keys(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    set_owned(doc, ledger, 'a', 'setting:s', CDI, True)
    set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'example.org/pause:1')
    set_owned(doc, ledger, 'b', 'setting:s', SANDBOX, 'example.org/pause:2')
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert summary == dict(deleted_tables=[], restored_keys=[dotted(CDI)], kept_keys=[dotted(SANDBOX)])
    assert doc.toml.get(CDI) is None and doc.toml.get(SANDBOX) == 'example.org/pause:2'
    # b now holds a's prior: its undo gives back the original bytes
    released(doc, ledger, 'b', 'setting:s')
    assert doc.text == BASE


def test_a_key_kept_for_a_hand_edit_does_not_stop_the_undo_of_the_owners_older_keys(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    ledger.record_key('a', 'setting:s', CDI, None, 'true')
    ledger.record_key('a', 'setting:s', SANDBOX, '"registry.k8s.io/pause:3.8"', '"example.org/pause:1"')
    # the operator changed sandbox_image since a's write; enable_cdi is still a's
    doc, _unused = doc_and_ledger(tmp_path, BASE.replace('pause:3.8"', 'pause:9"\n  enable_cdi = true'))
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert summary == dict(deleted_tables=[], restored_keys=[dotted(CDI)], kept_keys=[dotted(SANDBOX)])
    assert len(warnings) == 1 and 'someone else changed it since' in warnings[0]
    assert doc.text == BASE.replace('pause:3.8"', 'pause:9"')


def test_every_helper_section_of_an_owner_goes_with_its_keys(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    set_owned(doc, ledger, 'a', 'setting:s', RT + ('runc', 'options', 'BinaryName'), '/usr/bin/nvidia')
    set_owned(doc, ledger, 'a', 'setting:s', CRI + ('registry', 'mirrors', 'docker.io', 'endpoint'), ['https://m'])
    assert len(ledger.select(owner='a', kind='section')) == 2
    summary, warnings = released(doc, ledger, 'a', 'setting:s')
    assert len(summary['deleted_tables']) == 2 and warnings == []
    assert doc.text == BASE and ledger.records == []


def test_a_section_made_where_another_owner_recorded_its_table_stays_that_owners(tmp_path):
    """The table's owner deletes it whole on its undo; a key set inside does not make the section the setter's."""
    doc, ledger = doc_and_ledger(tmp_path, BASE)
    kata = RT + ('kata',)
    ledger.record_table('coco', 'runtime:kata', kata)   # the operator has since deleted the table by hand
    set_owned(doc, ledger, 'ops', 'setting:k', kata + ('runtime_type',), 'io.containerd.kata.v2')
    assert ledger.select(owner='ops', kind='section') == []
    summary, _warnings = released(doc, ledger, 'ops', 'setting:k')
    assert summary['deleted_tables'] == []
    assert doc.toml.get(kata) == {}      # the header stays for coco's undo
    summary, _warnings = released(doc, ledger, 'coco', 'runtime:kata')
    assert doc.text == BASE


def test_a_quoting_only_hand_edit_leaves_the_owners_record_as_written(tmp_path):
    """The operator only changed the quotes of the owner's value: the owner still wrote it, nothing to record."""
    doc, ledger = doc_and_ledger(tmp_path, BASE.replace('"registry.k8s.io/pause:3.8"', "'example.org/pause:1'"))
    rec = ledger.record_key('a', 'setting:s', SANDBOX, '"registry.k8s.io/pause:3.8"', '"example.org/pause:1"')
    ledger.save('sha-1')
    assert set_owned(doc, ledger, 'a', 'setting:s', SANDBOX, 'example.org/pause:1') is False
    assert (rec['prior'], rec['value']) == ('"registry.k8s.io/pause:3.8"', '"example.org/pause:1"')
    assert ledger.dirty is False


def test_a_hand_edit_found_at_undo_is_written_to_the_ledger(tmp_path):
    """b's undo keeps the operator's value and gives it to a's record: the file is unchanged, so the
    engine writes the ledger only because it is dirty."""
    doc, ledger = doc_and_ledger(tmp_path, BASE.replace('pause:3.8', 'pause:9'))
    ledger.record_key('a', 'setting:s', SANDBOX, '"registry.k8s.io/pause:3.8"', '"example.org/pause:1"')
    ledger.record_key('b', 'setting:s', SANDBOX, '"example.org/pause:1"', '"example.org/pause:2"')
    ledger.save('sha-1')
    summary, warnings = released(doc, ledger, 'b', 'setting:s')
    assert summary['kept_keys'] == [dotted(SANDBOX)] and len(warnings) == 1
    assert ledger.dirty is True
    (rec,) = ledger.records
    assert (rec['owner'], rec['prior'], rec['value']) == ('a', '"registry.k8s.io/pause:9"', '"registry.k8s.io/pause:9"')
