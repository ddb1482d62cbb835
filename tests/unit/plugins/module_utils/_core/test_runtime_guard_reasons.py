# -*- coding: utf-8 -*-
"""The check step's refusal when an edit would take away runtimes another file defines: what it says.

Each case is a tree before and after an edit, measured with the real containerd's ``config dump`` (the
runtimes in effect before and after), and the refusal the guard (_core/runtime_guard.py) gives for it: the
runtimes lost, the files that define them, why containerd would not run them (the model's reason for those
files' keys when it has one, else the merge rule of the node's containerd) and the fix.
"""

import tomllib
from types import SimpleNamespace

import pytest

from helpers.common import binary_of, config_dump

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
    ConfigError,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.runtime_guard import (
    _why,
    _why_default,
    default_runtime,
    refuse_lost_runtimes,
    targeted_runtimes,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in

BINARY = {(1, 6): 'host', (1, 7): '1.7', (2, 1): '2'}
V3_RUNTIMES = ('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes')
V2_RUNTIMES = ('plugins', CRI_V2, 'containerd', 'runtimes')

KATA_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
           'runtime_type = "io.containerd.kata.v2"\n')
# a CDI drop-in as NVIDIA's toolkit writes it: no version line, the version 2 plugin id
NVIDIA_NO_VERSION = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n'
                     'runtime_type = "io.containerd.runc.v2"\n')
EXTRA_V3 = ('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.extra]\n'
            'runtime_type = "io.containerd.runc.v2"\n')
GC_V3 = 'version = 3\n[plugins."io.containerd.gc.v1.scheduler"]\npause_threshold = 0.03\n'


class Edit(object):
    """One config tree on disk before and after an edit (the same paths), read by one containerd version."""

    def __init__(self, tmp_path, ver):
        self.tmp_path, self.ver = tmp_path, ver
        self.main = str(tmp_path / 'config.toml')
        self.views, self.dumps = [], []

    def path(self, name):
        return str(self.tmp_path / ('%s.toml' % name))

    def state(self, main, **files):
        """Write config.toml ({name}: another file's path) and the other files; read the tree as the model
        and as the real containerd do."""
        paths = dict((name, self.path(name)) for name in files)
        for name, text in files.items():
            with open(paths[name], 'w') as f:
                f.write(text)
        with open(self.main, 'w') as f:
            f.write(main.format(**paths))
        with open(self.main) as f:
            self.views.append(load_effective(self.main, parse_toml(f.read()), self.ver))
        rc, out, err = config_dump(self.main, binary_of(BINARY[self.ver]))
        assert rc == 0, err
        self.dumps.append(tomllib.loads(out))

    def runtimes_in_effect(self):
        """The runtimes containerd runs before and after (its built-in runc left out)."""
        table = V3_RUNTIMES if self.ver >= (2, 0) else V2_RUNTIMES
        return [sorted(set(get_in(dump, table) or {}) - {'runc'}) for dump in self.dumps]

    def refusal(self, target, changed_paths):
        with pytest.raises(ConfigError) as info:
            refuse_lost_runtimes(self.views[0], self.views[1], target, changed_paths)
        return str(info.value)


def test_a_version_3_runtimes_table_in_config_toml_is_refused_with_the_drop_ins_reason_and_fix(tmp_path):
    """containerd 2.1 keeps config.toml's version 3 runtimes table over a version 2 drop-in's: kata is gone."""
    edit = Edit(tmp_path, (2, 1))
    main = 'version = 3\nimports = ["{kata}"]\n'
    edit.state(main, kata=KATA_V2)
    edit.state(main + EXTRA_V3, kata=KATA_V2)
    assert edit.runtimes_in_effect() == [['kata'], ['extra']]
    kata = edit.path('kata')
    assert edit.refusal(edit.main, [V3_RUNTIMES + ('extra', 'runtime_type')]) == (
        'refusing to write %s: runtimes in effect now would be lost or altered: kata (gone); they are defined in '
        '%s, and a version 3 file sets it, and containerd 2.x keeps that over a version 2 file\'s. Nothing was '
        'written. Fix: put the runtime in the version 2 drop-in (edit_in: %s), or migrate the drop-ins to '
        'version 3 (containerd config migrate) and run again.' % (edit.main, kata, kata))


