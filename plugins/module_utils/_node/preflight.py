# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Would the node's containerd really load this config?  Start it and see.

``containerd config dump`` exits 0 on configs whose CRI plugin then fails to
load in the daemon (facts note: 7 of 279 NVIDIA-toolkit configs).  The only
sufficient test is a start: ``load_test`` starts the node's own containerd
binary on the candidate in a sandbox, reads the plugin list and requires the
CRI plugin(s) to be ``ok``, then stops it.

The sandbox (docs/preflight.md says why each part is there):

- a private mount, network and (where unshare can) PID namespace;
- ``--root``, ``--state`` on a tmpfs mounted in that namespace only;
  ``--address`` in a private temporary folder;
- a private copy of every file of the config tree (the candidate and each
  import it names) is bind-mounted over the original path inside the
  namespace, so the daemon reads the same paths, resolves relative imports
  and globs the same way, and merges the files itself; the copies differ from
  the originals only in settings that would make the daemon touch the host
  (socket paths, the opt and NRI folders, snapshotter root paths, cgroup path,
  proxy plugin sockets) and in the device-touching snapshotters, which are
  disabled (recorded in ``skipped``);
- ``/run`` (and a real ``/var/run``) is an overlay whose upper layer is on the
  private tmpfs: whatever containerd writes there without being configured to
  (``/run/containerd`` on 1.7 and 2.x) vanishes with the namespace.

No Ansible imports: the module, the engine and the tests call it directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ctypes
import errno
import fcntl
import glob
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    TomlParseError,
    parse_error_message,
    parse_toml,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import GLOB_CHARS, expand_import

CRI_V2 = 'io.containerd.grpc.v1.cri'
CRI_V3_RUNTIME = 'io.containerd.cri.v1.runtime'
CRI_V3_IMAGES = 'io.containerd.cri.v1.images'
SNAPSHOTTER = 'io.containerd.snapshotter.v1.'
SERVER = 'io.containerd.server.v1.'  # config version 4's server tables (grpc, ttrpc, debug, metrics)

# Snapshotters that work on block devices, pools, loop devices or kernel
# modules of the host: devmapper (device-mapper thin pools), zfs and btrfs
# (the host's pools and subvolumes), aufs (runs `modprobe aufs`), blockfile
# (loop-mounts a scratch file), erofs (loop-mounts layer files).  Never
# started by the preflight.
DEVICE_SNAPSHOTTERS = ('aufs', 'blockfile', 'btrfs', 'devmapper', 'erofs', 'zfs')
# What a CRI setting that names one of them is pointed at instead, so the CRI
# plugin still finds a snapshotter of that name's kind and loads.
STAND_IN_SNAPSHOTTER = 'native'

STATUS_OK = 'ok'
STATUS_FAILED = 'failed'
STATUS_TIMEOUT = 'timeout'
STATUS_CANNOT_RUN = 'cannot_run'

_VERSION_RE = re.compile(r'\bv?(\d+)\.(\d+)(?:\.(\d+))?')
_BOOTED = 'containerd successfully booted'
_NOTE = 'nodeguard-preflight-note: '
_EXEC = 'nodeguard-preflight-exec'  # the namespace is set up; containerd starts


def required_for(version):
    """The CRI plugin ids that must be ``ok`` for containerd (major, minor)."""
    if version is not None and version[0] >= 2:
        return [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]
    return [CRI_V2]


class LoadResult(object):
    """What one load test found.

    status: ``ok`` (the daemon started and every required plugin is ok),
    ``failed`` (the daemon refused the config, or a required plugin is not
    ok: ``errors`` says which and quotes containerd), ``timeout`` (no answer
    within the time limit), ``cannot_run`` (the test itself could not be
    made: not root, no unshare, no binary...; ``errors`` says why).  Only
    ``ok`` is a pass.
    """

    FIELDS = ('status', 'ok', 'config_path', 'binary', 'containerd_version', 'required', 'plugins',
              'errors', 'warnings', 'skipped', 'seconds', 'method', 'log_tail')

    def __init__(self, config_path, binary):
        self.status = STATUS_CANNOT_RUN
        self.config_path = config_path
        self.binary = binary
        self.containerd_version = None  # '1.6.20', '2.1.9' ... when known
        self.required = {}               # {plugin id: status} of the required plugins
        self.plugins = {}                # {plugin id: status} of every plugin the daemon listed
        self.errors = []
        self.warnings = []
        self.skipped = []
        self.seconds = 0.0
        self.method = None               # 'ctr' or 'log': where the plugin list came from
        self.log_tail = ''

    @property
    def ok(self):
        return self.status == STATUS_OK

    def as_dict(self):
        return dict((k, getattr(self, k)) for k in self.FIELDS)

    def message(self):
        """One human line: the verdict and every error."""
        if self.ok:
            return '%s: containerd %s loads it, %s ok' % (
                self.config_path, self.containerd_version or '?', ', '.join(sorted(self.required)))
        return ' '.join(self.errors) or '%s: load test %s' % (self.config_path, self.status)

    def __repr__(self):
        return 'LoadResult(%r)' % (self.as_dict(),)


