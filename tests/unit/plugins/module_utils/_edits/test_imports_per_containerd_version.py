# -*- coding: utf-8 -*-
"""Which imports entries are one entry depends on the node's containerd.

1.6 expands a relative glob against its working folder (``/`` under
systemd), 1.7 and 2.x against the importing file's folder: folding the
relative spelling into the absolute one (or back) is only safe where the
binary resolves both alike.  The real binaries' ``config dump``, run from
``/``, says which drop-ins the folded file still loads.
"""

import os
import subprocess

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2
from helpers.context import FakeContext

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import load_tree, resolve_import
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import (
    ImportsArray,
    apply_imports,
    clean_imports,
)

NYDUS = '\n[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/nydus.sock"\n'
# (binary, its version, the config version it reads)
BINARIES = {'1.6': (CONTAINERD_1, (1, 6), 2), '1.7': (CONTAINERD_17, (1, 7), 2), '2.1': (CONTAINERD_2, (2, 1), 3)}


def binary_of(name):
    binary, ver, version = BINARIES[name]
    if binary is None:
        pytest.fail('containerd %s is not unpacked: run `make deps`' % name)
    return binary, ver, version


def tree(tmp_path, version, entries):
    """config.toml importing entries ($R: its folder), beside conf.d/nydus.toml; its ConfigDocument."""
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    (etc / 'conf.d' / 'nydus.toml').write_text('version = %d\n%s' % (version, NYDUS))
    path = str(etc / 'config.toml')
    text = 'version = %d\nimports = [%s]\n' % (version, ', '.join('"%s"' % e.replace('$R', str(etc)) for e in entries))
    with open(path, 'w') as f:
        f.write(text)
    return ConfigDocument(path, text), str(etc)


def loads_nydus(path, binary):
    proc = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False, cwd='/')
    assert proc.returncode == 0, proc.stderr[-2000:]
    return 'nydus' in (tomlkit.parse(proc.stdout).unwrap().get('proxy_plugins') or {})


@pytest.mark.parametrize('name,folded', [('1.6', False), ('1.7', True), ('2.1', True)])
def test_repair_folds_a_relative_glob_into_its_absolute_spelling_only_where_containerd_reads_them_alike(
        tmp_path, name, folded):
    binary, ver, version = binary_of(name)
    doc, etc = tree(tmp_path, version, ['$R/conf.d/*.toml', 'conf.d/*.toml'])
    assert loads_nydus(doc.path, binary)
    out = clean_imports(doc, drop_missing=True, containerd_ver=ver)
    assert out['duplicates_removed'] == (['conf.d/*.toml'] if folded else [])
    with open(doc.path, 'w') as f:
        f.write(doc.text)
    assert loads_nydus(doc.path, binary)
    # the model's walk loads what containerd loads
    files, _problems = load_tree(doc.path, doc.data, ver)
    assert os.path.join(etc, 'conf.d', 'nydus.toml') in [p for p, _d in files]


def test_the_imports_array_compares_entries_as_the_given_containerd_resolves_them(tmp_path):
    doc, etc = tree(tmp_path, 2, ['conf.d/*.toml', '$R/conf.d/*.toml', 'conf.d/nydus.toml', '$R/conf.d/nydus.toml'])
    assert ImportsArray(doc, (1, 6)).duplicate_indexes() == [3]
    assert ImportsArray(doc, (1, 6)).keys()[0] == '/conf.d/*.toml'
    assert ImportsArray(doc, (1, 7)).duplicate_indexes() == [1, 3]
    assert ImportsArray(doc).duplicate_indexes() == [1, 3]     # version unknown: as 1.7 and 2.x
    assert ImportsArray(doc, (1, 6)).keys()[1] == os.path.join(etc, 'conf.d', '*.toml')


def params(imports, **kw):
    p = dict(imports=imports, owner='coco', state='present', position='append', require_exists=True,
             prune_missing=False, allow_plugin_override=False)
    p.update(kw)
    return p


def test_an_owner_removes_its_relative_glob_also_by_a_record_named_after_the_configs_folder(tmp_path):
    # a record written while entries were compared against the config's folder alone still belongs to the entry
    doc, etc = tree(tmp_path, 2, ['$R/conf.d/*.toml'])
    original = doc.text
    ledger = Ledger(str(tmp_path / 'state'), doc.path)
    ledger.add({'owner': 'coco', 'resource': 'import:' + resolve_import('conf.d/*.toml', doc.path), 'kind': 'import',
                'entry': 'conf.d/*.toml', 'added': True, 'created_key': False})
    doc.toml.restore_raw(('imports',), '["%s/conf.d/*.toml", "conf.d/*.toml"]' % etc)
    ctx = FakeContext(path=doc.path, containerd_version=(1, 6))
    out = apply_imports(doc, ledger, ctx, params(['conf.d/*.toml'], state='absent'))
    assert out['removed'] == ['conf.d/*.toml'] and out['kept'] == []
    assert doc.text == original and ledger.select(owner='coco') == []


def test_a_relative_glob_is_warned_of_only_where_containerd_expands_it_elsewhere(tmp_path):
    doc, etc = tree(tmp_path, 2, [])
    for ver, warned in (((1, 6), True), ((1, 7), False), ((2, 1), False), (None, False)):
        doc = ConfigDocument(doc.path, 'version = 2\n')
        ctx = FakeContext(path=doc.path, containerd_version=ver)
        out = apply_imports(doc, Ledger(str(tmp_path / 'state'), doc.path), ctx, params(['conf.d/*.toml']))
        assert out['added'] == ['conf.d/*.toml']
        mine = [w for w in ctx.warnings if 'working folder' in w]
        assert bool(mine) == warned, (ver, ctx.warnings)
        if warned:
            assert mine[0].startswith(doc.path + ': containerd 1.6 ')
            assert '/conf.d/*.toml (0 file(s) now)' in mine[0]
            assert 'write the entry absolute: %s/conf.d/*.toml.' % etc in mine[0]