def test_a_version_3_drop_in_read_after_a_version_2_one_is_refused_with_the_reason_of_the_first_file_named(tmp_path):
    """A version 3 file read after the version 2 drop-in stops containerd 2.1's migration of every version 2
    CRI table: kata (version 2 drop-in) and nvidia (a drop-in without a version line, read after the version 3
    file) are gone. The files are named in path order, and the reason is that of the first one."""
    edit = Edit(tmp_path, (2, 1))
    files = dict(kata=KATA_V2, extra=GC_V3, cdi=NVIDIA_NO_VERSION)
    edit.state('version = 3\nimports = ["{kata}", "{cdi}"]\n', **files)
    edit.state('version = 3\nimports = ["{kata}", "{extra}", "{cdi}"]\n', **files)
    assert edit.runtimes_in_effect() == [['kata', 'nvidia'], []]
    cdi, extra, kata = edit.path('cdi'), edit.path('extra'), edit.path('kata')
    assert edit.refusal(edit.main, [('imports',)]) == (
        'refusing to write %s: runtimes in effect now would be lost or altered: kata (gone), nvidia (gone); they '
        'are defined in %s, %s, and it has no version line, and the last file read with one (%s) says version = 3, '
        'so containerd 2.x migrates no version 2 CRI table. Nothing was written. Fix: put the runtime in the '
        'version 2 drop-in (edit_in: %s), or migrate the drop-ins to version 3 (containerd config migrate) and run '
        'again.' % (edit.main, cdi, kata, extra, kata))


@pytest.mark.parametrize('ver', [(1, 6), (1, 7)])
def test_on_1x_a_drop_ins_cri_table_that_replaces_config_tomls_is_refused_with_the_replace_rule(tmp_path, ver):
    """containerd 1.x replaces config.toml's whole CRI table with the drop-in's: kata is gone. config.toml's
    enable_cdi (a key 1.6 does not know) is no reason: only the runtimes count."""
    edit = Edit(tmp_path, ver)
    main = ('version = 2\nimports = ["{images}"]\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "io.containerd.kata.v2"\n')
    edit.state(main, images='version = 2\n')
    edit.state(main, images='version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
                            'sandbox_image = "registry.k8s.io/pause:3.9"\n')
    assert edit.runtimes_in_effect() == [['kata'], []]
    images = edit.path('images')
    assert edit.refusal(images, [('plugins', CRI_V2, 'sandbox_image')]) == (
        'refusing to write %s: runtimes in effect now would be lost or altered: kata (gone); they are defined in '
        '%s, and containerd %d.%d replaces the whole CRI plugin table with the one read last. Nothing was written. '
        'Fix: make the change in the file that defines them (edit_in: %s), or change that file so %s does not '
        'override it.' % (images, edit.main, ver[0], ver[1], edit.main, images))


KATA_TYPE_V3 = ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
                'runtime_type = "io.containerd.%s.v2"\n')
KATA_TYPE_V2 = KATA_V2.replace('io.containerd.kata.v2', 'io.containerd.%s.v2')
LATER_FILE_FIX = {
    3: 'make the change in the file that defines them (edit_in: {a}), or change that file so {main} does not '
       'override it',
    2: 'put the runtime in the version 2 drop-in (edit_in: {a}), or migrate the drop-ins to version 3 (containerd '
       'config migrate) and run again',
}


@pytest.mark.parametrize('version', [3, 2])
def test_a_runtime_a_drop_in_read_later_redefines_is_refused_naming_the_file_that_defines_it(tmp_path, version):
    """containerd 2.1 deep-merges the drop-ins (version 2 ones migrated first): one read later changes kata's
    runtime_type. kata is still there with other settings, so the reason is the later file, for version 2
    drop-ins too (not their runtimes being dropped); the fix fits the drop-ins' version."""
    edit = Edit(tmp_path, (2, 1))
    kata = KATA_TYPE_V3 if version == 3 else KATA_TYPE_V2
    files = dict(a=kata % 'kata', b=kata % 'kata-qemu')
    edit.state('version = 3\nimports = ["{a}"]\n', **files)
    edit.state('version = 3\nimports = ["{a}", "{b}"]\n', **files)
    assert [get_in(dump, V3_RUNTIMES + ('kata', 'runtime_type')) for dump in edit.dumps] == [
        'io.containerd.kata.v2', 'io.containerd.kata-qemu.v2']
    a = edit.path('a')
    assert edit.refusal(edit.main, [('imports',)]) == (
        'refusing to write %s: runtimes in effect now would be lost or altered: kata (its settings change); they '
        'are defined in %s, and a file read later decides them. Nothing was written. Fix: %s.'
        % (edit.main, a, LATER_FILE_FIX[version].format(a=a, main=edit.main)))


