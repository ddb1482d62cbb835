# -*- coding: utf-8 -*-
"""containerd 2.x reading version 2 CRI tables: the merged view (_effective) against 2.1's own `config dump`.

Measured on containerd 2.1.9:
containerd merges every file first and migrates the merged version 2 CRI
table only when the last file read with a version line says version = 2.
Then image keys replace the images plugin's, runtime keys fill in only the
keys (and ``containerd.<key>``) the version 3 runtime table lacks, and
snapshotter / disable_snapshot_annotations / discard_unpacked_layers move
only when the CRI ``containerd`` table has a ``runtimes`` table.  1.6 and
1.7 migrate nothing.  A file whose ``imports`` is not a list is refused.
"""

import subprocess
import tomllib

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2
from helpers.trees import write_tree as tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    ConfigError,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import cri_plugins

BINARIES = {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}
VERSIONS = {'1.6': (1, 6), '1.7': (1, 7), '2.1': (2, 1)}
IMAGES, RUNTIME = ('plugins', CRI_V3_IMAGES), ('plugins', CRI_V3_RUNTIME)
SNAP, DSA, DUL = IMAGES + ('snapshotter',), IMAGES + ('disable_snapshot_annotations',), \
    IMAGES + ('discard_unpacked_layers',)
RUNTIMES = RUNTIME + ('containerd', 'runtimes')
DEFAULT_RUNTIME = RUNTIME + ('containerd', 'default_runtime_name')

V2_CONTAINERD = '[plugins."io.containerd.grpc.v1.cri".containerd]\n'
V2_SNAP = V2_CONTAINERD + (
    'snapshotter = "native"\ndiscard_unpacked_layers = true\ndisable_snapshot_annotations = false\n')
V2_KATA = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "io.containerd.kata.v2"\n'
V2_EMPTY_RUNTIMES = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
V3_ZFS = '[plugins."io.containerd.cri.v1.images"]\nsnapshotter = "zfs"\n'
V3_CONTAINERD = '[plugins."io.containerd.cri.v1.runtime".containerd]\n'
ONE = 'version = 3\nimports = ["{a}"]\n'
TWO = 'version = 3\nimports = ["{a}", "{b}"]\n'
MIGRATED = {SNAP: 'native', DSA: False, DUL: True}


class Default(object):
    """containerd's own default: the dump shows it, no file sets it (the model has nothing there)."""

    def __init__(self, value):
        self.value = value


NOT_MIGRATED = {SNAP: Default('overlayfs'), DSA: Default(True), DUL: Default(False)}


def _binary(label):
    binary = BINARIES[label]
    if binary is None:
        pytest.fail('containerd %s is missing: run `make deps` (installs Debian\'s containerd and unpacks 1.7 and '
                    '2.1 into build/)' % label)
    return binary


