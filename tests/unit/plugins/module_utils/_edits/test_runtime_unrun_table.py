# -*- coding: utf-8 -*-
"""A runtime config.toml defines whose table containerd 1.x does not run (a drop-in's CRI table replaces it):
the edit callback's own message names the file, the runtime, the drop-in and the fix, whoever calls it; the
engine (edit_in: config) gives one fix, its own."""

import os

import pytest

from helpers.common import CONTAINERD_17
from helpers.context import doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import EditElsewhere
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import apply_runtime
from helpers.context import FakeContext

CRI = 'io.containerd.grpc.v1.cri'
MAIN = ('version = 2\nimports = ["%s"]\n\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n\n'
        '[plugins."%s".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n\n'
        '[plugins."%s".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n')
DROPIN = ('version = 2\n\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n\n'
          '[plugins."%s".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n' % (CRI, CRI))


def _tree(folder):
    dropin = os.path.join(str(folder), 'gpu.toml')
    with open(dropin, 'w') as f:
        f.write(DROPIN)
    return dropin, MAIN % (dropin, CRI, CRI, CRI)


def test_the_message_names_the_file_the_runtime_and_the_fix(tmp_path):
    dropin, text = _tree(tmp_path)
    doc, ledger = doc_and_ledger(tmp_path, text)
    with pytest.raises(EditElsewhere) as err:
        apply_runtime(doc, ledger, FakeContext(containerd_version=(1, 7)),
                      dict(name='kata', owner='coco', state='present',
                           options={'ConfigPath': '/etc/kata/configuration.toml'}))
    assert str(err.value) == (
        '%s: runtime kata is defined here, but containerd 1.7 does not run this table: %s defines plugins."%s" too '
        'and its table replaces this one. Fix: make the change to runtime kata in %s, where containerd reads it '
        '(edit_in: auto writes it there).' % (doc.path, dropin, CRI, dropin))
    assert err.value.path == dropin and doc.text == text and ledger.records == []


def test_edit_in_config_gives_one_fix(run_module, workdir):
    assert CONTAINERD_17, 'run make deps'
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    dropin, text = _tree(etc)
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write(text)
    res = run_module('containerd_runtime', expect_fail=True, path=main, name='kata', edit_in='config',
                     containerd_bin=CONTAINERD_17, options={'ConfigPath': '/etc/kata/configuration.toml'})
    assert res['msg'].count('Fix:') == 1, res['msg']
    assert res['msg'].endswith('Nothing was written. Fix: edit_in: auto (or edit_in: %s) writes the change there.'
                               % dropin), res['msg']
    with open(main) as f:
        assert f.read() == text
