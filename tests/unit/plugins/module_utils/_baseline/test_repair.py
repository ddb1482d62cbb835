# -*- coding: utf-8 -*-
"""Putting protected keys back into a document, checked by re-parsing the text."""

import copy

import pytest
import tomlkit

from helpers.common import fixture_text

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import (
    DEFAULT_PROTECT,
    lookup,
    same_tree,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.repair import put_back, repair
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument, ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import clean_imports

CRI2 = 'io.containerd.grpc.v1.cri'
RUNC2 = ('plugins', CRI2, 'containerd', 'runtimes', 'runc')


def doc_of(text, path='/etc/containerd/config.toml'):
    return ConfigDocument(path, text)


def finish(doc):
    """The engine's own verification: the text parses to exactly the data promised."""
    doc.verify()
    assert tomlkit.parse(doc.text).unwrap() == doc.data
    return doc.text


def _sorted(d):
    return dict((k, _sorted(v) if isinstance(v, dict) else v) for k, v in sorted(d.items()))


def reserialised_without_runc(text):
    data = tomlkit.parse(text).unwrap()
    rts = data['plugins'][CRI2]['containerd']['runtimes']
    rts['nvidia'] = copy.deepcopy(rts['runc'])
    rts['nvidia']['options']['BinaryName'] = '/usr/bin/nvidia-container-runtime'
    del rts['runc']
    return tomlkit.dumps(_sorted(data))


def test_repair_puts_runc_back_keeps_nvidia_and_is_idempotent():
    original = fixture_text('v2_kubeadm.toml')
    base = doc_of(original)
    doc = doc_of(reserialised_without_runc(original))
    out = repair(doc, base, DEFAULT_PROTECT, clean_imports)
    text = finish(doc)
    assert out['restored'] == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    data = tomlkit.parse(text).unwrap()
    assert data['plugins'][CRI2]['containerd']['runtimes']['runc'] == lookup(base.data, RUNC2)
    assert 'nvidia' in data['plugins'][CRI2]['containerd']['runtimes']
    again = doc_of(text)
    assert repair(again, base, DEFAULT_PROTECT, clean_imports)['restored'] == []
    assert again.text == text


def test_repair_of_an_untouched_file_changes_nothing():
    original = fixture_text('v2_kubeadm.toml')
    doc = doc_of(original)
    out = repair(doc, doc_of(original), DEFAULT_PROTECT, clean_imports)
    assert out == dict(restored=[], restored_keys=[], left=[], duplicates_removed=[], removed_missing=[])
    assert doc.text == original


def test_changed_table_is_fixed_key_by_key_in_place():
    original = fixture_text('v2_kubeadm.toml')
    changed = original.replace('            SystemdCgroup = true\n', '            BinaryName = "/x"\n') \
        .replace('          runtime_root = ""\n', '')
    doc = doc_of(changed)
    repair(doc, doc_of(original), DEFAULT_PROTECT, clean_imports)
    text = finish(doc)
    assert same_tree(lookup(doc.data, RUNC2), lookup(doc_of(original).data, RUNC2))
    # nothing moved: same lines as the original, except runtime_root now sits after the other keys
    assert sorted(text.splitlines()) == sorted(original.splitlines())


def test_added_protected_key_is_removed_and_scalar_keeps_its_quoting():
    original = fixture_text('v3_default.toml')
    base = doc_of(original)
    text = original.replace("default_runtime_name = 'runc'", "default_runtime_name = 'nvidia'")
    doc = doc_of(text)
    repair(doc, base, ['cri.default_runtime_name'], clean_imports)
    assert finish(doc) == original
    # a key the baseline did not have is removed again
    doc = doc_of(original.replace("    enable_cdi = true\n", "    enable_cdi = true\n    cdi_spec_dirs2 = ['/x']\n"))
    out = repair(doc, base, ["cri.cdi_spec_dirs2"], clean_imports)
    assert out['restored_keys'][0]['change'] == 'added'
    assert finish(doc) == original


def runc_put_back(base_text, cur_text):
    """cur_text with the baseline's runc table put back, as the engine verifies it; and the baseline."""
    doc = doc_of(cur_text)
    base = doc_of(base_text)
    put_back(doc, base, RUNC2, lookup(base.data, RUNC2), None)
    return finish(doc), base


def test_table_written_inline_in_the_baseline_is_rendered_as_sections():
    base_text = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n'
                 'runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } }\n')
    cur_text = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
    text, base = runc_put_back(base_text, cur_text)
    assert '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]' in text
    assert lookup(tomlkit.parse(text).unwrap(), RUNC2) == lookup(base.data, RUNC2)