def _dump(path, label):
    proc = subprocess.run([_binary(label), '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def view_and_dump(path, label='2.1'):
    rc, out, err = _dump(path, label)
    assert rc == 0, err
    with open(path) as f:
        return load_effective(path, parse_toml(f.read()), VERSIONS[label]), tomllib.loads(out)


def agree(tmp_path, name, main, want, runtimes=None, label='2.1', **files):
    """The tree under tmp_path/name: model and dump agree on each key of want (and on the runtimes' names)."""
    folder = tmp_path / name
    folder.mkdir()
    path, paths = tree(folder, main, **files)
    view, dump = view_and_dump(path, label)
    for key, value in want.items():
        if isinstance(value, Default):
            assert (view.value(key), get_in(dump, key)) == (None, value.value), (name, key)
        else:
            assert view.value(key) == get_in(dump, key) == value, (name, key)
    if runtimes is not None:
        # 2.x adds its built-in runc to what the files define
        assert sorted(set(view.value(RUNTIMES) or {}) | {'runc'}) == sorted(get_in(dump, RUNTIMES)) \
            == sorted(set(runtimes) | {'runc'}), name
    return view, path, paths


def test_a_version_2_main_file_moves_its_snapshot_keys_only_with_a_runtimes_table(tmp_path):
    # 1: no runtimes table: containerd 2.1 drops them (1.6 and 1.7 read them where they are)
    agree(tmp_path, 'none', 'version = 2\n' + V2_SNAP, NOT_MIGRATED, runtimes=[])
    # an empty runtimes table is enough; so is one a drop-in adds (the merged table counts)
    agree(tmp_path, 'empty', 'version = 2\n' + V2_SNAP + V2_EMPTY_RUNTIMES, MIGRATED, runtimes=[])
    view, _path, paths = agree(tmp_path, 'dropin', 'version = 2\nimports = ["{a}"]\n' + V2_SNAP, MIGRATED,
                               runtimes=['kata'], a='version = 2\n' + V2_KATA)
    assert view.source_of(RUNTIMES + ('kata', 'runtime_type')) == paths['a']
    v2 = ('plugins', CRI_V2, 'containerd')
    for label in ('1.6', '1.7'):
        agree(tmp_path, 'none-' + label, 'version = 2\n' + V2_SNAP, {v2 + ('snapshotter',): 'native',
                                                                     v2 + ('discard_unpacked_layers',): True},
              label=label)


def test_a_version_2_drop_ins_snapshotter_beside_runtimes_overrides_the_version_3_one(tmp_path):
    # 2: the drop-in's snapshotter wins over config.toml's
    view, _path, paths = agree(tmp_path, 'both', ONE + V3_ZFS, MIGRATED, runtimes=['kata'],
                               a='version = 2\n' + V2_SNAP + V2_KATA)
    assert view.source_of(SNAP) == paths['a']
    agree(tmp_path, 'empty', ONE + V3_ZFS, MIGRATED, runtimes=[], a='version = 2\n' + V2_SNAP + V2_EMPTY_RUNTIMES)
    # the runtimes may come from another version 2 drop-in, before or after it
    agree(tmp_path, 'runtimes-first', TWO + V3_ZFS, MIGRATED, runtimes=['kata'], a='version = 2\n' + V2_KATA,
          b='version = 2\n' + V2_SNAP)
    agree(tmp_path, 'runtimes-last', TWO + V3_ZFS, MIGRATED, runtimes=['kata'], a='version = 2\n' + V2_SNAP,
          b='version = 2\n' + V2_KATA)
    # a version 3 drop-in before it does not keep its snapshotter either
    agree(tmp_path, 'v3-first', TWO, MIGRATED, runtimes=['kata'], a='version = 3\n' + V3_ZFS,
          b='version = 2\n' + V2_SNAP + V2_KATA)


def test_a_version_2_drop_ins_snapshot_keys_without_runtimes_are_not_read(tmp_path):
    # 3: stargz-style drop-in under a version 3 file without a snapshotter
    view, path, paths = agree(tmp_path, 'none', ONE, NOT_MIGRATED, runtimes=[], a='version = 2\n' + V2_SNAP)
    (eff,) = effects_of(view, paths['a'], [(('plugins', CRI_V2, 'containerd', 'snapshotter'), 'native')])
    assert not eff.in_effect
    assert eff.why == ('containerd 2.1 does not read it from %s: containerd 2.x moves containerd.snapshotter of a '
                       'version 2 CRI table to the images plugin only when that table has a runtimes table'
                       % paths['a'])
    # config.toml's own snapshotter stays
    view, path, paths = agree(tmp_path, 'zfs', ONE + V3_ZFS, {SNAP: 'zfs', DSA: Default(True)}, runtimes=[],
                              a='version = 2\n' + V2_SNAP)
    assert view.source_of(SNAP) == path


def test_a_version_2_drop_in_fills_in_the_runtime_keys_the_version_3_table_lacks(tmp_path):
    # 4: the version 3 containerd table has default_runtime_name only: the drop-in's runtimes count
    view, path, paths = agree(tmp_path, 'kata', ONE + V3_CONTAINERD + 'default_runtime_name = "runc"\n',
                              {DEFAULT_RUNTIME: 'runc'}, runtimes=['kata'], a='version = 2\n' + V2_KATA)
    assert view.source_of(RUNTIMES + ('kata', 'runtime_type')) == paths['a']
    assert view.source_of(DEFAULT_RUNTIME) == path
    # a key both set: the version 3 one stays, wherever it is in the load order
    drop_in = 'version = 2\n' + V2_CONTAINERD + 'default_runtime_name = "kata"\n' + V2_KATA
    view, path, paths = agree(tmp_path, 'both', ONE + V3_CONTAINERD + 'default_runtime_name = "runc"\n',
                              {DEFAULT_RUNTIME: 'runc'}, runtimes=['kata'], a=drop_in)
    (eff,) = effects_of(view, paths['a'], [(('plugins', CRI_V2, 'containerd', 'default_runtime_name'), 'kata')])
    assert not eff.in_effect and eff.effective == 'runc' and 'a version 3 file sets it' in eff.why
    agree(tmp_path, 'v3-first', TWO, {DEFAULT_RUNTIME: 'crun'}, runtimes=['kata'],
          a='version = 3\n' + V3_CONTAINERD + 'default_runtime_name = "crun"\n', b=drop_in)
    agree(tmp_path, 'other-key', ONE + V3_CONTAINERD + 'ignore_blockio_not_enabled_errors = true\n',
          {DEFAULT_RUNTIME: 'kata', RUNTIME + ('containerd', 'ignore_blockio_not_enabled_errors'): True},
          runtimes=['kata'], a=drop_in)
    # per key of the containerd table: a version 3 runtimes table (an empty one too) keeps the drop-in's out
    agree(tmp_path, 'runtimes', ONE + '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.crun]\n'
          'runtime_type = "io.containerd.runc.v2"\n', {}, runtimes=['crun'], a='version = 2\n' + V2_KATA)
    agree(tmp_path, 'no-runtimes', ONE + '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes]\n', {},
          runtimes=[], a='version = 2\n' + V2_KATA)
    # other tables count whole: a version 3 cni table keeps all of the drop-in's cni keys out
    agree(tmp_path, 'cni', ONE + '[plugins."io.containerd.cri.v1.runtime"]\nenable_selinux = false\n'
          '[plugins."io.containerd.cri.v1.runtime".cni]\nconf_dir = "/x"\n',
          {RUNTIME + ('enable_selinux',): False, RUNTIME + ('cni', 'conf_dir'): '/x',
           RUNTIME + ('cni', 'bin_dir'): Default('')},
          a='version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_selinux = true\n'
            '[plugins."io.containerd.grpc.v1.cri".cni]\nbin_dir = "/y"\nconf_dir = "/z"\n')


def test_a_version_2_drop_ins_image_keys_replace_the_version_3_ones_whole(tmp_path):
    main = ONE + ('[plugins."io.containerd.cri.v1.images"]\nmax_concurrent_downloads = 3\n'
                  '[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/r"\n')
    d = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nmax_concurrent_downloads = 5\n'
         '[plugins."io.containerd.grpc.v1.cri".registry.headers]\nX = ["y"]\n')
    view, _path, paths = agree(tmp_path, 'images', main, {
        IMAGES + ('max_concurrent_downloads',): 5, IMAGES + ('registry', 'headers'): {'X': ['y']},
        IMAGES + ('registry', 'config_path'): Default('')}, a=d)
    assert view.source_of(IMAGES + ('registry', 'headers', 'X')) == paths['a']


def test_a_later_version_3_file_stops_the_migration_of_the_version_2_drop_ins(tmp_path):
    v2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nstream_server_port = "10011"\n'
          'max_concurrent_downloads = 5\n' + V2_CONTAINERD + 'default_runtime_name = "kata"\n' + V2_KATA)
    view, _path, paths = agree(tmp_path, 'v3-last', TWO, {
        DEFAULT_RUNTIME: Default('runc'), IMAGES + ('max_concurrent_downloads',): Default(3),
        ('plugins', CRI_V2, 'stream_server_port'): '10011'},  # the gRPC plugin reads its own keys all the same
        runtimes=[], a=v2, b='version = 3\n[plugins."io.containerd.gc.v1.scheduler"]\npause_threshold = 0.03\n')
    (eff,) = effects_of(view, paths['a'], [(('plugins', CRI_V2, 'containerd', 'runtimes', 'kata', 'runtime_type'),
                                            'io.containerd.kata.v2')])
    assert not eff.in_effect and 'a version 3 file is read after it' in eff.why
    agree(tmp_path, 'v3-last-runtime', TWO, {DEFAULT_RUNTIME: 'crun'}, runtimes=[], a=v2,
          b='version = 3\n' + V3_CONTAINERD + 'default_runtime_name = "crun"\n')
    agree(tmp_path, 'v3-last-images', TWO, {SNAP: 'zfs', DSA: Default(True), DUL: Default(False)}, runtimes=[],
          a='version = 2\n' + V2_SNAP + V2_KATA, b='version = 3\n' + V3_ZFS)
    # a file without a version line changes nothing; another version 2 file after the version 3 one migrates all
    agree(tmp_path, 'versionless-last', TWO, {DEFAULT_RUNTIME: 'kata'}, runtimes=['kata'], a=v2, b='oom_score = -5\n')
    agree(tmp_path, 'v2-last', 'version = 3\nimports = ["{a}", "{b}", "{c}"]\n', {DEFAULT_RUNTIME: 'crun'},
          runtimes=['kata'], a=v2, b='version = 3\n' + V3_CONTAINERD + 'default_runtime_name = "crun"\n',
          c='version = 2\n')


