# -*- coding: utf-8 -*-
"""One stand-in for the engine's Context, and the document and ledger an edit is called with (or a ledger
saved on disk, as an earlier call left it).

An edit callback, a fact reader or a readiness check asks the Context only for
a few things: the config's path and the owner, the containerd binary and its
version, a command run, a warning, the imports it may leave missing, the files
already written. FakeContext holds each of them, set by keyword; what it is
asked is kept for the test to read (``warnings``, ``commands``,
``missing_allowed``).
"""

import os
from types import SimpleNamespace

CRI_V2_PATH = ('plugins', 'io.containerd.grpc.v1.cri')
RUNTIMES_V2_PATH = CRI_V2_PATH + ('containerd', 'runtimes')
RUNTIMES_V2_DOTTED = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'

# what owner gpu's nvidia install leaves in a version 2 ledger: runc's BinaryName set to nvidia's runtime, the
# nvidia table, and nvidia as the default runtime (runc before it)
GPU_NVIDIA_V2_RECORDS = [
    {'owner': 'gpu', 'resource': 'runtime:runc', 'kind': 'key',
     'path': list(RUNTIMES_V2_PATH) + ['runc', 'options', 'BinaryName'],
     'prior': None, 'value': '"/usr/bin/nvidia-container-runtime"'},
    {'owner': 'gpu', 'resource': 'runtime:nvidia', 'kind': 'table', 'path': list(RUNTIMES_V2_PATH) + ['nvidia']},
    {'owner': 'gpu', 'resource': 'runtime:nvidia', 'kind': 'key',
     'path': list(CRI_V2_PATH) + ['containerd', 'default_runtime_name'], 'prior': '"runc"', 'value': '"nvidia"'},
]

_UNSET = object()


class FakeContext(object):
    """The engine's Context as the code under test reads it.

    answer: what ``run_command`` returns: an (rc, out, err) tuple for every
    command, a dict keyed by the command's last word, or a function of the
    command. params: the module's params (``ctx.module.params``); module=None
    for a context without a module. tree_files: set only when given (the edit
    then reads the tree's files from it).
    """

    def __init__(self, path=None, containerd_version=None, containerd_bin=None, owner=None, answer=(0, '', ''),
                 params=None, module=_UNSET, written=(), warnings=(), tree_files=_UNSET):
        self.path = path
        self.containerd_version = containerd_version
        self.containerd_bin = containerd_bin
        self.owner = owner
        self.answer = answer
        self.module = SimpleNamespace(params=params or {}) if module is _UNSET else module
        self.written = list(written)
        self.warnings = list(warnings)
        self.commands = []
        self.missing_allowed = []
        if tree_files is not _UNSET:
            self.tree_files = tree_files

    def warn(self, msg):
        self.warnings.append(msg)

    def allow_missing_import(self, entry):
        self.missing_allowed.append(entry)

    def run_command(self, cmd):
        self.commands.append(list(cmd))
        if callable(self.answer):
            return self.answer(cmd)
        if isinstance(self.answer, dict):
            return self.answer[cmd[-1]]
        return self.answer


def doc_and_ledger(tmp_path, text):
    """The document of text as tmp_path/config.toml, and an empty ledger for it under tmp_path/state."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    path = os.path.join(str(tmp_path), 'config.toml')
    return ConfigDocument(path, text), Ledger(str(tmp_path / 'state'), path)


def saved_ledger(tmp_path, records):
    """tmp_path/config.toml (version = 2) and a ledger under tmp_path/state holding records, saved as a call that
    wrote that file leaves it: (path, state_dir)."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import read_bytes, sha256_bytes
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    path = os.path.join(str(tmp_path), 'config.toml')
    with open(path, 'w') as f:
        f.write('version = 2\n')
    state_dir = str(tmp_path / 'state')
    ledger = Ledger(state_dir, path)
    for rec in records:
        ledger.add(rec)
    ledger.save(sha256_bytes(read_bytes(path)))
    return path, state_dir
