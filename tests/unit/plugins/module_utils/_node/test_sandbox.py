# -*- coding: utf-8 -*-
"""_preflight's private copies of the config tree, without starting containerd.

The load test bind-mounts a rewritten copy of each file over the original;
the copy must differ only in what would touch the host (sockets, folders,
cgroup, proxy sockets, device snapshotters) and must be a TOML file that
says the same thing otherwise.  These tests pin each rewrite on its own:
the real-daemon tests in test_preflight.py show that the whole works.
"""

import datetime
import math
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.sandbox import DEVICE_SNAPSHOTTERS, dump_toml

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = pytest.importorskip('tomli')

OPT = 'io.containerd.internal.v1.opt'
NRI = 'io.containerd.nri.v1.nri'
SNAP = 'io.containerd.snapshotter.v1.'
ALL_DEVICE_IDS = [SNAP + s for s in DEVICE_SNAPSHOTTERS]


@pytest.fixture
def sb(tmp_path):
    return sandbox.Sandbox(str(tmp_path / 'run'))


@pytest.fixture
def no_cni_on_host(monkeypatch):
    """A node where /etc/cni/net.d does not exist yet (no CNI installed)."""
    real = os.path.isdir
    monkeypatch.setattr(_preflight.os.path, 'isdir', lambda p: False if p == '/etc/cni/net.d' else real(p))


@pytest.fixture
def cni_on_host(monkeypatch):
    real = os.path.isdir
    monkeypatch.setattr(_preflight.os.path, 'isdir', lambda p: True if p == '/etc/cni/net.d' else real(p))


def rewrite(sb, data, is_main=True, major=1, path='/etc/containerd/config.toml'):
    return sb.rewrite(path, data, is_main, major)


# ---------------------------------------------------------------- TOML out

def test_special_floats_dates_and_non_ascii_text_survive_the_copy():
    """Values tomllib reads from a user's file are written back as the same values."""
    data = {'nan': float('nan'), 'inf': float('inf'), 'ninf': float('-inf'), 'half': 0.5,
            'when': datetime.datetime(2024, 5, 1, 12, 30, 0), 'day': datetime.date(2024, 5, 1),
            'note': u'caf\u00e9 \U0001F600', 'inline': [{'k': 1, 'a b': 'x'}]}
    back = tomllib.loads(dump_toml(data))
    assert math.isnan(back.pop('nan'))
    data.pop('nan')
    assert back == data
    assert back['inf'] > 0 and back['ninf'] < 0


def test_a_value_toml_cannot_hold_is_refused():
    with pytest.raises(ValueError, match='cannot write'):
        dump_toml({'x': object()})


def test_a_table_holds_its_values_before_its_sub_tables():
    """A key written after a sub-table header would land in the sub-table."""
    text = dump_toml({'plugins': {'a': {'x': 1}}, 'version': 2, 'root': '/r'})
    assert text.startswith('version = 2\nroot = "/r"\n\n[plugins]\n\n[plugins.a]\nx = 1\n')
    assert tomllib.loads(text) == {'plugins': {'a': {'x': 1}}, 'version': 2, 'root': '/r'}


# ---------------------------------------------------------------- file version

@pytest.mark.parametrize('version', [None, '2', True])
def test_a_file_without_an_integer_version_is_read_as_version_1(sb, cni_on_host, version):
    """containerd 1.x reads such a file as version 1, whose plugin tables have short names:
    the opt folder created in the main copy is [plugins.opt]."""
    data = {} if version is None else {'version': version}
    out = rewrite(sb, data)
    assert set(out['plugins']) == {'opt'}
    assert out['plugins']['opt']['path'] == sb.p('opt')


def test_a_version_2_main_file_gets_the_full_plugin_id(sb, cni_on_host):
    out = rewrite(sb, {'version': 2})
    assert set(out['plugins']) == {OPT}
    assert out['plugins'][OPT] == {'path': sb.p('opt')}


