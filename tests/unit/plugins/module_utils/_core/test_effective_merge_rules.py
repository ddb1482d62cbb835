# -*- coding: utf-8 -*-
"""The merge rules of the merged view (_effective), each held against the real binaries' `config dump`.

test_effective_model.py compares the runtimes and the default runtime of
the layouts seen in the field; these pin the other rules the module docstring
names, one tree each: top-level tables deep-merge, lists are appended,
proxy_plugins entries are replaced one by one, 2.x moves a version 2 CRI
table's keys to the plugins that read them, deep-merges plugin tables (an
empty table adds nothing), and 1.x replaces a plugin table whole - and which
file the view names for each key, and why a change is or is not in effect.
"""

import subprocess
import tomllib

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    changed_leaves,
    confirm_with_dump,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import containerd_version

BINARIES = {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}
RUNTIMES_V2 = ('plugins', CRI_V2, 'containerd', 'runtimes')
RUNTIMES_V3 = ('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes')


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def tree(tmp_path, main, **dropins):
    """config.toml (with {name} placeholders for the drop-ins' paths) and its drop-ins; (path, drop-in paths)."""
    paths = dict((name, str(tmp_path / ('%s.toml' % name))) for name in dropins)
    for name, text in dropins.items():
        with open(paths[name], 'w') as f:
            f.write(text)
    path = str(tmp_path / 'config.toml')
    with open(path, 'w') as f:
        f.write(main.format(**paths))
    return path, paths


def view_and_dump(path, label):
    """The merged view of the tree as containerd `label` reads it, and that binary's config dump of it."""
    binary = BINARIES[label]
    assert binary, 'run make deps (containerd 1.6, 1.7 and 2.1)'
    rc, out, err = _run([binary, '--config', path, 'config', 'dump'])
    assert rc == 0, err
    with open(path) as f:
        data = parse_toml(f.read())
    return load_effective(path, data, containerd_version(_run, binary)), tomllib.loads(out)


# ------------------------------------------------------------------ outside the plugins
TOP_MAIN = '''version = 2
imports = ["{d}"]
disabled_plugins = ["io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "/run/ng-test.sock"
  uid = 5
[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/nydus.sock"
  platform = "linux/arm64"
[proxy_plugins.keep]
  type = "snapshot"
  address = "/run/keep.sock"
'''
TOP_DROPIN = '''version = 2
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.internal.v1.tracing"]
[grpc]
  gid = 7
[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/nydus2.sock"
[proxy_plugins.new]
  type = "snapshot"
  address = "/run/new.sock"
'''


@pytest.mark.parametrize('label', ['1.6', '1.7', '2.1'])
def test_top_level_tables_deep_merge_lists_append_and_proxy_plugins_are_replaced_one_by_one(tmp_path, label):
    path, paths = tree(tmp_path, TOP_MAIN, d=TOP_DROPIN)
    view, dump = view_and_dump(path, label)
    d = paths['d']
    # [grpc]: one key from each file
    assert (view.value(('grpc', 'uid')), view.value(('grpc', 'gid'))) == (dump['grpc']['uid'], dump['grpc']['gid']) \
        == (5, 7)
    assert view.source_of(('grpc', 'uid')) == path and view.source_of(('grpc', 'gid')) == d
    # disabled_plugins: the drop-in's entries are added (1.x repeats an entry both list: the same plugins)
    assert set(view.value(('disabled_plugins',))) == set(dump['disabled_plugins']) == set(
        ['io.containerd.internal.v1.tracing', 'io.containerd.snapshotter.v1.devmapper',
         'io.containerd.snapshotter.v1.btrfs'])
    assert view.source_of(('disabled_plugins',)) == d
    # proxy_plugins.nydus is the drop-in's whole entry: config.toml's platform is gone; keep stays, new comes
    assert sorted(view.value(('proxy_plugins',))) == sorted(dump['proxy_plugins']) == ['keep', 'new', 'nydus']
    assert view.value(('proxy_plugins', 'nydus')) == {'type': 'snapshot', 'address': '/run/nydus2.sock'}
    assert dump['proxy_plugins']['nydus'].get('platform', '') == ''
    assert view.source_of(('proxy_plugins', 'nydus', 'platform')) == d
    assert view.source_of(('proxy_plugins', 'keep', 'address')) == path


# ------------------------------------------------------------------ 2.x: a version 2 config migrated
MIGRATED = '''version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.example/pause:9"
  stream_server_port = "10011"
  max_concurrent_downloads = 5
  enable_cdi = true
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "/etc/containerd/certs.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "native"
    discard_unpacked_layers = true
    default_runtime_name = "kata"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]
    runtime_type = "io.containerd.kata.v2"
'''