def test_a_default_runtime_whose_drop_in_leaves_the_tree_is_refused_naming_that_drop_in(tmp_path):
    """Taking out the import of the drop-in that defines nvidia, while config.toml keeps it the default: no
    runtime is lost with the file, but containerd 2.1's CRI plugin would not start on a default it lacks."""
    edit = Edit(tmp_path, (2, 1))
    default = '[plugins."io.containerd.cri.v1.runtime".containerd]\ndefault_runtime_name = "nvidia"\n'
    nvidia = 'version = 3\n' + NVIDIA_NO_VERSION.replace('io.containerd.grpc.v1.cri', CRI_V3_RUNTIME)
    edit.state('version = 3\nimports = ["{nvidia}"]\n' + default, nvidia=nvidia)
    edit.state('version = 3\nimports = []\n' + default, nvidia=nvidia)
    assert edit.runtimes_in_effect() == [['nvidia'], []]
    assert get_in(edit.dumps[1], V3_RUNTIMES[:-1] + ('default_runtime_name',)) == 'nvidia'
    nvidia = edit.path('nvidia')
    assert edit.refusal(edit.main, [('imports',)]) == (
        'refusing to write %s: default_runtime_name = "nvidia" would name no runtime containerd runs, so its CRI '
        'plugin would fail: %s defines it, and the edit takes that file out of the tree. Nothing was written. '
        'Fix: keep importing %s, or first set default_runtime_name to a runtime that stays (containerd\'s '
        'built-in runc always does).' % (edit.main, nvidia, nvidia))


@pytest.mark.parametrize('ver', [(1, 7), (2, 1)])
def test_removing_the_default_runtime_itself_is_refused_saying_the_edit_removes_it(tmp_path, ver):
    """config.toml makes nvidia the default; the edit deletes nvidia's table from the drop-in that defines it.
    containerd's config dump still accepts the result, its CRI plugin would not: the reason is the edit itself,
    and the fix is to move the default first."""
    edit = Edit(tmp_path, ver)
    if ver >= (2, 0):
        header, nvidia = 'version = 3\n', 'version = 3\n' + NVIDIA_NO_VERSION.replace(CRI_V2, CRI_V3_RUNTIME)
        table, runtimes = CRI_V3_RUNTIME, V3_RUNTIMES
    else:
        header, nvidia, table, runtimes = 'version = 2\n', 'version = 2\n' + NVIDIA_NO_VERSION, CRI_V2, V2_RUNTIMES
    main = header + 'imports = ["{nvidia}"]\n[plugins."%s".containerd]\ndefault_runtime_name = "nvidia"\n' % table
    if ver < (2, 0):  # 1.x: the drop-in's CRI table replaces config.toml's, so it carries the default itself
        nvidia = nvidia.replace('[plugins', '[plugins."%s".containerd]\ndefault_runtime_name = "nvidia"\n[plugins'
                                % CRI_V2, 1)
    edit.state(main, nvidia=nvidia)
    emptied = nvidia.split('[plugins."%s".containerd.runtimes.nvidia]' % table, maxsplit=1)[0]
    edit.state(main, nvidia=emptied)
    assert edit.runtimes_in_effect() == [['nvidia'], []]
    nvidia_path = edit.path('nvidia')
    assert edit.refusal(nvidia_path, [runtimes + ('nvidia',)]) == (
        'refusing to write %s: default_runtime_name = "nvidia" would name no runtime containerd runs, so its CRI '
        'plugin would fail: the edit removes it from %s. Nothing was written. Fix: first set default_runtime_name '
        'to a runtime that stays (containerd\'s built-in runc always does), then remove nvidia.'
        % (nvidia_path, nvidia_path))