def test_version_1_short_and_long_plugin_names_are_both_redirected(sb, cni_on_host):
    data = {'version': 1, 'plugins': {'opt': {'path': '/host/opt-short'}, OPT: {'path': '/host/opt-long'}}}
    out = rewrite(sb, data)
    assert out['plugins']['opt']['path'] == out['plugins'][OPT]['path'] == sb.p('opt')


def test_an_import_gets_no_plugin_table_it_did_not_have(sb, cni_on_host):
    """Only the main file's copy gains the private opt folder; an import is left as written."""
    out = rewrite(sb, {'version': 2, 'plugins': {'io.containerd.gc.v1.scheduler': {'pause_threshold': 0.02}}},
                  is_main=False, major=2)
    assert out == {'version': 2, 'plugins': {'io.containerd.gc.v1.scheduler': {'pause_threshold': 0.02}}}
    assert sb.skipped == []


# ---------------------------------------------------------------- sockets, temp, cgroup, proxies

def test_host_sockets_and_temp_folder_point_into_the_private_folder(sb, cni_on_host):
    data = {'version': 2, 'temp': '/var/lib/containerd-tmp',
            'ttrpc': {'address': '/run/containerd/containerd.sock.ttrpc'},
            'debug': {'address': '/run/containerd/debug.sock', 'format': 'json', 'level': 'debug'}}
    out = rewrite(sb, data)
    assert out['temp'] == sb.p('temp')
    assert out['ttrpc']['address'] == sb.socket + '.ttrpc'
    assert out['debug'] == {'address': sb.p('debug.sock'), 'format': 'text', 'level': 'debug'}


def test_settings_left_unset_stay_unset(sb, cni_on_host):
    """An empty address or temp is containerd's default, not a host path: nothing is invented."""
    data = {'version': 2, 'temp': '', 'ttrpc': {'address': ''}, 'debug': {'level': 'info'},
            'cgroup': {'path': ''}, 'proxy_plugins': {'p': {'type': 'snapshot'}}}
    out = rewrite(sb, data)
    assert out['temp'] == '' and out['ttrpc'] == {'address': ''}
    assert out['debug'] == {'level': 'info'}
    assert out['cgroup'] == {'path': ''}
    assert out['proxy_plugins'] == {'p': {'type': 'snapshot'}}
    assert sb.skipped == []


def test_a_text_debug_format_is_kept(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'debug': {'format': 'text'}})
    assert out['debug'] == {'format': 'text'}


def test_cgroup_path_is_dropped_and_said_with_the_file(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'cgroup': {'path': '/ng-cg'}}, path='/etc/containerd/conf.d/10.toml')
    assert out['cgroup'] == {'path': ''}
    assert len(sb.skipped) == 1
    assert "[cgroup] path = '/ng-cg' (10.toml): not applied" in sb.skipped[0]


def test_each_proxy_plugin_gets_its_own_dead_socket(sb, cni_on_host):
    data = {'version': 2, 'proxy_plugins': {
        'stargz': {'type': 'snapshot', 'address': '/run/stargz.sock'},
        'nydus': {'type': 'snapshot', 'address': '/run/nydus.sock'},
        'nameless': {'address': '/run/x.sock'}}}
    out = rewrite(sb, data)
    addresses = [out['proxy_plugins'][n]['address'] for n in ('nameless', 'nydus', 'stargz')]
    assert len(set(addresses)) == 3
    assert all(os.path.dirname(a) == sb.private for a in addresses)
    # named in order, with type and the host socket that was not contacted
    assert [s.split("'")[1] for s in sb.skipped] == ['nameless', 'nydus', 'stargz']
    assert "proxy plugin 'nydus' (snapshot /run/nydus.sock, config.toml)" in sb.skipped[1]
    assert "(? /run/x.sock" in sb.skipped[0]


