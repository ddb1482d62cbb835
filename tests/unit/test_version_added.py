# -*- coding: utf-8 -*-
"""Every version_added names a version users can install.

The plugins' documentation (DOCUMENTATION, RETURN, the doc fragments, the
YAML documentation files of filter and test plugins) and the roles'
meta/argument_specs.yml may say version_added anywhere: on the plugin, an
entry point, an option, a suboption, a return value or one it contains.
Each value must be a release of changelogs/changelog.yaml, galaxy.yml's
version, or the release being prepared: the version whose release summary
fragment (changelogs/fragments/release-X.Y.Z.yml) is not released yet.
A plugin or role that a release of the changelog lists as new says that
release.
"""

import ast
import glob
import os
import re

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Plugin folders whose files carry documentation ansible-doc reads.
DOC_TYPES = ('become', 'cache', 'callback', 'cliconf', 'connection', 'filter', 'httpapi', 'inventory', 'lookup',
             'modules', 'netconf', 'shell', 'strategy', 'test', 'vars')
# Plugin folders whose code has no documentation of its own (an action
# plugin is documented by the module of its name).
CODE_TYPES = ('action', 'module_utils', 'plugin_utils', 'terminal')
# The blocks of a plugin file that are YAML documentation.
DOC_BLOCKS = ('DOCUMENTATION', 'RETURN')
RELEASE_FRAGMENT = re.compile(r'^release-(\d+\.\d+\.\d+)\.ya?ml$')
# Plugin types of the changelog's `plugins` lists, by folder.
CHANGELOG_TYPE = {'filter': 'filter', 'lookup': 'lookup', 'test': 'test', 'inventory': 'inventory',
                  'callback': 'callback', 'connection': 'connection', 'become': 'become', 'cache': 'cache',
                  'vars': 'vars', 'strategy': 'strategy', 'shell': 'shell', 'cliconf': 'cliconf',
                  'httpapi': 'httpapi', 'netconf': 'netconf'}


def _read(rel):
    with open(os.path.join(REPO, rel)) as f:
        return f.read()


def changelog():
    return yaml.safe_load(_read('changelogs/changelog.yaml'))


def released():
    return set(str(v) for v in changelog()['releases'])


def allowed_versions():
    """Released versions, galaxy.yml's version and the release being prepared."""
    allowed = released()
    allowed.add(str(yaml.safe_load(_read('galaxy.yml'))['version']))
    for path in glob.glob(os.path.join(REPO, 'changelogs', 'fragments', 'release-*')):
        m = RELEASE_FRAGMENT.match(os.path.basename(path))
        assert m, '%s: a release summary fragment is named release-X.Y.Z.yml' % os.path.relpath(path, REPO)
        allowed.add(m.group(1))
    return allowed


def version_added(data, where=()):
    """(path, value) of each version_added anywhere in data."""
    if isinstance(data, dict):
        for key, value in data.items():
            if key == 'version_added':
                yield where, value
            else:
                yield from version_added(value, where + (str(key),))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            yield from version_added(item, where + (str(i),))


def python_docs(rel):
    """{block name: parsed YAML} of a plugin file; doc fragments: every upper-case string of the class."""
    tree = ast.parse(_read(rel), rel)
    fragment = '/doc_fragments/' in '/' + rel
    docs = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name = node.targets[0].id
        if not (name in DOC_BLOCKS or (fragment and name.isupper())):
            continue
        if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
            continue
        try:
            docs[name] = yaml.safe_load(node.value.value)
        except yaml.YAMLError as exc:
            pytest.fail('%s: %s is not valid YAML, so ansible-doc cannot read it: %s' % (rel, name, exc))
    return docs


def documented_files():
    """Each documented plugin file (Python or a filter's/test's YAML file) of the collection."""
    found = []
    for kind in DOC_TYPES:
        for path in sorted(glob.glob(os.path.join(REPO, 'plugins', kind, '*'))):
            if path.endswith(('.py', '.yml', '.yaml')) and not os.path.basename(path).startswith('__init__'):
                found.append((kind, os.path.relpath(path, REPO)))
    for path in sorted(glob.glob(os.path.join(REPO, 'plugins', 'doc_fragments', '*.py'))):
        if not os.path.basename(path).startswith('__init__'):
            found.append(('doc_fragments', os.path.relpath(path, REPO)))
    return found


def plugin_docs():
    """(file, kind, {block: data}) of every documented plugin."""
    for kind, rel in documented_files():
        if rel.endswith('.py'):
            docs = python_docs(rel)
            if kind == 'doc_fragments':
                assert docs, '%s: no documentation block' % rel
            elif not docs.get('DOCUMENTATION'):
                # a filter or test plugin file may hold several plugins documented in YAML files beside it
                if kind in ('filter', 'test') and glob.glob(os.path.join(REPO, 'plugins', kind, '*.y*ml')):
                    continue
                pytest.fail('%s: no DOCUMENTATION ansible-doc can read' % rel)
        else:
            try:
                docs = yaml.safe_load(_read(rel)) or {}
            except yaml.YAMLError as exc:
                pytest.fail('%s is not valid YAML: %s' % (rel, exc))
        yield rel, kind, docs


