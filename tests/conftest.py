# -*- coding: utf-8 -*-
"""Shared fixtures: the collection on sys.path, modules run the way Ansible
runs them, and the real containerd binaries that judge every result."""

import glob
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(REPO, 'tests', 'fixtures')


def _collections_root():
    """A link tree ansible_collections/nodeguard/containerd -> this checkout."""
    root = os.environ.get('NODEGUARD_COLLECTIONS_PATH') or os.path.join(REPO, 'build', 'collections')
    link = os.path.join(root, 'ansible_collections', 'nodeguard', 'containerd')
    if not os.path.lexists(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            os.symlink(os.path.relpath(REPO, os.path.dirname(link)), link)
        except FileExistsError:  # made by a parallel run
            pass
    return root


COLLECTIONS_ROOT = _collections_root()
if COLLECTIONS_ROOT not in sys.path:
    sys.path.insert(0, COLLECTIONS_ROOT)

# containerd 1.6 is Debian 12's package on the test machine; 2.1 (config
# version 3) is unstable's .deb unpacked by `make deps` (it runs on bookworm).
CONTAINERD_1 = shutil.which('containerd')
CONTAINERD_2 = os.environ.get('NODEGUARD_CONTAINERD2') or os.path.join(
    REPO, 'build', 'containerd2', 'usr', 'bin', 'containerd')
if not os.access(CONTAINERD_2, os.X_OK):
    CONTAINERD_2 = None
# containerd 1.7 (config version 2, imports still replace plugin tables):
# trixie's .deb unpacked by `make deps` into build/containerd17.
CONTAINERD_17 = os.environ.get('NODEGUARD_CONTAINERD17') or os.path.join(
    REPO, 'build', 'containerd17', 'usr', 'bin', 'containerd')
if not os.access(CONTAINERD_17, os.X_OK):
    CONTAINERD_17 = None


def fixture_text(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


# ------------------------------------------------------------------ edits called directly (tests/unit)
CRI_V2_PATH = ('plugins', 'io.containerd.grpc.v1.cri')
RUNTIMES_V2_PATH = CRI_V2_PATH + ('containerd', 'runtimes')
RUNTIMES_V2_DOTTED = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'


class WarnCtx(object):
    """What an edit callback asks of the engine's Context to warn: the warnings, kept."""

    def __init__(self):
        self.warnings = []

    def warn(self, msg):
        self.warnings.append(msg)


def doc_and_ledger(tmp_path, text):
    """The document of text as tmp_path/config.toml, and an empty ledger for it under tmp_path/state."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    path = os.path.join(str(tmp_path), 'config.toml')
    return ConfigDocument(path, text), Ledger(str(tmp_path / 'state'), path)


def config_version(config_text):
    try:
        version = tomllib.loads(config_text.lstrip('\ufeff')).get('version', 1)
    except (tomllib.TOMLDecodeError, AttributeError):
        return 1
    return version if isinstance(version, int) else 1


def containerd_for(config_text):
    """The real containerd that reads this config version."""
    binary = CONTAINERD_2 if config_version(config_text) >= 3 else CONTAINERD_1
    if binary is None:
        pytest.fail('no containerd binary for this config version: run `make deps` (installs Debian\'s '
                    'containerd and unpacks containerd 2.x into build/containerd2)')
    return binary


def config_dump(path, binary=None):
    """`containerd --config PATH config dump`: (rc, stdout, stderr)."""
    with open(path) as f:
        text = f.read()
    binary = binary or containerd_for(text)
    proc = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def assert_containerd_accepts(path, binary=None):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, 'containerd rejected %s: %s' % (path, err[-2000:])
    return out


def module_result(module, proc):
    """A finished module process's JSON result, with warnings as plain strings."""
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError('module %s printed no JSON (rc=%s)\nstdout: %s\nstderr: %s'
                             % (module, proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    # ansible-core 2.19 returns warnings as structured summaries
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w
                          for w in result.get('warnings', [])]
    return result


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


def without_containerd(tmp_path):
    """(prefix, env) that run a module where the node has no containerd binary.

    A private mount namespace puts a non-executable empty file over Debian's
    /usr/bin/containerd, and PATH is an empty folder. Only the binary is
    hidden: the module's interpreter may live in /usr/bin (a venv made from
    Debian's python3).
    """
    assert shutil.which('unshare') and os.geteuid() == 0, 'needs root and unshare (util-linux)'
    assert not any(os.path.exists(os.path.join(d, 'containerd')) for d in ('/usr/local/bin', '/opt/bin', '/usr/sbin',
                                                                           '/usr/local/sbin')), 'host layout changed'
    empty = tmp_path / 'empty'
    empty.mkdir()
    stub = tmp_path / 'not-containerd'
    stub.write_text('')
    stub.chmod(0o644)
    prefix = [shutil.which('unshare'), '--mount', '--propagation', 'private', '--', '/bin/sh', '-c',
              '%s --bind "$0" /usr/bin/containerd && exec "$@"' % shutil.which('mount'), str(stub)]
    return prefix, {'PATH': str(empty)}


def silent_containerd(folder, real):
    """A containerd that never answers: ``--version`` is the real binary's,
    the daemon hangs with containerd's arguments on its command line.  A
    timeout test needs it: a real containerd 2.1 opened its socket within
    50 ms on a fast CI machine, so no small timeout is sure to run out."""
    path = os.path.join(str(folder), 'containerd')
    with open(path, 'w') as f:
        f.write('#!/bin/sh\ncase "$1" in --version) exec %s "$@";; esac\nsleep 300 &\nwait\n' % real)
    os.chmod(path, 0o755)
    return path


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


def make_tar(path, members, fmt='w:gz'):
    """A tarball (the kata payload's tests) from (name, kind, data-or-target, mode) tuples; kinds: file dir link hard fifo."""
    with tarfile.open(str(path), fmt) as tar:
        for name, kind, data, mode in members:
            info = tarfile.TarInfo(name)
            info.mode = mode
            if kind == 'dir':
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif kind in ('link', 'hard'):
                info.type = tarfile.SYMTYPE if kind == 'link' else tarfile.LNKTYPE
                info.linkname = data
                tar.addfile(info)
            elif kind == 'fifo':
                info.type = tarfile.FIFOTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return str(path)


def read(path, mode='r'):
    with open(path, mode) as f:
        return f.read()


def nvidia_tree(workdir, flavour):
    """The NVIDIA toolkit >= 1.18 drop-in layout under workdir/etc: (config.toml, conf.d/99-nvidia.toml)."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    stem = os.path.join(FIXTURES, 'nvidia-ctk', 'ctk-head-d34b304-installer-%s-systemd-default.after-setup' % flavour)
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write(read(stem + '.config.toml').replace('/etc/containerd/conf.d', os.path.join(etc, 'conf.d')))
    dropin = os.path.join(etc, 'conf.d', '99-nvidia.toml')
    shutil.copy(stem + '.conf.d-99-nvidia.toml', dropin)
    return main, dropin


class Daemon(object):
    """A real containerd on a private socket, root and state under a temp dir."""

    def __init__(self, binary, config_path, base):
        self.binary = binary
        self.config = config_path
        self.base = base
        self.address = os.path.join(base, 'containerd.sock')
        self.log = os.path.join(base, 'containerd.log')
        self.proc = None

    def start(self, timeout=20):
        with open(self.log, 'w') as logf:
            self.proc = subprocess.Popen(
                [self.binary, '--config', self.config, '--address', self.address,
                 '--root', os.path.join(self.base, 'root'), '--state', os.path.join(self.base, 'state')],
                stdout=logf, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                return False
            if os.path.exists(self.address):
                s = socket.socket(socket.AF_UNIX)
                try:
                    s.connect(self.address)
                    return True
                except OSError:
                    pass
                finally:
                    s.close()
            time.sleep(0.05)
        return False

    def plugins(self):
        """{plugin id: status} from `ctr plugins ls`."""
        ctr = shutil.which('ctr')
        out = subprocess.run([ctr, '--address', self.address, 'plugins', 'ls'], capture_output=True,
                             text=True, timeout=60, check=False).stdout
        status = {}
        for line in out.splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 4:
                status[cols[0] + '.' + cols[1]] = cols[-1]
        return status

    def log_text(self):
        return read(self.log)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for sub in ('state', 'root'):
            subprocess.run(['umount', '-R', os.path.join(self.base, sub)], capture_output=True, check=False)


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


# ------------------------------------------------------------------ batch forms against single calls
def binary_of(which):
    binary = {'host': CONTAINERD_1, '1.7': CONTAINERD_17, '2': CONTAINERD_2}[which]
    if binary is None:
        pytest.fail('containerd %s is missing: run `make deps`' % which)
    return binary


def ledger_records(state_dir):
    files = glob.glob(os.path.join(state_dir, 'ledger', '*.json'))
    assert len(files) == 1, files
    with open(files[0]) as f:
        return json.load(f)['records']


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