def test_a_note_said_twice_is_listed_once(sb):
    sb.skip('a')
    sb.skip('b')
    sb.skip('a')
    assert sb.skipped == ['a', 'b']


# ---------------------------------------------------------------- NRI

def nri_dir(tmp_path, files):
    d = tmp_path / 'nri-plugins'
    d.mkdir()
    for f in files:
        (d / f).write_text('')
    return str(d)


def test_nri_table_is_made_private_in_the_main_file_on_2x(sb, cni_on_host):
    out = rewrite(sb, {'version': 3}, major=2)
    assert out['plugins'][NRI] == {'socket_path': sb.p('nri.sock'), 'plugin_path': sb.p('nri-plugins'),
                                   'plugin_config_path': sb.p('nri-conf.d')}


def test_no_nri_table_is_added_for_1x(sb, cni_on_host):
    """1.7's NRI is off unless the file turns it on: adding its table would change that."""
    out = rewrite(sb, {'version': 2}, major=1)
    assert NRI not in out['plugins']


def test_nri_plugins_installed_on_the_host_are_named_when_nri_is_on(sb, tmp_path, cni_on_host):
    host = nri_dir(tmp_path, ['10-logger'])
    on_1x = rewrite(sb, {'version': 2, 'plugins': {NRI: {'disable': False, 'plugin_path': host}}}, major=1)
    assert on_1x['plugins'][NRI]['plugin_path'] == sb.p('nri-plugins')
    assert sb.skipped == ['NRI plugins installed in %s are not started (config.toml); NRI itself loads, with '
                          'its socket in the private folder' % host]


def test_nri_plugins_on_2x_are_named_without_an_explicit_enable(sb, tmp_path, cni_on_host):
    host = nri_dir(tmp_path, ['10-logger'])
    rewrite(sb, {'version': 3, 'plugins': {NRI: {'plugin_path': host}}}, major=2)
    assert len(sb.skipped) == 1 and host in sb.skipped[0]


@pytest.mark.parametrize('table', [{'disable': True}, {}])
def test_nri_plugins_on_1x_are_not_named_while_nri_is_off(sb, tmp_path, cni_on_host, table):
    table['plugin_path'] = nri_dir(tmp_path, ['10-logger'])
    out = rewrite(sb, {'version': 2, 'plugins': {NRI: table}}, major=1)
    assert out['plugins'][NRI]['socket_path'] == sb.p('nri.sock')
    assert sb.skipped == []


def test_an_empty_nri_plugin_folder_is_not_named(sb, tmp_path, cni_on_host):
    rewrite(sb, {'version': 3, 'plugins': {NRI: {'disable': False, 'plugin_path': nri_dir(tmp_path, [])}}}, major=2)
    assert sb.skipped == []


# ---------------------------------------------------------------- snapshotter roots

def test_snapshotter_roots_move_into_the_private_root(sb, cni_on_host):
    data = {'version': 2, 'plugins': {
        SNAP + 'overlayfs': {'root_path': '/var/lib/ng-overlayfs', 'upperdir_label': True},
        SNAP + 'native': {},
        SNAP + 'devmapper': {'root_path': '/var/lib/ng-dm', 'pool_name': ''},
        # in a version 2 file a short name is not a plugin of containerd's: left as written
        'overlayfs': {'root_path': '/var/lib/ng-short'}}}
    out = rewrite(sb, data)
    assert out['plugins'][SNAP + 'overlayfs'] == {'root_path': sb.p('root', 'snapshotter-overlayfs'),
                                                  'upperdir_label': True}
    assert out['plugins'][SNAP + 'native'] == {}
    assert out['plugins'][SNAP + 'devmapper']['root_path'] == '/var/lib/ng-dm'  # disabled: never started
    assert out['plugins']['overlayfs'] == {'root_path': '/var/lib/ng-short'}


