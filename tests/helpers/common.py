# -*- coding: utf-8 -*-
"""Where the checkout, its fixtures and the real containerd binaries are, and the small
helpers every suite uses to read files and to ask containerd what it makes of a config."""

import glob
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tomllib

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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
