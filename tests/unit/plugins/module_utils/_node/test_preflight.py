# -*- coding: utf-8 -*-
"""_preflight.load_test against the real containerd 1.6, 1.7 and 2.1 (no mocks).

The point of the load test: `containerd config dump` exits 0 on configs the
daemon then refuses (or whose CRI plugin then fails).  Each case asserts
both halves where that is the claim.

The no-trace tests run the load test inside a *watched view* of the host: a
private mount namespace where /etc, /opt, /var, /usr, /root, /home and /srv
are overlays whose upper layers record every write, and /tmp and /run are
empty tmpfs (a node where containerd has not run yet).  Other engineers' processes on this machine cannot disturb the
view, and anything the load test leaves in any of those folders shows up in
an upper layer.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pytest

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, REPO, silent_containerd

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import process, sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.containerd_log import parse_log
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    load_test,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.sandbox import dump_toml

BINARIES = {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}


def binary(version):
    b = BINARIES[version]
    if not b:
        pytest.fail('containerd %s is not on this machine: run `make deps`' % version)
    return b


def dump(b, path):
    proc = subprocess.run([b, '--config', path, 'config', 'dump'], capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


# `containerd config default` trimmed to what a kubeadm node has
GOOD = {
    '1.6': '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  SystemdCgroup = true
''',
    '2.1': '''version = 3
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true
''',
}
GOOD['1.7'] = GOOD['1.6']

# nvidia-ctk v1.17.8 `runtime configure --runtime=containerd` on Debian 12's
# shipped config.toml, byte for byte as the real toolkit wrote it
# (/work/shared/fixtures/nvidia-ctk/states/
#  ctk-v1.17.8-nvidia-ctk-debian-shipped-config-default.configured.config.toml)
CTK_DEBIAN_CONFIGURED = '''version = 2

[plugins]

  [plugins."io.containerd.grpc.v1.cri"]

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "/usr/lib/cni"
      conf_dir = "/etc/cni/net.d"

    [plugins."io.containerd.grpc.v1.cri".containerd]

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes]

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
          privileged_without_host_devices = false
          runtime_engine = ""
          runtime_root = ""
          runtime_type = "io.containerd.runc.v2"

          [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
            BinaryName = "/usr/bin/nvidia-container-runtime"

  [plugins."io.containerd.internal.v1.opt"]
    path = "/var/lib/containerd/opt"
'''
# the same file as written by the toolkit, vendored from shared/fixtures (tests/fixtures/nvidia-ctk/README.md)
CTK_SHARED = os.path.join(FIXTURES, 'nvidia-ctk', 'ctk-v1.17.8-nvidia-ctk-debian-shipped-config-default.configured.config.toml')


@pytest.fixture
def etc(tmp_path):
    d = tmp_path / 'etc' / 'containerd'
    d.mkdir(parents=True)

    def write(text, name='config.toml'):
        p = d / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return str(p)
    return write


class ReadableCopy(object):
    """What a child process of these tests loads and runs, copied to a folder of /dev/shm that
    every user can read: the collection's module_utils, and a containerd binary of the checkout
    (build/). The checkout itself may lie where such a child cannot see it: under /tmp (an empty
    tmpfs in the no-trace view) or in a folder uid 65534 cannot enter (a clone in /root, mode 0700)."""

    def __init__(self):
        self.top = tempfile.mkdtemp(prefix='ng-preflight-readable-', dir='/dev/shm')
        self.collections = os.path.join(self.top, 'collections')
        utils = os.path.join('ansible_collections', 'nodeguard', 'containerd', 'plugins', 'module_utils')
        shutil.copytree(os.path.join(COLLECTIONS_ROOT, utils), os.path.join(self.collections, utils),
                        ignore=shutil.ignore_patterns('__pycache__'))
        self.binaries = {}
        self._open_up()

    def binary(self, version):
        """containerd `version`, from the copy when it lies in the checkout."""
        real = os.path.realpath(binary(version))
        if not real.startswith(os.path.realpath(REPO) + os.sep):
            return real
        if version not in self.binaries:
            self.binaries[version] = os.path.join(self.top, 'containerd-' + version, 'containerd')
            os.makedirs(os.path.dirname(self.binaries[version]))
            shutil.copy2(real, self.binaries[version])
            self._open_up()
        return self.binaries[version]

    def _open_up(self):
        os.chmod(self.top, 0o755)
        for base, dirs, files in os.walk(self.top):
            for name in dirs:
                os.chmod(os.path.join(base, name), 0o755)
            for name in files:
                path = os.path.join(base, name)
                os.chmod(path, 0o755 if os.access(path, os.X_OK) else 0o644)

    def remove(self):
        shutil.rmtree(self.top, ignore_errors=True)


@pytest.fixture(scope='module')
def readable():
    copy = ReadableCopy()
    yield copy
    copy.remove()


@pytest.fixture
def parent():
    """A parent folder for the load test's private folder, so that what it
    leaves (nothing) is told apart from other runs on this machine."""
    d = tempfile.mkdtemp(prefix='ng-pf-parent-')
    yield d
    shutil.rmtree(d, ignore_errors=True)


def processes_under(folder):
    found = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                with open('/proc/%s/cmdline' % pid, 'rb') as f:
                    if folder.encode() in f.read():
                        found.append(pid)
            except OSError:
                pass
    return found


# ---------------------------------------------------------------- verdicts

@pytest.mark.parametrize('version', ['1.6', '1.7', '2.1'])
def test_good_config_loads(etc, version):
    path = etc(GOOD[version])
    res = load_test(binary(version), path)
    assert res.status == 'ok', res.errors
    assert res.ok
    expected = [CRI_V2] if version != '2.1' else [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]
    assert sorted(res.required) == sorted(expected)
    assert set(res.required.values()) == {'ok'}
    assert res.containerd_version.startswith(version + '.')
    assert res.method == 'ctr'
    assert res.plugins[CRI_V2] == 'ok' and len(res.plugins) > 20
    assert res.errors == []
    assert 0 < res.seconds < 20
    # the device snapshotters are always disabled, but a config that neither
    # configures nor names one loses nothing by it: no noise in skipped
    assert not [s for s in res.skipped if 'snapshotter' in s], res.skipped


def test_version_2_file_on_21_is_migrated_and_loads(etc):
    """2.x reads a version 2 file (migrated); the 2.x CRI plugins are required of it too."""
    res = load_test(binary('2.1'), etc(GOOD['1.6']))
    assert res.status == 'ok', res.errors
    assert res.required == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'ok', CRI_V3_IMAGES: 'ok'}
    # the toolkit file that breaks CRI on 1.6 loads on 2.1: 2.x merges the
    # file over its built-in runc runtime instead of replacing the runtimes
    # table (measured here; the verdict is the daemon's, per version)
    same = load_test(binary('2.1'), etc(CTK_DEBIAN_CONFIGURED, 'ctk.toml'))
    assert same.status == 'ok', same.errors
    assert load_test(binary('1.6'), etc(CTK_DEBIAN_CONFIGURED, 'ctk.toml')).status == 'failed'


def test_toolkit_config_that_config_dump_accepts_fails_the_load_test(etc):
    with open(CTK_SHARED) as f:
        assert f.read() == CTK_DEBIAN_CONFIGURED
    path = etc(CTK_DEBIAN_CONFIGURED)
    rc, _out, err = dump(binary('1.6'), path)
    assert rc == 0, err  # the validator everyone uses says yes
    res = load_test(binary('1.6'), path)
    assert res.status == 'failed' and not res.ok
    assert res.required == {CRI_V2: 'error'}
    assert len(res.errors) == 1
    assert path in res.errors[0] and CRI_V2 in res.errors[0]
    assert 'no corresponding runtime configured in `containerd.runtimes`' in res.errors[0]
    assert 'default_runtime_name = \\"runc\\"' in res.errors[0] or 'default_runtime_name = "runc"' in res.errors[0]


def test_type_error_refused_by_16(etc):
    path = etc('version = 2\n[plugins."io.containerd.gc.v1.scheduler"]\n  pause_threshold = 1\n')
    res = load_test(binary('1.6'), path)
    assert res.status == 'failed'
    assert res.required == {}  # it never got as far as plugins
    assert path in res.errors[0]
    assert "Can't convert 1(int64) to float64" in res.errors[0]
    # containerd's own position, in the original file (line 3), not in the private copy
    assert '(3, 3)' in res.errors[0]
    # and with 0.02 it loads: the verdict is about the value, not the table
    ok = load_test(binary('1.6'), etc('version = 2\n[plugins."io.containerd.gc.v1.scheduler"]\n'
                                      '  pause_threshold = 0.02\n', 'float.toml'))
    assert ok.status == 'ok', ok.errors


def test_missing_import_on_21_config_dump_accepts_daemon_refuses(etc, tmp_path):
    missing = str(tmp_path / 'nope.toml')
    path = etc("version = 3\nimports = ['%s']\n" % missing)
    rc, _out, err = dump(binary('2.1'), path)
    assert rc == 0, err
    res = load_test(binary('2.1'), path)
    assert res.status == 'failed'
    assert path in res.errors[0]
    assert 'open %s: no such file or directory' % missing in res.errors[0]


def test_imports_are_read_and_merged_by_the_daemon(etc):
    """A candidate beside the real file (the engine's temp name), with a glob
    import: on 1.x the drop-in's CRI table replaces the main one whole, and
    the daemon itself says so; 2.1 deep-merges the same drop-in."""
    dropin = etc('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                 '  runtime_type = "io.containerd.kata.v2"\n', 'conf.d/50-kata.toml')
    folder = os.path.dirname(dropin)
    absolute = etc(GOOD['1.6'].replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % folder),
                   '.config.toml.a1b2.nodeguard-tmp')
    relative = etc(GOOD['1.6'].replace('version = 2\n', 'version = 2\nimports = ["conf.d/*.toml"]\n'),
                   '.config.toml.c3d4.nodeguard-tmp')
    for version, path in (('1.6', absolute), ('1.7', absolute), ('1.7', relative)):
        res = load_test(binary(version), path)
        assert res.status == 'failed', (version, path)
        assert 'no corresponding runtime configured' in res.errors[0]
    # measured: 1.6.20 expands a relative glob against its working folder
    # (/ under systemd, and in the preflight), not the importing file's
    # folder, so there the drop-in is not loaded at all and CRI is ok
    res = load_test(binary('1.6'), relative)
    assert res.status == 'ok', res.errors
    etc(GOOD['2.1'], 'v3.toml')
    etc("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]\n"
        "  runtime_type = 'io.containerd.kata.v2'\n", 'conf3.d/50-kata.toml')
    candidate = etc(GOOD['2.1'].replace('version = 3\n', "version = 3\nimports = ['conf3.d/*.toml']\n"),
                    '.v3.toml.x1y2.nodeguard-tmp')
    res = load_test(binary('2.1'), candidate)
    assert res.status == 'ok', res.errors


def test_as_path_tests_the_candidate_where_it_will_be(etc):
    """nvidia-ctk 1.17.8 writes `imports = ["<its own path>"]`.  Beside the
    real file, the candidate imports the *old* real file, whose CRI table (1.x)
    replaces the candidate's: a wrong "ok".  as_path puts the candidate
    where it will be after the rename, and the self-import reads it too."""
    real = etc(GOOD['1.6'])
    candidate = etc(CTK_DEBIAN_CONFIGURED.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % real),
                    '.config.toml.s3lf.nodeguard-tmp')
    beside = load_test(binary('1.6'), candidate)
    assert beside.status == 'ok', beside.errors    # the old file's runc hides the problem
    there = load_test(binary('1.6'), candidate, as_path=real)
    assert there.status == 'failed'
    assert candidate in there.errors[0] and 'no corresponding runtime configured' in there.errors[0]
    with open(real) as f:
        assert f.read() == GOOD['1.6']                # the real file was only covered in the namespace
    missing = load_test(binary('1.6'), candidate, as_path=real + '.absent')
    assert missing.status == 'ok' and any('does not exist' in s for s in missing.skipped)


@pytest.mark.parametrize('version,status', [('1.6', 'ok'), ('2.1', 'failed')])
def test_byte_order_mark_kept_in_the_copy(etc, version, status):
    """1.x reads a file that starts with a UTF-8 BOM, 2.x refuses it (measured): the copy keeps the mark."""
    path = etc(u'\ufeff' + GOOD[version])
    res = load_test(binary(version), path)
    assert res.status == status, res.errors


def test_relative_glob_resolved_like_16_does(etc, tmp_path):
    """1.6.20 expands a relative glob against / : a drop-in found that way
    gets its private copy too (its opt path is redirected, CRI verdict is the daemon's)."""
    sub = tmp_path / 'etc' / 'containerd' / 'rel.d'
    sub.mkdir()
    (sub / '10.toml').write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                                 '  runtime_type = "io.containerd.kata.v2"\n')
    rel = str(sub).lstrip('/') + '/*.toml'
    path = etc(GOOD['1.6'].replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % rel), 'rel.toml')
    res = load_test(binary('1.6'), path)
    assert res.status == 'failed' and 'no corresponding runtime configured' in res.errors[0]
    assert str(sub / '10.toml') in [p for p, _raw in sandbox.read_tree(path)]