def _imports_not_a_list(tmp_path, where):
    """Case 5's tree: (config.toml, the file whose imports is a string, the file it names, the containerd
    versions that read the tree)."""
    c = str(tmp_path / 'c.toml')
    if where == 'imported':
        path, paths = tree(tmp_path, 'version = 2\nimports = ["{a}", "{b}"]\n',
                           a='version = 2\nimports = "%s"\n' % c, b='version = 2\nimports = ["%s"]\n' % c,
                           c='version = 2\n')
        return path, paths['a'], c, ('1.6', '1.7', '2.1')
    path, _paths = tree(tmp_path, 'version = 3\nimports = "%s"\n' % c, c='version = 3\n')
    return path, path, c, ('2.1',)


@pytest.mark.parametrize('where', ['imported', 'main'])
def test_every_containerd_refuses_imports_that_are_not_a_list(tmp_path, where):
    """5: every containerd refuses the tree (it cannot decode a string into its list of imports)."""
    path, _bad, _c, labels = _imports_not_a_list(tmp_path, where)
    for label in labels:
        rc, _out, err = _dump(path, label)
        assert rc != 0 and 'string' in err and ('Imports' in err or '[]string' in err), (label, err)


@pytest.mark.parametrize('where', ['imported', 'main'])
def test_imports_that_are_not_a_list_are_refused_with_the_file_and_the_fix(tmp_path, where):
    """5: the view refuses the whole tree as containerd does (test above), naming the file and the fix."""
    path, bad, c, _labels = _imports_not_a_list(tmp_path, where)
    with open(path) as f:
        data = parse_toml(f.read())
    with pytest.raises(ConfigError) as info:
        load_effective(path, data, (2, 1))
    assert str(info.value) == ('%s: "imports" must be an array of file paths, found %r: containerd refuses the whole '
                               'config. Fix: write it as a list, imports = ["%s"].' % (bad, c, c))
    assert info.value.details['key'] == 'imports'


