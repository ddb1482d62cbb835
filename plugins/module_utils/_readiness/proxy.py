# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proxy plugins of the effective config, and whether the service behind each answers (containerd_readiness).

containerd lists a proxy plugin as ``ok`` whether or not anything listens on
its socket (it dials lazily), and ``ctr snapshots ls`` through it reads
containerd's own metadata, never the plugin: so a configured nydus
snapshotter says nothing about ``containerd-nydus-grpc``. The check asks the
socket itself: it exists and accepts a connection, a gRPC (HTTP/2) server
answers the client preface with its SETTINGS frame, and the process that
listens on it (found through /proc, when this node's process table shows it)
is the expected program.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import stat

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in

# what a gRPC client sends first: the HTTP/2 connection preface and an empty SETTINGS frame
HTTP2_PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n' + b'\x00\x00\x00\x04\x00\x00\x00\x00\x00'
# the program behind a proxy plugin, as the reasons name it
SERVICES = {'nydus': 'containerd-nydus-grpc'}


def proxy_plugins(dump):
    """{name: {type, address}} of the effective config's proxy_plugins."""
    out = {}
    for name, table in sorted((get_in(dump or {}, ('proxy_plugins',)) or {}).items()):
        if isinstance(table, dict):
            out[name] = dict(type=table.get('type') or '', address=table.get('address') or '')
    return out


def snapshotters_in_use(dump, runtimes):
    """{snapshotter: [who uses it]}: the CRI's default snapshotter and each runtime handler's own."""
    version = (dump or {}).get('version') or 1
    if version >= 3:
        default = get_in(dump, ('plugins', CRI_V3_IMAGES, 'snapshotter'))
    else:
        default = get_in(dump or {}, ('plugins', CRI_V2, 'containerd', 'snapshotter'))
    used = {}
    if default:
        used.setdefault(default, []).append('the CRI plugin (default snapshotter)')
    for name in sorted(runtimes or {}):
        table = runtimes[name]
        if isinstance(table, dict) and table.get('snapshotter'):
            used.setdefault(table['snapshotter'], []).append('runtime %s' % name)
    return used


def socket_answers(address, timeout=3.0):
    """(True, how) when a server accepts a connection on the Unix socket and answers an HTTP/2 preface,
    else (False, why not)."""
    try:
        mode = os.stat(address).st_mode
    except OSError as exc:
        return False, 'socket %s does not exist (%s)' % (address, exc.strerror or exc)
    if not stat.S_ISSOCK(mode):
        return False, '%s is not a socket' % address
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(address)
        conn.sendall(HTTP2_PREFACE)
        reply = conn.recv(9)
    except socket.timeout:
        return False, 'nothing answered on %s within %.0f s' % (address, timeout)
    except (OSError, socket.error) as exc:
        return False, 'cannot talk to %s: %s' % (address, getattr(exc, 'strerror', None) or exc)
    finally:
        conn.close()
    if len(reply) == 9 and reply[3:4] == b'\x04':
        return True, 'a gRPC server answers on %s' % address
    if not reply:
        return False, '%s accepted the connection and closed it without a word (not a gRPC server)' % address
    return False, '%s answered, but not as a gRPC server would' % address


def _listening_inodes(address):
    """Inodes of the listening Unix sockets bound to address (/proc/net/unix)."""
    inodes = set()
    try:
        # read as bytes: the kernel writes each path as it was bound, in whatever bytes (a name that is not
        # UTF-8 must not hide the others)
        with open('/proc/net/unix', 'rb') as fh:
            for row in fh.read().split(b'\n')[1:]:
                # Num RefCount Protocol Flags Type St Inode Path: the path is the rest of the row (it may hold
                # spaces); flags 00010000 is __SO_ACCEPTCON (listening)
                cols = os.fsdecode(row).split(None, 7)
                if len(cols) >= 8 and cols[7] == address and int(cols[3], 16) & 0x10000:
                    inodes.add(cols[6])
    except (IOError, OSError, ValueError):
        pass
    return inodes


def socket_owner(address):
    """(pid, program) of the process listening on the Unix socket address, or (None, None) when none shows."""
    inodes = _listening_inodes(os.path.realpath(address)) | _listening_inodes(address)
    wanted = set('socket:[%s]' % inode for inode in inodes)
    for pid in (name for name in os.listdir('/proc') if name.isdigit()) if wanted else []:
        if not wanted & _fd_links(pid):
            continue
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as fh:
                argv0 = fh.read().split(b'\0')[0].decode('utf-8', 'replace')
        except (IOError, OSError):
            continue
        return int(pid), os.path.basename(argv0) or '?'
    return None, None


def _fd_links(pid):
    """What the open files of a process point at (a file closed while we look is passed over)."""
    fd_dir = '/proc/%s/fd' % pid
    links = set()
    try:
        fds = os.listdir(fd_dir)
    except (IOError, OSError):
        return links
    for fd in fds:
        try:
            links.add(os.readlink(os.path.join(fd_dir, fd)))
        except (IOError, OSError):
            continue
    return links


def _answer(name, plugin):
    """(answers, how) for one proxy plugin's socket, the listening program named when it shows."""
    answers, how = socket_answers(plugin['address'])
    if not answers:
        return answers, how
    pid, program = socket_owner(plugin['address'])
    expected = SERVICES.get(name)
    if pid is None:
        return True, how + ' (its process is not visible from here)'
    if expected and program != expected:
        return False, '%s, but the process listening there is %s (pid %s), not %s' % (how, program, pid, expected)
    return True, '%s: %s, pid %s' % (how, program, pid)


def proxy_checks(dump, runtimes):
    """[(check name, status, reason, required)] per proxy plugin: required when something uses it."""
    used = snapshotters_in_use(dump, runtimes)
    out = []
    for name, plugin in sorted(proxy_plugins(dump).items()):
        service = SERVICES.get(name, 'the %s service' % name)
        users = used.get(name, [])
        required = bool(users)
        who = ('used by %s' % ', '.join(users)) if users else 'used by no runtime handler nor the CRI default'
        if not plugin['address']:
            out.append(('proxy_plugin:' + name, 'fail', 'proxy plugin %s has no address (%s)' % (name, who), required))
            continue
        answers, how = _answer(name, plugin)
        out.append(('proxy_plugin:' + name, 'pass' if answers else 'fail', '%s %s for proxy plugin %s (type %s): %s; %s'
                    % (service, 'answers' if answers else 'does not answer', name, plugin['type'] or '?', how, who),
                    required))
    return out