def test_version_3_file_under_16_still_needs_the_version_2_cri(etc):
    """1.6 ignores a version 3 layout; what it loads is its defaults, and CRI is ok.
    A required plugin of another version's id is reported missing."""
    path = etc(GOOD['2.1'])
    res = load_test(binary('1.6'), path, required=[CRI_V2, CRI_V3_RUNTIME])
    assert res.status == 'failed'
    assert res.required == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'missing'}
    assert CRI_V3_RUNTIME in res.errors[0] and 'missing' in res.errors[0]


def test_disabled_cri_is_a_failure(etc):
    path = etc('version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n')
    res = load_test(binary('1.6'), path)
    assert res.status == 'failed'
    assert res.required == {CRI_V2: 'missing'}
    assert 'disabled_plugins' in res.errors[0]


# ---------------------------------------------------------------- device snapshotters

DEVMAPPER = {
    '1.6': '''version = 2
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "devmapper"
[plugins."io.containerd.snapshotter.v1.devmapper"]
  pool_name = "ng-preflight-test-pool"
  root_path = "%(root)s"
  base_image_size = "8GB"
''',
    '2.1': '''version = 3
required_plugins = ['io.containerd.snapshotter.v1.devmapper']
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'devmapper'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
  snapshotter = 'zfs'
[plugins.'io.containerd.snapshotter.v1.devmapper']
  pool_name = 'ng-preflight-test-pool'
  root_path = '%(root)s'
  base_image_size = '8GB'
''',
}