# ---------------------------------------------------------------- TOML out

def _toml_str(s):
    out = json.dumps(s, ensure_ascii=False)
    return out.replace('\x7f', '\\u007f')


_BARE_KEY = re.compile(r'^[A-Za-z0-9_-]+$')


def _toml_key(k):
    k = str(k)
    return k if _BARE_KEY.match(k) else _toml_str(k)


def _toml_value(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return 'nan'
        if math.isinf(v):
            return 'inf' if v > 0 else '-inf'
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, (list, tuple)):
        return '[' + ', '.join(_toml_value(x) for x in v) + ']'
    if isinstance(v, dict):
        return '{' + ', '.join('%s = %s' % (_toml_key(k), _toml_value(x)) for k, x in v.items()) + '}'
    if hasattr(v, 'isoformat'):
        return v.isoformat()
    raise ValueError('cannot write %r as TOML' % (v,))


def dump_toml(data):
    """Plain data as TOML: every table gets a header (an empty table stays a
    table, which containerd 1.x tells apart from no table), lists inline."""
    lines = []

    def table(d, path):
        subs = []
        for k, v in d.items():
            if isinstance(v, dict):
                subs.append((k, v))
            else:
                lines.append('%s = %s' % (_toml_key(k), _toml_value(v)))
        for k, v in subs:
            p = path + [k]
            lines.append('')
            lines.append('[%s]' % '.'.join(_toml_key(x) for x in p))
            table(v, p)
    table(data, [])
    return '\n'.join(lines).lstrip('\n') + '\n'


# ---------------------------------------------------------------- the copies

def _file_version(data):
    v = data.get('version', 1)
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def _plugin_keys(version, full_id):
    """Keys of a plugin's table under [plugins] in a file of this version."""
    if version >= 2:
        return [full_id]
    return [full_id.rsplit('.', 1)[-1], full_id]


def _tables(data, version, full_id, create=False):
    """The plugin's tables in this file (created in the first form if asked)."""
    plugins = data.get('plugins')
    found = []
    if isinstance(plugins, dict):
        for key in _plugin_keys(version, full_id):
            if isinstance(plugins.get(key), dict):
                found.append(plugins[key])
    if not found and create:
        plugins = data.setdefault('plugins', {})
        if isinstance(plugins, dict):
            found.append(plugins.setdefault(_plugin_keys(version, full_id)[0], {}))
    return found


def _listdir(path):
    try:
        return os.listdir(path)
    except (IOError, OSError):
        return []


