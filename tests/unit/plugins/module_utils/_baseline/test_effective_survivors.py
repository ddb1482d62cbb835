# -*- coding: utf-8 -*-
"""_baseline_effective rules the mutation run of 05fad31 found untested: the layout a file without a
known version is read in, each drop-in's own layout whatever the main file's, the load order of the
files a table is gathered from, and the owner of a key right under a plugin's table."""

import os

from test_baseline_effective_rules import view_of, write

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import (
    effective_records,
    file_path_of,
    file_sets,
    merged_path,
)

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