def dm_state():
    names = sorted(os.listdir('/dev/mapper')) if os.path.isdir('/dev/mapper') else []
    loops = sorted(n for n in os.listdir('/sys/block') if n.startswith('loop')
                   and os.path.exists('/sys/block/%s/loop/backing_file' % n))
    return names, loops


@pytest.mark.parametrize('version', ['1.6', '2.1'])
def test_devmapper_config_is_skipped_and_host_untouched(etc, tmp_path, version):
    root = str(tmp_path / 'var-lib-devmapper')
    path = etc(DEVMAPPER[version] % {'root': root})
    before = dm_state()
    res = load_test(binary(version), path)
    assert res.status == 'ok', res.errors   # CRI loads, with the stand-in snapshotter
    assert 'io.containerd.snapshotter.v1.devmapper' not in res.plugins  # disabled: never initialised
    skipped = ' '.join(res.skipped)
    assert 'devmapper is configured' in skipped
    assert 'names the devmapper snapshotter' in skipped and 'native' in skipped
    if version == '2.1':
        assert 'names the zfs snapshotter' in skipped
        assert 'required_plugins names io.containerd.snapshotter.v1.devmapper' in skipped
    assert not os.path.exists(root)          # its root_path was never created
    assert dm_state() == before              # no device-mapper or loop device appeared


