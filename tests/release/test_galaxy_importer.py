# -*- coding: utf-8 -*-
"""Galaxy's own import checks (galaxy-importer) on the tarball of this tree.

The tarball is built from a clone of the checkout (`ansible-galaxy collection
build`) and handed to galaxy-importer, which runs in a venv of its own
(IMPORTER_VENV, default build/galaxy-importer: its pins of ansible-core and
ansible-lint must not move the .venv's tools). Its config here turns
ansible-test off: Galaxy runs ansible-test in a container, and the
collection's sanity is `make sanity`'s job; ansible-doc and ansible-lint run
as on Galaxy. The import must succeed with the collection's version, its
requires_ansible, and the documentation of every module and plugin.
"""

import glob
import json
import os
import re
import shutil
import subprocess

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IMPORTER_VENV = os.environ.get('IMPORTER_VENV', os.path.join(REPO, 'build', 'galaxy-importer'))
GALAXY = os.path.join(REPO, '.venv', 'bin', 'ansible-galaxy')
CONFIG = """[galaxy-importer]
RUN_ANSIBLE_TEST = False
RUN_ANSIBLE_DOC = True
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
CHECK_CHANGELOG = True
RUN_FLAKE8 = False
"""


def _load(rel):
    with open(os.path.join(REPO, rel)) as f:
        return yaml.safe_load(f)


def _names(pattern):
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(REPO, pattern))
                  if not os.path.basename(p).startswith('__'))


def test_galaxy_imports_the_tarball(tmp_path):
    python = os.path.join(IMPORTER_VENV, 'bin', 'python')
    assert os.path.exists(python), (
        'no galaxy-importer venv at %s: python3 -m venv %s && %s/bin/pip install galaxy-importer'
        % (IMPORTER_VENV, IMPORTER_VENV, IMPORTER_VENV))
    clone = tmp_path / 'clone'
    shutil.copytree(REPO, str(clone), symlinks=True,
                    ignore=shutil.ignore_patterns('.git', 'build', '.venv', '__pycache__', '.pytest_cache',
                                                  '.hypothesis', 'output'))
    out = tmp_path / 'out'
    build = subprocess.run([GALAXY, 'collection', 'build', '--output-path', str(out), str(clone)],
                           capture_output=True, text=True, timeout=300, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    (tarball,) = out.glob('*.tar.gz')
    cfg = tmp_path / 'galaxy-importer.cfg'
    cfg.write_text(CONFIG)
    env = dict(os.environ, GALAXY_IMPORTER_CONFIG=str(cfg),
               PATH=os.path.join(IMPORTER_VENV, 'bin') + os.pathsep + os.environ.get('PATH', ''))
    env.pop('ANSIBLE_COLLECTIONS_PATH', None)
    env.pop('ANSIBLE_CONFIG', None)
    run = subprocess.run([python, '-m', 'galaxy_importer.main', '--print-result', str(tarball)],
                         capture_output=True, text=True, timeout=1200, check=False, cwd=str(tmp_path), env=env)
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-4000:]
    starts = [m.start() for m in re.finditer(r'^\{$', run.stdout, re.M)]
    assert starts, 'galaxy-importer printed no result:\n' + log[-4000:]
    result = json.loads(run.stdout[starts[-1]:])

    galaxy = _load('galaxy.yml')
    assert result['metadata']['version'] == str(galaxy['version'])
    assert result['requires_ansible'] == _load('meta/runtime.yml')['requires_ansible']
    docs = {(c['content_type'], c['content_name']): c for c in result['docs_blob']['contents']}
    expected = [('module', n) for n in _names('plugins/modules/*.py')]
    expected += [('filter', n) for n in _names('plugins/filter/*.py')]
    expected += [('lookup', n) for n in _names('plugins/lookup/*.py')]
    undocumented = [key for key in expected if not (docs.get(key) or {}).get('doc_strings')]
    assert not undocumented, 'Galaxy shows no documentation for: %s' % undocumented
    roles = [('role', n) for n in sorted(os.listdir(os.path.join(REPO, 'roles')))]
    assert [key for key in roles if key not in docs] == []
    assert result['docs_blob']['collection_readme']['html'].startswith('<h1>nodeguard.containerd</h1>')
