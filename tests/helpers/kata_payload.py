# -*- coding: utf-8 -*-
"""A kata payload under tmp_path: archives made on the fly, the install and remove calls, what they left."""

import json
import os
import stat

from helpers.common import make_tar
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import install, remove

BASIC = [('bin/shim', 'file', b'#!/bin/sh\n', 0o755), ('share/conf-qemu.toml', 'file', b'a = 1\n', 0o644),
         ('share/conf.toml', 'link', 'conf-qemu.toml', 0o777)]


class Payload(object):
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.dest = str(tmp_path / 'opt' / 'kata')
        self.manifest = str(tmp_path / 'state' / 'm.json')
        self.n = 0

    def archive(self, members, root='opt/kata/'):
        self.n += 1
        return make_tar(self.tmp / ('p%d.tar.gz' % self.n), [(root + n, k, d, m) for n, k, d, m in members])

    def params(self, archive, **kw):
        p = dict(dest=self.dest, archive=archive, manifest=self.manifest, root='opt/kata', require=None,
                 archive_is_cache=False)
        p.update(kw)
        return p

    def install(self, archive, check=False, **kw):
        return install(self.params(archive, **kw), check)

    def remove(self, check=False):
        return remove(dict(dest=self.dest, manifest=self.manifest), check)

    def read_manifest(self):
        with open(self.manifest) as f:
            return json.load(f)

    def path(self, rel):
        return os.path.join(self.dest, rel)

    def mode(self, rel):
        return stat.S_IMODE(os.lstat(self.path(rel)).st_mode)


def cut_short(path):
    """Keep the first third of the file at path: an archive cut off in the middle of its stream."""
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:len(data) // 3])
