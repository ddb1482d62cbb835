# -*- coding: utf-8 -*-
"""How _config_model reads a config: the parser a node has (tomllib, tomlkit
only, a tomlkit too old, none at all), where a parse error is placed, which
versions and layouts are read, and the document's view of the edits.

test_config_model_parts.py holds the first cases of these rules; this file
the ones a mutation run found untested.
"""

import importlib.util
import os
import sys

import pytest
import tomlkit

from helpers.common import FIXTURES
from ansible_collections.nodeguard.containerd.plugins.module_utils._core import config_model as _config_model
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
    Layout,
    TomlParseError,
    detect_version,
    lock_or_fail,
    parse_error_message,
    parse_toml,
    split_bom,
    tomlkit_problem,
)

PATH = '/etc/containerd/config.toml'
CRI = 'io.containerd.grpc.v1.cri'


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def load_without(monkeypatch, *missing):
    """A fresh copy of _config_model as a node without these modules imports it."""
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)  # import raises ImportError
    spec = importlib.util.spec_from_file_location('ng_config_model_without_' + '_'.join(missing),
                                                  _config_model.__file__)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_failure(parse, text):
    with pytest.raises(TomlParseError) as exc:
        parse(text)
    return exc.value


# ------------------------------------------------------------------ the parser a node has
def test_a_node_without_tomllib_parses_with_tomlkit_and_keeps_its_places(monkeypatch):
    mod = load_without(monkeypatch, 'tomllib')
    assert mod.tomllib is None
    text = fixture('v2_toolkit_installed.toml')
    assert mod.parse_toml(text) == parse_toml(text)
    # a located tomlkit error is passed on as it is (no second "at line")
    err = parse_failure(mod.parse_toml, 'version = 2\nversion = 3\n')
    assert (err.line, err.col, str(err)) == (2, 0, 'Key "version" already exists. at line 2 col 0')
    # a key defined twice across a dotted key and a header is no ParseError in tomlkit: no place known
    err = parse_failure(mod.parse_toml, '[a]\nb = 1\n[a.b]\n')
    assert (err.line, err.col, str(err)) == (0, 0, 'Key "b" already exists. at line 0 col 0')


def test_a_tomlkit_error_that_carries_its_place_keeps_it(monkeypatch):
    mod = load_without(monkeypatch, 'tomllib')

    class Located(Exception):
        line, col = 3, 7

    def fail(_text):
        raise Located('odd table')
    monkeypatch.setattr(tomlkit, 'parse', fail)
    err = parse_failure(mod.parse_toml, 'a = 1\n')
    assert (err.line, err.col) == (3, 7) and 'odd table' in str(err)


def test_a_node_without_tomlkit_imports_and_leaves_the_refusal_to_the_module(monkeypatch):
    """The modules fail with missing_required_lib('tomlkit') and the import error."""
    mod = load_without(monkeypatch, 'tomlkit')
    assert mod.HAS_TOMLKIT is False and isinstance(mod.TOMLKIT_IMPORT_ERROR, ImportError)
    assert mod.tomlkit_problem() is None
    assert mod.TomlParseError is ValueError


@pytest.mark.parametrize('version, refused', [
    ('0.6.0', True), ('0.6.9', True), ('0.7.0', False), ('0.7.1', False), ('0.11.4', False), ('1.0.0', False),
])
def test_a_tomlkit_older_than_0_7_is_refused_with_the_install_fix(monkeypatch, version, refused):
    monkeypatch.setattr(tomlkit, '__version__', version)
    problem = tomlkit_problem()
    if not refused:
        assert problem is None
        return
    assert problem.startswith('tomlkit %s on this node (%s, Python %s) is too old: nodeguard needs tomlkit >= 0.7.0. '
                              'Nothing was read or written. Fix: pip install "tomlkit>=0.7.0" for the Python Ansible '
                              'uses on the node' % (version, tomlkit.__file__, sys.version.split()[0])), problem
    with pytest.raises(ConfigError) as exc:
        ConfigDocument(PATH, 'version = 2\n')
    assert str(exc.value) == problem
    assert exc.value.given_details() == dict(tomlkit=version, tomlkit_min='0.7.0')