class _Sandbox(object):
    """Paths of one run and the rewrite of the config tree."""

    def __init__(self, base):
        self.base = base
        self.private = os.path.join(base, 'p')         # tmpfs in the namespace
        self.socket = os.path.join(base, 'c.sock')
        self.log = os.path.join(base, 'containerd.log')
        self.copies = os.path.join(base, 'files')
        self.binds = []                                # (copy, original)
        self.skipped = []
        self._skip_seen = set()

    def p(self, *parts):
        return os.path.join(self.private, *parts)

    def skip(self, text):
        if text not in self._skip_seen:
            self._skip_seen.add(text)
            self.skipped.append(text)

    def rewrite(self, path, data, is_main, major):
        """Neutralise what would touch the host; returns the changed data."""
        version = _file_version(data)
        where = os.path.basename(path)
        # sockets and listeners outside the private folder
        for section, key, target in (('ttrpc', 'address', self.socket + '.ttrpc'),
                                     ('debug', 'address', self.p('debug.sock'))):
            tab = data.get(section)
            if isinstance(tab, dict) and tab.get(key):
                tab[key] = target
        self._server_tables(data, version, is_main)
        debug = data.get('debug')
        if isinstance(debug, dict) and debug.get('format') not in (None, '', 'text'):
            debug['format'] = 'text'  # the log is parsed; a json log says the same
        for key, target in (('temp', self.p('temp')),):
            if data.get(key):
                data[key] = target
        cgroup = data.get('cgroup')
        if isinstance(cgroup, dict) and cgroup.get('path'):
            self.skip('[cgroup] path = %r (%s): not applied; the daemon would create that cgroup on the host '
                      'and move itself into it' % (cgroup['path'], where))
            cgroup['path'] = ''
        proxies = data.get('proxy_plugins')
        if isinstance(proxies, dict):
            for name, table in sorted(proxies.items()):
                if isinstance(table, dict) and table.get('address'):
                    self.skip('proxy plugin %r (%s %s, %s): registered but not contacted; its socket is '
                              'replaced by one nobody listens on' % (name, table.get('type', '?'),
                                                                     table['address'], where))
                    table['address'] = self.p('proxy-%d.sock' % len(self._skip_seen))
        # plugin folders and sockets on the host
        for tab in _tables(data, version, 'io.containerd.internal.v1.opt', create=is_main):
            tab['path'] = self.p('opt')
        for tab in _tables(data, version, 'io.containerd.nri.v1.nri', create=is_main and major != 1):
            tab['socket_path'] = self.p('nri.sock')
            host_plugins = tab.get('plugin_path') or '/opt/nri/plugins'
            if _listdir(host_plugins) and (tab.get('disable') is False or major >= 2):
                self.skip('NRI plugins installed in %s are not started (%s); NRI itself loads, with its '
                          'socket in the private folder' % (host_plugins, where))
            tab['plugin_path'] = self.p('nri-plugins')
            tab['plugin_config_path'] = self.p('nri-conf.d')
        plugins = data.get('plugins')
        if isinstance(plugins, dict):
            for key, tab in plugins.items():
                short = key[len(SNAPSHOTTER):] if key.startswith(SNAPSHOTTER) else (key if version < 2 else None)
                if short and isinstance(tab, dict) and tab.get('root_path') and short not in DEVICE_SNAPSHOTTERS:
                    tab['root_path'] = self.p('root', 'snapshotter-' + short)
        # the CNI config folder: read where it exists, never created on the host
        cri_ids = (CRI_V2,) if version < 3 else (CRI_V3_RUNTIME,)
        for cri_id in cri_ids:
            for tab in _tables(data, version, cri_id, create=is_main and not os.path.isdir('/etc/cni/net.d')):
                cni = tab.setdefault('cni', {})
                if isinstance(cni, dict):
                    conf_dir = cni.get('conf_dir') or '/etc/cni/net.d'
                    if not os.path.isdir(conf_dir):
                        self.skip('CNI conf_dir %s does not exist: a private empty folder is used instead '
                                  '(containerd would create it)' % conf_dir)
                        cni['conf_dir'] = self.p('cni-net.d')
                    if not cni:
                        del tab['cni']
        self._device_snapshotters(data, version, is_main, where)
        return data

    def _server_tables(self, data, version, is_main):
        """Version 4 (containerd 2.3): the server's sockets live in plugin tables, and with a ttrpc table
        --address no longer moves the ttrpc socket: every address points into the private folder, or the
        test daemon would replace the host daemon's sockets."""
        if version < 4:
            return
        for plugin, target in (('grpc', self.socket), ('ttrpc', self.socket + '.ttrpc'),
                               ('debug', self.p('debug.sock')), ('metrics', '')):
            for tab in _tables(data, version, SERVER + plugin, create=is_main and plugin in ('grpc', 'ttrpc')):
                tab['address'] = target
        for tab in _tables(data, version, SERVER + 'grpc-tcp'):
            tab['tcp_address'] = ''  # a private network namespace; nothing listens on the host

    def _device_snapshotters(self, data, version, is_main, where):
        for short in DEVICE_SNAPSHOTTERS:
            for tab in _tables(data, version, SNAPSHOTTER + short):
                if any(v not in ('', [], False, None) for v in tab.values()):
                    self.skip('snapshotter %s is configured (%s) but not started: it would touch the host\'s '
                              'block devices, pools or kernel modules' % (short, where))
        required = data.get('required_plugins')
        if isinstance(required, list):
            kept = []
            for r in required:
                if isinstance(r, str) and r.rsplit('.', 1)[-1] in DEVICE_SNAPSHOTTERS:
                    self.skip('required_plugins names %s (%s): not required by the preflight, which does not '
                              'start device snapshotters' % (r, where))
                else:
                    kept.append(r)
            data['required_plugins'] = kept
        if is_main:
            disabled = data.get('disabled_plugins')
            disabled = list(disabled) if isinstance(disabled, list) else []
            for short in DEVICE_SNAPSHOTTERS:
                for uri in ([SNAPSHOTTER + short] + ([short] if version < 2 else [])):
                    if uri not in disabled:
                        disabled.append(uri)
            data['disabled_plugins'] = disabled
        # CRI settings that name a device snapshotter point at the stand-in
        spots = []
        if version >= 3:
            spots.append(_tables(data, version, CRI_V3_IMAGES))
            for tab in _tables(data, version, CRI_V3_IMAGES):
                for handler, plat in (tab.get('runtime_platforms') or {}).items():
                    if isinstance(plat, dict):
                        spots.append([plat])
            runtime_tabs = [(t.get('containerd') or {}) for t in _tables(data, version, CRI_V3_RUNTIME)]
        else:
            runtime_tabs = [(t.get('containerd') or {}) for t in _tables(data, version, CRI_V2)]
            spots.append([t for t in runtime_tabs if isinstance(t, dict)])
        for ctd in runtime_tabs:
            if isinstance(ctd, dict):
                for name, rt in (ctd.get('runtimes') or {}).items():
                    if isinstance(rt, dict):
                        spots.append([rt])
        for group in spots:
            for tab in group:
                if isinstance(tab, dict) and tab.get('snapshotter') in DEVICE_SNAPSHOTTERS:
                    self.skip('the CRI config names the %s snapshotter (%s): it is not started; the CRI '
                              'plugin is loaded with the %s snapshotter in its place, so whether %s itself '
                              'works on this node is not tested'
                              % (tab['snapshotter'], where, STAND_IN_SNAPSHOTTER, tab['snapshotter']))
                    tab['snapshotter'] = STAND_IN_SNAPSHOTTER