def test_whole_cri_plugin_put_back_into_a_file_that_lost_it():
    original = fixture_text('v2_kubeadm.toml')
    base = doc_of(original)
    doc = doc_of('version = 2\n\n[metrics]\n  address = "127.0.0.1:1338"\n')
    repair(doc, base, ['cri'], clean_imports)
    text = finish(doc)
    assert lookup(tomlkit.parse(text).unwrap(), ('plugins', CRI2)) == lookup(base.data, ('plugins', CRI2))


def test_repair_folds_imports(tmp_path):
    drop = tmp_path / 'a.toml'
    drop.write_text('version = 2\n')
    gone = tmp_path / 'gone.toml'
    path = str(tmp_path / 'config.toml')
    original = fixture_text('v2_flat.toml')
    text = original.replace('version = 2\n', 'version = 2\nimports = ["%s", "%s", "%s"]\n' % (drop, drop, gone))
    doc = doc_of(text, path)
    out = repair(doc, doc_of(original, path), DEFAULT_PROTECT, clean_imports)
    finish(doc)
    assert out['duplicates_removed'] == [str(drop)] and out['removed_missing'] == [str(gone)]
    assert doc.data['imports'] == [str(drop)]


def test_versions_must_match():
    with pytest.raises(ConfigError) as exc:
        repair(doc_of(fixture_text('v3_default.toml')), doc_of(fixture_text('v2_kubeadm.toml')),
               DEFAULT_PROTECT, clean_imports)
    assert 'state: restore' in str(exc.value)


RUNTIMES_TEXT = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n\n'
                 '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                 '  runtime_type = "io.containerd.runc.v2"\n')


@pytest.mark.parametrize('added', [
    # a table someone added as sections, and one added as an inline table
    '\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'
    '  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata.options]\n    ConfigPath = "/c"\n',
    '  kata = { runtime_type = "io.containerd.kata.v2" }\n',
])
def test_a_protected_table_someone_added_is_removed_however_it_is_written(added):
    base = doc_of(RUNTIMES_TEXT)
    if added.startswith('\n'):
        doc = doc_of(RUNTIMES_TEXT + added)
    else:
        doc = doc_of(RUNTIMES_TEXT.replace('  default_runtime_name = "runc"\n', '  default_runtime_name = "runc"\n'
                                           '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes]\n' + added))
    out = repair(doc, base, ['cri.runtimes'], clean_imports)
    assert out['restored_keys'], out
    text = finish(doc)
    assert 'kata' not in text, text
    assert lookup(tomlkit.parse(text).unwrap(), RUNC2[:-1]) == lookup(base.data, RUNC2[:-1])


def test_a_table_put_back_into_a_flat_file_keeps_its_multi_line_values_as_written():
    base_text = RUNTIMES_TEXT + ('  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n'
                                 '    Args = ["--a",\n      "--b"]\n')
    flat = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'
    text = runc_put_back(base_text, flat)[0]
    assert '    Args = ["--a",\n      "--b"]\n' in text, text
    # without a multi-line value the table is written flat, like the file (a last line without its newline too)
    assert '\nruntime_type = "io.containerd.runc.v2"\n' in runc_put_back(RUNTIMES_TEXT.rstrip('\n'), flat)[0]