V2_MAIN_V3_DROPIN = ('version = 2\nimports = ["{a}"]\n' + V2_CONTAINERD + 'default_runtime_name = "kata"\n' + V2_KATA,
                     'version = 3\n' + V3_ZFS + V3_CONTAINERD + 'default_runtime_name = "runc"\n')


def test_a_version_3_drop_in_of_a_version_2_main_file_is_read_by_2x_and_stops_the_migration(tmp_path):
    main, dropin = V2_MAIN_V3_DROPIN
    view, _path, paths = agree(tmp_path, 'v2-main', main, {SNAP: 'zfs', DEFAULT_RUNTIME: 'runc'}, runtimes=[],
                               a=dropin)
    assert view.ignored == []
    (eff,) = effects_of(view, _path, [(('plugins', CRI_V2, 'containerd', 'default_runtime_name'), 'kata')])
    assert not eff.in_effect and 'a version 3 file is read after it' in eff.why
    # the built-in checks refuse it all the same: the config.toml man page forbids a drop-in above the main
    # file's version, and containerd 2.3 does not start on it
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree
    with open(_path) as f:
        msgs = check_tree(_path, parse_toml(f.read()), (2, 1))
    assert any(paths['a'] in msg and _path in msg and '2.3 and later do not start' in msg for msg in msgs), msgs