def test_version_1_short_snapshotter_names_are_redirected_too(sb, cni_on_host):
    out = rewrite(sb, {'version': 1, 'plugins': {'native': {'root_path': '/var/lib/ng-native'}}})
    assert out['plugins']['native']['root_path'] == sb.p('root', 'snapshotter-native')


# ---------------------------------------------------------------- CNI

def test_a_missing_cni_folder_becomes_a_private_one(sb, tmp_path, cni_on_host):
    missing = str(tmp_path / 'no-cni')
    out = rewrite(sb, {'version': 2, 'plugins': {CRI_V2: {'cni': {'conf_dir': missing, 'bin_dir': '/opt/cni/bin'}}}})
    assert out['plugins'][CRI_V2]['cni'] == {'conf_dir': sb.p('cni-net.d'), 'bin_dir': '/opt/cni/bin'}
    assert sb.skipped == ['CNI conf_dir %s does not exist: a private empty folder is used instead '
                          '(containerd would create it)' % missing]
    assert not os.path.exists(missing)


def test_an_existing_cni_folder_is_read_where_it_is(sb, tmp_path, cni_on_host):
    here = str(tmp_path)
    out = rewrite(sb, {'version': 3, 'plugins': {CRI_V3_RUNTIME: {'cni': {'conf_dir': here}}}}, major=2)
    assert out['plugins'][CRI_V3_RUNTIME]['cni'] == {'conf_dir': here}
    assert sb.skipped == []


def test_an_existing_default_cni_folder_adds_nothing(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'plugins': {CRI_V2: {'sandbox_image': 'pause:3.9'}}})
    assert out['plugins'][CRI_V2] == {'sandbox_image': 'pause:3.9'}
    assert sb.skipped == []


def test_version_3_cni_lives_in_the_runtime_plugin(sb, tmp_path, no_cni_on_host):
    out = rewrite(sb, {'version': 3}, major=2)
    assert out['plugins'][CRI_V3_RUNTIME]['cni'] == {'conf_dir': sb.p('cni-net.d')}
    assert CRI_V2 not in out['plugins']


def test_without_cni_on_the_node_the_main_file_gets_a_private_cni_folder(sb, no_cni_on_host):
    """containerd would create /etc/cni/net.d on the host: the copy points the CRI plugin elsewhere."""
    out = rewrite(sb, {'version': 2})
    assert out['plugins'][CRI_V2] == {'cni': {'conf_dir': sb.p('cni-net.d')}}
    assert any('/etc/cni/net.d does not exist' in s for s in sb.skipped)
    imported = sandbox.Sandbox(sb.base).rewrite('/etc/containerd/conf.d/1.toml', {'version': 2}, False, 1)
    assert imported == {'version': 2}  # an import gets no CRI table of its own


# ---------------------------------------------------------------- device snapshotters

def test_the_main_file_disables_every_device_snapshotter_once(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'disabled_plugins': ['io.containerd.tracing.processor.v1.otlp', SNAP + 'zfs']})
    assert out['disabled_plugins'] == ['io.containerd.tracing.processor.v1.otlp', SNAP + 'zfs'] + \
        [i for i in ALL_DEVICE_IDS if i != SNAP + 'zfs']
    assert sb.skipped == []  # disabling what nobody configured is not news


def test_a_version_1_main_file_disables_the_short_names_too(sb, cni_on_host):
    out = rewrite(sb, {'version': 1})
    assert sorted(out['disabled_plugins']) == sorted(ALL_DEVICE_IDS + list(DEVICE_SNAPSHOTTERS))


def test_an_import_keeps_its_own_disabled_plugins(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'disabled_plugins': ['x']}, is_main=False)
    assert out['disabled_plugins'] == ['x']
    assert rewrite(sb, {'version': 2}, is_main=False).get('disabled_plugins') is None


