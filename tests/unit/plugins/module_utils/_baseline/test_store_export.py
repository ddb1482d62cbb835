# -*- coding: utf-8 -*-
"""export_copy: the copy of a baseline folder that leaves the node (containerd_baseline_export). It holds the
snapshots' own files only, each secret value masked whole, and copies stored files that are no TOML as they
are."""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    Attrs,
    TreeFile,
    export_copy,
    utc_now,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from helpers.baseline import locked_store

MASK = secrets.MASK
AUTH = '[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example.com".auth]\n'
# the identity token is the start of the password: masking the shorter first would leave "-and-more" behind
CONFIG = ('version = 2\n' + AUTH + '  username = "robot"\n  password = "s3cret-token-and-more"\n'
          '  identitytoken = "s3cret-token"\n')


@pytest.fixture
def store(tmp_path):
    with locked_store(tmp_path / 'store') as s:
        yield s


def snapshot(store, *imports):
    """A snapshot of /etc/containerd/config.toml (CONFIG) and the given (name, bytes) drop-ins; its folder."""
    files = [TreeFile('/etc/containerd/config.toml', CONFIG.encode('utf-8'), Attrs(0o644, 0, 0), 'config')]
    files.extend(TreeFile('/etc/containerd/conf.d/' + name, raw, Attrs(0o644, 0, 0), 'import') for name, raw in imports)
    _now, stamp = utc_now()
    return store.write(dict(format=1, config='/etc/containerd/config.toml', include_imports=True, ledger=None),
                       files, None, stamp)


def exported(dest):
    out = {}
    for root, _dirs, names in os.walk(str(dest)):
        for name in names:
            with open(os.path.join(root, name), 'rb') as f:
                out[os.path.relpath(os.path.join(root, name), str(dest))] = f.read()
    return out


def test_an_export_masks_each_secret_whole_and_writes_the_copy(store, tmp_path):
    sid = os.path.basename(snapshot(store))
    dest = tmp_path / 'out'
    copied = dict(export_copy(store.folder, str(dest), secrets.BUILTIN_PATTERNS))  # masked and written by default
    config = exported(dest)[sid + '/files/000-config.toml'].decode('utf-8')
    assert config == CONFIG.replace('s3cret-token-and-more', MASK).replace('s3cret-token', MASK)
    assert copied[sid + '/files/000-config.toml'] == 2


def test_only_the_snapshots_own_files_are_exported(store, tmp_path):
    """A killed run's temporary folder, hidden files and folders, and links (to anywhere on the node) stay
    behind; the files beside them are still copied."""
    folder = snapshot(store)
    sid = os.path.basename(folder)
    secret = tmp_path / 'elsewhere.toml'
    secret.write_text(CONFIG)
    os.mkdir(os.path.join(store.folder, '.tmp-killed'))
    for where, name in ((os.path.join(store.folder, '.tmp-killed'), 'config.toml'), (folder, '.manifest.json.swp'),
                        (os.path.join(folder, '.trash'), 'old.toml')):
        os.makedirs(where, exist_ok=True)
        with open(os.path.join(where, name), 'w') as f:
            f.write(CONFIG)
    os.symlink(str(secret), os.path.join(folder, 'files', '001-link.toml'))
    os.symlink(str(tmp_path), os.path.join(folder, 'node'))
    dest = tmp_path / 'out'
    export_copy(store.folder, str(dest), secrets.BUILTIN_PATTERNS)
    assert sorted(exported(dest)) == [sid + '/files/000-config.toml', sid + '/manifest.json']


def test_stored_files_that_are_no_toml_are_copied_as_they_are(store, tmp_path):
    """A drop-in that is not UTF-8, is broken, or happens to be JSON but no object is stored as it was (a restore
    puts it back): nothing in it is taken for a secret, and the export goes on."""
    odd = [('10-latin1.toml', b'version = 2\n# caf\xe9\n'), ('20-broken.toml', b'version = 2\n[plugins\n'),
           ('30-list.toml', b'["a", "b"]\n')]
    sid = os.path.basename(snapshot(store, *odd))
    dest = tmp_path / 'out'
    copied = dict(export_copy(store.folder, str(dest), secrets.BUILTIN_PATTERNS))
    files = exported(dest)
    for index, (name, raw) in enumerate(odd, 1):
        rel = '%s/files/%03d-%s' % (sid, index, name)
        assert files[rel] == raw and copied[rel] == 0
    assert MASK.encode('utf-8') in files[sid + '/files/000-config.toml']