def test_a_version_3_drop_in_of_a_version_2_main_file_is_ignored_by_16_and_refused_by_17(tmp_path):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_tree
    main, dropin = V2_MAIN_V3_DROPIN
    path, paths = tree(tmp_path, main, a=dropin)
    with open(path) as f:
        data = parse_toml(f.read())
    rc, out, _err = _dump(path, '1.6')
    assert rc == 0 and get_in(tomllib.loads(out), ('plugins', CRI_V2, 'containerd', 'default_runtime_name')) == 'kata'
    view = load_effective(path, data, (1, 6))
    assert view.value(('plugins', CRI_V2, 'containerd', 'default_runtime_name')) == 'kata'
    assert [p for p, _why in view.ignored] == [paths['a']]
    (msg16,) = check_tree(path, data, (1, 6))
    assert 'containerd 1.6 does not read it' in msg16 and 'Fix: write the drop-in with version = 2' in msg16
    rc, _out, err = _dump(path, '1.7')
    assert rc != 0 and 'version `3` is not supported' in err
    (msg17,) = check_tree(path, data, (1, 7))
    assert 'containerd 1.7 refuses it' in msg17 and 'Fix: write the drop-in with version = 2' in msg17


@pytest.mark.parametrize('label, plugin', [('2.1', CRI_V2), ('1.6', CRI_V2), ('2.1', 'cri')])
def test_a_key_of_a_version_less_drop_in_of_a_version_2_main_file_is_found_where_containerd_reads_it(
        tmp_path, label, plugin):
    # containerd reads such a drop-in as version 2 (version 1's plugin id "cri" is the version 2 one)
    dropin = '[plugins."%s".containerd]\ndefault_runtime_name = "crun"\n' % plugin
    main = 'version = 2\nimports = ["{a}"]\n' + V2_CONTAINERD + 'default_runtime_name = "runc"\n'
    path, paths = tree(tmp_path, main, a=dropin)
    view, dump = view_and_dump(path, label)
    key = ('plugins', plugin, 'containerd', 'default_runtime_name')
    where = DEFAULT_RUNTIME if label == '2.1' else ('plugins', CRI_V2, 'containerd', 'default_runtime_name')
    assert view.read_path(key, paths['a']) == where and get_in(dump, where) == 'crun'
    (eff,) = effects_of(view, paths['a'], [(key, 'crun')])
    assert eff.in_effect and eff.shadowed_by is None, eff.as_dict()