# ------------------------------------------------------------------ where a parse error is
def test_a_trailing_comma_in_an_inline_table_is_refused_though_tomlkit_reads_it():
    """TOML 1.0 (and containerd) refuse it; tomlkit accepts it, so no place is known."""
    text = 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  x = { a = 1, }\n'
    err = parse_failure(parse_toml, text)
    assert (err.line, err.col) == (0, 0)
    assert str(err).startswith('Invalid initial character for a key part (at line 3, column 16)'), str(err)


def test_a_tomlkit_parse_error_is_reported_as_tomlkit_places_it():
    err = parse_failure(parse_toml, 'version = 2\n[plugins]\n  x = [1,,]\n')
    assert (err.line, err.col, str(err)) == (3, 9, "Unexpected character: ',' at line 3 col 9")


def test_a_key_defined_twice_at_the_end_of_the_file_has_no_place():
    err = parse_failure(parse_toml, '[a]\nb = 1\nb.c = 2')
    assert (err.line, err.col) == (0, 0) and 'Key "b" already exists.' in str(err)


def test_numbers_in_a_key_name_do_not_move_the_place_of_an_error():
    err = parse_failure(parse_toml, '[x]\n"gpu 2 a" = {}\n[x."gpu 2 a"]\n')
    assert (err.line, err.col) == (3, 13), (err.line, err.col, str(err))


def test_an_error_without_a_place_names_only_the_file():
    assert parse_error_message(PATH, ValueError('bad')) == PATH + ' is not valid TOML: bad'


def test_a_file_that_does_not_parse_is_refused_with_its_place_and_the_fix():
    with pytest.raises(ConfigError) as exc:
        ConfigDocument(PATH, 'version = 2\n[plugins\n')
    assert str(exc.value).startswith(PATH + ' is not valid TOML: line 2, column 8: Unexpected character'), str(exc.value)
    assert str(exc.value).endswith('. Nothing was written. Fix the file by hand, or put back a known-good copy with '
                                   'nodeguard.containerd.containerd_baseline (state: restore).')
    assert exc.value.given_details() == dict(line=2, col=8)


# ------------------------------------------------------------------ versions
def test_a_drop_in_without_a_version_is_read_with_the_main_files():
    assert detect_version('/etc/containerd/conf.d/99-nvidia.toml', {}, default_version=2) == 2
    assert detect_version('/etc/containerd/conf.d/99-nvidia.toml', {'version': 3}, default_version=2) == 3


def test_a_file_without_a_version_is_refused_as_version_1_with_the_migration():
    with pytest.raises(ConfigError) as exc:
        detect_version(PATH, {'plugins': {'cri': {}}})
    assert str(exc.value).startswith(PATH + ' has no "version" key, so containerd reads it as config version 1')
    assert 'Fix: migrate the file (containerd 2.x: "containerd config migrate"' in str(exc.value)
    assert exc.value.details == dict(key='version', found=None)
    assert exc.value.given_details() == dict(key='version')


def test_version_true_is_no_integer():
    with pytest.raises(ConfigError) as exc:
        detect_version(PATH, {'version': True})
    assert 'key "version" must be an integer, found True' in str(exc.value)


def test_an_unknown_version_is_named_with_the_fix():
    with pytest.raises(ConfigError) as exc:
        detect_version(PATH, {'version': 5})
    assert str(exc.value) == (PATH + ' declares version = 5, which nodeguard does not know (supported: 2, 3, 4). '
                              'Fix: check the file for a typo; containerd 1.6/1.7 use 2, containerd 2.x uses 3.')
    assert exc.value.given_details() == dict(key='version', found=5)


def test_the_legacy_version_refusal_names_the_file():
    with pytest.raises(ConfigError) as exc:
        detect_version(PATH, {'version': 1})
    assert str(exc.value).startswith(PATH + ' declares version = 1')
    assert str(exc.value).endswith('Fix: migrate the file to version 2 (containerd 1.6/1.7) or 3 (containerd 2.x) '
                                   'first.')