def test_2x_moves_each_key_of_a_version_2_cri_table_to_the_plugin_that_reads_it(tmp_path):
    path, _paths = tree(tmp_path, MIGRATED)
    view, dump = view_and_dump(path, '2.1')
    moved = {
        ('plugins', CRI_V3_IMAGES, 'pinned_images', 'sandbox'): 'registry.example/pause:9',
        ('plugins', CRI_V2, 'stream_server_port'): '10011',
        ('plugins', CRI_V3_IMAGES, 'max_concurrent_downloads'): 5,
        ('plugins', CRI_V3_IMAGES, 'registry', 'config_path'): '/etc/containerd/certs.d',
        ('plugins', CRI_V3_IMAGES, 'snapshotter'): 'native',
        ('plugins', CRI_V3_IMAGES, 'discard_unpacked_layers'): True,
        ('plugins', CRI_V3_RUNTIME, 'enable_cdi'): True,
        ('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name'): 'kata',
        RUNTIMES_V3 + ('kata', 'runtime_type'): 'io.containerd.kata.v2',
    }
    for key, want in moved.items():
        assert view.value(key) == get_in(dump, key) == want, key
        assert view.source_of(key) == path, key
    assert view.value(('plugins', CRI_V2)) == {'stream_server_port': '10011'}
    assert view.plugin_owner(CRI_V3_RUNTIME) == view.plugin_owner(CRI_V3_IMAGES) == path