# ------------------------------------------------------------------ which file each table and key comes from, on 1.x and 2.x
def test_each_plugin_table_is_owned_by_the_file_that_defines_it_on_16(tmp_path):
    # 1.6: config.toml's own CRI table, no drop-in defines one
    main = ('version = 2\nimports = ["{a}"]\n[plugins."io.containerd.grpc.v1.cri"]\n'
            'sandbox_image = "registry.k8s.io/pause:3.9"\n')
    view, path, _paths = agree(tmp_path, 'main-only', main,
                               {('plugins', CRI_V2, 'sandbox_image'): 'registry.k8s.io/pause:3.9'},
                               label='1.6', a='version = 2\noom_score = -5\n')
    assert view.plugin_owner(CRI_V2) == path
    assert cri_plugins(view) == ([CRI_V2], {CRI_V2: path})
    # a key no file sets is decided by the file whose CRI table containerd uses: config.toml
    assert view.source_of(('plugins', CRI_V2, 'enable_selinux')) == path


def test_the_migrated_version_2_tables_are_owned_by_the_main_file_on_21(tmp_path):
    main = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "registry.k8s.io/pause:3.9"\n'
            'stream_server_port = "10011"\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "runc"\n')
    view, path, _paths = agree(tmp_path, 'v2-main', main, {
        IMAGES + ('pinned_images', 'sandbox'): 'registry.k8s.io/pause:3.9', DEFAULT_RUNTIME: 'runc',
        ('plugins', CRI_V2, 'stream_server_port'): '10011'})
    ids, owners = cri_plugins(view)
    assert owners == dict((pid, path) for pid in ids)
    assert view.source_of(('plugins', CRI_V2, 'stream_idle_timeout')) == path


def test_a_version_2_drop_ins_registry_replaces_config_tomls_and_decides_the_key_it_dropped(tmp_path):
    main = ONE + '[plugins."io.containerd.cri.v1.images".registry]\nconfig_path = "/r"\n'
    drop_in = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".registry.headers]\nX = ["y"]\n'
    view, path, paths = agree(tmp_path, 'registry', main, {IMAGES + ('registry', 'config_path'): Default(''),
                                                           IMAGES + ('registry', 'headers'): {'X': ['y']}},
                              a=drop_in)
    key = IMAGES + ('registry', 'config_path')
    assert view.source_of(key) == paths['a']
    (eff,) = effects_of(view, path, [(key, '/r')])
    assert not eff.in_effect and eff.shadowed_by == paths['a']
    assert eff.why == '%s sets %s later, and the later file wins' % (
        paths['a'], 'plugins."io.containerd.cri.v1.images".registry.config_path')


def test_a_version_less_main_files_cri_plugin_is_read_by_1x(tmp_path):
    main = '[plugins.cri]\nsandbox_image = "registry.k8s.io/pause:3.9"\n[plugins.cri.containerd]\n' \
           'snapshotter = "native"\n'
    for label in ('1.6', '1.7'):
        view, _path, _paths = agree(tmp_path, 'v1-' + label, main, {
            ('plugins', CRI_V2, 'sandbox_image'): 'registry.k8s.io/pause:3.9',
            ('plugins', CRI_V2, 'containerd', 'snapshotter'): 'native'}, label=label)
        assert view.ignored == []


def test_a_runtime_key_a_later_version_2_file_set_again_is_still_not_read_from_the_first(tmp_path):
    # 2.1: config.toml (version 3) defines kata, so no version 2 runtime is read; 10-a added kata's table to
    # the runtimes table z made, 20-b set its runtime_type again: 10-a holds only the table in the model
    kata = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "%s"\n'
    main = ('version = 3\nimports = ["{z}", "{a}", "{b}"]\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
            'runtime_type = "io.containerd.kata.v2"\n')
    view, _path, paths = agree(tmp_path, 'kata', main, {RUNTIMES + ('kata', 'runtime_type'): 'io.containerd.kata.v2'},
                               runtimes=['kata'],
                               z='version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                                 'runtime_type = "io.containerd.runc.v2"\n',
                               a='version = 2\n' + kata % 'io.containerd.kata-a.v2',
                               b='version = 2\n' + kata % 'io.containerd.kata-b.v2')
    (eff,) = effects_of(view, paths['a'], [(('plugins', CRI_V2, 'containerd', 'runtimes', 'kata', 'runtime_type'),
                                            'io.containerd.kata-a.v2')])
    assert not eff.in_effect and eff.effective == 'io.containerd.kata.v2'
    assert eff.why == ('containerd 2.1 does not read it from %s: a version 3 file sets it, and containerd 2.x keeps '
                       'that over a version 2 file\'s' % paths['a'])


