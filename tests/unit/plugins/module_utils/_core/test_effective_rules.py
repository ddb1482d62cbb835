# -*- coding: utf-8 -*-
"""The merged view's rules at their edges (_effective), called directly.

test_effective_model.py holds the view against real containerd dumps; these
pin the rules the dumps cover only with common layouts: which plugin ids
translate, how a version 2 drop-in merges under version 3, where a removed
key or a shadowed one is reported, and how a dump confirms an effect.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    Effect,
    _why_shadowed,
    changed_leaves,
    confirm_with_dump,
    effects_of,
    iter_leaves,
    load_effective,
    migrate_merged_v2,
    translate_v2_path,
)

V16, V21 = (1, 6, 20), (2, 1, 0)
RUNTIMES_V2 = ('plugins', CRI_V2, 'containerd', 'runtimes')


def tree(tmp_path, main, **dropins):
    """config.toml (text, with {name} placeholders for the drop-ins' paths) and its drop-ins; (path, data)."""
    paths = dict((name, str(tmp_path / ('%s.toml' % name))) for name in dropins)
    for name, text in dropins.items():
        with open(paths[name], 'w') as f:
            f.write(text)
    path = str(tmp_path / 'config.toml')
    text = main.format(**paths)
    with open(path, 'w') as f:
        f.write(text)
    return path, parse_toml(text), paths


def viewed(tmp_path, ver, main, **dropins):
    """The merged view of such a tree as containerd ver reads it; (view, config.toml's path, drop-in paths)."""
    path, data, paths = tree(tmp_path, main, **dropins)
    return load_effective(path, data, ver), path, paths


def test_only_the_v2_cri_plugin_translates():
    """Another plugin id - one that sorts before the CRI id too - keeps its path."""
    for pid in ('io.containerd.gc.v1.scheduler', 'io.containerd.internal.v1.opt'):
        assert translate_v2_path(('plugins', pid, 'pause_threshold')) == ('plugins', pid, 'pause_threshold')
    assert translate_v2_path(('plugins', CRI_V2, 'enable_selinux')) == ('plugins', CRI_V3_RUNTIME, 'enable_selinux')


def test_a_merged_v2_cri_table_fills_in_only_the_runtime_keys_the_v3_table_lacks():
    """Measured on 2.1: runtime keys count one by one (containerd.<key> too) where the merged version 3 table
    has none; the others are kept as not read, with their file; other plugins stay as they are."""
    kata = {'runtime_type': 'io.containerd.kata.v2'}
    merged = {'plugins': {CRI_V3_RUNTIME: {'containerd': {'default_runtime_name': 'runc'}, 'enable_cdi': False},
                          CRI_V2: {'enable_selinux': True, 'enable_cdi': True,
                                   'containerd': {'default_runtime_name': 'kata', 'runtimes': {'kata': kata}}},
                          'io.containerd.gc.v1.scheduler': {'pause_threshold': 0.03}}}
    origin = dict((leaf, '/m' if leaf[1] != CRI_V2 else '/d') for leaf, _v in iter_leaves(merged))
    origin[('plugins', CRI_V3_RUNTIME)] = '/m'
    unread = migrate_merged_v2(merged, origin, order=['/m', '/d'])
    assert merged['plugins'] == {
        CRI_V3_RUNTIME: {'containerd': {'default_runtime_name': 'runc', 'runtimes': {'kata': kata}},
                         'enable_cdi': False, 'enable_selinux': True},
        CRI_V2: {}, 'io.containerd.gc.v1.scheduler': {'pause_threshold': 0.03}}
    why = 'a version 3 file sets it, and containerd 2.x keeps that over a version 2 file\'s'
    assert unread == {('/d', ('plugins', CRI_V3_RUNTIME, 'enable_cdi')): why,
                      ('/d', ('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')): why}
    assert origin[('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes', 'kata', 'runtime_type')] == '/d'
    assert origin[('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')] == '/m'
    assert origin[('plugins', CRI_V3_RUNTIME)] == '/d'  # the last file that adds to it


def test_an_empty_table_that_gained_keys_is_not_a_removal():
    assert changed_leaves({'a': {}}, {'a': {'b': 1}}) == [(('a', 'b'), 1)]
    assert changed_leaves({'a': {'b': 1}}, {'a': {}}) == [(('a',), {}), (('a', 'b'), ABSENT)]


def test_a_version_3_main_file_is_not_migrated(tmp_path):
    path, data, _paths = tree(tmp_path, 'version = 3\n')
    assert not load_effective(path, data, V21).migrates
    path, data, _paths = tree(tmp_path, 'version = 2\n')
    assert load_effective(path, data, V21).migrates and not load_effective(path, data, V16).migrates


def test_a_version_1_main_file_on_2_x_loses_its_plugins(tmp_path):
    """containerd 2.x reads a file without a version line as version 1 and ignores its plugins tables."""
    path, data, _paths = tree(tmp_path, 'oom_score = -1\n[plugins.cri.containerd]\ndefault_runtime_name = "crun"\n')
    view = load_effective(path, data, V21)
    assert 'plugins' not in view.merged and view.merged['oom_score'] == -1
    assert view.ignored and view.ignored[0][0] == path
    # containerd 2.x reads no version 2 layout under it: paths stay as written, a version 2 drop-in's too
    assert view.read_path(RUNTIMES_V2 + ('kata',)) == RUNTIMES_V2 + ('kata',)
    main = 'imports = ["{d}"]\n'
    view, path, paths = viewed(tmp_path, V21, main, d='version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')
    assert [p for p, _why in view.ignored] == [paths['d']]
    assert view.read_path(('plugins', CRI_V2, 'enable_cdi'), paths['d']) == ('plugins', CRI_V2, 'enable_cdi')


def test_the_version_key_is_never_merged_however_the_key_was_made(tmp_path):
    """A parser may hand over keys that are equal to "version" without being the same object."""
    path, data, paths = tree(tmp_path, 'version = 2\nimports = ["{d}"]\n', d='version = 2\n')
    key = ''.join(['ver', 'sion'])
    view = load_effective(path, data, V16, overrides={paths['d']: {key: 2, 'oom_score': 5}})
    assert view.merged == {'imports': [paths['d']], 'oom_score': 5}


def test_a_version_1_drop_in_on_1_x_renames_cri_and_replaces_the_table(tmp_path):
    main = ('version = 2\nimports = ["{kata}"]\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "runc"\n')
    kata = '[plugins.cri.containerd.runtimes.kata]\nruntime_type = "io.containerd.kata.v2"\n'
    view, path, paths = viewed(tmp_path, V16, main, kata=kata)
    assert 'cri' not in view.merged['plugins']
    assert view.merged['plugins'][CRI_V2] == {'containerd': {'runtimes': {'kata': {'runtime_type': 'io.containerd.kata.v2'}}}}
    assert view.plugin_owner(CRI_V2) == paths['kata'] and 'version' not in view.merged


def test_a_table_where_a_value_was_takes_the_origin_of_its_file(tmp_path):
    """2.x deep-merges: a drop-in's table at a key the main file gave a plain value replaces the value."""
    main = 'version = 3\nimports = ["{d}"]\n[plugins."io.containerd.x.v1.demo"]\nsetting = "plain"\n'
    d = 'version = 3\n[plugins."io.containerd.x.v1.demo".setting]\nnested = 1\n'
    view, path, paths = viewed(tmp_path, V21, main, d=d)
    assert view.value(('plugins', 'io.containerd.x.v1.demo', 'setting')) == {'nested': 1}
    assert view.source_of(('plugins', 'io.containerd.x.v1.demo', 'setting')) == paths['d']


def test_an_effect_says_why_only_when_there_is_a_reason():
    assert 'why' not in Effect(('a',), 1, '/f', True).as_dict()
    assert Effect(('a',), 1, '/f', False, why='because').as_dict()['why'] == 'because'


def test_removals_and_list_entries_are_judged_on_the_merged_view(tmp_path):
    main = ('version = 2\nimports = ["{d}"]\n[plugins."io.containerd.grpc.v1.cri"]\nenable_selinux = true\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\nsnapshotter = "native"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n')  # 2.x reads snapshotter only beside it
    d = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nsnapshotter = "overlayfs"\n'
    view, path, paths = viewed(tmp_path, V21, main, d=d)
    gone, kept = effects_of(view, path, [(('plugins', CRI_V2, 'no_such_key'), ABSENT),
                                         (('plugins', CRI_V2, 'containerd', 'snapshotter'), ABSENT)])
    assert gone.in_effect and gone.shadowed_by is None and gone.why is None
    assert not kept.in_effect and kept.shadowed_by == paths['d'] and kept.why == '%s still sets it' % paths['d']
    (listed,) = effects_of(view, path, [(('imports',), [str(tmp_path / 'other.toml')])])
    assert not listed.in_effect and listed.why == 'containerd does not read %s' % path


def test_why_a_change_is_not_in_effect(tmp_path):
    main = 'version = 2\nimports = ["{d}"]\n'
    d = 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\nenable_cdi = true\n'
    view, path, paths = viewed(tmp_path, V16, main, d=d)
    (eff,) = effects_of(view, paths['d'], [(('plugins', CRI_V3_RUNTIME, 'enable_cdi'), True)])
    assert eff.why == ("containerd 1.6.20 ignores %s (version = 3 is higher than the main file's 2)" % paths['d'])
    # a file outside the tree (its name sorts before the ignored one's): not read, not "ignored"
    assert _why_shadowed(view, ('enable_cdi',), str(tmp_path / 'a.toml'), None) == \
        'containerd 1.6.20 does not read it from %s' % (tmp_path / 'a.toml')
    # 2.x reads a version 3 drop-in of a version 2 main file
    (tmp_path / 'on-2.1').mkdir()
    view, path, paths = viewed(tmp_path / 'on-2.1', V21, main, d=d)
    (eff,) = effects_of(view, paths['d'], [(('plugins', CRI_V3_RUNTIME, 'enable_cdi'), True)])
    assert eff.in_effect and view.ignored == []
    one_x, path, paths = viewed(tmp_path, V16, main, d=d)
    assert _why_shadowed(one_x, ('plugins',), path, paths['d']) == \
        '%s sets plugins later, and the later file wins' % paths['d']


@pytest.mark.parametrize('value,dumped,in_effect', [('/x', '/x', True), ('/x', '/y', False)])
def test_an_unknown_binary_with_a_v3_dump_is_judged_in_the_v3_layout(tmp_path, value, dumped, in_effect):
    """Without the binary's version a version 2 file is modelled as 1.x reads it; a version 3 dump (the binary
    was 2.x) is then read at the translated path."""
    main = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]\n'
            'BinaryName = "%s"\n' % value)
    path, data, _paths = tree(tmp_path, main)
    view = load_effective(path, data, None)
    key = RUNTIMES_V2 + ('nvidia', 'options', 'BinaryName')
    effects = effects_of(view, path, [(key, value)])
    dump = {'version': 3, 'plugins': {CRI_V3_RUNTIME: {'containerd': {'runtimes': {
        'nvidia': {'options': {'BinaryName': dumped}}}}}, CRI_V3_IMAGES: {}}}
    (eff,) = confirm_with_dump(effects, view, dump)
    assert eff.confirmed == 'config dump' and eff.in_effect is in_effect