def _expand(entry, importing_file):
    """The files an imports entry may load.  A relative glob is expanded
    against the importing file's folder (containerd 1.7, 2.x) and against
    the daemon's working folder, / (measured: 1.6.20), so that every file
    the daemon could read gets its private copy."""
    found = expand_import(entry, importing_file)
    if GLOB_CHARS.search(entry) and not os.path.isabs(entry):
        found += [f for f in expand_import(os.path.join('/', entry), importing_file) if f not in found]
    return found


def _read_tree(config_path, content_from=None):
    """[(path, bytes)] of the config and every import that exists, breadth
    first like containerd.  content_from: read the main file's bytes from
    there (the candidate tested as if it were at config_path).  Raises
    IOError for the main file."""
    out = []
    seen = set()
    queue = [os.path.abspath(config_path)]
    while queue:
        path = queue.pop(0)
        real = os.path.realpath(path)
        if real in seen:
            continue
        seen.add(real)
        try:
            with open(content_from if (content_from and not out) else path, 'rb') as f:
                raw = f.read()
        except (IOError, OSError):
            if not out:
                raise
            continue  # a missing import: the daemon reports it in its own words
        out.append((path, raw))
        try:
            text = split_bom(raw.decode('utf-8'))[0]
            data = parse_toml(text)
        except Exception:  # pylint: disable=broad-except
            continue  # reported when the copy is made
        for entry in data.get('imports', []) or []:
            if isinstance(entry, str):
                queue.extend(_expand(entry, path))
    return out


# ---------------------------------------------------------------- running

_PR_SET_PDEATHSIG = 1
PREFIX = 'nodeguard-preflight-'
STALE_AFTER = 120.0  # seconds; a live run holds its folder's lock anyway