def test_2x_names_no_file_for_a_cri_plugin_no_file_sets(tmp_path):
    path, _paths = tree(tmp_path, 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')
    view, dump = view_and_dump(path, '2.1')
    assert view.value(('plugins', CRI_V3_RUNTIME, 'enable_cdi')) is True is get_in(
        dump, ('plugins', CRI_V3_RUNTIME, 'enable_cdi'))
    assert view.plugin_owner(CRI_V3_RUNTIME) == path and view.plugin_owner(CRI_V3_IMAGES) is None


def test_2x_reads_an_empty_version_2_containerd_table_as_no_setting(tmp_path):
    path, _paths = tree(tmp_path, 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n')
    view, dump = view_and_dump(path, '2.1')
    assert view.value(('plugins', CRI_V3_RUNTIME, 'containerd')) == {}
    assert view.value(('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')) is None
    assert get_in(dump, ('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')) == 'runc'


def test_2x_reads_a_version_2_drop_in_under_a_version_3_file_at_the_version_3_paths(tmp_path):
    main = 'version = 3\nimports = ["{d}"]\n[plugins."io.containerd.cri.v1.runtime"]\nenable_selinux = false\n'
    d = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n'
    path, paths = tree(tmp_path, main, d=d)
    view, dump = view_and_dump(path, '2.1')
    v2_key, v3_key = ('plugins', CRI_V2, 'enable_cdi'), ('plugins', CRI_V3_RUNTIME, 'enable_cdi')
    assert view.value(v3_key) is True is get_in(dump, v3_key) and view.source_of(v3_key) == paths['d']
    assert view.read_path(v2_key, paths['d']) == v3_key
    # config.toml's own paths are version 3 already
    assert view.read_path(v3_key, path) == view.read_path(v3_key) == v3_key
    (eff,) = effects_of(view, paths['d'], [(v2_key, True)])
    assert eff.in_effect and eff.key == v2_key and eff.shadowed_by is None


def test_2x_keeps_config_tomls_snapshotter_and_takes_the_drop_ins_other_image_keys(tmp_path):
    """A version 2 drop-in under a version 3 file: its snapshotter (in a containerd table without runtimes) does not
    count; the image keys after it in the file still do."""
    main = 'version = 3\nimports = ["{d}"]\n[plugins."io.containerd.cri.v1.images"]\nsnapshotter = "overlayfs"\n'
    d = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\nsnapshotter = "native"\n'
         '[plugins."io.containerd.grpc.v1.cri".registry]\nconfig_path = "/etc/containerd/certs.d"\n')
    path, paths = tree(tmp_path, main, d=d)
    view, dump = view_and_dump(path, '2.1')
    images = ('plugins', CRI_V3_IMAGES)
    assert view.value(images + ('snapshotter',)) == get_in(dump, images + ('snapshotter',)) == 'overlayfs'
    assert view.value(images + ('registry', 'config_path')) == get_in(dump, images + ('registry', 'config_path')) \
        == '/etc/containerd/certs.d'
    assert view.source_of(images + ('registry', 'config_path')) == paths['d']


# ------------------------------------------------------------------ 2.x: deep merge
DEEP_MAIN = '''version = 3
imports = ["{a}", "{b}"]
[plugins."io.containerd.cri.v1.runtime"]
  enable_cdi = true
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
  SystemdCgroup = true
  BinaryName = "/usr/bin/runc"
'''
DEEP_A = '''version = 3
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun]
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]
  runtime_type = "io.containerd.kata.v2"
[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
  privileged_without_host_devices = true
[plugins."io.containerd.gc.v1.scheduler"]
  pause_threshold = 0.03
'''
DEEP_B = '''version = 3
oom_score = -999
[plugins."io.containerd.gc.v1.scheduler"]
  deletion_threshold = 5
'''


def test_2x_deep_merges_plugin_tables_and_an_empty_table_adds_nothing(tmp_path):
    path, paths = tree(tmp_path, DEEP_MAIN, a=DEEP_A, b=DEEP_B)
    view, dump = view_and_dump(path, '2.1')
    a, b = paths['a'], paths['b']
    runc = RUNTIMES_V3 + ('runc',)
    # runc keeps config.toml's options (the drop-in's empty options table adds nothing) and gains a key
    for key, want, source in [(runc + ('options', 'SystemdCgroup'), True, path),
                              (runc + ('options', 'BinaryName'), '/usr/bin/runc', path),
                              (runc + ('privileged_without_host_devices',), True, a),
                              (RUNTIMES_V3 + ('kata', 'runtime_type'), 'io.containerd.kata.v2', a),
                              (('plugins', CRI_V3_RUNTIME, 'enable_cdi'), True, path),
                              (('plugins', 'io.containerd.gc.v1.scheduler', 'pause_threshold'), 0.03, a),
                              (('plugins', 'io.containerd.gc.v1.scheduler', 'deletion_threshold'), 5, b),
                              (('oom_score',), -999, b)]:
        assert view.value(key) == get_in(dump, key) == want, key
        assert view.source_of(key) == source, key
    # an empty runtime table is a runtime all the same
    assert sorted(view.value(RUNTIMES_V3)) == sorted(get_in(dump, RUNTIMES_V3)) == ['crun', 'kata', 'runc']
    assert view.value(RUNTIMES_V3 + ('crun',)) == {} and view.source_of(RUNTIMES_V3 + ('crun',)) == a
    # the plugin table is the last file's that adds to it; a plugin only config.toml sets stays its
    assert view.plugin_owner('io.containerd.gc.v1.scheduler') == b and view.plugin_owner(CRI_V3_RUNTIME) == a


def test_2x_a_later_file_wins_a_key_and_the_rest_of_the_table_stays_in_effect(tmp_path):
    main = ('version = 2\nimports = ["{d}"]\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "kata"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
            'runtime_type = "io.containerd.kata.v2"\n')
    d = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'
    path, paths = tree(tmp_path, main, d=d)
    view, dump = view_and_dump(path, '2.1')
    kata = (RUNTIMES_V2 + ('kata', 'runtime_type'), 'io.containerd.kata.v2')
    default = (('plugins', CRI_V2, 'containerd', 'default_runtime_name'), 'kata')
    in_effect, shadowed = effects_of(view, path, [kata, default])
    assert get_in(dump, RUNTIMES_V3 + ('kata', 'runtime_type')) == 'io.containerd.kata.v2'
    assert in_effect.in_effect and in_effect.shadowed_by is None and in_effect.why is None
    assert get_in(dump, ('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')) == 'runc'
    assert not shadowed.in_effect and shadowed.shadowed_by == paths['d'] and shadowed.effective == 'runc'
    assert shadowed.why == ('%s sets plugins."io.containerd.cri.v1.runtime".containerd.default_runtime_name '
                            'later, and the later file wins' % paths['d'])


# ------------------------------------------------------------------ 1.x: a plugin table replaced
@pytest.mark.parametrize('label', ['1.6', '1.7'])
def test_1x_a_drop_in_with_the_cri_table_shadows_every_cri_key_of_config_toml(tmp_path, label):
    main = ('version = 2\nimports = ["{d}"]\n[plugins."io.containerd.grpc.v1.cri"]\nenable_selinux = true\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "kata"\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
            'runtime_type = "io.containerd.kata.v2"\n')
    d = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n'
         '[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'
         '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n')
    path, paths = tree(tmp_path, main, d=d)
    view, dump = view_and_dump(path, label)
    assert sorted(get_in(dump, RUNTIMES_V2)) == sorted(view.value(RUNTIMES_V2)) == ['runc']
    kata, default, selinux = effects_of(view, path, [
        (RUNTIMES_V2 + ('kata', 'runtime_type'), 'io.containerd.kata.v2'),
        (('plugins', CRI_V2, 'containerd', 'default_runtime_name'), 'kata'),
        (('plugins', CRI_V2, 'enable_selinux'), True)])
    why = ('%s defines plugins."io.containerd.grpc.v1.cri" too, and containerd %s replaces the whole plugin table '
           'with the imported one' % (paths['d'], label))
    assert not kata.in_effect and kata.shadowed_by == paths['d'] and kata.effective is ABSENT and kata.why == why
    assert get_in(dump, ('plugins', CRI_V2, 'containerd', 'default_runtime_name')) == 'runc'
    assert not default.in_effect and default.shadowed_by == paths['d'] and default.effective == 'runc'
    assert default.why == why
    assert get_in(dump, ('plugins', CRI_V2, 'enable_selinux')) is False
    assert not selinux.in_effect and selinux.shadowed_by == paths['d'] and selinux.why == why
    # the whole table is the drop-in's too (an emptied table of config.toml is still shadowed)
    (table,) = effects_of(view, path, [(('plugins', CRI_V2), {})])
    assert not table.in_effect and table.why == why


