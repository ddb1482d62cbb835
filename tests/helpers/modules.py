# -*- coding: utf-8 -*-
"""Modules run the way Ansible runs them: `python -m <module> args.json`, JSON out."""

import json
import os
import subprocess
import sys

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_2, config_version, module_result, read


# The managed node's interpreter (tests/compat runs the module suites with other
# Pythons and tomlkit versions); default: the one running the tests.
NODE_PYTHON = os.environ.get('NODEGUARD_NODE_PYTHON') or sys.executable


class ModuleRunner(object):
    """Run a module as Ansible does: `python module.py args.json`, JSON out."""

    def __init__(self, tmpdir, state_dir):
        self.tmpdir = tmpdir
        self.state_dir = state_dir
        self.calls = 0

    def __call__(self, _module, check=False, diff=False, expect_fail=False, env=None, prefix=(), **args):
        args = dict(args)
        args.setdefault('state_dir', self.state_dir)
        # a version 3 file is read by containerd 2.x, as on a real node
        path = args.get('path')
        if 'containerd_bin' not in args and 'containerd_version' not in args and CONTAINERD_2 and path \
                and os.path.isfile(path) and config_version(read(path, 'rb').decode('utf-8', 'replace')) >= 3:
            args['containerd_bin'] = CONTAINERD_2
        args['_ansible_check_mode'] = check
        args['_ansible_diff'] = diff
        args['_ansible_tmpdir'] = self.tmpdir
        args['_ansible_remote_tmp'] = self.tmpdir
        args['_ansible_keep_remote_files'] = False
        self.calls += 1
        argfile = os.path.join(self.tmpdir, 'args-%d.json' % self.calls)
        with open(argfile, 'w') as f:
            json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
        environ = dict(os.environ)
        environ['PYTHONPATH'] = COLLECTIONS_ROOT + os.pathsep + environ.get('PYTHONPATH', '')
        if environ.get('PYTHONPYCACHEPREFIX') and NODE_PYTHON == sys.executable:
            # make test-module's bytecode cache outside the tree: each run of a module
            # compiles its module_utils once per change, not once per run (~50 ms a run)
            environ.pop('PYTHONDONTWRITEBYTECODE', None)
        environ.update(env or {})
        # prefix: a command the module runs under (e.g. unshare for a node without containerd)
        proc = subprocess.run(
            list(prefix) + [NODE_PYTHON, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.' + _module,
                            argfile],
            capture_output=True, text=True, env=environ, timeout=300, check=False)
        result = module_result(_module, proc)
        failed = bool(result.get('failed'))
        if expect_fail is not None and failed != expect_fail:  # None: the caller judges either outcome
            raise AssertionError('module %s %s: %s' % (_module, 'failed' if failed else 'did not fail',
                                                       json.dumps(result, indent=1)[:4000]))
        return result


class PlainModuleRunner(object):
    """Run a module that keeps no ledger (containerd_preflight): ModuleRunner without the state_dir and the
    containerd_bin it adds for the editing modules, under the interpreter running the tests."""

    def __init__(self, workdir):
        self.tmpdir = os.path.join(workdir, 'ansible-tmp')
        os.makedirs(self.tmpdir)
        self.calls = 0

    def __call__(self, _module, check=False, expect_fail=False, **args):
        tmp = self.tmpdir
        args.update(_ansible_check_mode=check, _ansible_diff=False, _ansible_tmpdir=tmp, _ansible_remote_tmp=tmp,
                    _ansible_keep_remote_files=False)
        self.calls += 1
        argfile = os.path.join(tmp, 'args-%d.json' % self.calls)
        with open(argfile, 'w') as f:
            json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
        env = dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
        proc = subprocess.run([sys.executable, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.'
                               + _module, argfile], capture_output=True, text=True, env=env, timeout=300, check=False)
        result = module_result(_module, proc)
        if bool(result.get('failed')) != expect_fail:
            raise AssertionError('module %s %s: %s' % (_module, 'failed' if result.get('failed') else 'did not fail',
                                                       json.dumps(result, indent=1)[:4000]))
        return result