def test_without_the_stand_in_cri_would_fail(etc):
    """Why the stand-in exists: with devmapper disabled and named by CRI, 1.6's CRI refuses to load.
    (Here the user disabled it: the preflight must not hide that.)"""
    path = etc('version = 2\ndisabled_plugins = ["io.containerd.snapshotter.v1.devmapper"]\n'
               '[plugins."io.containerd.grpc.v1.cri".containerd]\n  snapshotter = "overlayfs-nope"\n')
    res = load_test(binary('1.6'), path)
    assert res.status == 'failed'
    assert 'failed to find snapshotter \\"overlayfs-nope\\"' in res.errors[0] \
        or 'failed to find snapshotter "overlayfs-nope"' in res.errors[0]


# ---------------------------------------------------------------- ctr or log

@pytest.mark.parametrize('version', ['1.6', '1.7', '2.1'])
def test_log_parsing_path_agrees_with_ctr(etc, version):
    path = etc(GOOD[version])
    with_ctr = load_test(binary(version), path)
    from_log = load_test(binary(version), path, ctr=False)
    assert with_ctr.method == 'ctr' and from_log.method == 'log'
    assert from_log.status == with_ctr.status == 'ok'
    assert from_log.required == with_ctr.required
    # every plugin ctr lists as ok, the log lists as ok too
    ok_ctr = set(p for p, s in with_ctr.plugins.items() if s == 'ok')
    ok_log = set(p for p, s in from_log.plugins.items() if s == 'ok')
    assert ok_ctr <= ok_log, ok_ctr - ok_log


def test_log_parsing_path_reports_the_cri_error(etc):
    path = etc(CTK_DEBIAN_CONFIGURED)
    res = load_test(binary('1.6'), path, ctr=False)
    assert res.method == 'log'
    assert res.status == 'failed' and res.required == {CRI_V2: 'error'}
    assert 'no corresponding runtime configured' in res.errors[0]


@pytest.mark.parametrize('version', ['1.6', '2.1'])
def test_log_path_with_a_quiet_json_log_config(etc, version):
    """The config's own [debug] level/format do not blind the log reader
    (--log-level info on the command line, format text in the copy)."""
    quiet = GOOD[version].replace('\n', '\n[debug]\n  level = "error"\n  format = "json"\n', 1)
    res = load_test(binary(version), etc(quiet), ctr=False)
    assert res.method == 'log'
    assert res.status == 'ok', res.errors
    assert set(res.required.values()) == {'ok'}


def test_no_ctr_anywhere_uses_the_log(etc, tmp_path, monkeypatch):
    lone = tmp_path / 'bin'
    lone.mkdir()
    shutil.copy(binary('2.1'), str(lone / 'containerd'))
    monkeypatch.setenv('PATH', str(lone))
    assert process.sibling_ctr(str(lone / 'containerd')) is None
    res = load_test(str(lone / 'containerd'), etc(GOOD['2.1']))
    assert res.method == 'log'
    assert res.status == 'ok', res.errors
    assert set(res.required) == {CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES}


def test_parse_log_both_formats():
    v1 = ('time="t" level=info msg="loading plugin \\"io.containerd.grpc.v1.cri\\"..." type=io.containerd.grpc.v1\n'
          'time="t" level=warning msg="failed to load plugin io.containerd.grpc.v1.cri" error="bad \\"x\\""\n'
          'time="t" level=info msg="skip loading plugin \\"io.containerd.snapshotter.v1.zfs\\"..." error="no zfs"\n')
    plugins, errors, booted, fatal = parse_log(v1)
    assert plugins == {'io.containerd.grpc.v1.cri': 'error', 'io.containerd.snapshotter.v1.zfs': 'skip'}
    assert errors['io.containerd.grpc.v1.cri'] == 'bad "x"'
    assert not booted and fatal == []
    v2 = ('time="t" level=info msg="loading plugin" id=io.containerd.cri.v1.images type=io.containerd.cri.v1\n'
          'time="t" level=info msg="containerd successfully booted in 0.1s"\n'
          'containerd: failed to load TOML: x\n')
    plugins, errors, booted, fatal = parse_log(v2)
    assert plugins == {'io.containerd.cri.v1.images': 'ok'} and booted
    assert fatal == ['containerd: failed to load TOML: x']


