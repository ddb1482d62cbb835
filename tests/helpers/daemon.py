# -*- coding: utf-8 -*-
"""A real containerd on a private socket, for the tests that start the daemon."""

import os
import shutil
import socket
import subprocess
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.containerd_log import parse_ctr_plugins

from helpers.common import read


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
        return parse_ctr_plugins(out)

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
