# -*- coding: utf-8 -*-
"""Which keys of which file containerd does not read, and why (the merged view's ``unread``), and where a key
of a file without a version line is found in the merged view.

- 2.1: a version 3 file's plugins."io.containerd.grpc.v1.cri" is the gRPC plugin's table, which has no CRI
  keys; a file without a version line read after the last file with one (version 3) is not migrated.
- 1.6: the CDI keys (enable_cdi, cdi_spec_dirs: they came in 1.7) are accepted and dropped, in every file,
  under the version 1 plugin id "cri" too; 1.7 runs them.

The tests ask the model; test_containerd_runs_what_the_view_shows checks each tree against the real
containerd's ``config dump``.
"""

import tomllib

import pytest

from helpers.common import binary_of, config_dump
from helpers.trees import effective_view as viewed, write_tree

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import effects_of
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in

V16, V17, V21 = (1, 6, 20), (1, 7, 24), (2, 1, 9)
BINARY = {V16: 'host', V17: '1.7', V21: '2'}
CRI = ('plugins', CRI_V2)
V2_RUNTIMES = CRI + ('containerd', 'runtimes')
V3_RUNTIMES = ('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes')
ENABLE_CDI, CDI_SPEC_DIRS, SANDBOX = CRI + ('enable_cdi',), CRI + ('cdi_spec_dirs',), CRI + ('sandbox_image',)
NO_CDI_ON_16 = 'containerd 1.6.20 has no CDI (it came in 1.7): the key is accepted and dropped'
NOT_MIGRATED = 'a version 3 file is read after it, and containerd 2.x then migrates no version 2 CRI table'
PAUSE = 'registry.k8s.io/pause:3.9'

KATA_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
           'runtime_type = "io.containerd.kata.v2"\n')
CRUN_PASTED_IN_V3 = KATA_V2.replace('version = 2', 'version = 3').replace('kata', 'crun')
GC_V3 = 'version = 3\n[plugins."io.containerd.gc.v1.scheduler"]\npause_threshold = 0.03\n'
NVIDIA_CRI_ID = '[plugins.cri.containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n'

# name: (config.toml with {file} placeholders, {file: text}); each read by the containerd versions of WANT
TREES = {
    'pasted': ('version = 3\nimports = ["{pasted}"]\n', dict(pasted=CRUN_PASTED_IN_V3)),
    'pasted-then-v2': ('version = 3\nimports = ["{pasted}", "{kata}"]\n', dict(pasted=CRUN_PASTED_IN_V3, kata=KATA_V2)),
    'v2-then-cri': ('version = 3\nimports = ["{kata}", "{cdi}"]\n', dict(kata=KATA_V2, cdi=NVIDIA_CRI_ID)),
    'v3-between': ('version = 3\nimports = ["{kata}", "{gc}", "{cdi}"]\n',
                   dict(kata=KATA_V2, gc=GC_V3, cdi=NVIDIA_CRI_ID)),
    'cdi-everywhere': ('imports = ["{cdi}", "{pause}"]\n[plugins.cri]\nenable_cdi = true\n',
                       dict(cdi='[plugins.cri]\ncdi_spec_dirs = ["/etc/cdi"]\n',
                            pause='[plugins.cri]\nsandbox_image = "%s"\n' % PAUSE)),
    'cdi-main': ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\ncdi_spec_dirs = ["/etc/cdi"]\n',
                 {}),
    'no-version-line': ('[plugins.cri]\nsandbox_image = "%s"\n' % PAUSE, {}),
}

# name: [(containerd, key, what both the view and containerd's config dump hold there)]; for a runtimes table,
# the names of its runtimes (containerd's built-in runc left out)
WANT = {
    'pasted': [(V21, V3_RUNTIMES, [])],
    'pasted-then-v2': [(V21, V3_RUNTIMES, ['crun', 'kata'])],
    'v2-then-cri': [(V21, V3_RUNTIMES, ['kata', 'nvidia'])],
    'v3-between': [(V21, V3_RUNTIMES, [])],
    'cdi-everywhere': [(V16, SANDBOX, PAUSE), (V16, ENABLE_CDI, None), (V16, CDI_SPEC_DIRS, None)],
    'cdi-main': [(V17, ENABLE_CDI, True), (V17, CDI_SPEC_DIRS, ['/etc/cdi']), (V16, ENABLE_CDI, None),
                 (V16, CDI_SPEC_DIRS, None)],
    'no-version-line': [(V16, SANDBOX, PAUSE)],
}


def tree(tmp_path, name):
    """Write the tree: (config.toml's path, {file: path})."""
    main, files = TREES[name]
    return write_tree(tmp_path, main, **files)


def _held(value, key):
    if key == V3_RUNTIMES:
        return sorted(set(value or {}) - {'runc'})
    return value


@pytest.mark.parametrize('name', sorted(WANT))
def test_containerd_runs_what_the_view_shows(tmp_path, name):
    path, _paths = tree(tmp_path, name)
    for ver, key, want in WANT[name]:
        rc, out, err = config_dump(path, binary_of(BINARY[ver]))
        assert rc == 0, err
        assert _held(viewed(path, ver).value(key), key) == _held(get_in(tomllib.loads(out), key), key) == want, \
            (name, ver, key)