def _prctl():
    """libc's prctl, resolved in the parent: the child of fork() only calls it
    (no dlopen between fork and exec, which could deadlock a threaded caller)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _die_with_parent_fn():
    """A preexec_fn: unshare gets SIGKILL when the thread that started it dies
    (Ansible killed mid-task), and with --kill-child takes containerd and its
    namespaces along.  None when libc has no prctl."""
    prctl = _prctl()
    if prctl is None:
        return None
    sig = int(signal.SIGKILL)

    def preexec():
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    return preexec


def _lock_folder(tmp):
    fd = os.open(os.path.join(tmp, '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _remove_stale(base):
    """Private folders of runs whose process was killed (SIGKILL leaves no
    finally): old enough, and nobody holds their lock."""
    removed = []
    for d in glob.glob(os.path.join(base, PREFIX + '*')):
        try:
            if time.time() - os.lstat(d).st_mtime < STALE_AFTER or not os.path.isdir(d) or os.path.islink(d):
                continue
            fd = os.open(os.path.join(d, '.lock'), os.O_RDWR)
        except (IOError, OSError):
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except (IOError, OSError):
            os.close(fd)
            continue  # a live run
        try:
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
        finally:
            os.close(fd)
    return removed


def _default_run_command(cmd, timeout=30):
    # without a module (a caller that passes no run_command) and with a timeout run_command does not take
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,  # pylint: disable=ansible-bad-function
                            universal_newlines=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return 124, out, err + '\n(killed after %ss)' % timeout
    return proc.returncode, out, err


def _which(name, extra=('/usr/sbin', '/usr/bin', '/sbin', '/bin', '/usr/local/sbin', '/usr/local/bin')):
    path = os.environ.get('PATH', '').split(os.pathsep) + list(extra)
    for d in path:
        cand = os.path.join(d, name)
        if d and os.path.isfile(cand) and os.access(cand, os.X_OK):
            return cand
    return None


def sibling_ctr(binary):
    """The ctr beside the containerd binary, else the one in PATH, else None."""
    cand = os.path.join(os.path.dirname(os.path.abspath(binary)), 'ctr')
    if os.path.isfile(cand) and os.access(cand, os.X_OK):
        return cand
    return _which('ctr', extra=())


_VERSIONS = {}


def _version(run_command, binary):
    """((major, minor), 'x.y.z', error), cached per binary file (path, size, mtime)."""
    try:
        st = os.stat(binary)
        key = (os.path.realpath(binary), st.st_size, st.st_mtime)
    except OSError:
        key = None
    if key in _VERSIONS:
        return _VERSIONS[key]
    found = _read_version(run_command, binary)
    if key is not None and found[0] is not None:
        _VERSIONS[key] = found
    return found


def _read_version(run_command, binary):
    rc, out, err = run_command([binary, '--version'])
    if rc != 0:
        return None, None, (err or out).strip()
    for word in out.split()[1:]:
        m = _VERSION_RE.match(word)
        if m:
            return (int(m.group(1)), int(m.group(2))), m.group(0).lstrip('v'), None
    return None, None, 'cannot read a version from %r' % out.strip()


_UNSHARE_FLAGS = {}


def _unshare_flags(unshare):
    """unshare's flags for a private mount, network and (if it can) PID namespace."""
    if unshare not in _UNSHARE_FLAGS:
        try:
            _rc, out, err = _default_run_command([unshare, '--help'], timeout=10)
        except OSError:
            out, err = '', ''
        flags = ['--mount', '--net', '--propagation', 'private']
        if '--kill-child' in out + err:
            # containerd is PID 1 of its namespace: when it dies, everything it
            # started dies; when unshare dies, it kills containerd.
            flags += ['--pid', '--fork', '--kill-child']
        _UNSHARE_FLAGS[unshare] = flags
    return list(_UNSHARE_FLAGS[unshare])


def _shell_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


def _script(sb, binary, config_path, run_dirs, tools):
    """The namespace's setup, then exec containerd.  Any failed step stops it
    with a line 'nodeguard-preflight: ...' in the log."""
    q = _shell_quote
    # -n: no utab/mtab update (libmount would create /run/mount on the host)
    mount, mkdir = q(tools['mount']) + ' -n', q(tools['mkdir'])
    lines = ['set -u', 'fail() { echo "nodeguard-preflight: $*" >&2; exit 97; }',
             mount + ' -t tmpfs -o mode=0700 nodeguard-preflight %s || fail "cannot mount a tmpfs on %s"'
             % (q(sb.private), sb.private),
             mkdir + ' -p %s %s %s %s %s || fail mkdir'
             % tuple(q(sb.p(x)) for x in ('root', 'state', 'opt', 'nri-plugins', 'nri-conf.d')),
             mkdir + ' -p %s || fail mkdir' % q(sb.p('cni-net.d'))]
    for i, d in enumerate(run_dirs):
        up, work = sb.p('ovl-%d' % i, 'upper'), sb.p('ovl-%d' % i, 'work')
        lines.append(mkdir + ' -p %s %s || fail mkdir' % (q(up), q(work)))
        lines.append('%s -t overlay nodeguard-preflight -o lowerdir=%s,upperdir=%s,workdir=%s %s 2>/dev/null '
                     '|| { %s -t tmpfs -o mode=0755 nodeguard-preflight %s && echo "%s%s"; } || fail "cannot cover %s"'
                     % (mount, q(d), q(up), q(work), q(d), mount, q(d), _NOTE,
                        'no overlayfs: %s was replaced by an empty tmpfs in the namespace, so files there '
                        '(proxy plugin sockets, imports under %s) were not visible' % (d, d), d))
    for copy, original in sb.binds:
        if any(original.startswith(d.rstrip('/') + '/') for d in run_dirs):
            # a file on a mount below /run is hidden by the overlay (it shows
            # the mount point only): give the copy a place in the overlay,
            # whose writes stay in the namespace
            lines.append('[ -e %s ] || { %s -p %s && : > %s; } || fail "cannot place the private copy at %s"'
                         % (q(original), mkdir, q(os.path.dirname(original)), q(original), original))
        lines.append('%s --bind %s %s || fail "cannot bind the private copy over %s"'
                     % (mount, q(copy), q(original), original))
    lines.append('echo %s >&2' % _EXEC)
    lines.append('exec %s --config %s --address %s --root %s --state %s --log-level info'
                 % (q(binary), q(config_path), q(sb.socket), q(sb.p('root')), q(sb.p('state'))))
    return '\n'.join(lines) + '\n'