# ------------------------------------------------------------------ what the module reports
def test_each_kind_of_change_is_reported_as_the_modules_effects_say(tmp_path):
    main = ('version = 2\nimports = ["{d}"]\noom_score = -999\n[plugins."io.containerd.gc.v1.scheduler"]\n'
            'pause_threshold = 0.03\n')
    d = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_selinux = true\n'
    path, paths = tree(tmp_path, main, d=d)
    view = load_effective(path, parse_toml(open(path).read()), (1, 6))
    gc = ('plugins', 'io.containerd.gc.v1.scheduler', 'pause_threshold')
    changes = [(('imports',), [paths['d']]), (('plugins', CRI_V2, 'no_such_key'), ABSENT),
               (('plugins', CRI_V2, 'enable_selinux'), ABSENT), (('oom_score',), -999), (('imports',), ABSENT),
               (gc, 0.03)]
    got = [e.as_dict() for e in effects_of(view, path, changes)]
    assert got == [
        dict(key='imports', file=path, in_effect=True, value=[paths['d']], removed=False, confirmed_by='model'),
        dict(key='plugins."io.containerd.grpc.v1.cri".no_such_key', file=path, in_effect=True, value=None,
             removed=True),
        dict(key='plugins."io.containerd.grpc.v1.cri".enable_selinux', file=path, in_effect=False,
             value=None, removed=True, shadowed_by=paths['d'], effective_value=True,
             why='%s still sets it' % paths['d']),
        dict(key='oom_score', file=path, in_effect=True, value=-999, removed=False, effective_value=-999),
        dict(key='imports', file=path, in_effect=True, value=None, removed=True, confirmed_by='model'),
        dict(key='plugins."io.containerd.gc.v1.scheduler".pause_threshold', file=path, in_effect=True, value=0.03,
             removed=False, effective_value=0.03),
    ]


def test_the_config_dump_confirms_or_overrules_each_effect(tmp_path):
    path, paths = tree(tmp_path, 'version = 2\nimports = ["{d}"]\n', d='version = 2\n')
    view = load_effective(path, parse_toml(open(path).read()), (1, 6))
    cri = ('plugins', CRI_V2)
    changes = [(('imports',), [paths['d']]),
               (cri + ('registry',), ABSENT),                    # containerd's defaults: a table, not a runtime
               (RUNTIMES_V2 + ('nvidia',), ABSENT),              # the dump lists no such runtime
               (cri + ('enable_cdi',), True), (cri + ('no_such_key',), 'x'), (cri + ('enable_selinux',), True)]
    effects = effects_of(view, path, changes)
    effects[3].in_effect = effects[4].in_effect = effects[5].in_effect = True  # as the model of a written file says
    dump = {'version': 2, 'plugins': {CRI_V2: {'registry': {'config_path': ''}, 'enable_cdi': False,
                                               'enable_selinux': True, 'containerd': {'runtimes': {}}}}}
    got = [e.as_dict() for e in confirm_with_dump(effects, view, dump)]
    assert [(g['in_effect'], g['confirmed_by']) for g in got] == [
        (True, 'model'), (True, 'config dump'), (True, 'config dump'), (False, 'config dump'),
        (False, 'config dump'), (True, 'config dump')]
    assert got[3]['why'] == 'containerd 1.6 config dump of the new config does not show it (it runs False)'
    assert got[3]['effective_value'] is False
    assert got[4]['why'] == ('containerd 1.6 config dump of the new config does not show it (the key is unknown to '
                             'it and dropped)')
    assert 'effective_value' not in got[4]
    assert confirm_with_dump(effects, view, None) is effects


# ------------------------------------------------------------------ what an edit changed
def test_empty_tables_that_gained_keys_hide_none_of_the_other_changes():
    """Ten runtimes given their first key among ten other changes: every key is named, no table as removed
    (the order a set gives the paths in varies from run to run)."""
    before = dict(('t%d' % i, {}) for i in range(10))
    after = dict(('t%d' % i, {'runtime_type': 'x'}) for i in range(10))
    after.update(('k%d' % i, i) for i in range(10))
    assert changed_leaves(before, after) == sorted(
        [(('t%d' % i, 'runtime_type'), 'x') for i in range(10)] + [(('k%d' % i,), i) for i in range(10)])
