# -*- coding: utf-8 -*-
"""The ledger's records as containerd_info shows them: their numbers, the
stack after an owner writes again over another owner, the one ledger a config
reached through a symbolic link shares with its target, and what an owner's
records name (containerd_info's owned, containerd_config's release_all)."""

import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import (
    Ledger,
    ledger_key,
    ledger_path_for,
    owned_resources,
)

P = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter']


def test_records_are_numbered_from_one_in_the_order_they_are_made(tmp_path):
    """containerd_info shows seq: the first change of a fresh ledger is 1, each next one more."""
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_table('a', 'runtime:kata', ['t'])
    led.record_key('b', 'setting:s', P, None, '"nydus"')
    led.add({'owner': 'c', 'resource': 'import:/etc/x.toml', 'kind': 'import', 'path': ['imports']})
    led.save('sha-1')
    with open(led.path) as f:
        saved = json.load(f)['records']
    assert [(r['owner'], r['seq']) for r in saved] == [('a', 1), ('b', 2), ('c', 3)]


def test_a_record_without_a_number_counts_as_older_than_any_new_change(tmp_path):
    """A ledger written without seq (by hand, or an older version): the next change is still number 1."""
    path = ledger_path_for(str(tmp_path), '/etc/c.toml')
    os.makedirs(os.path.dirname(path))
    with open(path, 'w') as f:
        json.dump({'format': 1, 'records': [{'owner': 'old', 'resource': 'import:/etc/x.toml',
                                             'kind': 'import', 'path': ['imports']}]}, f)
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    rec = led.record_key('a', 'setting:s', P, None, '"nydus"')
    assert rec['seq'] == 1
    assert led.dirty is True


def test_a_record_made_after_a_save_is_to_be_written(tmp_path):
    """The engine writes the ledger of an unchanged config only when it is dirty: a new record makes it so."""
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('a', 'setting:s', P, '"overlayfs"', '"nydus"')
    led.save('sha-1')
    assert led.dirty is False
    led.add({'owner': 'b', 'resource': 'import:/etc/x.toml', 'kind': 'import', 'path': ['imports']})
    assert led.dirty is True


def test_an_owner_writing_again_over_another_owner_moves_to_the_top_of_the_stack(tmp_path):
    """a, then b over a, then a again: b inherits a's first prior, and a's new undo gives back b's value."""
    led = Ledger.load(str(tmp_path), '/etc/c.toml')
    led.record_key('a', 's', P, '"overlayfs"', '"nydus"')
    led.record_key('b', 's', P, '"nydus"', '"native"')
    led.record_key('a', 's', P, '"native"', '"zfs"')
    stack = [(r['owner'], r['prior'], r['value']) for r in led.key_stack(P)]
    assert stack == [('b', '"overlayfs"', '"native"'), ('a', '"native"', '"zfs"')]
    # a leaving now gives b's value back; b leaving then gives the original
    assert led.release_key(led.select(owner='a')[0]) == ('restore', '"native"')
    assert led.release_key(led.select(owner='b')[0]) == ('restore', '"overlayfs"')


def test_a_config_reached_through_a_symlink_shares_its_targets_ledger(tmp_path):
    target = tmp_path / 'etc' / 'config.toml'
    target.parent.mkdir()
    target.write_text('version = 2\n')
    link = tmp_path / 'config.toml'
    link.symlink_to(target)
    assert ledger_key(str(link)) == os.path.realpath(str(target))
    assert Ledger.load(str(tmp_path), ledger_key(str(link))).path == \
        Ledger.load(str(tmp_path), ledger_key(str(target))).path


def test_an_older_runtime_record_with_a_detail_names_its_runtime(tmp_path):
    """Records written as runtime:<name>#<detail> by older versions still name the runtime <name>."""
    default = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'default_runtime_name']
    records = [
        {'owner': 'coco', 'resource': 'runtime:kata#options', 'kind': 'key', 'path': P, 'seq': 1},
        {'owner': 'coco', 'resource': 'runtime:kata-qemu', 'kind': 'table', 'path': ['t'], 'seq': 2},
        {'owner': 'coco', 'resource': 'runtime:kata#default', 'kind': 'key', 'path': default, 'seq': 3},
        {'owner': 'coco', 'resource': 'runtime:runc#x#y', 'kind': 'released', 'seq': 4},
        {'owner': 'gpu', 'resource': 'runtime:nvidia', 'kind': 'table', 'path': ['n'], 'seq': 5},
        {'owner': 'coco', 'resource': 'setting:a.b', 'kind': 'key', 'path': ['a', 'b'], 'seq': 6},
    ]
    assert owned_resources(records, 'coco') == dict(runtimes=['kata', 'kata-qemu'], tables=['kata-qemu'],
                                                    defaults=['kata'], settings=['a.b'], imports=[])
