# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sandbox of the load test: a private folder, private copies of the
config tree that touch nothing of the host, and the namespace's setup script.

docs/preflight.md says why each part is there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import glob
import json
import math
import os
import re
import shutil
import errno
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import GLOB_CHARS, expand_import
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml, split_bom
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import process
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.containerd_log import EXEC, NOTE

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

PREFIX = 'nodeguard-preflight-'
STALE_AFTER = 120.0  # seconds; a live run holds its folder's lock anyway


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


class Sandbox(object):
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


def expand_entry(entry, importing_file):
    """The files an imports entry may load.  A relative glob is expanded
    against the importing file's folder (containerd 1.7, 2.x) and against
    the daemon's working folder, / (measured: 1.6.20), so that every file
    the daemon could read gets its private copy."""
    found = expand_import(entry, importing_file)
    if GLOB_CHARS.search(entry) and not os.path.isabs(entry):
        found += [f for f in expand_import(os.path.join('/', entry), importing_file) if f not in found]
    return found


def read_tree(config_path, content_from=None):
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
                queue.extend(expand_entry(entry, path))
    return out


def lock_folder(tmp):
    fd = os.open(os.path.join(tmp, '.lock'), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def remove_stale(base):
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


UNSHARE_FLAGS = {}


def unshare_flags(unshare):
    """unshare's flags for a private mount, network and (if it can) PID namespace."""
    if unshare not in UNSHARE_FLAGS:
        try:
            _rc, out, err = process.run_command([unshare, '--help'], timeout=10)
        except OSError:
            out, err = '', ''
        flags = ['--mount', '--net', '--propagation', 'private']
        if '--kill-child' in out + err:
            # containerd is PID 1 of its namespace: when it dies, everything it
            # started dies; when unshare dies, it kills containerd.
            flags += ['--pid', '--fork', '--kill-child']
        UNSHARE_FLAGS[unshare] = flags
    return list(UNSHARE_FLAGS[unshare])


def shell_quote(s):
    return "'" + s.replace("'", "'\"'\"'") + "'"


def setup_script(sb, binary, config_path, run_dirs, tools):
    """The namespace's setup, then exec containerd.  Any failed step stops it
    with a line 'nodeguard-preflight: ...' in the log."""
    q = shell_quote
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
                     % (mount, q(d), q(up), q(work), q(d), mount, q(d), NOTE,
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
    lines.append('echo %s >&2' % EXEC)
    lines.append('exec %s --config %s --address %s --root %s --state %s --log-level info'
                 % (q(binary), q(config_path), q(sb.socket), q(sb.p('root')), q(sb.p('state'))))
    return '\n'.join(lines) + '\n'


def remove_folder(tmp):
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