# ---------------------------------------------------------------- cannot run, bounded

def test_cannot_run_without_the_binary(etc, tmp_path):
    res = load_test(str(tmp_path / 'no-such-containerd'), etc(GOOD['1.6']))
    assert res.status == 'cannot_run' and not res.ok
    assert 'cannot run' in res.errors[0] and 'no-such-containerd' in res.errors[0]
    assert res.required == {}


def test_cannot_run_without_the_file(tmp_path):
    res = load_test(binary('1.6'), str(tmp_path / 'none.toml'))
    assert res.status == 'cannot_run' and 'no such file' in res.errors[0]


def test_cannot_run_as_non_root(etc, tmp_path, readable):
    path = etc(GOOD['1.6'])
    code = ('import sys, json; sys.path.insert(0, %r)\n'
            'from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test\n'
            'r = load_test(%r, %r); print(json.dumps([r.status, r.errors]))'
            % (readable.collections, readable.binary('1.6'), path))
    proc = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', sys.executable, '-c', code],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    status, errors = json.loads(proc.stdout)
    assert status == 'cannot_run'
    assert 'must run as root' in errors[0]


def test_cannot_run_without_cap_sys_admin(etc, parent):
    """uid 0 without CAP_SYS_ADMIN (an unprivileged container): unshare fails,
    containerd never ran, and that is cannot_run, not a verdict on the config."""
    path = etc(GOOD['1.6'])
    code = ('import sys, json; sys.path.insert(0, %r)\n'
            'from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test\n'
            'r = load_test(%r, %r, workdir=%r); print(json.dumps([r.status, r.errors]))'
            % (COLLECTIONS_ROOT, binary('1.6'), path, parent))
    proc = subprocess.run(['setpriv', '--inh-caps=-sys_admin', '--bounding-set=-sys_admin', sys.executable, '-c', code],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    status, errors = json.loads(proc.stdout)
    assert status == 'cannot_run', errors
    assert 'private namespace could not be made' in errors[0] and 'unshare' in errors[0]
    assert os.listdir(parent) == []


def test_timeout_kills_the_daemon_and_cleans_up(etc, parent, tmp_path):
    """processes_under finds the silent daemon by its arguments until the
    load test has killed it."""
    res = load_test(silent_containerd(tmp_path, binary('2.1')), etc(GOOD['2.1']), timeout=1.0, workdir=parent)
    assert res.status == 'timeout' and not res.ok, (res.status, res.errors)
    assert 'did not answer within 1.0s' in res.errors[0]
    assert os.listdir(parent) == []
    assert processes_under(parent) == []


def test_two_at_once(etc, parent):
    paths = [etc(GOOD['1.6'], 'a.toml'), etc(CTK_DEBIAN_CONFIGURED, 'b.toml')]
    results = {}

    def run(p):
        results[p] = load_test(binary('1.6'), p, workdir=parent)
    threads = [threading.Thread(target=run, args=(p,)) for p in paths]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results[paths[0]].status == 'ok', results[paths[0]].errors
    assert results[paths[1]].status == 'failed'
    assert 'no corresponding runtime configured' in results[paths[1]].errors[0]
    assert os.listdir(parent) == []
    assert processes_under(parent) == []


def test_plain_host_run_leaves_no_temp_dir_mount_or_process(etc, parent):
    with open('/proc/self/mountinfo') as f:
        mounts_before = f.read()
    res = load_test(binary('1.7'), etc(GOOD['1.7']), workdir=parent)
    assert res.status == 'ok', res.errors
    assert os.listdir(parent) == []
    with open('/proc/self/mountinfo') as f:
        mounts_after = f.read()
    assert 'nodeguard-preflight' not in mounts_after
    assert mounts_after == mounts_before
    assert processes_under(parent) == []


def test_caller_killed_mid_run_takes_the_daemon_along(etc, parent, tmp_path):
    """SIGKILL of the process running the load test (Ansible's task timeout)
    runs no finally: the daemon must still die (PDEATHSIG on unshare, which
    kills containerd, PID 1 of its namespace), and the next run removes the
    orphaned private folder."""
    slow_ctr = tmp_path / 'slow-ctr'
    pidfile = tmp_path / 'slow-ctr.pid'
    slow_ctr.write_text('#!/bin/sh\necho $$ > %s\nexec sleep 60\n' % pidfile)
    slow_ctr.chmod(0o755)
    code = ('import sys; sys.path.insert(0, %r)\n'
            'from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test\n'
            'load_test(%r, %r, ctr=%r, workdir=%r, timeout=60)'
            % (COLLECTIONS_ROOT, binary('1.6'), etc(GOOD['1.6']), str(slow_ctr), parent))
    runner = subprocess.Popen([sys.executable, '-c', code], start_new_session=True)
    try:
        deadline = time.time() + 30
        daemon = []
        while time.time() < deadline and not daemon:
            daemon = [p for p in processes_under(parent) if _argv0(p).endswith('/containerd')]
            time.sleep(0.05)
        assert daemon, 'the daemon never started'
        runner.kill()
        runner.wait()
        deadline = time.time() + 10
        while time.time() < deadline and [p for p in processes_under(parent) if _argv0(p) != 'sleep']:
            time.sleep(0.05)
        assert [p for p in processes_under(parent) if _argv0(p) != 'sleep'] == []
        orphaned = os.listdir(parent)
        assert len(orphaned) == 1 and orphaned[0].startswith('nodeguard-preflight-')
        # the next run removes it once it is old enough and unlocked
        old = time.time() - sandbox.STALE_AFTER - 1
        os.utime(os.path.join(parent, orphaned[0]), (old, old))
        res = load_test(binary('1.6'), etc(GOOD['1.6'], 'next.toml'), workdir=parent)
        assert res.status == 'ok', res.errors
        assert os.listdir(parent) == []
    finally:
        if runner.poll() is None:
            runner.kill()
        if pidfile.exists():
            try:
                os.kill(int(pidfile.read_text()), signal.SIGKILL)
            except (OSError, ValueError):
                pass


def _argv0(pid):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as f:
            return f.read().split(b'\0')[0].decode()
    except OSError:
        return ''


def test_a_live_run_is_not_stale(parent):
    """Another run's folder, locked, is never removed, however old."""
    d = tempfile.mkdtemp(prefix='nodeguard-preflight-', dir=parent)
    fd = sandbox.lock_folder(d)
    try:
        old = time.time() - 3600
        os.utime(d, (old, old))
        assert sandbox.remove_stale(parent) == []
        assert os.path.isdir(d)
    finally:
        os.close(fd)
    assert sandbox.remove_stale(parent) == [d]


def test_config_on_a_mount_below_run(parent):
    """/run is an overlay in the namespace, which shows a mount below /run
    as an empty mount point: a config (and its import) on such a mount is
    still read.  The mount is made in a private namespace of the test."""
    sub = '/run/ng-pf-submount-%d' % os.getpid()
    os.mkdir(sub)
    code = r'''
import os, subprocess, sys
sys.path.insert(0, sys.argv[1])
sub, ctd, parent = sys.argv[2:5]
subprocess.check_call(['mount', '-t', 'tmpfs', 'ng-sub', sub])
with open(sub + '/10-kata.toml', 'w') as f:
    f.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n')
with open(sub + '/config.toml', 'w') as f:
    f.write('version = 2\nimports = ["%s/*-kata.toml"]\n' % sub)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import load_test
r = load_test(ctd, sub + '/config.toml', workdir=parent)
print(r.status, '|'.join(r.errors))
'''
    try:
        proc = subprocess.run(['unshare', '--mount', '--propagation', 'private', sys.executable, '-c', code,
                               COLLECTIONS_ROOT, sub, binary('1.7'), parent],
                              capture_output=True, text=True, timeout=120, check=False)
    finally:
        os.rmdir(sub)
    assert proc.returncode == 0, proc.stderr[-2000:]
    status, _sep, errors = proc.stdout.strip().partition(' ')
    # the import was read: its CRI table (kata only) replaced the default runc on 1.7
    assert status == 'failed', proc.stdout
    assert 'no corresponding runtime configured' in errors


# ---------------------------------------------------------------- the copy

def test_dump_toml_round_trips_types():
    import tomllib
    data = {'version': 2, 'f': 0.5, 'i': 1, 'b': False, 's': 'a"b\\c\n\x7f', 'l': [1, 'x', [2]],
            'imports': [], 'plugins': {'a.b': {'empty': {}, 'inl': [{'k': 1}]}}}
    text = dump_toml(data)
    assert tomllib.loads(text) == data
    assert '[plugins."a.b".empty]' in text  # an empty table stays a table


# ---------------------------------------------------------------- no trace

HOSTILE = {
    # every setting measured or known to make containerd write outside --root/--state
    '1.6': '''version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
imports = ["%(conf)s/conf.d/*.toml"]
[grpc]
  address = "/run/containerd/containerd.sock"
[ttrpc]
  address = "/run/containerd/containerd.sock.ttrpc"
[debug]
  address = "/run/containerd/debug.sock"
  format = "json"
[cgroup]
  path = "/%(cgroup)s"
[proxy_plugins.nydus]
  type = "snapshot"
  address = "%(nydus)s"
[plugins."io.containerd.internal.v1.opt"]
  path = "/var/lib/containerd/opt"
[plugins."io.containerd.grpc.v1.cri".cni]
  conf_dir = "/etc/cni/ng-preflight-missing.d"
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
[plugins."io.containerd.snapshotter.v1.overlayfs"]
  root_path = "/var/lib/containerd-ng-overlayfs"
[plugins."io.containerd.snapshotter.v1.native"]
  root_path = "/var/lib/containerd-ng-native"
[plugins."io.containerd.snapshotter.v1.devmapper"]
  pool_name = "ng-preflight-pool"
  root_path = "/var/lib/containerd-ng-devmapper"
''',
    'dropin-1': '''version = 2
[plugins."io.containerd.internal.v1.opt"]
  path = "/opt/ng-preflight-opt-from-import"
''',
    '2.1': '''version = 3
root = '/var/lib/containerd'
state = '/run/containerd'
imports = ['conf.d/*.toml']
temp = '/var/lib/containerd-ng-temp'
[grpc]
  address = '/run/containerd/containerd.sock'
[ttrpc]
  address = '/run/containerd/containerd.sock.ttrpc'
[debug]
  address = '/run/containerd/debug.sock'
[cgroup]
  path = '/%(cgroup)s'
[proxy_plugins.nydus]
  type = 'snapshot'
  address = '%(nydus)s'
[plugins.'io.containerd.internal.v1.opt']
  path = '/var/lib/containerd/opt'
[plugins.'io.containerd.nri.v1.nri']
  disable = false
  socket_path = '/var/run/nri/nri.sock'
[plugins.'io.containerd.cri.v1.runtime'.cni]
  conf_dir = '/etc/cni/ng-preflight-missing.d'
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'nydus'
[plugins.'io.containerd.snapshotter.v1.overlayfs']
  root_path = '/var/lib/containerd-ng-overlayfs'
[plugins.'io.containerd.snapshotter.v1.blockfile']
  root_path = '/var/lib/containerd-ng-blockfile'
  scratch_file = '/var/lib/containerd-ng-blockfile/scratch'
''',
    'dropin-2': '''version = 3
[plugins.'io.containerd.internal.v1.opt']
  path = '/opt/ng-preflight-opt-from-import'
''',
}
HOSTILE['1.7'] = HOSTILE['1.6'].replace('[plugins."io.containerd.internal.v1.opt"]', '''
[plugins."io.containerd.nri.v1.nri"]
  disable = false
  socket_path = "/var/run/nri/nri.sock"
[plugins."io.containerd.internal.v1.opt"]''')

WATCHED = ['/etc', '/opt', '/var', '/usr', '/root', '/home', '/srv']

VIEW = r'''
import json, os, socket, subprocess, sys, threading, time
spec = json.loads(sys.argv[1])
sys.path.insert(0, spec['collections'])
cow = spec['cow']
for d in spec['watched']:
    if os.path.isdir(d) and not os.path.islink(d):
        name = d.strip('/').replace('/', '_')
        for sub in ('u', 'w'):
            os.makedirs(os.path.join(cow, sub, name))
        subprocess.check_call(['mount', '-t', 'overlay', 'watch', '-o', 'lowerdir=%s,upperdir=%s,workdir=%s'
                               % (d, os.path.join(cow, 'u', name), os.path.join(cow, 'w', name)), d])
# /tmp and /run start empty, as on a node where containerd does not run yet
subprocess.check_call(['mount', '-t', 'tmpfs', 'watch-tmp', '/tmp'])
subprocess.check_call(['mount', '-t', 'tmpfs', 'watch-run', '/run'])
for path, text in spec['files'].items():
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
# a live "nydus" on the host: the preflight must never contact it
os.makedirs(os.path.dirname(spec['nydus']), exist_ok=True)
srv = socket.socket(socket.AF_UNIX)
srv.bind(spec['nydus'])
srv.listen(8)
contacts = []
def accept():
    while True:
        try:
            conn, _ = srv.accept()
        except OSError:
            return
        contacts.append(1)
        conn.close()
threading.Thread(target=accept, daemon=True).start()

def tree(root):
    out = []
    for base, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(base, n)
            st = os.lstat(p)
            out.append('%s %o %d' % (os.path.relpath(p, root), st.st_mode, 0 if os.path.isdir(p) else st.st_size))
    return sorted(out)

def unix_paths():
    with open('/proc/net/unix') as f:
        return sorted(set(line.split()[-1] for line in f.read().splitlines()[1:] if len(line.split()) > 7))

def snapshot():
    with open('/proc/self/mountinfo') as f:
        mounts = sorted(' '.join(line.split()[3:5]) for line in f)
    modules = None  # kernels without loadable modules have no /proc/modules
    if os.path.exists('/proc/modules'):
        with open('/proc/modules') as f:
            modules = sorted(line.split()[0] for line in f)
    cg = sorted(d for d in os.listdir('/sys/fs/cgroup') if os.path.exists(
        os.path.join('/sys/fs/cgroup', d, spec['cgroup'])))
    return {'writes': dict((n, tree(os.path.join(cow, 'u', n))) for n in sorted(os.listdir(os.path.join(cow, 'u')))),
            'tmp': tree('/tmp'), 'run': tree('/run'), 'mounts': mounts, 'modules': modules, 'cgroups': cg,
            'unix': [p for p in unix_paths() if 'nodeguard-preflight' in p],  # filtered to this run below
            'dm': sorted(os.listdir('/dev/mapper')) if os.path.isdir('/dev/mapper') else []}

before = snapshot()
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
made = []
real_mkdtemp = _preflight.tempfile.mkdtemp
def mkdtemp(*a, **kw):  # records the name of the private folder, to find its processes
    made.append(real_mkdtemp(*a, **kw))
    return made[-1]
_preflight.tempfile.mkdtemp = mkdtemp
res = _preflight.load_test(spec['binary'], spec['config'])
after = snapshot()
# sockets of this run's private folder (other runs on the machine have other folders);
# the kernel tears a dead network namespace down on a work queue, so a socket
# of it may still be listed for a moment on a loaded machine: wait (bounded)
mine = lambda: [u for u in unix_paths() if made and u.startswith(made[0])]
deadline = time.time() + 15
while mine() and time.time() < deadline:
    time.sleep(0.2)
after['unix'] = mine()
procs = []
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                cmdline = f.read()
            if made and made[0].encode() in cmdline:
                procs.append(cmdline.decode(errors='replace')[:200])
        except OSError:
            pass
assert len(made) == 1 and made[0].startswith('/tmp/nodeguard-preflight-'), made
print(json.dumps({'before': before, 'after': after, 'result': res.as_dict(), 'contacts': len(contacts),
                  'made': made,
                  'procs': procs}))
'''


@pytest.mark.parametrize('version', ['1.6', '1.7', '2.1'])
def test_no_trace_on_the_host(version, readable):
    b = readable.binary(version)
    cow = tempfile.mkdtemp(prefix='ng-watch-', dir='/dev/shm')
    tag = 'ng-preflight-test-%d' % os.getpid()
    nydus = '/run/%s-nydus/containerd-nydus-grpc.sock' % tag
    conf = '/etc/%s/containerd' % tag
    major = '1' if version != '2.1' else '2'
    spec = {
        'collections': readable.collections, 'cow': cow, 'watched': WATCHED, 'binary': b, 'nydus': nydus,
        'cgroup': tag, 'config': conf + '/config.toml',
        'files': {conf + '/config.toml': HOSTILE[version] % {'cgroup': tag, 'nydus': nydus, 'conf': conf},
                  conf + '/conf.d/10-opt.toml': HOSTILE['dropin-' + major]},
    }
    try:
        env = dict(os.environ)
        env.pop('TMPDIR', None)
        proc = subprocess.run(['unshare', '--mount', '--propagation', 'private', sys.executable, '-c', VIEW,
                               json.dumps(spec)], capture_output=True, text=True, timeout=120, env=env, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout)
    finally:
        shutil.rmtree(cow, ignore_errors=True)
    res = out['result']
    # the hostile config still loads, so the sandbox did not make it fail
    assert res['status'] == 'ok', res['errors']
    assert res['plugins'].get('io.containerd.snapshotter.v1.nydus') == 'ok'  # registered, never contacted
    assert out['contacts'] == 0
    before, after = out['before'], out['after']
    for name in before['writes']:
        assert after['writes'][name] == before['writes'][name], (name, sorted(
            set(after['writes'][name]) - set(before['writes'][name])))
    assert after['tmp'] == before['tmp'] == []   # its temp dir is gone
    assert after['run'] == before['run'], sorted(set(after['run']) - set(before['run']))
    assert after['mounts'] == before['mounts']
    assert after['modules'] == before['modules']
    assert after['cgroups'] == before['cgroups'] == []
    assert after['unix'] == [] and after['dm'] == before['dm']
    assert out['procs'] == []
    skipped = ' '.join(res['skipped'])
    assert '[cgroup] path' in skipped and 'proxy plugin' in skipped


def test_no_trace_view_sees_writes():
    """The watched view is not blind: containerd started on the same hostile
    config *without* the preflight's sandbox writes into the upper layers."""
    b = binary('2.1')
    cow = tempfile.mkdtemp(prefix='ng-watch-', dir='/dev/shm')
    script = r'''
import os, subprocess, sys, time
cow, b, conf = sys.argv[1:4]
for d in ('/var', '/run', '/opt'):
    n = d.strip('/')
    os.makedirs(cow + '/u/' + n); os.makedirs(cow + '/w/' + n)
    subprocess.check_call(['mount', '-t', 'overlay', 'w', '-o', 'lowerdir=%s,upperdir=%s/u/%s,workdir=%s/w/%s'
                           % (d, cow, n, cow, n), d])
os.makedirs(os.path.dirname(conf), exist_ok=True)
open(conf, 'w').write("version = 3\n[plugins.'io.containerd.internal.v1.opt']\n  path = '/var/lib/ng-unsandboxed-opt'\n")
p = subprocess.Popen(['unshare', '--net', b, '--config', conf, '--address', cow + '/c.sock', '--root', cow + '/r',
                      '--state', cow + '/s'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.5)
p.terminate(); p.wait()
for base, dirs, files in os.walk(cow + '/u'):
    for n in dirs + files:
        print(os.path.relpath(os.path.join(base, n), cow + '/u'))
'''
    try:
        proc = subprocess.run(['unshare', '--mount', '--propagation', 'private', sys.executable, '-c', script, cow, b,
                               '/run/ng-unsandboxed/config.toml'], capture_output=True, text=True, timeout=60, check=False)
    finally:
        subprocess.run(['umount', '-R', cow], capture_output=True, check=False)
        shutil.rmtree(cow, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr
    seen = proc.stdout.split()
    assert 'var/lib/ng-unsandboxed-opt/bin' in seen
    assert 'run/nri/nri.sock' in seen
