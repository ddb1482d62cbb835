# -*- coding: utf-8 -*-
"""containerd_baseline run in this process (ansible's patch_module_args), for the fast tests of
_baseline_states (tests/unit/plugins/module_utils/_baseline/test_states_*.py), and a locked store for the
tests of the store itself.

The module runs as Ansible runs it, on real files under tmp_path; only the
interpreter is shared, so a run takes milliseconds (validate: none) or the
time of the real containerd's config dump (validate: auto).
"""

import contextlib
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from helpers.common import fixture_text
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_baseline


# a baseline containerd refuses: its default runtime has no table
BROKEN = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "crun"\n'


def forget_warnings():
    """ansible keeps module warnings process-wide: each run reports only its own."""
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()


class Node(object):
    """A config folder, a store and a state dir under tmp_path; run() is one module call."""

    def __init__(self, tmp_path, capsys, text='v2_kubeadm.toml'):
        self.tmp = str(tmp_path)
        self.capsys = capsys
        self.etc = os.path.join(self.tmp, 'etc')
        os.makedirs(self.etc)
        self.path = os.path.join(self.etc, 'config.toml')
        self.store = os.path.join(self.tmp, 'store')
        self.state_dir = os.path.join(self.tmp, 'state')
        if text is not None:
            self.write(text)

    def write(self, text, path=None):
        """Write a fixture (by file name) or text to path (default: config.toml)."""
        if text.endswith('.toml') and '\n' not in text:
            text = fixture_text(text)
        with open(path or self.path, 'w') as f:
            f.write(text)
        return path or self.path

    def read(self, path=None, mode='r'):
        with open(path or self.path, mode) as f:
            return f.read()

    def run(self, check=False, diff=False, expect_fail=False, **args):
        params = dict(path=self.path, store=self.store, state_dir=self.state_dir, validate='none',
                      load_test=False, _ansible_tmpdir=self.tmp, _ansible_remote_tmp=self.tmp,
                      _ansible_check_mode=check, _ansible_diff=diff)
        params.update(args)
        forget_warnings()
        with patch_module_args(params):
            with pytest.raises(SystemExit):
                containerd_baseline.main()
        result = json.loads(self.capsys.readouterr().out)
        result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
        failed = bool(result.get('failed'))
        assert failed == expect_fail, json.dumps(result, indent=1)[:4000]
        return result

    def snapshots(self, name='default'):
        folder = os.path.join(self.store, name)
        return sorted(e for e in os.listdir(folder) if e != 'current' and not e.startswith('.'))


def manifest_of(result):
    with open(os.path.join(result['snapshot'], 'manifest.json')) as f:
        return json.load(f)


def stub_containerd(folder, version_out='containerd github.com/containerd/containerd v1.6.99 1.6.99+build',
                    version_rc=0, dump=None, dump_file=None):
    """A containerd that answers --version with version_out (exit version_rc) and config dump with dump,
    or the content of dump_file (default: the config file itself, which is TOML)."""
    path = os.path.join(str(folder), 'containerd')
    dump_cmd = ('cat "$2"' if dump is None else 'printf %s ' + json.dumps(dump)) if dump_file is None \
        else 'cat ' + json.dumps(str(dump_file))
    with open(path, 'w') as f:
        f.write('#!/bin/sh\n'
                'if [ "$1" = "--version" ]; then echo %s; exit %d; fi\n'
                'if [ "$1" = "--config" ] && [ "$3" = "config" ]; then %s; exit 0; fi\n'
                'exit 3\n' % (json.dumps(version_out), version_rc, dump_cmd))
    os.chmod(path, 0o755)
    return path


def hand_made_baseline(node, raw, name='default'):
    """A baseline of node.path holding raw, written straight into the store (a snapshot never stores a
    copy that is no config: this stands in for a store written by another tool or an older nodeguard)."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import Attrs, TreeFile, utc_now
    with locked_store(node.store, name) as store:
        _now, stamp = utc_now()
        return store.write(dict(format=1, name=name, config=node.path, include_imports=True, ledger=None,
                                config_missing=False),
                           [TreeFile(node.path, raw, Attrs(0o644, 0, 0), 'config')], None, stamp)


@contextlib.contextmanager
def locked_store(root, name='default'):
    """The baseline store of name under root, locked for the with block as a module call holds it."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import Store
    store = Store(str(root), name)
    store.lock(5)
    try:
        yield store
    finally:
        store.unlock()
