# -*- coding: utf-8 -*-
"""Helpers shared by the reliability tests (not a conftest: tests/conftest.py
stays the only module named ``conftest``, which the test files import)."""

import json
import os
import select
import subprocess
import sys
import time

from conftest import COLLECTIONS_ROOT, module_result

HERE = os.path.dirname(os.path.abspath(__file__))
CRASHABLE = os.path.join(HERE, 'ng_crashable.py')
MODULE_PKG = 'ansible_collections.nodeguard.containerd.plugins.modules.'
TEMP_SUFFIX = '.nodeguard-tmp'


def knob(name, default):
    """An integer knob from the environment (CI sizes by default)."""
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


def module_exists(name):
    return os.path.exists(os.path.join(COLLECTIONS_ROOT, 'ansible_collections', 'nodeguard', 'containerd',
                                       'plugins', 'modules', name + '.py'))


class Runner(object):
    """Write an args file and run a module the way Ansible does."""

    def __init__(self, tmpdir, state_dir):
        self.tmpdir = tmpdir
        self.state_dir = state_dir
        self.calls = 0
        os.makedirs(tmpdir, exist_ok=True)

    def argfile(self, args, check=False, diff=False):
        args = dict(args)
        args.setdefault('state_dir', self.state_dir)
        args['_ansible_check_mode'] = check
        args['_ansible_diff'] = diff
        args['_ansible_tmpdir'] = self.tmpdir
        args['_ansible_remote_tmp'] = self.tmpdir
        args['_ansible_keep_remote_files'] = False
        self.calls += 1
        path = os.path.join(self.tmpdir, 'args-%d-%d.json' % (os.getpid(), self.calls))
        with open(path, 'w') as f:
            json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
        return path

    @staticmethod
    def env(extra=None):
        environ = dict(os.environ)
        environ['PYTHONPATH'] = COLLECTIONS_ROOT + os.pathsep + environ.get('PYTHONPATH', '')
        environ.update(extra or {})
        return environ

    def command(self, module, argfile, wrapped):
        if wrapped:
            return [sys.executable, CRASHABLE, module, argfile]
        return [sys.executable, '-m', MODULE_PKG + module, argfile]

    def run(self, module, args, check=False, diff=False, wrapped=False, env=None, timeout=120):
        """Run to completion; return (result dict, seconds)."""
        argfile = self.argfile(args, check, diff)
        start = time.monotonic()
        proc = subprocess.run(self.command(module, argfile, wrapped), capture_output=True, text=True,
                              env=self.env(env), timeout=timeout, check=False)
        took = time.monotonic() - start
        os.unlink(argfile)
        return module_result(module, proc), took

    def spawn(self, module, args, crash_at=None, env=None):
        """Start the module through the crash wrapper; points arrive on .sync (a pipe)."""
        argfile = self.argfile(args)
        rfd, wfd = os.pipe()
        extra = dict(env or {}, NG_SYNC_FD=str(wfd))
        if crash_at:
            extra['NG_CRASH_AT'] = crash_at
        proc = subprocess.Popen(self.command(module, argfile, True), stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=self.env(extra), pass_fds=(wfd,))
        os.close(wfd)
        proc.sync = rfd
        proc.argfile = argfile
        proc.points = []
        proc.buf = b''
        return proc


def read_points(proc, until=None, timeout=30.0):
    """Read crash-wrapper points from proc.sync until `until` is seen or EOF.

    Returns True when `until` was seen, False at EOF (the run ended).
    """
    deadline = time.monotonic() + timeout
    while True:
        if until is not None and until in proc.points:
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError('no point %r within %ss (seen: %s)' % (until, timeout, proc.points))
        ready, _unused, _unused = select.select([proc.sync], [], [], left)
        if not ready:
            continue
        chunk = os.read(proc.sync, 4096)
        if not chunk:
            return False
        proc.buf += chunk
        *lines, proc.buf = proc.buf.split(b'\n')
        proc.points.extend(l.decode() for l in lines)


def finish(proc):
    """Reap a spawned run; drain its points; close the pipe."""
    proc.wait()
    read_points(proc, None)
    os.close(proc.sync)
    try:
        os.unlink(proc.argfile)
    except OSError:
        pass
    return proc.returncode


def temp_files(folder):
    return sorted(n for n in os.listdir(folder) if n.endswith(TEMP_SUFFIX))


def ledger_problems(config_path, state_dir):
    """Does the ledger, after the recover() the next run does, describe the file?

    Table records must name tables that exist; the newest key record of each
    key must hold the value the file has.  Returns a list of problems.
    """
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import raw_values_match

    with open(config_path, 'rb') as f:
        raw = f.read()
    doc = ConfigDocument(config_path, raw.decode('utf-8'))
    ledger = Ledger.load(state_dir, config_path)
    ledger.recover(sha256_bytes(raw))
    problems = []
    for rec in ledger.records:
        path = tuple(rec.get('path') or ())
        if rec['kind'] in ('table', 'section'):
            if not isinstance(doc.toml.get(path), dict):
                problems.append('%s record for %s, which the file does not have' % (rec['kind'], '.'.join(path)))
        elif rec['kind'] == 'key':
            if ledger.key_stack(path)[-1] is rec and not raw_values_match(doc.toml.raw_value(path), rec.get('value')):
                problems.append('key record says %s = %s (by %s), the file has %s'
                                % ('.'.join(path), rec.get('value'), rec['owner'], doc.toml.raw_value(path)))
    return problems


def ledger_records(state_dir, config_path):
    """The ledger's records of changes (not the 'released' marks an undo leaves for a runtime the
    owner changed but did not create, which make a repeated uninstall a no-op)."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    return [r for r in Ledger.load(state_dir, config_path).records if r.get('kind') != 'released']
