# -*- coding: utf-8 -*-
"""One statement of the ansible-core range: meta/runtime.yml's requires_ansible,
every role's min_ansible_version, the README, docs/awx.md, the execution
environment metadata, the controllers tests/compat/run.py drives and the
ansible-test lines make sanity runs agree."""

import glob
import os
import re

import yaml

from helpers.common import REPO


def _load(rel):
    with open(os.path.join(REPO, rel)) as f:
        return yaml.safe_load(f)


def requires_ansible():
    spec = _load('meta/runtime.yml')['requires_ansible']
    low = re.search(r'>=\s*(\d+)\.(\d+)', spec)
    high = re.search(r'<\s*(\d+)\.(\d+)', spec)
    assert low and high, 'requires_ansible %r needs a lower and an upper bound' % spec
    return (int(low.group(1)), int(low.group(2))), (int(high.group(1)), int(high.group(2)))


def test_every_role_states_the_collections_minimum():
    (low, _high) = requires_ansible()
    roles = sorted(glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'main.yml')))
    assert len(roles) >= 4
    for path in roles:
        got = str(_load(os.path.relpath(path, REPO))['galaxy_info']['min_ansible_version'])
        assert tuple(int(x) for x in got.split('.')[:2]) == low, (
            '%s: min_ansible_version %s, meta/runtime.yml requires_ansible says %d.%d'
            % (os.path.relpath(path, REPO), got, low[0], low[1]))


def _text(rel):
    with open(os.path.join(REPO, rel)) as f:
        return f.read()


def _line(version):
    return tuple(int(x) for x in version.split('.')[:2])


def dev_line():
    """The .venv's ansible-core line (requirements-dev.txt)."""
    dev = re.search(r'^ansible-core==(\d+)\.(\d+)', _text('requirements-dev.txt'), re.M)
    return (int(dev.group(1)), int(dev.group(2)))


def test_readme_awx_and_ee_metadata_say_the_same():
    (low, high) = requires_ansible()
    last = (high[0], high[1] - 1)
    spec = _load('meta/runtime.yml')['requires_ansible']
    assert 'Controller: ansible-core %d.%d - %d.%d' % (low + last) in _text('README.md')
    awx = _text('docs/awx.md')
    assert 'ansible-core %d.%d - %d.%d' % (low + last) in awx and spec in awx, (
        'docs/awx.md must name ansible-core %d.%d - %d.%d and requires_ansible %s' % (low + last + (spec,)))
    ee = _text('meta/execution-environment.yml')
    assert '"%s"' % spec in ee, 'meta/execution-environment.yml must name requires_ansible "%s"' % spec
    # no stale range left in the user's documents: every "ansible-core A - B" lies within it
    docs = ['README.md'] + sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, 'docs', '*.md')))
    for rel in docs:
        for found in re.findall(r'ansible-core (\d+\.\d+) - (\d+\.\d+)', _text(rel)):
            assert low <= _line(found[0]) <= _line(found[1]) <= last, (
                '%s says ansible-core %s - %s; requires_ansible admits %d.%d - %d.%d' % ((rel,) + found + low + last))


def test_the_compat_controllers_drive_every_admitted_line():
    (low, high) = requires_ansible()
    compat = _text(os.path.join('tests', 'compat', 'run.py'))
    pinned = re.search(r"CONTROLLERS = \[([^\]]*)\]", compat).group(1)
    lines = sorted(set(_line(v) for v in re.findall(r"'(\d+\.\d+\.\d+)'", pinned)))
    assert 'None' in pinned, 'the dev controller (.venv) is no longer driven by tests/compat'
    dev = dev_line()
    want = [(low[0], m) for m in range(low[1], high[1])]
    assert sorted(lines + [dev]) == want, 'compat drives %s plus the dev %s, requires_ansible admits %s' % (
        lines, dev, want)


