# -*- coding: utf-8 -*-
"""Shared fixtures: the collection on sys.path, modules run the way Ansible
runs them, and the real containerd binaries that judge every result.

The helpers themselves live in tests/helpers (a package: tests import
``helpers.<module>``); the names below stay importable from conftest for the
suites that still import them from here."""

import os
import shutil
import tempfile

import pytest

from helpers.common import (  # noqa: F401  (re-exported for the suites that import them from conftest)
    COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, REPO, assert_containerd_accepts,
    binary_of, config_dump, config_version, containerd_for, fixture_text, ledger_records, make_tar, module_result,
    nvidia_tree, read, silent_containerd, without_containerd)
from helpers.daemon import Daemon
from helpers.modules import NODE_PYTHON, ModuleRunner  # noqa: F401

__all__ = ['COLLECTIONS_ROOT', 'CONTAINERD_1', 'CONTAINERD_17', 'CONTAINERD_2', 'FIXTURES', 'NODE_PYTHON', 'REPO',
           'ModuleRunner', 'assert_containerd_accepts', 'binary_of', 'config_dump', 'config_version', 'containerd_for',
           'fixture_text', 'ledger_records', 'make_tar', 'module_result', 'nvidia_tree', 'read', 'silent_containerd',
           'without_containerd']


CONTROLLER_SIDE = ('plugins/action', 'plugins/filter', 'plugins/lookup')


@pytest.fixture(autouse=True)
def module_side_warnings(request):
    """Module code run in this process reports its warnings in its result, as on a node.

    ansible-core 2.19+ sends module_utils warnings to the controller's display
    once any controller code is imported (a filter or action test imports
    ansible.errors), for the rest of the process; tests of controller-side
    plugins keep that."""
    try:
        from ansible.module_utils import _internal
    except ImportError:  # ansible-core < 2.19: no such switch
        yield
        return
    if any(part in str(request.node.fspath) for part in CONTROLLER_SIDE):
        yield
        return
    saved = _internal.is_controller
    _internal.is_controller = False
    try:
        yield
    finally:
        _internal.is_controller = saved


@pytest.fixture
def workdir():
    d = tempfile.mkdtemp(prefix='ng-test-')
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def run_module(workdir):
    state = os.path.join(workdir, 'state')
    tmp = os.path.join(workdir, 'ansible-tmp')
    os.makedirs(tmp)
    return ModuleRunner(tmp, state)


@pytest.fixture
def config(workdir):
    """Write a fixture (by file name) or text as <workdir>/etc/config.toml."""
    def make(name_or_text, filename='config.toml'):
        text = fixture_text(name_or_text) if name_or_text.endswith('.toml') and '\n' not in name_or_text \
            else name_or_text
        folder = os.path.join(workdir, 'etc')
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, filename)
        with open(path, 'w') as f:
            f.write(text)
        return path
    return make


@pytest.fixture
def containerd_daemon():
    """Start a real containerd with a config; stopped at the end of the test."""
    started = []

    def start(config_path, binary=None):
        base = tempfile.mkdtemp(prefix='ng-ctd-', dir='/run' if os.access('/run', os.W_OK) else None)
        binary = binary or containerd_for(read(config_path))
        d = Daemon(binary, config_path, base)
        started.append(d)
        d.up = d.start()
        return d
    yield start
    for d in started:
        d.stop()
        shutil.rmtree(d.base, ignore_errors=True)


@pytest.fixture
def twin(workdir, run_module, config):
    """A second copy of the node: the same config file under another folder and state dir."""
    def make(path):
        other = os.path.join(workdir, 'twin')
        os.makedirs(os.path.join(other, 'etc'))
        copy = os.path.join(other, 'etc', 'config.toml')
        shutil.copyfile(path, copy)
        return copy, os.path.join(other, 'state')
    return make