@pytest.mark.parametrize('ver', [(1, 6), (1, 7)])
def test_on_1x_a_default_runtime_a_drop_ins_cri_table_replaces_is_refused_with_the_replace_rule(tmp_path, ver):
    """containerd 1.x: a drop-in's CRI table replaces config.toml's, kata (the default) with it. Both the lost
    runtime and the default are named, each with its file and reason."""
    edit = Edit(tmp_path, ver)
    main = ('version = 2\nimports = ["{images}"]\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
            'default_runtime_name = "kata"\n'
            '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "io.containerd.kata.v2"\n')
    edit.state(main, images='version = 2\n')
    edit.state(main, images=('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                             'default_runtime_name = "kata"\n'
                             '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                             'runtime_type = "io.containerd.runc.v2"\n'))
    assert edit.runtimes_in_effect() == [['kata'], []]
    images = edit.path('images')
    rule = 'containerd %d.%d replaces the whole CRI plugin table with the one read last' % ver
    assert edit.refusal(images, [('plugins', CRI_V2, 'containerd', 'runtimes', 'runc')]) == (
        'refusing to write %s: runtimes in effect now would be lost or altered: kata (gone); they are defined in '
        '%s, and %s; default_runtime_name = "kata" would name no runtime containerd runs, so its CRI plugin would '
        'fail: %s defines it, and %s. Nothing was written. Fix: make the change in the file that defines them '
        '(edit_in: %s), or change that file so %s does not override it.'
        % (images, edit.main, rule, edit.main, rule, edit.main, images))


def test_a_default_runtime_no_file_defines_is_refused_saying_so(tmp_path):
    """containerd 2.1's default config runs its built-in runc; an edit that names an undefined default would
    fail the CRI plugin (the config dump still accepts it)."""
    edit = Edit(tmp_path, (2, 1))
    edit.state('version = 3\n')
    edit.state('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\ndefault_runtime_name = "nvidia"\n')
    assert get_in(edit.dumps[1], V3_RUNTIMES[:-1] + ('default_runtime_name',)) == 'nvidia'
    assert edit.refusal(edit.main, [V3_RUNTIMES[:-1] + ('default_runtime_name',)]) == (
        'refusing to write %s: default_runtime_name = "nvidia" would name no runtime containerd runs, so its CRI '
        'plugin would fail: no file defines it. Nothing was written. Fix: make the change in the file that defines '
        'them (edit_in: auto), or change that file so %s does not override it.' % (edit.main, edit.main))


def test_an_empty_default_runtime_name_is_containerd_s_runc(tmp_path):
    edit = Edit(tmp_path, (2, 1))
    edit.state('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\ndefault_runtime_name = ""\n')
    assert default_runtime(edit.views[0]) == 'runc'
    refuse_lost_runtimes(edit.views[0], edit.views[0], edit.main, [])


def test_each_runtime_an_edit_names_is_its_own_and_the_others_are_still_guarded(tmp_path):
    """The edit changes kata (its own) and takes away nvidia: nvidia is named, kata is not."""
    edit = Edit(tmp_path, (2, 1))
    both = KATA_V2 + '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\nruntime_type = "io.containerd.runc.v2"\n'
    edit.state('version = 2\nimports = ["{d}"]\n', d=both)
    edit.state('version = 2\nimports = ["{d}"]\n', d=KATA_V2.replace('io.containerd.kata.v2', 'io.containerd.kata-qemu.v2'))
    assert edit.runtimes_in_effect() == [['kata', 'nvidia'], ['kata']]
    msg = edit.refusal(edit.path('d'), [('plugins', CRI_V2, 'containerd', 'runtimes', 'kata', 'runtime_type')])
    assert 'would be lost or altered: nvidia (gone);' in msg and 'kata (' not in msg, msg


def test_a_changed_table_names_its_runtime():
    assert targeted_runtimes([('plugins', CRI_V2, 'containerd', 'runtimes', 'kata')]) == {'kata'}
    assert targeted_runtimes([('containerd', 'runtimes', 'kata', 'options', 'BinaryName'), ('imports',)]) == {'kata'}


# The merge-rule reasons when the model holds no reason of its own for the files (views as stand-ins)
def _view(replace, versions):
    return SimpleNamespace(unread={}, containerd_ver=(1, 7, 24) if replace else (2, 1, 9), replace=replace,
                           files=[(path, {'version': v}) for path, v in versions.items()])


def test_a_version_2_drop_in_s_runtime_gone_on_2x_is_said_to_be_dropped_with_the_version_2_runtimes():
    view = _view(False, {'/c.toml': 3, '/d.toml': 2})
    dropped = ("containerd 2.1.9 drops a version 2 drop-in's runtimes once a version 3 runtimes table exists (it "
               "migrates no version 2 runtimes then)")
    assert _why(view, ['/d.toml'], True) == dropped
    assert _why(view, ['/d.toml'], False) == 'a file read later decides them'
    assert _why(view, ['/c.toml'], True) == 'a file read later decides them'
    assert _why_default(view, ['/d.toml'], False) == '/d.toml defines it, and ' + dropped
    assert _why_default(view, ['/d.toml'], True) == '/d.toml defines it, and the edit takes that file out of the tree'
    assert _why_default(view, [], False) == 'no file defines it'
    assert _why(_view(True, {'/c.toml': 2}), ['/c.toml'], True) == (
        'containerd 1.7.24 replaces the whole CRI plugin table with the one read last')


def test_a_gone_runtime_takes_the_reason_of_a_gone_runtime():
    """The merge rule chosen for a runtime that is gone (not only changed), with views as stand-ins."""
    def view(runtimes):
        table = {'plugins': {CRI_V3_RUNTIME: {'containerd': {'runtimes': runtimes}}}}
        return SimpleNamespace(merged=table, files_behind=lambda path: {'/d.toml'} if path[-1] == 'kata' else set(),
                               **vars(_view(False, {'/c.toml': 3, '/d.toml': 2})))
    with pytest.raises(ConfigError) as info:
        refuse_lost_runtimes(view({'kata': {'runtime_type': 'io.containerd.kata.v2'}}), view({}), '/c.toml', [])
    assert "kata (gone); they are defined in /d.toml, and containerd 2.1.9 drops a version 2 drop-in's runtimes" \
        in str(info.value)