# ------------------------------------------------------------------ layouts
@pytest.mark.parametrize('version, runtimes, snapshotter', [
    (2, ('plugins', CRI, 'containerd', 'runtimes'), ('plugins', CRI, 'containerd', 'snapshotter')),
    (3, ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes'),
     ('plugins', 'io.containerd.cri.v1.images', 'snapshotter')),
    (4, ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes'),
     ('plugins', 'io.containerd.cri.v1.images', 'snapshotter')),
])
def test_each_version_keeps_the_cri_settings_where_containerd_reads_them(version, runtimes, snapshotter):
    layout = Layout(version)
    cri = runtimes[:2]
    assert layout.runtime('nvidia') == runtimes + ('nvidia',)
    assert layout.resolve('cri.default_runtime_name') == cri + ('containerd', 'default_runtime_name')
    assert layout.resolve('cri.enable_cdi') == cri + ('enable_cdi',)
    assert layout.resolve('cri.cdi_spec_dirs') == cri + ('cdi_spec_dirs',)
    assert layout.resolve('images.snapshotter') == snapshotter
    assert layout.resolve('images.disable_snapshot_annotations') == snapshotter[:-1] + (
        'disable_snapshot_annotations',)


def test_an_unknown_logical_key_lists_the_known_ones():
    with pytest.raises(ConfigError) as exc:
        Layout(2).resolve('cri.snapshotter')
    assert str(exc.value) == ("unknown logical key 'cri.snapshotter'; known keys: cri.cdi_spec_dirs, "
                              "cri.default_runtime_name, cri.enable_cdi, images.disable_snapshot_annotations, "
                              "images.snapshotter (or set raw: true and give a dotted path)")


# ------------------------------------------------------------------ the document
def test_a_read_document_shows_its_text_runtimes_and_whether_it_changed():
    text = fixture('v2_toolkit_installed.toml')
    doc = ConfigDocument(PATH, text)
    assert (doc.text, doc.changed, doc.bom) == (text, False, False)
    assert doc.data == parse_toml(text)
    assert sorted(doc.runtimes()) == ['runc'] and doc.default_runtime() == 'runc'
    doc.toml.set_value(doc.layout.default_runtime_name, 'nvidia')
    assert doc.changed and doc.text == text.replace('default_runtime_name = "runc"', 'default_runtime_name = "nvidia"')
    doc.verify()


def test_a_document_without_runtimes_has_none():
    doc = ConfigDocument(PATH, 'version = 3\n')
    assert doc.runtimes() == {} and doc.default_runtime() is None


def test_a_byte_order_mark_is_kept_apart_from_the_text():
    doc = ConfigDocument(PATH, u'\ufeffversion = 2\n')
    assert (doc.bom, doc.text, doc.version) == (True, 'version = 2\n', 2)
    assert split_bom('version = 2\n') == ('version = 2\n', False)


def test_a_layout_the_scanner_cannot_read_is_refused_naming_the_file(monkeypatch):
    """Valid TOML the text layer misreads must stop the run before any edit (no such file is known:
    the scanner is stood in for)."""
    def misread(_text, _data):
        raise _config_model.TomlLayoutError('unexpected text at offset 12')
    monkeypatch.setattr(_config_model, 'TomlText', misread)
    with pytest.raises(ConfigError) as exc:
        ConfigDocument(PATH, 'version = 2\n')
    assert str(exc.value) == (PATH + ': nodeguard cannot read the layout of this file (unexpected text at offset 12). '
                              'Nothing was written.')


def test_an_edit_that_breaks_the_file_is_refused_naming_it():
    doc = ConfigDocument(PATH, 'version = 2\n')
    doc.toml.text += '[plugins\n'  # what a scanner bug would leave behind
    with pytest.raises(ConfigError) as exc:
        doc.verify()
    assert str(exc.value).startswith(PATH + ': nodeguard could not make this edit without touching other content (')
    assert str(exc.value).endswith('). Nothing was written; please report the file layout.')


def test_an_edit_whose_text_does_not_give_the_promised_data_is_refused():
    doc = ConfigDocument(PATH, 'version = 2\n')
    doc.toml.data['oom_score'] = 0
    with pytest.raises(ConfigError) as exc:
        doc.verify()
    assert 'the edited text does not parse to the expected data' in str(exc.value)


# ------------------------------------------------------------------ the lock
def test_the_lock_is_taken_and_a_second_taker_times_out_by_name(tmp_path):
    path = os.path.join(str(tmp_path), 'config.toml')
    held = lock_or_fail(path, 1)
    try:
        assert os.path.exists(held.lock_path)
        with pytest.raises(ConfigError) as exc:
            lock_or_fail(path, 0.2)
        assert str(exc.value).startswith('could not lock %s within 0.2 seconds' % held.lock_path)
        assert exc.value.given_details() == dict(key='lock_timeout')
    finally:
        held.release()