def test_a_configured_device_snapshotter_is_named_an_empty_one_is_not(sb, cni_on_host):
    out = rewrite(sb, {'version': 2, 'plugins': {SNAP + 'zfs': {'root_path': '', 'x': False, 'y': [], 'z': None},
                                                 SNAP + 'btrfs': {'root_path': '/var/lib/btrfs'}}})
    assert out['plugins'][SNAP + 'zfs'] == {'root_path': '', 'x': False, 'y': [], 'z': None}
    assert sb.skipped == ["snapshotter btrfs is configured (config.toml) but not started: it would touch the "
                          "host's block devices, pools or kernel modules"]


def test_required_device_snapshotters_are_dropped_and_named(sb, cni_on_host):
    data = {'version': 2, 'required_plugins': [SNAP + 'devmapper', CRI_V2, 7, 'odd-name', 'erofs']}
    out = rewrite(sb, data)
    assert out['required_plugins'] == [CRI_V2, 7, 'odd-name']
    tail = ' (config.toml): not required by the preflight, which does not start device snapshotters'
    assert sb.skipped == ['required_plugins names %sdevmapper%s' % (SNAP, tail),
                          'required_plugins names erofs%s' % tail]


def test_version_2_cri_names_of_device_snapshotters_get_the_stand_in(sb, cni_on_host):
    data = {'version': 2, 'plugins': {CRI_V2: {'containerd': {
        'snapshotter': 'devmapper',
        'runtimes': {'kata': {'snapshotter': 'zfs'}, 'runc': {'snapshotter': 'overlayfs'}, 'odd': 'x'}}}}}
    out = rewrite(sb, data)
    ctd = out['plugins'][CRI_V2]['containerd']
    assert ctd['snapshotter'] == 'native'
    assert ctd['runtimes']['kata']['snapshotter'] == 'native'
    assert ctd['runtimes']['runc']['snapshotter'] == 'overlayfs'
    names = [s for s in sb.skipped if 'the CRI config names' in s]
    assert names == ['the CRI config names the devmapper snapshotter (config.toml): it is not started; the CRI '
                     'plugin is loaded with the native snapshotter in its place, so whether devmapper itself '
                     'works on this node is not tested',
                     'the CRI config names the zfs snapshotter (config.toml): it is not started; the CRI plugin '
                     'is loaded with the native snapshotter in its place, so whether zfs itself works on this '
                     'node is not tested']


def test_version_3_cri_names_of_device_snapshotters_get_the_stand_in(sb, cni_on_host):
    data = {'version': 3, 'plugins': {
        CRI_V3_IMAGES: {'snapshotter': 'devmapper',
                        'runtime_platforms': {'kata': {'snapshotter': 'erofs'}, 'runc': {'snapshotter': 'overlayfs'},
                                              'odd': 'x'}},
        CRI_V3_RUNTIME: {'containerd': {'runtimes': {'gvisor': {'snapshotter': 'btrfs'}}}},
        # a version 2 table in a version 3 file is not the CRI config 2.x reads
        CRI_V2: {'containerd': {'snapshotter': 'aufs'}}}}
    out = rewrite(sb, data, major=2)
    assert out['plugins'][CRI_V3_IMAGES]['snapshotter'] == 'native'
    assert out['plugins'][CRI_V3_IMAGES]['runtime_platforms']['kata']['snapshotter'] == 'native'
    assert out['plugins'][CRI_V3_IMAGES]['runtime_platforms']['runc']['snapshotter'] == 'overlayfs'
    assert out['plugins'][CRI_V3_RUNTIME]['containerd']['runtimes']['gvisor']['snapshotter'] == 'native'
    assert out['plugins'][CRI_V2]['containerd']['snapshotter'] == 'aufs'
    named = sorted(s.split(' ')[5] for s in sb.skipped if 'the CRI config names' in s)
    assert named == ['btrfs', 'devmapper', 'erofs']


