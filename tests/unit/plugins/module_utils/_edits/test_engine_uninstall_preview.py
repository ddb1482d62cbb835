# -*- coding: utf-8 -*-
"""A check-mode uninstall previews the files the real one writes, one
step each, as if each step had written: every drop-in that holds the
owner's records (later ones first), then config.toml. The preview ends at
config.toml, at a step that would change nothing, or when a file comes
round again, and previews each file once.

The module runs in this process, judged by the real containerd 2.1.
"""

import json

import pytest

from helpers.common import CONTAINERD_2, fixture_text, read
from helpers.engine import IMAGES, edit_run, make_node, setting

V3_SNAPSHOTTER = ('plugins', 'io.containerd.cri.v1.images', 'snapshotter')


@pytest.fixture
def two(tmp_path):
    """config.toml importing 10-a (decides the snapshotter) and 20-b (decides enable_cdi)."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    dropins = [str(etc / 'conf.d' / '10-a.toml'), str(etc / 'conf.d' / '20-b.toml')]
    with open(dropins[0], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'overlayfs'\n" % IMAGES)
    with open(dropins[1], 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n")
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml').replace('imports = []', 'imports = %s' % json.dumps(dropins), 1))
    return dict(path=str(path), dropins=dropins, state=str(tmp_path / 'state'), tmp=str(tmp_path))


def counted_uninstall(node, capsys, edit, **args):
    """edit with state: absent in check mode, run by the engine in this process: (result, the files it ran on)."""
    runs = []

    def counting(doc, ledger, ctx):
        runs.append(doc.path)
        return edit(doc, ledger, ctx)

    res = edit_run(node, capsys, edit=counting, containerd_bin=CONTAINERD_2, state='absent',
                   _ansible_check_mode=True, **args)
    return res, runs


def snapshotter_native(doc, ledger, ctx):
    doc.toml.set_value(V3_SNAPSHOTTER, 'native')
    return {}


def no_change(doc, ledger, ctx):
    return {}


# ------------------------------------------------------------------ the files previewed
def test_the_preview_names_every_file_the_uninstall_writes_and_writes_none(two, capsys):
    setting(two, capsys, key='images.snapshotter', value='native')  # goes to 10-a
    setting(two, capsys, key='cri.enable_cdi', value=False)  # goes to 20-b
    setting(two, capsys, key='cri.cdi_spec_dirs', value=['/etc/cdi'])  # stays in config.toml
    keys = [dict(key=k) for k in ('images.snapshotter', 'cri.enable_cdi', 'cri.cdi_spec_dirs')]
    before = [read(p) for p in two['dropins'] + [two['path']]]
    preview = setting(two, capsys, settings=keys, state='absent', _ansible_check_mode=True)
    assert preview['changed'] and preview['files'] == sorted(two['dropins'] + [two['path']])
    assert [read(p) for p in two['dropins'] + [two['path']]] == before
    res = setting(two, capsys, settings=keys, state='absent')
    assert res['changed'] and res['files'] == preview['files']
    assert "snapshotter = 'overlayfs'" in read(two['dropins'][0]) and 'enable_cdi = true' in read(two['dropins'][1])


def test_an_uninstall_in_a_named_drop_in_is_previewed_once(tmp_path, capsys):
    # edit_in names the file every step: the second step finds it previewed already and ends the preview
    node = make_node(tmp_path)
    setting(node, capsys, key='images.snapshotter', value='native')
    dropin_before = read(node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', state='absent', edit_in=node['dropin'],
                  _ansible_check_mode=True)
    assert res['changed'] and res['file'] == node['dropin'] and 'files' not in res
    assert [e['file'] for e in res['effects']] == [node['dropin']]
    assert read(node['dropin']) == dropin_before


def test_a_named_drop_in_is_previewed_in_one_step_and_found_again_in_the_next(tmp_path, capsys):
    node = make_node(tmp_path)
    res, runs = counted_uninstall(node, capsys, snapshotter_native, edit_in=node['dropin'])
    assert res['changed'] and res['file'] == node['dropin'] and 'files' not in res
    assert runs == [node['dropin']] * 2


# ------------------------------------------------------------------ where the preview ends
def test_the_preview_ends_at_config_toml(main_only, capsys):
    res, runs = counted_uninstall(main_only, capsys, snapshotter_native)
    assert res['changed'] and res['file'] == main_only['path'] and runs == [main_only['path']]
    assert "snapshotter = 'overlayfs'" in read(main_only['path'])


def test_the_preview_ends_at_a_step_that_would_change_nothing(tmp_path, capsys):
    # nothing recorded in the drop-in: the first step runs on config.toml, and finds nothing to undo
    node = make_node(tmp_path)
    res, runs = counted_uninstall(node, capsys, no_change)
    assert res['changed'] is False and res['file'] == node['path'] and runs == [node['path']]