def test_containerd_2_1_reads_a_version_3_files_version_2_cri_tables_as_the_grpc_plugins_and_says_so(tmp_path):
    """A version 2 runtime table pasted into a version 3 drop-in is not run: the key stays in the gRPC
    plugin's table, and the reason names the file's version. A version 2 drop-in read after it makes 2.1
    migrate the merged version 2 tables, the pasted one too."""
    path, paths = tree(tmp_path, 'pasted')
    view = viewed(path, V21)
    key = V2_RUNTIMES + ('crun', 'runtime_type')
    assert view.read_path(key, paths['pasted']) == key and view.value(V3_RUNTIMES) is None
    why = ('%s is version 3, so containerd 2.x reads its plugins."io.containerd.grpc.v1.cri" as the gRPC '
           'plugin\'s, which has no such key' % paths['pasted'])
    assert set(view.unread.values()) == {why} and set(f for f, _key in view.unread) == {paths['pasted']}
    (eff,) = effects_of(view, paths['pasted'], [(key, 'io.containerd.crun.v2')])
    assert not eff.in_effect and eff.why == 'containerd 2.1.9 does not read it from %s: %s' % (paths['pasted'], why)

    path, paths = tree(tmp_path, 'pasted-then-v2')
    view = viewed(path, V21)
    assert sorted(view.value(V3_RUNTIMES)) == ['crun', 'kata'] and view.unread == {}


def test_a_version_less_drop_ins_cri_runtime_is_found_where_containerd_2_1_migrates_it(tmp_path):
    path, paths = tree(tmp_path, 'v2-then-cri')
    view = viewed(path, V21)
    nvidia = ('plugins', 'cri', 'containerd', 'runtimes', 'nvidia', 'runtime_type')
    assert view.read_path(nvidia, paths['cdi']) == V3_RUNTIMES + ('nvidia', 'runtime_type')
    assert sorted(view.value(V3_RUNTIMES)) == ['kata', 'nvidia'] and view.unread == {}
    (eff,) = effects_of(view, paths['cdi'], [(nvidia, 'io.containerd.runc.v2')])
    assert eff.in_effect and eff.shadowed_by is None, eff.as_dict()


def test_containerd_2_1_migrates_no_version_2_table_once_a_version_3_file_is_read_after_it(tmp_path):
    """The drop-ins of the tree above, a version 3 file read between them: kata's drop-in is read before it,
    nvidia's (no version line) after it; each reason says where the drop-in stands."""
    path, paths = tree(tmp_path, 'v3-between')
    view = viewed(path, V21)
    assert view.value(V3_RUNTIMES) is None
    no_version_line = ('it has no version line, and the last file read with one (%s) says version = 3, so '
                       'containerd 2.x migrates no version 2 CRI table' % paths['gc'])
    assert sorted(set(view.unread.items())) == sorted([
        ((paths['kata'], V3_RUNTIMES + ('kata',)), NOT_MIGRATED),
        ((paths['kata'], V3_RUNTIMES + ('kata', 'runtime_type')), NOT_MIGRATED),
        ((paths['cdi'], V3_RUNTIMES + ('nvidia',)), no_version_line),
        ((paths['cdi'], V3_RUNTIMES + ('nvidia', 'runtime_type')), no_version_line)])
    effects = effects_of(view, paths['kata'], [(V2_RUNTIMES + ('kata', 'runtime_type'), 'io.containerd.kata.v2')]) + \
        effects_of(view, paths['cdi'], [(('plugins', 'cri', 'containerd', 'runtimes', 'nvidia', 'runtime_type'),
                                         'io.containerd.runc.v2')])
    assert [(e.in_effect, e.why) for e in effects] == [
        (False, 'containerd 2.1.9 does not read it from %s: %s' % (paths['kata'], NOT_MIGRATED)),
        (False, 'containerd 2.1.9 does not read it from %s: %s' % (paths['cdi'], no_version_line))]


def test_containerd_1_6_drops_the_cdi_keys_of_every_file_under_the_version_1_plugin_id(tmp_path):
    """A tree without version lines (plugin id "cri"): config.toml and one drop-in set CDI keys, another
    drop-in sets none and is read last, so its CRI table is the one 1.6 runs."""
    path, paths = tree(tmp_path, 'cdi-everywhere')
    view = viewed(path, V16)
    assert view.value(SANDBOX) == PAUSE and view.value(ENABLE_CDI) is None
    assert view.unread == {(path, ENABLE_CDI): NO_CDI_ON_16, (paths['cdi'], CDI_SPEC_DIRS): NO_CDI_ON_16}
    (eff,) = effects_of(view, paths['cdi'], [(('plugins', 'cri', 'cdi_spec_dirs'), ['/etc/cdi'])])
    assert not eff.in_effect
    assert eff.why == 'containerd 1.6.20 does not read it from %s: %s' % (paths['cdi'], NO_CDI_ON_16)


def test_containerd_1_7_runs_the_cdi_keys_that_1_6_drops(tmp_path):
    path, _paths = tree(tmp_path, 'cdi-main')
    view = viewed(path, V17)
    assert view.unread == {} and (view.value(ENABLE_CDI), view.value(CDI_SPEC_DIRS)) == (True, ['/etc/cdi'])
    view = viewed(path, V16)
    assert view.value(ENABLE_CDI) is None and view.value(CDI_SPEC_DIRS) is None
    assert view.unread == {(path, ENABLE_CDI): NO_CDI_ON_16, (path, CDI_SPEC_DIRS): NO_CDI_ON_16}


def test_containerd_1_6_reads_a_main_file_without_a_version_line_under_the_version_1_plugin_id(tmp_path):
    path, _paths = tree(tmp_path, 'no-version-line')
    view = viewed(path, V16)
    key = ('plugins', 'cri', 'sandbox_image')
    assert view.read_path(key) == SANDBOX and view.value(SANDBOX) == PAUSE
    (eff,) = effects_of(view, path, [(key, PAUSE)])
    assert eff.in_effect and eff.shadowed_by is None, eff.as_dict()
