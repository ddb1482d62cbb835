# -*- coding: utf-8 -*-
"""Render the collection's documentation as an HTML site (`make docs`).

  python docs/site/build.py [--dest build/docs]

antsibull-docs writes the module, plugin and role pages (reStructuredText,
from DOCUMENTATION/EXAMPLES/RETURN and roles/*/meta/argument_specs.yml) of
a copy of this tree under DEST/collections (ansible-doc lists no role of a
collection reached through a symlink, as build/collections is); docs/*.md
join them as the guides (MyST); Sphinx renders both into DEST/html, with
every warning an error: a broken reference fails the build.

Links of the guides to files outside docs/ point at the role or module page
when there is one (roles/NAME/README.md, plugins/modules/NAME.py), else at
the file in the repository (galaxy.yml's `repository`). References to
Ansible's own documentation (ansible.builtin modules, common return values)
go to docs.ansible.com: the site builds offline, without intersphinx.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(os.path.abspath(sys.executable))
PAGES = 'collections/{namespace}/{name}'
ANSIBLE_DOCS = 'https://docs.ansible.com/projects/ansible/latest/'

CONF = '''# Sphinx configuration of the nodeguard.containerd docs (docs/site/build.py)
import re

project = {title!r}
copyright = 'nodeguard maintainers'
title = {title!r}
html_short_title = {title!r}
html_title = {title!r}
extensions = ['myst_parser', 'sphinx_antsibull_ext']
source_suffix = {{'.rst': 'restructuredtext', '.md': 'markdown'}}
myst_heading_anchors = 4
suppress_warnings = ['myst.header']
pygments_style = 'ansible'
highlight_language = 'YAML+Jinja'
# the guides' quotes as written (a title stays the same text as in docs/)
smartquotes = False
html_theme = 'sphinx_ansible_theme'
html_show_sphinx = False
# the logo's link: the theme's default "/" is no page of a site opened from disk
html_theme_options = {{
    'documentation_home_url': {homepage!r},
    'show_extranav': False,
    'show_rtd_ethical_ads': False,
}}
html_use_modindex = False
html_use_index = False
html_copy_source = False
display_version = False
default_role = 'any'

# Labels of Ansible's own docsite that antsibull-docs' pages refer to.
ANSIBLE_DOCS = {ansible_docs!r}
ANSIBLE_LABELS = {{
    'common_return_values': 'reference_appendices/common_return_values.html',
    'action_plugins': 'plugins/action.html',
    'list_of_collections': 'collections/index.html',
    'ansible_configuration_settings': 'reference_appendices/config.html',
}}
PLUGIN_LABEL = re.compile(r'^ansible_collections\\.(ansible)\\.(builtin)\\.(\\w+)_(\\w+)$')


def ansible_docs_url(target):
    if target in ANSIBLE_LABELS:
        return ANSIBLE_DOCS + ANSIBLE_LABELS[target]
    match = PLUGIN_LABEL.match(target)
    if match:
        return ANSIBLE_DOCS + 'collections/%s/%s/%s_%s.html' % match.groups()
    return None


def resolve_ansible_label(app, env, node, contnode):
    from docutils import nodes
    url = ansible_docs_url(node.get('reftarget', ''))
    if url is None:
        return None
    return nodes.reference('', '', contnode, internal=False, refuri=url)


def setup(app):
    app.connect('missing-reference', resolve_ansible_label)
'''

INDEX = '''.. _docsite_root_index:

{title}
{underline}

{description}

.. toctree::
   :maxdepth: 2
   :caption: Collection:

   collections/index

.. toctree::
   :maxdepth: 1
   :caption: Guides:

{guides}

.. toctree::
   :maxdepth: 1
   :caption: Plugin indexes:
   :glob:

   collections/index_*

.. toctree::
   :maxdepth: 1
   :caption: Reference indexes:

   collections/environment_variables
'''

COLLECTION_PARTS = ('galaxy.yml', 'README.md', 'meta', 'plugins', 'roles', 'playbooks', 'changelogs')
MD_LINK = re.compile(r'(\]\()([^)\s]+)(\))')


def galaxy():
    with open(os.path.join(REPO, 'galaxy.yml')) as handle:
        return yaml.safe_load(handle)


def tool(name):
    """A tool of the venv this script runs from, else the one on PATH."""
    path = os.path.join(BIN, name)
    return path if os.access(path, os.X_OK) else name


def copy_collection(root, meta):
    """The parts of this tree ansible-doc reads, as a real collection folder."""
    dest = os.path.join(root, 'ansible_collections', meta['namespace'], meta['name'])
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(dest)
    ignore = shutil.ignore_patterns('__pycache__', '*.pyc')
    for name in COLLECTION_PARTS:
        source = os.path.join(REPO, name)
        if os.path.isdir(source):
            shutil.copytree(source, os.path.join(dest, name), ignore=ignore)
        elif os.path.isfile(source):
            shutil.copy2(source, dest)
    return root


def run(cmd, collections=None):
    print('+ ' + ' '.join(cmd), flush=True)
    # antsibull-docs runs ansible-doc: the one of the same venv, on the copy
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get('PATH', ''))
    if collections:
        env['ANSIBLE_COLLECTIONS_PATH'] = collections
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode:
        sys.exit('docs: %s failed (exit %d)' % (os.path.basename(cmd[0]), proc.returncode))


def link_target(target, meta):
    """Where a guide's link to TARGET (relative to docs/) points on the site."""
    if re.match(r'^[a-z][a-z0-9+.-]*:', target) or target.startswith('#'):
        return target
    path, anchor = (target.split('#', 1) + [''])[:2]
    repo_path = os.path.normpath(os.path.join('docs', path))
    pages = '../' + PAGES.format(**meta)
    role = re.match(r'^roles/(\w+)(/README\.md)?/?$', repo_path)
    module = re.match(r'^plugins/modules/(\w+)\.py$', repo_path)
    if repo_path.startswith('docs/') and repo_path.count('/') == 1 and repo_path.endswith('.md'):
        return target
    if role and os.path.isdir(os.path.join(REPO, 'roles', role.group(1))):
        return '%s/%s_role.rst' % (pages, role.group(1))
    if module:
        return '%s/%s_module.rst' % (pages, module.group(1))
    kind = 'tree' if os.path.isdir(os.path.join(REPO, repo_path)) else 'blob'
    url = '%s/%s/main/%s' % (meta['repository'].rstrip('/'), kind, repo_path)
    return url + ('#' + anchor if anchor else '')


