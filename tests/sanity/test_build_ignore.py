# -*- coding: utf-8 -*-
"""The Galaxy tarball of a used clone (galaxy.yml's build_ignore).

A copy of this tree's files gets what running the playbooks, the linters
and the tests leaves in a clone: the fleet report (with host names) in
artifacts/ of the folder a playbook ran from, retry files, ansible-lint's
.ansible/ cache, ansible-test's tests/output, a venv, an older tarball...
`ansible-galaxy collection build` of that copy must leave every one of them
out, and no file of the tarball may carry the planted host name, while the
collection's own files are all in it.
"""

import os
import shutil
import subprocess
import sys
import tarfile
import uuid

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GALAXY = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), 'ansible-galaxy')
# a name no file of the tree holds (this one neither)
HOST = 'gpu-node-%s.corp.example' % uuid.uuid4().hex
REPORT = '{"rows": [{"node": "%s", "status": "rolled out"}]}\n' % HOST

# Path -> content: what a clone holds after playbook runs, lint and tests.
LEFTOVERS = {
    'artifacts/nodeguard-fleet-report.json': REPORT,
    'artifacts/nodeguard-fleet-report.html': '<td>%s</td>\n' % HOST,
    'playbooks/artifacts/nodeguard-fleet-report.json': REPORT,
    'examples/awx/project/artifacts/nodeguard-fleet-report.html': '<td>%s</td>\n' % HOST,
    'playbooks/site.retry': HOST + '\n',
    'site.retry': HOST + '\n',
    '.ansible/collections/ansible_collections/x/y/MANIFEST.json': '{}\n',
    '.ansible/roles/leftover/tasks/main.yml': '---\n',
    'playbooks/.ansible/tmp/leftover': HOST,
    'tests/output/junit/sanity.xml': HOST,
    '.pytest_cache/v/cache/lastfailed': '{}\n',
    '.hypothesis/examples/x': 'x',
    'plugins/modules/__pycache__/containerd_info.cpython-311.pyc': 'x',
    'build/docs/html/index.html': HOST,
    '.venv/pyvenv.cfg': 'home = /usr\n',
    'nodeguard-containerd-0.0.9.tar.gz': 'x',
    '.tox/py311/x': 'x',
    '.mypy_cache/x': 'x',
    '.ruff_cache/x': 'x',
    '.coverage': HOST,
    'htmlcov/index.html': HOST,
    'changelogs/.plugin-cache.yaml': HOST,
}


def tracked_files():
    """The files of a clone of this tree (tracked, and new ones not ignored)."""
    out = subprocess.run(['git', '-C', REPO, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
                         capture_output=True, check=True).stdout
    return sorted(p for p in out.decode().split('\0') if p and os.path.isfile(os.path.join(REPO, p)))


@pytest.fixture(scope='module')
def tarball(tmp_path_factory):
    """The used copy and the names and contents of its built tarball."""
    work = tmp_path_factory.mktemp('build-ignore')
    clone = work / 'ansible_collections' / 'nodeguard' / 'containerd'
    files = tracked_files()
    for rel in files:
        dest = clone / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(REPO, rel), str(dest))
    for rel, text in LEFTOVERS.items():
        dest = clone / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    out = work / 'out'
    proc = subprocess.run([GALAXY, 'collection', 'build', '--output-path', str(out), str(clone)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    built = list(out.glob('*.tar.gz'))
    assert len(built) == 1, built
    contents = {}
    with tarfile.open(str(built[0])) as tar:
        for member in tar.getmembers():
            handle = tar.extractfile(member) if member.isfile() else None
            contents[member.name] = handle.read() if handle else None
    return {'files': files, 'contents': contents}


@pytest.mark.parametrize('leftover', sorted(LEFTOVERS))
def test_a_run_leftover_is_not_in_the_tarball(tarball, leftover):
    names = tarball['contents']
    assert leftover not in names
    # nor the leftover's own folder (the first one of its path the tree has not)
    tree_dirs = {os.path.dirname(f) for f in tarball['files']}
    tree_dirs |= {d.rsplit('/', i)[0] for d in tree_dirs for i in range(d.count('/') + 1)}
    parts = leftover.split('/')
    first_new = next('/'.join(parts[:i]) for i in range(1, len(parts) + 1) if '/'.join(parts[:i]) not in tree_dirs)
    shipped = [n for n in names if n == first_new or n.startswith(first_new + '/')]
    assert shipped == [], shipped


def test_no_file_of_the_tarball_names_the_planted_host(tarball):
    leaking = [name for name, data in tarball['contents'].items() if data and HOST.encode() in data]
    assert leaking == []


def shipped_parts():
    """What the collection is: its content, its docs and its metadata."""
    with open(os.path.join(REPO, 'galaxy.yml'), encoding='utf-8') as handle:
        galaxy = yaml.safe_load(handle)
    prefixes = ('plugins/', 'roles/', 'playbooks/', 'meta/', 'changelogs/', 'examples/')
    singles = {galaxy['readme'], 'LICENSE', 'requirements.txt', 'bindep.txt', 'CHANGELOG.rst'}
    return [f for f in tracked_files()
            if (f.startswith(prefixes) or f in singles or (f.startswith('docs/') and f.count('/') == 1))
            and '/__pycache__/' not in f]


def test_the_collections_own_files_are_all_in_the_tarball(tarball):
    missing = [f for f in shipped_parts() if f not in tarball['contents']]
    assert missing == []
    assert 'MANIFEST.json' in tarball['contents'] and 'FILES.json' in tarball['contents']
