# -*- coding: utf-8 -*-
"""The shape of plugins/: layers by package, no import of a layer above, short functions.

plugins/module_utils holds one package per layer (docs/engine.md, "Map"),
lowest first. A file may import its own package's files of the same or a
lower rank and any file of a lower package; never one above. Every import
counts, also one inside a function.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLUGINS = os.path.join(REPO, 'plugins')
UTILS = os.path.join(PLUGINS, 'module_utils')
MODULES = os.path.join(PLUGINS, 'modules')
PREFIX = 'ansible_collections.nodeguard.containerd.plugins.'

# (package, what it is, ranks of its files: lowest first, one list per rank)
PACKAGES = [
    ('_core', 'the document, its files, the ledger and what containerd makes of a tree',
     [['toml_text', 'atomic'], ['config_model', 'ledger', 'secrets'],
      ['validate', 'effective', 'runtime_guard'], ['ownership']]),
    ('_node', "programs on the node: processes, containerd's log, the isolated load test, payload files",
     [['process', 'containerd_log', 'capabilities'], ['sandbox'], ['preflight'], ['kata_payload', 'package_record']]),
    ('_edits', 'the transaction and the edits it applies',
     [['runtime', 'setting', 'imports'], ['engine'], ['dropin'], ['edit_set']]),
    ('_baseline', 'baselines: store, drift, repair, restore and their states',
     [['drift'], ['store', 'effective', 'repair'], ['restore'], ['states']]),
    ('_readiness', "facts and readiness: what the node runs and whether it is ready",
     [['info'], ['service', 'tree', 'proxy'], ['probe', 'kube', 'drift', 'restart'], ['stamps'], ['report']]),
]
PACKAGE_RANK = dict((name, i) for i, (name, _what, _ranks) in enumerate(PACKAGES))
MAX_FUNCTION_LINES = 80


def rank_of(package, name):
    """(package rank, file rank) of module_utils/<package>/<name>.py; None if no rule places it."""
    for i, (pkg, _what, ranks) in enumerate(PACKAGES):
        if pkg == package:
            for j, names in enumerate(ranks):
                if name in names:
                    return (i, j)
    return None


def imports_of(path):
    """The collection files path imports: set of ('module_utils', package, name) or ('modules', name)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module + '.' + a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for full in names:
            if not full.startswith(PREFIX):
                continue
            parts = full[len(PREFIX):].split('.')
            if parts[0] == 'modules' and len(parts) >= 2:
                out.add(('modules', parts[1]))
            elif parts[0] == 'module_utils' and len(parts) >= 3 and parts[1] in PACKAGE_RANK:
                out.add(('module_utils', parts[1], parts[2]))
    return out


def _utils_files():
    out = []
    for pkg, _what, _ranks in PACKAGES:
        folder = os.path.join(UTILS, pkg)
        out.extend((pkg, f[:-3]) for f in sorted(os.listdir(folder)) if f.endswith('.py') and f != '__init__.py')
    return out


def _plugin_files():
    out = []
    for root, _dirs, files in os.walk(PLUGINS):
        out.extend(os.path.relpath(os.path.join(root, f), REPO) for f in files if f.endswith('.py'))
    return sorted(out)


def test_module_utils_holds_only_the_layer_packages():
    loose = sorted(f for f in os.listdir(UTILS) if f.endswith('.py') and f != '__init__.py')
    dirs = sorted(d for d in os.listdir(UTILS) if os.path.isdir(os.path.join(UTILS, d)) and d != '__pycache__')
    assert loose == [], 'files outside a layer package: %s' % loose
    assert dirs == sorted(PACKAGE_RANK)


@pytest.mark.parametrize('package,name', _utils_files())
def test_every_file_has_a_rank(package, name):
    assert rank_of(package, name) is not None, (
        '%s/%s.py is in no rank: add it to PACKAGES here and to the map of docs/engine.md' % (package, name))


def test_imports_of_sees_imports_inside_functions(tmp_path):
    src = tmp_path / 'x.py'
    src.write_text('def f():\n    from %smodule_utils._node.preflight import load_test\n'
                   'from %smodule_utils._core import atomic\n' % (PREFIX, PREFIX))
    assert imports_of(str(src)) == set([('module_utils', '_node', 'preflight'), ('module_utils', '_core', 'atomic')])


def test_a_lower_package_outranks_any_file_rank():
    assert rank_of('_core', 'ownership') < rank_of('_node', 'process')
    assert rank_of('_node', 'sandbox') < rank_of('_node', 'preflight')
    assert rank_of('_edits', 'edit_set') < rank_of('_baseline', 'drift')
    assert rank_of('_core', 'nothing_here') is None


@pytest.mark.parametrize('package,name', _utils_files())
def test_module_utils_file_imports_no_layer_above_it(package, name):
    mine = rank_of(package, name)
    wrong = []
    for item in sorted(imports_of(os.path.join(UTILS, package, name + '.py'))):
        if item[0] == 'modules':
            wrong.append('%s (a module)' % item[1])
            continue
        theirs = rank_of(item[1], item[2])
        if theirs is None or theirs > mine:
            wrong.append('%s/%s' % (item[1], item[2]))
    assert not wrong, ('%s/%s imports %s: a layer above it. Move the shared code down, or rank the file '
                       'in PACKAGES here and in the map of docs/engine.md.' % (package, name, ', '.join(wrong)))


@pytest.mark.parametrize('name', sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith('.py')))
def test_module_imports_module_utils_only(name):
    found = imports_of(os.path.join(MODULES, name + '.py'))
    assert not [i for i in found if i[0] == 'modules'], '%s imports another module' % name
    assert all(rank_of(i[1], i[2]) is not None for i in found)


@pytest.mark.parametrize('path', _plugin_files())
def test_no_function_is_longer_than_the_limit(path):
    with open(os.path.join(REPO, path)) as f:
        tree = ast.parse(f.read(), path)
    long_ones = ['%s (%d lines, line %d)' % (n.name, n.end_lineno - n.lineno + 1, n.lineno)
                 for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.end_lineno - n.lineno + 1 > MAX_FUNCTION_LINES]
    assert not long_ones, '%s: functions over %d lines: %s' % (path, MAX_FUNCTION_LINES, ', '.join(long_ones))
