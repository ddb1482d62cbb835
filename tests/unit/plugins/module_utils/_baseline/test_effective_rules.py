# -*- coding: utf-8 -*-
"""_baseline_effective's rules called directly: version words, the mirror, where a key's value comes
from (one file, several, containerd's own default), which side of the dump is compared, and the
sentences that tell an operator what changed and why."""

import os

import pytest
import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import read_tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import (
    Mirror,
    _rebase_imports,
    describe_effective,
    effective_drift,
    effective_records,
    file_path_of,
    file_sets,
    merged_path,
    parse_ver,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import version_text
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective

CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    return path


def view_of(path, ver):
    return load_effective(path, tomlkit.parse(open(path).read()).unwrap(), ver)


def rec(key, value, file=None, default=False, **more):
    r = dict(key=key, path='p.' + key, value=value, default=default, file=file, owner=more.pop('owner', None))
    r.update(more)
    return r


# ------------------------------------------------------------------ versions
@pytest.mark.parametrize('text, ver', [
    ('1.6.20~ds1', (1, 6)), ('v2.1.9', (2, 1)), ('1.7', (1, 7)), ('1.7.0-rc.1', (1, 7)), ('2.x', (2, 0)),
    ([2, 1, 9], (2, 1)), ((1, 7), (1, 7)), ([2], None), ('', None), ('x.1', None), ('7', None),
])
def test_a_version_is_its_major_and_minor(text, ver):
    assert parse_ver(text) == ver


def test_an_unknown_version_is_said_so():
    assert version_text((2, 1)) == '2.1' and version_text(None) == 'unknown' and version_text(()) == 'unknown'
    assert version_text(None, '?') == '?' and version_text((1, 7, 24), '1.x') == '1.7.24'


# ------------------------------------------------------------------ the mirror
def test_imports_that_are_no_list_are_left_as_written():
    text = 'version = 2\nimports = "/etc/containerd/conf.d/*.toml"\n'
    assert _rebase_imports(text, '/tmp/m') == text


def test_only_absolute_string_imports_move_into_the_mirror():
    out = tomlkit.parse(_rebase_imports('version = 2\nimports = ["/abs/a.toml", "rel/b.toml", 7]\n', '/tmp/m'))
    assert out['imports'] == ['/tmp/m/abs/a.toml', 'rel/b.toml', 7]


def test_the_mirror_keeps_a_byte_order_mark_and_reads_the_main_file_without_it(tmp_path):
    root = str(tmp_path)
    dropin = write(os.path.join(root, 'conf.d', 'a.toml'), 'version = 2\n')
    path = os.path.join(root, 'config.toml')
    with open(path, 'wb') as f:
        f.write(b'\xef\xbb\xbfversion = 2\nimports = ["%s"]\n' % dropin.encode())
    with Mirror(read_tree(path).files, path) as mirror:
        with open(mirror.main, 'rb') as f:
            raw = f.read()
        assert raw.startswith(b'\xef\xbb\xbf') and (mirror.root + dropin).encode() in raw
        assert mirror.main_data == {'version': 2, 'imports': [mirror.root + dropin]}
        assert os.path.isfile(mirror.root + dropin)
        assert oct(os.stat(os.path.dirname(mirror.root + dropin)).st_mode & 0o777) == '0o700'
        assert mirror.real(None) is None


def test_a_mirror_of_a_main_file_that_is_no_toml_has_no_data(tmp_path):
    path = write(str(tmp_path / 'config.toml'), 'version = 2\n[plugins\n')
    with Mirror(read_tree(path).files, path) as mirror:
        assert mirror.main_data is None and os.path.isfile(mirror.main)


def test_a_mirror_that_fails_half_way_leaves_no_folder(tmp_path):
    class Broken(object):
        path, raw, text, data = '/etc/containerd/config.toml', None, None, None   # raw None: open().write fails

    before = set(os.listdir(os.environ.get('TMPDIR', '/tmp')))
    with pytest.raises(TypeError):
        Mirror([Broken()], Broken.path)
    after = set(os.listdir(os.environ.get('TMPDIR', '/tmp')))
    assert not [n for n in after - before if n.startswith('nodeguard-baseline-')]


# ------------------------------------------------------------------ where values come from
V3_MAIN = ('version = 3\nimports = ["%s/conf.d/*.toml"]\n'
           "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'runc'\n"
           "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
           "  runtime_type = 'io.containerd.runc.v2'\n"
           "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n")


def test_a_table_gathered_from_several_files_names_them_all_and_the_last_as_its_file(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    dropin = write(os.path.join(root, 'conf.d', '50-root.toml'),
                   "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
                   "  Root = '/run/runc-x'\n")
    (r,) = effective_records(view_of(path, (2, 1)), ['cri.runtimes.runc'])
    assert r['files'] == [path, dropin] and r['file'] == dropin
    assert r['value']['options'] == {'SystemdCgroup': True, 'Root': '/run/runc-x'}
    (one,) = effective_records(view_of(path, (2, 1)), ['cri.default_runtime_name'])
    assert one['file'] == path and 'files' not in one and one['default'] is False


def test_a_key_of_a_file_outside_the_view_is_set_by_nothing(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    view = view_of(path, (2, 1))
    assert file_sets(view, path, 'cri.default_runtime_name') is True
    assert file_sets(view, path, 'images.snapshotter') is False
    assert file_sets(view, os.path.join(root, 'conf.d', 'gone.toml'), 'cri.default_runtime_name') is False


def test_the_dump_of_containerd_2_is_read_at_the_version_3_path_of_a_version_2_key(tmp_path):
    path = write(str(tmp_path / 'config.toml'), 'version = 2\n')
    dump = {'version': 3, 'plugins': {CRI3: {'containerd': {'default_runtime_name': 'runc'}},
                                      CRI2: {'containerd': {'default_runtime_name': 'wrong'}}}}
    (r,) = effective_records(view_of(path, (2, 1)), ['cri.default_runtime_name'], dump)
    assert r['dumped'] == 'runc'
    (r,) = effective_records(view_of(path, (1, 6)), ['cri.default_runtime_name'],
                             {'version': 2, 'plugins': {CRI2: {'containerd': {'default_runtime_name': 'crun'}}}})
    assert r['dumped'] == 'crun' and r['value'] == 'runc' and r['default'] is True


# ------------------------------------------------------------------ drift and its sentences
def test_a_key_the_baseline_did_not_record_is_no_drift_and_the_others_are_still_compared():
    before = [rec('cri.default_runtime_name', 'runc', '/c.toml')]
    after = [rec('images.snapshotter', 'native', '/c.toml'), rec('cri.default_runtime_name', 'crun', '/c.toml')]
    (d,) = effective_drift(before, after, True)
    assert (d['key'], d['change'], d['before'], d['after']) == ('cri.default_runtime_name', 'changed', 'runc', 'crun')


def test_a_change_from_containerds_default_says_nothing_set_it():
    before = [rec('cri.default_runtime_name', 'runc', default=True)]
    after = [rec('cri.default_runtime_name', 'nvidia', '/d/99.toml')]
    (d,) = effective_drift(before, after, True, ver=(2, 1))
    assert d['why'] == ("containerd 2.1 now runs cri.default_runtime_name = 'nvidia', set by /d/99.toml (the baseline "
                        "ran 'runc' (containerd's default: nothing sets it))")
    assert d['file'] == '/d/99.toml' and d['before_file'] is None and d['change'] == 'changed'


def test_a_removed_table_says_where_it_went():
    before = [rec('cri.runtimes.runc', {'runtime_type': 'x'}, '/c.toml')]
    after = [rec('cri.runtimes.runc', None, owner='/d/50.toml')]
    (d,) = effective_drift(before, after, True)
    assert d['change'] == 'removed' and d['file'] == '/c.toml'
    assert d['why'] == ('containerd no longer runs cri.runtimes.runc (the baseline ran a table from /c.toml); '
                        '/c.toml is where it went')
    assert describe_effective([d]) == 'cri.runtimes.runc is removed (model): ' + d['why']


def test_an_added_key_nobody_sets_now_is_blamed_on_the_table_that_holds_it():
    before = [rec('images.snapshotter', None)]
    after = [rec('images.snapshotter', 'native', owner='/d/50.toml')]
    after[0]['file'] = None
    (d,) = effective_drift(before, after, True, ver=(1, 6))
    assert d['change'] == 'added' and d['file'] == '/d/50.toml'
    assert d['why'] == ("containerd 1.6 now runs images.snapshotter = 'native' because of /d/50.toml (the baseline "
                        "ran nothing)")


def test_a_value_still_set_in_its_file_but_hidden_is_blamed_on_the_file_holding_the_table(tmp_path):
    # containerd 1.x: a drop-in's CRI table replaces config.toml's; config.toml still sets the key
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'),
                 'version = 2\nimports = ["%s/conf.d/*.toml"]\n[plugins."%s".containerd]\n'
                 '  snapshotter = "overlayfs"\n' % (root, CRI2))
    dropin = write(os.path.join(root, 'conf.d', '50-cri.toml'),
                   'version = 2\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n' % CRI2)
    view = view_of(path, (1, 6))
    (after,) = effective_records(view, ['images.snapshotter'])
    assert after['value'] is None and after['file'] is None and after['owner'] == dropin
    before = [rec('images.snapshotter', 'overlayfs', path)]
    (d,) = effective_drift(before, [after], True, view, ver=(1, 6))
    assert d['change'] == 'removed' and d['file'] == dropin and d['before_file'] == path
    # without the view (nothing to look into) the baseline's file is named
    (d,) = effective_drift(before, [after], True, None, ver=(1, 6))
    assert d['file'] == path


def test_a_dump_is_compared_only_when_both_sides_have_one_of_the_same_containerd():
    before = [rec('cri.default_runtime_name', 'runc', '/c.toml', dumped='runc')]
    after = [rec('cri.default_runtime_name', 'runc', '/c.toml', dumped='crun')]
    (d,) = effective_drift(before, after, True)
    assert (d['compared'], d['before'], d['after']) == ('config dump', 'runc', 'crun')
    assert effective_drift(before, after, False) == []
    no_dump = [rec('cri.default_runtime_name', 'runc', '/c.toml')]
    assert effective_drift(no_dump, after, True) == [] and effective_drift(before, no_dump, True) == []


def test_an_error_inside_the_mirror_is_not_swallowed_and_the_folder_goes(tmp_path):
    path = write(str(tmp_path / 'config.toml'), 'version = 2\n')
    with pytest.raises(ValueError):
        with Mirror(read_tree(path).files, path) as mirror:
            root = mirror.root
            raise ValueError('inside')
    assert not os.path.exists(root)


def test_a_dump_of_an_unknown_containerd_2_is_read_at_the_version_3_paths(tmp_path):
    # the binary's version could not be read (ver None: no migration in the model, version 2 paths),
    # but its dump is a version 3 one: the values are looked up where containerd 2 keeps them
    path = write(str(tmp_path / 'config.toml'), 'version = 2\noom_score = -5\n')
    dump = {'version': 3, 'oom_score': -7,
            'plugins': {CRI3: {'containerd': {'default_runtime_name': 'runc'}, 'enable_cdi': True},
                        'io.containerd.cri.v1.images': {'snapshotter': 'overlayfs'},
                        CRI2: {'containerd': {'default_runtime_name': 'v2-place', 'snapshotter': 'v2-place'}}}}
    recs = effective_records(view_of(path, None), ['cri.default_runtime_name', 'images.snapshotter', 'oom_score'],
                             dump)
    assert [r['dumped'] for r in recs] == ['runc', 'overlayfs', -7]
    # a version 2 dump is read as it is
    (r,) = effective_records(view_of(path, None), ['cri.default_runtime_name'],
                             {'version': 2, 'plugins': {CRI2: {'containerd': {'default_runtime_name': 'crun'}}}})
    assert r['dumped'] == 'crun'


def test_the_owner_of_a_key_is_the_file_of_the_table_that_holds_it(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root + 'oom_score = -5\n')
    write(os.path.join(root, 'conf.d', '50-default.toml'),
          "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'crun'\n")
    recs = effective_records(view_of(path, (2, 1)), ['cri.default_runtime_name', 'oom_score', 'plugins."%s"' % CRI3])
    # the drop-in wrote the CRI plugin table last: it holds the default it sets
    assert recs[0]['owner'] == recs[0]['file'] != path
    # a top-level key is held by the main file; the plugins table itself by no file
    assert recs[1]['owner'] == path and recs[2]['owner'] is None


def test_a_version_4_config_is_read_in_its_own_layout(tmp_path):
    path = write(str(tmp_path / 'config.toml'),
                 "version = 4\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'crun'\n")
    (r,) = effective_records(view_of(path, (2, 2)), ['cri.default_runtime_name'])
    assert (r['value'], r['file']) == ('crun', path)


def test_whether_a_file_sets_a_key_is_read_in_that_file_only(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    dropin = write(os.path.join(root, 'conf.d', '50-runc.toml'),
                   "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
                   "  Root = '/x'\n")
    view = view_of(path, (2, 1))
    assert file_sets(view, dropin, 'cri.default_runtime_name') is False   # config.toml sets it, the drop-in not
    assert file_sets(view, dropin, 'cri.runtimes.runc') is True


# ------------------------------------------------------------------ the layout each file is read in, load order and who owns a key
CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
DEFAULT_V2 = ('plugins', CRI2, 'containerd', 'default_runtime_name')
DEFAULT_V3 = ('plugins', CRI3, 'containerd', 'default_runtime_name')


def test_a_main_file_without_a_version_line_is_read_in_the_version_2_layout_on_containerd_1(tmp_path):
    # containerd 1.x reads a version 1 file's plugins.cri as the CRI plugin of version 2
    path = write(str(tmp_path / 'config.toml'), '[plugins.cri.containerd]\n  default_runtime_name = "crun"\n')
    view = view_of(path, (1, 6))
    assert view.main_version == 1
    assert merged_path(view, 'cri.default_runtime_name') == DEFAULT_V2
    (r,) = effective_records(view, ['cri.default_runtime_name'])
    assert (r['value'], r['default'], r['file']) == ('crun', False, path)


def _dropin(root, name, version, cri, table='containerd'):
    return write(os.path.join(root, 'conf.d', name),
                 "version = %d\n[plugins.'%s'.%s]\n  default_runtime_name = 'crun'\n" % (version, cri, table))


def test_each_dropin_is_read_in_its_own_versions_layout_under_a_version_2_main_file(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), 'version = 2\nimports = ["%s/conf.d/*.toml"]\n' % root)
    v3 = _dropin(root, '30-v3.toml', 3, CRI3)
    v4 = _dropin(root, '40-v4.toml', 4, CRI3)
    view = view_of(path, (2, 1))
    assert file_path_of(view, v3, 'cri.default_runtime_name') == DEFAULT_V3
    assert file_path_of(view, v4, 'cri.default_runtime_name') == DEFAULT_V3
    assert file_sets(view, v3, 'cri.default_runtime_name') is True
    assert file_sets(view, v4, 'cri.default_runtime_name') is True
    assert file_path_of(view, path, 'cri.default_runtime_name') == DEFAULT_V2


def test_a_version_2_dropin_is_read_in_the_version_2_layout_under_a_version_3_main_file(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), 'version = 3\nimports = ["%s/conf.d/*.toml"]\n' % root)
    v2 = _dropin(root, '20-v2.toml', 2, CRI2)
    view = view_of(path, (2, 1))
    assert file_path_of(view, v2, 'cri.default_runtime_name') == DEFAULT_V2
    assert file_sets(view, v2, 'cri.default_runtime_name') is True
    assert file_sets(view, path, 'cri.default_runtime_name') is False


def test_the_files_of_a_table_gathered_from_many_are_listed_in_load_order(tmp_path):
    # the files come out of a set: only their load order sorts them (six drop-ins, one option each)
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'),
                 "version = 3\nimports = ['%s/conf.d/*.toml']\n"
                 "[plugins.'%s'.containerd.runtimes.runc.options]\n  SystemdCgroup = true\n" % (root, CRI3))
    dropins = [write(os.path.join(root, 'conf.d', '%02d-opt.toml' % i),
                     "version = 3\n[plugins.'%s'.containerd.runtimes.runc.options]\n  Opt%d = %d\n" % (CRI3, i, i))
               for i in (10, 20, 30, 40, 50, 60)]
    (r,) = effective_records(view_of(path, (2, 1)), ['cri.runtimes.runc'])
    assert r['files'] == [path] + dropins and r['file'] == dropins[-1]


def test_a_key_right_under_a_plugins_table_is_owned_by_the_file_that_wrote_that_table_last(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'),
                 "version = 3\nimports = ['%s/conf.d/*.toml']\n[plugins.'%s']\n  enable_cdi = true\n" % (root, CRI3))
    later = write(os.path.join(root, 'conf.d', '50-selinux.toml'),
                  "version = 3\n[plugins.'%s']\n  enable_selinux = true\n" % CRI3)
    (r,) = effective_records(view_of(path, (2, 1)), ['cri.enable_cdi'])
    assert (r['value'], r['file'], r['owner']) == (True, path, later)
    (alone,) = effective_records(view_of(write(os.path.join(root, 'main.toml'),
                                               "version = 3\n[plugins.'%s']\n  enable_cdi = true\n" % CRI3),
                                         (2, 1)), ['cri.enable_cdi'])
    assert alone['owner'] == os.path.join(root, 'main.toml')
