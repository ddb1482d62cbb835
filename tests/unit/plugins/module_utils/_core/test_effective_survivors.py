# -*- coding: utf-8 -*-
"""The merged view's bookkeeping the mutation run found untested, each claim checked against a real `config dump`.

- which file owns each plugin table (containerd_info's cri_plugin_files): the
  main file's own tables, and the version 2 CRI table that 2.x migrates;
- a version 2 drop-in's image keys replace the images plugin's table whole on
  2.1: the key they drop is said to be decided by that drop-in;
- 1.x reads a version-less main file's ``plugins.cri`` as the CRI plugin;
- why a version 2 runtime key is not read when only a parent table of it is
  recorded as coming from the file (a later file set the key itself);
- values of the wrong type in a drop-in (containerd refuses them) do not break
  the view: the later file's value is what it shows.
"""

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import CRI_V2, parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import ABSENT, effects_of, load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import cri_plugins

from test_effective_v2_on_2x import DEFAULT_RUNTIME, IMAGES, ONE, RUNTIME, RUNTIMES, Default, agree, tree


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
