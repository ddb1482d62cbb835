# -*- coding: utf-8 -*-
"""The layers of plugins/module_utils and plugins/modules (docs/engine.md, "Map"): no file imports a layer above it.

Rule-based, so a new file fits without editing this test: a file's layer
comes from the first rule its name matches (exact name or prefix); a
module_utils file no rule names is module logic (the top helper layer).
Every import counts, also one inside a function (the engine imports
_preflight where it starts containerd).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UTILS = os.path.join(REPO, 'plugins', 'module_utils')
MODULES = os.path.join(REPO, 'plugins', 'modules')
PACKAGE = 'ansible_collections.nodeguard.containerd.plugins.'

# (layer, name, rules): a rule ending in '*' is a prefix, else the exact file name (without .py)
LAYERS = [
    (0, 'text and files', ['_toml_text', '_atomic']),
    (1, 'the config document and the ledger', ['_config_model', '_ledger', '_secrets']),
    (2, 'what containerd does: checks, merged view, load test',
     ['_validate', '_effective', '_runtime_guard', '_preflight']),
    (3, 'edits and comparisons (pure: a document in, a document out)',
     ['_ownership', '*_edit', '_baseline_drift', '_baseline_repair']),
    (4, 'the transaction', ['_engine']),
    (5, 'module logic: states, stores, facts, reports',
     ['_baseline*', '_info*', '_dropin*', '_payload*', '_readiness*']),
]
MODULE_LOGIC = 5     # a module_utils file no rule names
MODULE_LAYER = 6     # plugins/modules/*.py


def _matches(rule, name):
    if rule.startswith('*'):
        return name.endswith(rule[1:])
    if rule.endswith('*'):
        return name.startswith(rule[:-1])
    return name == rule


def layer_of(name):
    """The layer of module_utils file name (without .py)."""
    for layer, _title, rules in LAYERS:
        if any(_matches(rule, name) for rule in rules):
            return layer
    return MODULE_LOGIC


def imports_of(path):
    """The collection files path imports: ('module_utils' or 'modules', name)."""
    with open(path) as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [node.module + '.' + a.name for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for full in names:
            if not full.startswith(PACKAGE):
                continue
            parts = full[len(PACKAGE):].split('.')
            if len(parts) >= 2 and parts[0] in ('module_utils', 'modules') and parts[1].startswith('_') \
                    or len(parts) >= 2 and parts[0] == 'modules':
                out.add((parts[0], parts[1]))
    return out


def _files(folder):
    return sorted(f[:-3] for f in os.listdir(folder) if f.endswith('.py') and f != '__init__.py')


def test_the_rules_place_files_as_the_map_says():
    assert layer_of('_toml_text') == 0 and layer_of('_ledger') == 1 and layer_of('_effective') == 2
    assert layer_of('_runtime_edit') == 3 and layer_of('_engine') == 4
    assert layer_of('_baseline_restore') == 5 and layer_of('_readiness_probe') == 5
    assert layer_of('_baseline_drift') == 3        # an exact rule wins over the _baseline* prefix below it
    assert layer_of('_something_new') == MODULE_LOGIC


def test_imports_of_sees_imports_inside_functions(tmp_path):
    src = tmp_path / 'x.py'
    src.write_text('def f():\n    from %smodule_utils._preflight import load_test\n'
                   'from %smodule_utils import _atomic\n' % (PACKAGE, PACKAGE))
    assert imports_of(str(src)) == set([('module_utils', '_preflight'), ('module_utils', '_atomic')])


@pytest.mark.parametrize('name', _files(UTILS))
def test_module_utils_file_imports_no_layer_above_it(name):
    mine = layer_of(name)
    wrong = []
    for kind, other in sorted(imports_of(os.path.join(UTILS, name + '.py'))):
        if kind == 'modules':
            wrong.append('%s (a module)' % other)
        elif layer_of(other) > mine:
            wrong.append('%s (layer %d)' % (other, layer_of(other)))
    assert not wrong, ('%s (layer %d) imports %s: a layer above it. Move the shared code down, or place the file '
                       'in LAYERS here and in the map of docs/engine.md.' % (name, mine, ', '.join(wrong)))


@pytest.mark.parametrize('name', _files(MODULES))
def test_module_imports_module_utils_only(name):
    found = imports_of(os.path.join(MODULES, name + '.py'))
    assert not [o for kind, o in found if kind == 'modules'], '%s imports another module' % name
    assert all(layer_of(o) < MODULE_LAYER for _k, o in found)
