# -*- coding: utf-8 -*-
"""A stand-in containerd and ctr for the load test's verdicts: the daemon writes the log lines a test gives it,
opens its --address socket (or exits), and is killed like the real daemon; and small files and folders the
process and sandbox tests lay out."""

import json
import os
import sys
import tempfile
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    load_test,
)

DAEMON = r'''#!%(python)s
import json, os, socket, sys, time
spec = json.load(open(%(spec)r))
args = sys.argv[1:]
with open(args[args.index('--config') + 1], 'rb') as f:
    seen = f.read()
with open(%(seen)r, 'w') as f:
    with open('/proc/self/mountinfo') as m:
        covered = sorted(line.split()[4] for line in m if ' - overlay nodeguard-preflight ' in line)
    fds = []
    for fd in os.listdir('/proc/self/fd'):
        try:
            fds.append(os.readlink('/proc/self/fd/' + fd))
        except OSError:
            pass
    json.dump({'argv': args, 'text': seen.decode('utf-8'), 'covered': covered, 'fds': fds,
               'base_mode': os.stat(os.path.dirname(args[args.index('--address') + 1])).st_mode & 0o7777}, f)
for line in spec['log']:
    sys.stderr.write(line + '\n')
sys.stderr.flush()
if spec.get('exit') is not None:
    sys.exit(spec['exit'])
if spec.get('listen', True):
    s = socket.socket(socket.AF_UNIX)
    s.bind(args[args.index('--address') + 1])
    s.listen(8)
    for line in spec.get('after', []):
        sys.stderr.write(line + '\n')
    sys.stderr.flush()
time.sleep(60)
'''

CTR = '#!/bin/sh\n[ "$3 $4" = "plugins ls" ] || exit 3\ncat %(out)s\n%(err)s\nexit %(rc)d\n'

BOOTED = 'time="t" level=info msg="containerd successfully booted in 0.01s"'


def loading(pid):
    return 'time="t" level=info msg="loading plugin" id=%s' % pid


def failed(pid, error):
    return 'time="t" level=warning msg="failed to load plugin" error="%s" id=%s' % (error, pid)


def ctr_table(rows):
    return 'TYPE ID PLATFORMS STATUS\n' + ''.join('%s %s - %s\n' % (p.rsplit('.', 1)[0], p.rsplit('.', 1)[1], s)
                                                  for p, s in rows)


class Node(object):
    """A stand-in containerd (and ctr) in a folder, and the config it is tested on."""

    def __init__(self, folder, version='containerd github.com/containerd/containerd v2.1.9 abc'):
        self.folder = str(folder)
        self.binary = os.path.join(self.folder, 'containerd')
        self.spec = os.path.join(self.folder, 'spec.json')
        self.seen = os.path.join(self.folder, 'seen.json')
        self.version = version
        self.calls = []
        self.dump = (0, 'version = 3\n', '')
        with open(self.binary, 'w') as f:
            f.write(DAEMON % {'python': sys.executable, 'spec': self.spec, 'seen': self.seen})
        os.chmod(self.binary, 0o755)
        self.daemon(log=[])
        os.makedirs(os.path.join(self.folder, 'etc'))
        self.config = self.write('config.toml', 'version = 3\n')

    def base_mode(self):
        with open(self.seen) as f:
            return json.load(f)['base_mode']

    def open_files(self):
        with open(self.seen) as f:
            return json.load(f)['fds']

    def covered(self):
        """The folders the daemon saw covered by the sandbox's overlay."""
        with open(self.seen) as f:
            return json.load(f)['covered']

    def seen_by_daemon(self):
        """(the --config it was given, the text it read there)."""
        with open(self.seen) as f:
            seen = json.load(f)
        return seen['argv'][seen['argv'].index('--config') + 1], seen['text']

    def write(self, name, text):
        path = os.path.join(self.folder, 'etc', name)
        with open(path, 'wb') as f:
            f.write(text.encode('utf-8') if not isinstance(text, bytes) else text)
        return path

    def daemon(self, **spec):
        with open(self.spec, 'w') as f:
            json.dump(spec, f)

    def ctr(self, out, rc=0, err=''):
        path = os.path.join(self.folder, 'ctr')
        with open(path + '.out', 'w') as f:
            f.write(out)
        with open(path, 'w') as f:
            f.write(CTR % {'out': path + '.out', 'rc': rc, 'err': 'echo %r >&2' % err if err else ''})
        os.chmod(path, 0o755)
        return path

    def run_command(self, cmd, timeout=30):
        self.calls.append(cmd)
        if cmd[1:] == ['--version']:
            return (0, self.version + '\n', '') if self.version else (1, '', 'exec format error\n')
        if cmd[-2:] == ['config', 'dump']:
            return self.dump
        raise AssertionError(cmd)

    def test(self, **kw):
        kw.setdefault('ctr', False)
        kw.setdefault('timeout', 15.0)
        kw.setdefault('workdir', self.folder)
        return load_test(self.binary, kw.pop('config', self.config), run_command=self.run_command, **kw)

    def leftovers(self):
        return [n for n in os.listdir(self.folder) if n.startswith('nodeguard-preflight-')]


V2_OK = [loading(CRI_V2), loading(CRI_V3_RUNTIME), loading(CRI_V3_IMAGES)]


def executable(path, text='#!/bin/sh\n'):
    with open(path, 'w') as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


def folder(parent, age, lock=True):
    d = tempfile.mkdtemp(prefix='nodeguard-preflight-', dir=str(parent))
    if lock:
        os.close(sandbox.lock_folder(d))
    os.utime(d, (time.time() - age, time.time() - age))
    return d