def role_specs():
    for path in sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'argument_specs.yml'))):
        rel = os.path.relpath(path, REPO)
        yield rel, os.path.basename(os.path.dirname(os.path.dirname(path))), yaml.safe_load(_read(rel))


def every_version_added():
    """(file, dotted path, value) of every version_added of plugins and roles."""
    found = []
    for rel, _kind, docs in plugin_docs():
        for block, data in docs.items():
            for where, value in version_added(data):
                found.append((rel, '.'.join((block,) + where), value))
    for rel, _role, spec in role_specs():
        for where, value in version_added(spec):
            found.append((rel, '.'.join(where), value))
    return found


def test_the_walk_sees_every_kind_of_place():
    """Plugin, option, suboption, return value and role entry point / option values are all read."""
    found = every_version_added()
    paths = [path for _rel, path, _value in found]
    assert any(p == 'DOCUMENTATION' for p in paths)
    assert any(re.match(r'^DOCUMENTATION\.options\.[^.]+$', p) for p in paths)
    assert any(re.match(r'^RETURN\.[^.]+$', p) for p in paths)
    assert any(re.match(r'^[A-Z_]+\.options\.[^.]+$', p) and rel.startswith('plugins/doc_fragments/')
               for rel, p, _v in found)
    assert any(re.match(r'^argument_specs\.[^.]+$', p) for p in paths)
    assert any(re.match(r'^argument_specs\.[^.]+\.options\.[^.]+$', p) for p in paths)
    # and deeper: a suboption's or a contained return value's own version_added is found too
    nested = {'options': {'a': {'suboptions': {'b': {'version_added': 'x'}}}}}
    assert list(version_added(nested)) == [(('options', 'a', 'suboptions', 'b'), 'x')]


def test_every_plugin_file_is_of_a_known_kind():
    """A plugin folder the walk does not read would hide its version_added values."""
    for path in glob.glob(os.path.join(REPO, 'plugins', '*')):
        kind = os.path.basename(path)
        if os.path.isdir(path) and kind != '__pycache__':
            assert kind in DOC_TYPES + CODE_TYPES + ('doc_fragments',), 'plugins/%s: unknown plugin folder' % kind


def test_code_only_plugin_files_say_no_version_added():
    """module_utils, plugin_utils and action plugins are not documented: a version_added there is read by nobody."""
    for kind in CODE_TYPES:
        for path in glob.glob(os.path.join(REPO, 'plugins', kind, '**', '*.py'), recursive=True):
            rel = os.path.relpath(path, REPO)
            assert not re.search(r'^\s*version_added\s*:', _read(rel), re.M), (
                '%s: version_added belongs in the documentation of a module or plugin' % rel)


def test_every_version_added_is_installable():
    allowed = allowed_versions()
    wrong = ['%s: %s version_added %r' % (rel, path, value) for rel, path, value in every_version_added()
             if str(value) not in allowed]
    assert not wrong, 'not a release, galaxy.yml\'s version or the release being prepared (%s):\n%s' % (
        ', '.join(sorted(allowed)), '\n'.join(wrong))


def test_at_most_one_release_is_being_prepared():
    pending = allowed_versions() - released()
    assert len(pending) <= 1, 'versions neither released nor the one being prepared: %s' % sorted(pending)


def test_plugins_the_changelog_lists_as_new_say_that_release():
    versions = {}
    for rel, kind, docs in plugin_docs():
        doc = docs.get('DOCUMENTATION') or {}
        name = doc.get('module') or doc.get('name')
        if kind in ('modules',) or kind in CHANGELOG_TYPE:
            if name:
                versions[('module' if kind == 'modules' else CHANGELOG_TYPE[kind], name)] = doc.get('version_added')
    for rel, role, spec in role_specs():
        versions[('role', role)] = (spec['argument_specs'].get('main') or {}).get('version_added')
    wrong = []
    for release, data in changelog()['releases'].items():
        listed = [('module', p['name']) for p in data.get('modules', [])]
        for kind, plugins in (data.get('plugins') or {}).items():
            listed += [(kind, p['name']) for p in plugins]
        for kind, objects in (data.get('objects') or {}).items():
            listed += [(kind, o['name']) for o in objects]
        for key in listed:
            if key in versions and str(versions[key]) != str(release):
                wrong.append('%s %s: listed as new in %s, version_added %r' % (key + (release, versions[key])))
    assert not wrong, '\n'.join(wrong)


def test_every_plugin_and_role_says_when_it_came():
    missing = []
    for rel, kind, docs in plugin_docs():
        doc = docs.get('DOCUMENTATION')
        if kind != 'doc_fragments' and doc and not doc.get('version_added'):
            missing.append(rel)
    for rel, _role, spec in role_specs():
        if not (spec['argument_specs'].get('main') or {}).get('version_added'):
            missing.append(rel + ' (entry point main)')
    assert not missing, 'no version_added: %s' % ', '.join(missing)