def test_a_drop_ins_value_of_the_wrong_type_is_what_the_view_shows(tmp_path):
    # containerd refuses both (a string is no table of proxy plugins, nor a list of plugin ids); the view
    # must still build, so that the built-in checks can say so, and show the later file's value
    path, paths = tree(tmp_path, 'version = 2\nimports = ["{a}"]\ndisabled_plugins = ["io.containerd.x"]\n',
                       a='version = 2\nproxy_plugins = "p"\ndisabled_plugins = "io.containerd.y"\n')
    with open(path) as f:
        view = load_effective(path, parse_toml(f.read()), (1, 6))
    assert view.value(('proxy_plugins',)) == 'p'
    assert view.value(('disabled_plugins',)) == 'io.containerd.y'
    assert view.source_of(('proxy_plugins',)) == view.source_of(('disabled_plugins',)) == paths['a']


def test_a_version_3_files_version_2_cri_keys_are_not_read_by_21_without_a_version_2_file(tmp_path):
    # in a version 3 file plugins."io.containerd.grpc.v1.cri" is the gRPC plugin's table: 2.1 reads its own
    # keys there and drops the CRI ones ("Ignoring unknown key"), with or without a version 2 file in the tree
    main = ('version = 3\n[plugins."io.containerd.grpc.v1.cri"]\nstream_server_port = "10011"\n'
            'enable_selinux = true\n')
    view, path, _paths = agree(tmp_path, 'v3-grpc', main, {('plugins', CRI_V2, 'stream_server_port'): '10011',
                                                           ('plugins', CRI_V2, 'enable_selinux'): Default(None),
                                                           RUNTIME + ('enable_selinux',): Default(False)})
    (eff,) = effects_of(view, path, [(('plugins', CRI_V2, 'enable_selinux'), True)])
    assert not eff.in_effect
    assert eff.why.startswith('containerd 2.1 does not read it from %s' % path) and eff.effective is ABSENT
    (eff,) = effects_of(view, path, [(('plugins', CRI_V2, 'stream_server_port'), '10011')])
    assert eff.in_effect


def test_a_runtime_key_a_later_version_2_file_set_again_is_not_read_from_the_first_that_made_the_table(tmp_path):
    # as above, without z: 10-a is the first file with a CRI table; its kata table is still 10-a's, so the
    # reason is the version 3 file's runtime (config.toml is read first: it does not "set it later")
    kata = '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "%s"\n'
    main = ('version = 3\nimports = ["{a}", "{b}"]\n'
            '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
            'runtime_type = "io.containerd.kata.v2"\n')
    view, path, paths = agree(tmp_path, 'kata', main, {RUNTIMES + ('kata', 'runtime_type'): 'io.containerd.kata.v2'},
                              runtimes=['kata'], a='version = 2\n' + kata % 'io.containerd.kata-a.v2',
                              b='version = 2\n' + kata % 'io.containerd.kata-b.v2')
    (eff,) = effects_of(view, paths['a'], [(('plugins', CRI_V2, 'containerd', 'runtimes', 'kata', 'runtime_type'),
                                            'io.containerd.kata-a.v2')])
    assert not eff.in_effect and eff.effective == 'io.containerd.kata.v2' and eff.shadowed_by == path
    assert eff.why == ('containerd 2.1 does not read it from %s: a version 3 file sets it, and containerd 2.x keeps '
                       'that over a version 2 file\'s' % paths['a'])