def _group_alive(pgid):
    """PIDs of live (not zombie) processes in the process group."""
    alive = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (IOError, OSError, IndexError):
            continue
        # fields after the command: state, ppid, pgrp, ...
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ('Z', 'X'):
            alive.append(int(pid))
    return alive


def _kill(proc, wait=10.0):
    """Kill the daemon's whole process group (unshare, sh, containerd and
    anything they started) and return once none of it is alive, so that the
    namespace, and with it every mount made there, is gone.  SIGKILL at
    once: the private root, state and copies are discarded anyway."""
    if proc is None:
        return
    pgid = proc.pid  # start_new_session: the group leader
    deadline = time.time() + wait
    while True:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
        if proc.poll() is None:
            try:
                proc.wait(0.05)
            except subprocess.TimeoutExpired:
                pass
        if proc.poll() is not None and not _group_alive(pgid):
            return
        if time.time() > deadline:
            return
        time.sleep(0.02)


def _connectable(path):
    if not os.path.exists(path):
        return False
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(path)
        return True
    except (IOError, OSError):
        return False
    finally:
        s.close()


# ---------------------------------------------------------------- the log

_LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def _logfmt(line):
    fields = {}
    for k, v in _LOGFMT.findall(line):
        if v.startswith('"'):
            try:
                v = json.loads(v)
            except ValueError:
                v = v[1:-1]
        fields[k] = v
    return fields


_PLUGIN_IN_MSG = re.compile(r'^(loading plugin|skip loading plugin|failed to load plugin)\s*"?([\w.\-]*)"?')


def parse_log(text):
    """(plugins {id: status}, errors {id: containerd's error}, booted, fatal lines) from containerd's log.

    1.x: msg="loading plugin \\"ID\\"..."  msg="failed to load plugin ID" error="..."
    2.x: msg="loading plugin" id=ID        msg="failed to load plugin" error="..." id=ID
    """
    plugins, errors, fatal = {}, {}, []
    booted = False
    for line in text.splitlines():
        if line.startswith(_NOTE) or line == _EXEC:
            continue
        if not line.startswith('time=') and not line.startswith('{'):
            if line.strip():
                fatal.append(line.strip())
            continue
        if line.startswith('{'):
            try:
                f = json.loads(line)
            except ValueError:
                continue
        else:
            f = _logfmt(line)
        msg = f.get('msg', '')
        if _BOOTED in msg:
            booted = True
        if f.get('level') in ('fatal', 'panic'):
            fatal.append(msg + (': ' + f['error'] if f.get('error') else ''))
        m = _PLUGIN_IN_MSG.match(msg)
        if not m:
            continue
        pid = f.get('id') or m.group(2).rstrip('.')
        if not pid:
            continue
        kind = m.group(1)
        if kind == 'loading plugin':
            plugins.setdefault(pid, 'ok')
        elif kind == 'skip loading plugin':
            plugins[pid] = 'skip'
            errors.setdefault(pid, f.get('error', ''))
        else:
            plugins[pid] = 'error'
            errors[pid] = f.get('error', '')
    return plugins, errors, booted, fatal


def parse_ctr_plugins(out):
    """{id: status} from `ctr plugins ls`."""
    status = {}
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4:
            status[cols[0] + '.' + cols[1]] = cols[-1]
    return status


# ---------------------------------------------------------------- load_test

def _cannot(res, t0, msg):
    res.status = STATUS_CANNOT_RUN
    res.errors.append('%s: the containerd load test cannot run: %s' % (res.config_path, msg))
    res.seconds = round(time.time() - t0, 3)
    return res


