# -*- coding: utf-8 -*-
"""_readiness_tree: the config tree as the readiness checks and the restart
decision read it (its imports, the missing and duplicate ones, the files
watched for changes) and the live config's runtimes from config dump."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import tree as rt
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import CRI_V2, CRI_V3_RUNTIME
from helpers.context import FakeContext


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def test_the_tree_of_a_main_file_with_plain_glob_missing_and_repeated_imports(tmp_path):
    a = write(tmp_path / 'a.toml', 'version = 2\n')
    g1 = write(tmp_path / 'conf.d' / '10.toml', 'version = 2\n')
    g2 = write(tmp_path / 'conf.d' / '20.toml', 'version = 2\n')
    missing = str(tmp_path / 'none.toml')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s/conf.d/*.toml", "%s", "%s", '
                                           '"%s/empty.d/*.toml"]\n' % (a, tmp_path, missing, a, tmp_path))
    tree = rt.Tree(main, (1, 7))
    assert tree.parse_error is None and tree.config_version == 2 and tree.errors == []
    assert tree.missing == [missing]                  # a glob that matches nothing is not missing
    assert tree.duplicates == [a]
    report = tree.report()
    assert [(e['entry'], e['glob'], e['exists']) for e in report] == [
        (a, False, True), ('%s/conf.d/*.toml' % tmp_path, True, True), (missing, False, False), (a, False, True),
        ('%s/empty.d/*.toml' % tmp_path, True, False)]
    assert set(report[0]) == {'file', 'entry', 'path', 'glob', 'exists'}
    assert all(e['file'] == main for e in report)
    # what a restart decision watches: the files, and the folder of each glob (a file deleted from it)
    assert tree.watched_files() == [main, a, str(tmp_path / 'conf.d'), g1, g2, missing, a, str(tmp_path / 'empty.d')]


def test_a_file_without_a_version_is_version_1(tmp_path):
    assert rt.Tree(write(tmp_path / 'c.toml', '[grpc]\n'), (1, 7)).config_version == 1


def test_an_import_that_cannot_be_parsed_is_an_error_not_missing(tmp_path):
    bad = write(tmp_path / 'bad.toml', 'version = = 2\n')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (bad, tmp_path / 'gone.toml'))
    tree = rt.Tree(main, (1, 7))
    assert tree.missing == [str(tmp_path / 'gone.toml')]
    assert len(tree.errors) == 1 and bad in tree.errors[0]


def test_a_main_file_that_is_missing_or_broken_is_a_parse_error(tmp_path):
    tree = rt.Tree(str(tmp_path / 'none.toml'), (1, 7))
    assert tree.parse_error == '%s does not exist' % (tmp_path / 'none.toml')
    assert tree.entries == [] and tree.config_version is None
    broken = rt.Tree(write(tmp_path / 'b.toml', 'version = = 2\n'), (1, 7))
    assert broken.parse_error and 'does not exist' not in broken.parse_error
    assert broken.watched_files() == [os.path.abspath(str(tmp_path / 'b.toml'))]


def test_config_dump_needs_a_binary():

    assert rt.config_dump(FakeContext(), '/etc/containerd/config.toml') == (
        127, '', 'no containerd binary in PATH or the usual folders (set containerd_bin)')


def test_a_dump_that_is_not_toml_says_so():
    data, why = rt.parse_dump('version = = 2')
    assert data is None and why.startswith('config dump output is not valid TOML: ')
    assert rt.parse_dump('version = 2\n') == ({'version': 2}, None)


def test_runtimes_come_from_the_cri_plugin_of_the_dumps_version():
    v2 = {'version': 2, 'plugins': {CRI_V2: {'containerd': {'default_runtime_name': 'runc',
                                                            'runtimes': {'runc': {'runtime_type': 'x'}}}},
                                    CRI_V3_RUNTIME: {'containerd': {'runtimes': {'other': {}}}}}}
    assert rt.dump_runtimes(v2) == ({'runc': {'runtime_type': 'x'}}, 'runc')
    v3 = {'version': 3, 'plugins': {CRI_V3_RUNTIME: {'containerd': {'default_runtime_name': 'crun',
                                                                    'runtimes': {'crun': {}}}},
                                    CRI_V2: {'containerd': {'runtimes': {'old': {}}}}}}
    assert rt.dump_runtimes(v3) == ({'crun': {}}, 'crun')
    assert rt.dump_runtimes({'plugins': {CRI_V2: {'containerd': {'runtimes': {'v1': {}}}}}}) == ({'v1': {}}, None)
    assert rt.dump_runtimes({'version': 4, 'plugins': {CRI_V3_RUNTIME: {'containerd': {'runtimes': {'n': {}}}}}}) == \
        ({'n': {}}, None)
    assert rt.dump_runtimes({'version': 2, 'plugins': {CRI_V2: {'containerd': {'runtimes': 'bad'}}}}) == ({}, None)
