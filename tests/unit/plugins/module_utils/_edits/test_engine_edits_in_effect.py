# -*- coding: utf-8 -*-
"""An edit goes where containerd reads it, or is refused: an edit that
declares nothing it wants still moves to the drop-in that decides its key,
and a drop-in named with edit_in that already says what the edit wants is
refused when a later drop-in decides the key otherwise (no byte would
change, and the value would still not be in effect).

The module runs in this process, judged by the real containerd 2.1.
"""

import tomllib

import pytest

from helpers.common import CONTAINERD_2, assert_containerd_accepts, read
from helpers.engine import IMAGES, edit_run, import_later_dropin, make_node, setting

V3_SNAPSHOTTER = ('plugins', 'io.containerd.cri.v1.images', 'snapshotter')


@pytest.fixture
def node(tmp_path):
    return make_node(tmp_path)


def set_v3_snapshotter_native(doc, ledger, ctx):
    doc.toml.set_value(V3_SNAPSHOTTER, 'native')
    return {}


def test_an_edit_that_declares_nothing_it_wants_moves_to_the_drop_in_that_decides_its_key(node, capsys):
    before = read(node['path'])
    res = edit_run(node, capsys, edit=set_v3_snapshotter_native, containerd_bin=CONTAINERD_2)
    assert 'failed' not in res, res['msg']
    assert res['changed'] and res['file'] == node['dropin']
    assert [(e['file'], e['in_effect']) for e in res['effects']] == [(node['dropin'], True)]
    assert "snapshotter = 'native'" in read(node['dropin']) and read(node['path']) == before
    dump = tomllib.loads(assert_containerd_accepts(node['path'], CONTAINERD_2))
    assert dump['plugins']['io.containerd.cri.v1.images']['snapshotter'] == 'native'


def test_a_named_drop_in_already_holding_the_value_a_later_drop_in_overrides_is_refused(node, capsys):
    later = import_later_dropin(node, "version = 3\n%s  snapshotter = 'zfs'\n" % IMAGES)
    with open(node['dropin'], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    dropin_before, main_before = read(node['dropin']), read(node['path'])
    res = setting(node, capsys, key='images.snapshotter', value='native', edit_in=node['dropin'])
    assert res['failed'], res
    assert res['msg'].startswith('refusing to write %s: plugins."io.containerd.cri.v1.images".snapshotter = '
                                 "'native' in %s has no effect: %s sets" % (node['dropin'], node['dropin'], later))
    assert read(node['dropin']) == dropin_before and read(node['path']) == main_before