def load_test(binary, config_path, run_command=None, timeout=20.0, required=None, ctr=None, workdir=None,
              as_path=None):
    """Start ``binary`` on ``config_path`` in a sandbox; see the module docstring.

    binary: the node's containerd.  config_path: the candidate (anywhere; its
    imports are read by the daemon).  run_command(cmd) -> (rc, out, err): for
    ``--version`` and ``config dump`` (default: subprocess).  timeout: seconds
    for the whole test.  required: plugin ids that must be ``ok`` (default:
    the CRI plugins of the binary's major version).  ctr: path of ctr, None
    to look beside the binary and in PATH, False to read the plugin list from
    containerd's log instead.  workdir: parent of the private folder
    (default: the system's temporary folder; never under /run).  as_path:
    test config_path as if it were already at as_path (an existing file,
    typically the real config beside the engine's candidate): the daemon is
    told --config as_path and reads the candidate there, so an import of
    as_path itself (nvidia-ctk 1.17.8 writes one) reads the candidate too,
    as it will after the rename.
    """
    t0 = time.time()
    run_command = run_command or _default_run_command
    res = LoadResult(config_path, binary)
    if not binary or not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        return _cannot(res, t0, 'no containerd binary at %r' % (binary,))
    if os.geteuid() != 0:
        return _cannot(res, t0, 'it must run as root (it creates a private mount and network namespace); '
                       'run it with become: true')
    if not os.path.isfile(config_path):
        return _cannot(res, t0, 'no such file')
    tools = dict((name, _which(name)) for name in ('unshare', 'mount', 'mkdir', 'sh'))
    missing = [name for name, found in sorted(tools.items()) if found is None]
    if missing:
        return _cannot(res, t0, 'no %s command on this node (unshare and mount are in util-linux)'
                       % ', '.join(missing))
    unshare = tools['unshare']
    version, res.containerd_version, verr = _version(run_command, binary)
    if version is None:
        return _cannot(res, t0, '%s --version failed: %s' % (binary, verr))
    need = list(required) if required else required_for(version)
    if ctr is None:
        ctr = sibling_ctr(binary)
    res.method = 'ctr' if ctr else 'log'

    base = workdir or tempfile.gettempdir()
    if os.path.realpath(base).startswith('/run/') or os.path.realpath(base) == '/run':
        base = '/tmp' if os.path.isdir('/tmp') else '/var/tmp'
    _remove_stale(base)
    tmp = tempfile.mkdtemp(prefix=PREFIX, dir=base)
    os.chmod(tmp, 0o700)
    lock_fd = _lock_folder(tmp)
    proc = None
    logf = None
    try:
        sb = _Sandbox(tmp)
        os.mkdir(sb.copies)
        os.mkdir(sb.private)
        main, content_from = os.path.abspath(config_path), None
        if as_path:
            if os.path.isfile(as_path):
                main, content_from = os.path.abspath(as_path), os.path.abspath(config_path)
            else:
                sb.skip('as_path %s does not exist: the candidate was tested at its own path %s'
                        % (as_path, config_path))
        try:
            tree = _read_tree(main, content_from)
        except (IOError, OSError) as exc:
            return _cannot(res, t0, 'cannot read it (%s)' % exc.strerror)
        for index, (path, raw) in enumerate(tree):
            try:
                text, bom = split_bom(raw.decode('utf-8'))
                data = parse_toml(text)
            except (UnicodeDecodeError, TomlParseError, ValueError) as exc:
                why = parse_error_message(path, exc) if isinstance(exc, TomlParseError) else '%s: %s' % (path, exc)
                rc, out, err = run_command([binary, '--config', config_path, 'config', 'dump'])
                if rc != 0:
                    res.status = STATUS_FAILED
                    res.errors.append('%s: containerd %s refuses it: %s'
                                      % (config_path, res.containerd_version, _last_lines(err or out)))
                    res.seconds = round(time.time() - t0, 3)
                    return res
                return _cannot(res, t0, 'no private copy could be made of %s (%s); containerd\'s own config '
                               'dump accepts it' % (path, why))
            data = sb.rewrite(path, data, index == 0, version[0])
            copy = os.path.join(sb.copies, '%d.toml' % index)
            with open(copy, 'wb') as f:
                f.write((u'\ufeff' if bom else u'').encode('utf-8') + dump_toml(data).encode('utf-8'))
            sb.binds.append((copy, os.path.realpath(path)))
        run_dirs = ['/run']
        if os.path.isdir('/var/run') and not os.path.islink('/var/run') \
                and os.path.realpath('/var/run') != os.path.realpath('/run'):
            run_dirs.append('/var/run')
        script = _script(sb, binary, main, run_dirs, tools)
        logf = open(sb.log, 'w')
        cmd = [unshare] + _unshare_flags(unshare) + [tools['sh'], '-c', script]
        # the daemon runs while it is asked for its plugins, then is killed: run_command waits for its end
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,  # pylint: disable=ansible-bad-function
                                stderr=subprocess.STDOUT, close_fds=True,
                                start_new_session=True, cwd='/', preexec_fn=_die_with_parent_fn())
        deadline = t0 + timeout
        up = False
        while time.time() < deadline:
            if proc.poll() is not None:
                break
            if _connectable(sb.socket) and (res.method == 'ctr' or _BOOTED in _read(sb.log)):
                up = True
                break
            time.sleep(0.03)
        timed_out = not up and proc.poll() is None
        proc_rc = proc.poll()
        if up and res.method == 'ctr':
            left = max(1.0, deadline - time.time())
            rc, out, err = _run_bounded([ctr, '--address', sb.socket, 'plugins', 'ls'], left)
            if rc == 0:
                res.plugins = parse_ctr_plugins(out)
            else:
                res.warnings.append('%s plugins ls failed (%s); the plugin list was read from the log'
                                    % (ctr, _last_lines(err or out)))
                res.method = 'log'
        _kill(proc)
        proc = None
        log = _read(sb.log)
        log_plugins, log_errors, _booted, fatal = parse_log(log)
        if res.method == 'log' or not res.plugins:
            res.plugins = log_plugins
        log_lines = log.splitlines()
        # containerd's own lines: the sandbox's marker and note lines are not its words
        said_log = '\n'.join(line for line in log_lines if not line.startswith(_NOTE) and line != _EXEC)
        res.log_tail = _last_lines(said_log, 10, 300)
        res.skipped = sb.skipped + [line[len(_NOTE):] for line in log_lines if line.startswith(_NOTE)]
        if not up:
            if not timed_out and _EXEC not in log_lines:
                # unshare or the namespace setup failed: containerd never ran
                setup = [line for line in fatal if line.startswith('nodeguard-preflight:')]
                return _cannot(res, t0, '; '.join(setup) or 'the private namespace could not be made: %s'
                               % (_last_lines(log, 3) or 'unshare exited with %s' % proc_rc))
            if timed_out:
                res.status = STATUS_TIMEOUT
                res.errors.append('%s: containerd %s did not answer within %ss; last log lines: %s'
                                  % (config_path, res.containerd_version, timeout, _last_lines(said_log, 5)))
            else:
                # containerd's words about the original file (line and column
                # of the original, not of the private copy), when config dump
                # refuses it too; otherwise what the daemon said
                rc, out, err = run_command([binary, '--config', config_path, 'config', 'dump'])
                said = _last_lines(err or out) if rc != 0 else '; '.join(fatal[-3:]) or _last_lines(said_log, 5)
                res.status = STATUS_FAILED
                res.errors.append('%s: containerd %s refuses to start on it: %s'
                                  % (config_path, res.containerd_version, said))
            res.seconds = round(time.time() - t0, 3)
            return res
        res.required = dict((p, res.plugins.get(p, 'missing')) for p in need)
        for pid, status in sorted(res.required.items()):
            if status != 'ok':
                why = log_errors.get(pid) or ('not loaded: no such plugin, or disabled by disabled_plugins'
                                              if status == 'missing' else 'status %s' % status)
                said = {'error': 'failed to load', 'skip': 'was skipped', 'missing': 'is missing'}.get(
                    status, 'has status %s' % status)
                res.errors.append('%s: containerd %s starts, but its plugin %s %s (%s): %s'
                                  % (config_path, res.containerd_version, pid, said, status, why))
        for pid, status in sorted(res.plugins.items()):
            if status == 'error' and pid not in res.required:
                res.warnings.append('plugin %s: %s' % (pid, log_errors.get(pid, 'error')))
        res.status = STATUS_FAILED if res.errors else STATUS_OK
        res.seconds = round(time.time() - t0, 3)
        return res
    finally:
        if proc is not None:
            _kill(proc)
        if logf is not None:
            logf.close()
        _remove(tmp)
        os.close(lock_fd)


def _run_bounded(cmd, timeout):
    try:
        return _default_run_command(cmd, timeout=timeout)
    except OSError as exc:
        return 127, '', str(exc)


def _read(path):
    try:
        with open(path, 'rb') as f:
            return f.read().decode('utf-8', 'replace')
    except (IOError, OSError):
        return ''


def _last_lines(text, n=3, width=400):
    lines = [line.strip()[:width] for line in (text or '').strip().splitlines() if line.strip()]
    return ' | '.join(lines[-n:])


def _remove(tmp):
    """Remove the private folder.  The mounts lived in the namespace, which
    is gone with its last process, so this is plain file removal."""
    for _attempt in range(50):
        try:
            shutil.rmtree(tmp)
            return
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return
            time.sleep(0.1)
    shutil.rmtree(tmp, ignore_errors=True)
