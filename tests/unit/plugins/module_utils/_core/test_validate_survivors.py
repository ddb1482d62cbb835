# -*- coding: utf-8 -*-
"""The import walk's details the mutation run found untested: a missing import is a problem of that entry
only, and an imports that is not a list stops the walk of that file only."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import load_tree


def test_a_missing_import_is_the_entrys_problem_not_the_whole_configs(tmp_path):
    missing = str(tmp_path / 'missing.toml')
    path = str(tmp_path / 'config.toml')
    data = parse_toml('version = 2\nimports = ["%s"]\n' % missing)
    files, problems = load_tree(path, data, (1, 6))
    assert [p for p, _d in files] == [path]
    assert [(p.entry, p.whole) for p in problems] == [(missing, False)]
    view = load_effective(path, data, (1, 6))  # the merged view is still made
    assert view.imported() == [] and len(view.problems) == 1


def test_an_imports_that_is_not_a_list_stops_only_that_files_walk(tmp_path):
    a, b, c = (str(tmp_path / ('%s.toml' % n)) for n in 'abc')
    with open(a, 'w') as f:
        f.write('version = 2\nimports = "%s"\n' % c)
    with open(b, 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % c)
    with open(c, 'w') as f:
        f.write('version = 2\n')
    path = str(tmp_path / 'config.toml')
    files, problems = load_tree(path, parse_toml('version = 2\nimports = ["%s", "%s"]\n' % (a, b)), (1, 6))
    assert [p for p, _d in files] == [path, a, b, c]
    assert [(p.importing_file, p.whole) for p in problems] == [(a, True)]