def copy_guides(rst_dir, meta):
    """docs/*.md into rst/guides/, their links rewritten for the site."""
    guides = os.path.join(rst_dir, 'guides')
    os.makedirs(guides)
    names = sorted(n for n in os.listdir(os.path.join(REPO, 'docs')) if n.endswith('.md'))
    for name in names:
        with open(os.path.join(REPO, 'docs', name), encoding='utf-8') as handle:
            text = handle.read()
        text = MD_LINK.sub(lambda m: m.group(1) + link_target(m.group(2), meta) + m.group(3), text)
        with open(os.path.join(guides, name), 'w', encoding='utf-8') as handle:
            handle.write(text)
    return ['guides/' + name[:-3] for name in names]


def write_sources(src, rst_dir, meta, guides):
    title = '%s.%s documentation' % (meta['namespace'], meta['name'])
    with open(os.path.join(src, 'conf.py'), 'w', encoding='utf-8') as handle:
        handle.write(CONF.format(title=title, ansible_docs=ANSIBLE_DOCS, homepage=meta['homepage']))
    with open(os.path.join(rst_dir, 'index.rst'), 'w', encoding='utf-8') as handle:
        handle.write(INDEX.format(title=title, underline='=' * len(title),
                                  description=' '.join(meta['description'].split()),
                                  guides='\n'.join('   ' + g for g in guides)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--dest', default=os.path.join(REPO, 'build', 'docs'),
                        help='output folder: DEST/src (sources), DEST/html (the site)')
    args = parser.parse_args()
    meta = galaxy()
    dest = os.path.abspath(args.dest)
    src = os.path.join(dest, 'src')
    rst_dir = os.path.join(src, 'rst')
    html = os.path.join(dest, 'html')
    for path in (src, html):
        shutil.rmtree(path, ignore_errors=True)
    # antsibull-docs refuses a destination others can write to
    os.makedirs(rst_dir, mode=0o755)
    os.chmod(rst_dir, 0o755)
    name = '%s.%s' % (meta['namespace'], meta['name'])
    collections = copy_collection(os.path.join(dest, 'collections'), meta)
    run([tool('antsibull-docs'), 'collection', '--use-current', '--fail-on-error',
         '--no-add-antsibull-docs-version', '--dest-dir', rst_dir, name], collections)
    guides = copy_guides(rst_dir, meta)
    write_sources(src, rst_dir, meta, guides)
    run([tool('sphinx-build'), '-q', '-W', '--keep-going', '-b', 'html', '-c', src, '-d',
         os.path.join(dest, 'doctrees'), rst_dir, html])
    print('docs: %s' % os.path.join(html, 'index.html'))


if __name__ == '__main__':
    main()