def test_a_removed_runtime_the_dump_still_lists_is_not_in_effect(tmp_path):
    path, data, _paths = tree(tmp_path, 'version = 2\n')
    view = load_effective(path, data, V16)
    effects = effects_of(view, path, [(RUNTIMES_V2 + ('nvidia',), ABSENT)])
    assert effects[0].in_effect
    dump = {'version': 2, 'plugins': {CRI_V2: {'containerd': {'runtimes': {'nvidia': {'runtime_type': 'x'}}}}}}
    (eff,) = confirm_with_dump(effects, view, dump)
    assert not eff.in_effect and eff.why == 'containerd config dump still lists it'
    # a key the dump still holds (containerd's default) is not a table: the removal stands
    effects = effects_of(view, path, [(('plugins', CRI_V2, 'enable_selinux'), ABSENT)])
    (eff,) = confirm_with_dump(effects, view, {'version': 2, 'plugins': {CRI_V2: {'enable_selinux': False}}})
    assert eff.in_effect


def test_the_main_file_and_its_imports_are_listed_in_load_order(tmp_path):
    view, path, paths = viewed(tmp_path, V16, 'version = 2\nimports = ["{a}", "{b}"]\n', a='version = 2\n', b='version = 2\n')
    assert view.imported() == [paths['a'], paths['b']] and os.path.isabs(view.imported()[0])