def test_cri_tables_without_runtimes_or_platforms_are_left_alone(sb, cni_on_host):
    data = {'version': 3, 'plugins': {CRI_V3_IMAGES: {'runtime_platforms': {}},
                                      CRI_V3_RUNTIME: {'containerd': {'default_runtime_name': 'runc'}}}}
    out = rewrite(sb, data, major=2)
    assert out['plugins'][CRI_V3_IMAGES] == {'runtime_platforms': {}}
    assert out['plugins'][CRI_V3_RUNTIME]['containerd'] == {'default_runtime_name': 'runc'}


# ---------------------------------------------------------------- the tree

def test_the_tree_is_read_breadth_first_once_each(tmp_path):
    """containerd's order; a file imported twice (or itself) is copied once, a missing import skipped."""
    d = tmp_path / 'etc'
    d.mkdir()
    (d / 'a.toml').write_text('version = 2\nimports = ["%s"]\n' % (d / 'c.toml'))
    (d / 'b.toml').write_text('version = 2\n')
    (d / 'c.toml').write_text('version = 2\n')
    main = d / 'config.toml'
    main.write_text('version = 2\nimports = ["%s", "%s", "%s", "%s", 5]\n'
                    % (d / 'a.toml', d / 'missing.toml', d / 'b.toml', main))
    paths = [p for p, _raw in sandbox.read_tree(str(main))]
    assert paths == [str(main), str(d / 'a.toml'), str(d / 'b.toml'), str(d / 'c.toml')]


def test_a_broken_import_is_still_copied_and_does_not_stop_the_rest(tmp_path):
    d = tmp_path
    (d / 'bad.toml').write_bytes(b'version = = 2\n')
    (d / 'ok.toml').write_text('version = 2\n')
    main = d / 'config.toml'
    main.write_text('version = 2\nimports = ["%s", "%s"]\n' % (d / 'bad.toml', d / 'ok.toml'))
    tree = sandbox.read_tree(str(main))
    assert [p for p, _raw in tree] == [str(main), str(d / 'bad.toml'), str(d / 'ok.toml')]
    assert tree[1][1] == b'version = = 2\n'


def test_the_candidate_is_read_in_place_of_the_main_file_only(tmp_path):
    real = tmp_path / 'config.toml'
    real.write_text('version = 2\nimports = ["%s"]\n' % real)  # nvidia-ctk's self-import
    cand = tmp_path / 'cand.toml'
    cand.write_text('version = 2\n# candidate\n')
    tree = sandbox.read_tree(str(real), content_from=str(cand))
    assert tree == [(str(real), b'version = 2\n# candidate\n')]


def test_an_unreadable_main_file_is_an_error(tmp_path):
    with pytest.raises(IOError):
        sandbox.read_tree(str(tmp_path / 'none.toml'))


def test_an_absolute_glob_is_not_looked_up_again_under_root(tmp_path):
    (tmp_path / '10.toml').write_text('')
    assert sandbox.expand_entry(str(tmp_path / '*.toml'), '/etc/containerd/config.toml') == [str(tmp_path / '10.toml')]
    # a relative plain file is taken against the importing file only
    assert sandbox.expand_entry('x.toml', '/etc/containerd/config.toml') == ['/etc/containerd/x.toml']


def test_a_relative_glob_is_also_looked_up_from_the_root_folder(tmp_path):
    """containerd 1.6.20 resolves a relative glob against its working folder, /: those files get copies too."""
    sub = tmp_path / 'rel.d'
    sub.mkdir()
    (sub / '10.toml').write_text('')
    (sub / '20.toml').write_text('')
    entry = str(sub).lstrip('/') + '/*.toml'
    assert sandbox.expand_entry(entry, '/etc/containerd/config.toml') == [str(sub / '10.toml'), str(sub / '20.toml')]
    # imported from / itself both readings are the same files: each is listed once
    assert sandbox.expand_entry(entry, '/config.toml') == [str(sub / '10.toml'), str(sub / '20.toml')]
