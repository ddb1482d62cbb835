# -*- coding: utf-8 -*-
"""One statement of the minimum ansible-core (#14 part 3): meta/runtime.yml's
requires_ansible, every role's min_ansible_version, the README and the
controllers tests/compat/run.py drives agree."""

import glob
import os
import re

import yaml

from conftest import REPO


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


def test_readme_and_the_compat_controllers_say_the_same():
    (low, high) = requires_ansible()
    last = (high[0], high[1] - 1)
    with open(os.path.join(REPO, 'README.md')) as f:
        readme = f.read()
    assert 'Controller: ansible-core %d.%d - %d.%d' % (low + last) in readme
    with open(os.path.join(REPO, 'tests', 'compat', 'run.py')) as f:
        compat = f.read()
    pinned = re.search(r"CONTROLLERS = \[([^\]]*)\]", compat).group(1)
    lines = sorted(set(tuple(int(x) for x in v.split('.')[:2]) for v in re.findall(r"'(\d+\.\d+\.\d+)'", pinned)))
    # every line requires_ansible admits below the dev one (.venv, requirements-dev.txt) is driven
    with open(os.path.join(REPO, 'requirements-dev.txt')) as f:
        dev = re.search(r'^ansible-core==(\d+)\.(\d+)', f.read(), re.M)
    dev = (int(dev.group(1)), int(dev.group(2)))
    assert dev == last, 'the dev controller %s is not the newest line requires_ansible admits %s' % (dev, last)
    want = [(low[0], m) for m in range(low[1], last[1])]
    assert lines == want, 'compat drives %s, requires_ansible admits %s plus the dev %s' % (lines, want, dev)