def test_sanity_runs_every_line_above_the_dev_one():
    """make sanity runs the .venv's ansible-test and SANITY_CORES': together every line from
    the dev one up to the newest requires_ansible admits (older lines' sanity tests are subsets)."""
    (_low, high) = requires_ansible()
    makefile = _text('Makefile')
    cores = re.search(r'^SANITY_CORES \?= (.*)$', makefile, re.M).group(1).split()
    dev = dev_line()
    want = [(dev[0], m) for m in range(dev[1] + 1, high[1])]
    assert sorted(_line(c) for c in cores) == want, 'SANITY_CORES %s, want the lines %s' % (cores, want)
    compat = _text(os.path.join('tests', 'compat', 'run.py'))
    pinned = re.findall(r"'(\d+\.\d+\.\d+)'", re.search(r"CONTROLLERS = \[([^\]]*)\]", compat).group(1))
    for core in cores:     # run.py --controller LINE makes the venv make sanity takes ansible-test from
        assert any(_line(v) == _line(core) for v in pinned), 'SANITY_CORES %s is not a compat controller' % core


def _release_version():
    """The version the README speaks of: the release being prepared (its
    changelogs/fragments/release-X.Y.Z.yml not released yet), else galaxy.yml's."""
    released = set(str(v) for v in _load('changelogs/changelog.yaml')['releases'])
    pending = [re.match(r'release-(\d+\.\d+\.\d+)\.yml$', os.path.basename(p)).group(1)
               for p in glob.glob(os.path.join(REPO, 'changelogs', 'fragments', 'release-*.yml'))]
    pending = [v for v in pending if v not in released]
    assert len(pending) <= 1, 'more than one release being prepared: %s' % pending
    return pending[0] if pending else str(_load('galaxy.yml')['version'])


def _readme_section(title):
    text = _text('README.md')
    m = re.search(r'^## %s\n(.*?)(?=^## |\Z)' % re.escape(title), text, re.M | re.S)
    assert m, 'README.md has no "## %s" section' % title
    return m.group(1)


def test_readme_install_names_the_release():
    """Galaxy, the tarball and requirements.yml all name the release, and no other version."""
    version = _release_version()
    major = int(version.split('.')[0])
    install = _readme_section('Install')
    spec = '>=%s,<%d.0.0' % (version, major + 1)
    assert "ansible-galaxy collection install 'nodeguard.containerd:%s'" % spec in install
    assert 'ansible-galaxy collection install nodeguard-containerd-%s.tar.gz' % version in install
    requirements = re.search(r'```yaml\n(.*?)```', install, re.S)
    assert requirements, 'README.md Install: no requirements.yml example'
    entry = yaml.safe_load(requirements.group(1))['collections'][0]
    assert entry == {'name': 'nodeguard.containerd', 'version': spec}
    others = set(re.findall(r'\b\d+\.\d+\.\d+\b', install)) - {version, '%d.0.0' % (major + 1)}
    # tomlkit's minimum is the only other version the section may name
    assert others <= {'0.7.0'}, 'README.md Install names other versions: %s' % sorted(others)


def test_readme_lists_every_module_plugin_and_role():
    table = _readme_section('Modules and roles')
    rows = set(re.findall(r'^\| (?:(lookup|filter|role) )?`([a-z0-9_]+)` \|', table, re.M))
    listed = {(kind or 'module', name) for kind, name in rows}
    shipped = set()
    for path in glob.glob(os.path.join(REPO, 'plugins', 'modules', '*.py')):
        if not os.path.basename(path).startswith('__'):
            shipped.add(('module', os.path.basename(path)[:-3]))
    for path in glob.glob(os.path.join(REPO, 'plugins', 'lookup', '*.py')):
        if not os.path.basename(path).startswith('__'):
            shipped.add(('lookup', os.path.basename(path)[:-3]))
    for path in glob.glob(os.path.join(REPO, 'roles', '*', 'meta', 'main.yml')):
        shipped.add(('role', os.path.basename(os.path.dirname(os.path.dirname(path)))))
    assert sorted(shipped - listed) == [], 'README.md "Modules and roles" misses these'
    assert sorted(listed - shipped) == [], 'README.md "Modules and roles" lists what is not shipped'
