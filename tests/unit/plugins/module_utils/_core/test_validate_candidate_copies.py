# -*- coding: utf-8 -*-
"""The copies the check step hands containerd when the tree imports a file being replaced (a self-import, as
NVIDIA's toolkit v1.17.8 writes): each copy is written once, through the transaction's temp(), on the real
containerd 1.6; a copy that cannot be written fails as any temporary file does, and none is left behind."""

import errno
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_1, assert_containerd_accepts, fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import TEMP_SUFFIX, write_temp
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError, parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    copies_for_containerd,
    load_tree,
    without_imports_of,
)
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_setting

CRI = 'io.containerd.grpc.v1.cri'
V16 = (1, 6)


def _self_importing_tree(tmp_path):
    """config.toml importing itself and a drop-in that imports config.toml back."""
    main, dropin = str(tmp_path / 'config.toml'), str(tmp_path / 'gpu.toml')
    with open(dropin, 'w') as f:
        f.write('version = 2\nimports = ["%s"]\noom_score = -999\n' % main)
    text = fixture_text('v2_kubeadm.toml').replace('version = 2', 'version = 2\nimports = ["%s", "%s"]'
                                                   % (main, dropin), 1)
    with open(main, 'w') as f:
        f.write(text)
    return main, dropin, text


def test_each_copy_is_written_once_and_containerd_reads_the_candidate(tmp_path):
    assert CONTAINERD_1, 'containerd 1.6 is needed (make deps)'
    main, dropin, text = _self_importing_tree(tmp_path)
    candidate = text.replace('snapshotter = "overlayfs"', 'snapshotter = "native"')
    assert candidate != text
    files, problems = load_tree(main, parse_toml(candidate), V16)
    assert problems == [] and [p for p, _d in files] == [main, dropin]
    writes = []

    def write(path, text):
        writes.append(path)
        return write_temp(path, text.encode('utf-8'))

    copy = copies_for_containerd(files, {main: candidate}, {}, write, V16)
    assert sorted(writes) == sorted([main, dropin])  # one copy of each file, each written once
    copies = [os.path.join(str(tmp_path), n) for n in os.listdir(str(tmp_path)) if n.endswith(TEMP_SUFFIX)]
    assert len(copies) == 2 and copy in copies
    main_copy = parse_toml(read(copy))
    [dropin_copy] = [c for c in copies if c != copy]
    assert main_copy['imports'] == [dropin_copy]
    assert 'imports' not in parse_toml(read(dropin_copy)) or parse_toml(read(dropin_copy))['imports'] == []
    dump = parse_toml(assert_containerd_accepts(copy, CONTAINERD_1))
    assert dump['plugins'][CRI]['containerd']['snapshotter'] == 'native'  # the candidate, not the live file
    assert dump['oom_score'] == -999  # the drop-in is read


def test_a_drop_in_that_cannot_be_read_is_a_config_error_naming_it(tmp_path):
    main, dropin, text = _self_importing_tree(tmp_path)
    files, _problems = load_tree(main, parse_toml(text), V16)
    os.remove(dropin)
    with pytest.raises(ConfigError) as err:
        copies_for_containerd(files, {main: text}, {}, lambda p, t: write_temp(p, t.encode('utf-8')), V16)
    assert str(err.value).startswith('cannot read %s (No such file or directory)' % dropin)
    assert 'Fix: ' in str(err.value)


def _run(path, state, tmp, capsys):
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()
    params = dict(path=path, state_dir=state, key='images.snapshotter', value='native', owner='gpu',
                  containerd_bin=CONTAINERD_1, _ansible_tmpdir=tmp, _ansible_remote_tmp=tmp)
    with patch_module_args(params):
        with pytest.raises(SystemExit):
            containerd_setting.main()
    return json.loads(capsys.readouterr().out)


def test_a_copy_that_cannot_be_written_fails_clearly_and_leaves_no_file(tmp_path, capsys, monkeypatch):
    assert CONTAINERD_1, 'containerd 1.6 is needed (make deps)'
    etc = tmp_path / 'etc'
    etc.mkdir()
    main, dropin, text = _self_importing_tree(etc)
    calls = []

    def full_disk(path, data, **kw):
        calls.append(path)
        if len(calls) > 1 and data:  # the candidate is written; its copies for containerd find the disk full
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return write_temp(path, data, **kw)

    monkeypatch.setattr(_engine, 'write_temp', full_disk)
    res = _run(main, str(tmp_path / 'state'), str(tmp_path), capsys)
    assert res.get("failed") and len(calls) == 2, res.get("msg")
    assert res['msg'].startswith('cannot write a temporary file beside %s (No space left on device). Nothing was '
                                 'written; the file is as it was. Fix: free space on that filesystem or make %s '
                                 'writable.' % (calls[1], etc)), res['msg']
    left = sorted(n for n in os.listdir(str(etc)) if not n.endswith('.nodeguard.lock'))
    assert left == ['config.toml', 'gpu.toml'] and read(main) == text


# ------------------------------------------------------------------ drop-ins that import each other
def _nested_tree(tmp_path):
    """config.toml importing the edited drop-in t, a drop-in b that imports t, and a drop-in c that imports an
    unrelated x, then b and t: every importer of t (and of b) must be handed to containerd as a copy."""
    paths = dict((n, str(tmp_path / ('%s.toml' % n))) for n in ('config', 't', 'b', 'c', 'x'))
    texts = {
        'config': 'version = 2\nimports = ["%(t)s", "%(b)s", "%(c)s"]\n',
        't': 'version = 2\noom_score = -1\n',
        'b': 'version = 2\nimports = ["%(t)s"]\n',
        'c': 'version = 2\nimports = ["%(x)s", "%(b)s", "%(t)s"]\n',
        'x': 'version = 2\n[debug]\n  level = "debug"\n',
    }
    for name, text in texts.items():
        with open(paths[name], 'w') as f:
            f.write(text % paths)
    return paths


def test_no_copy_leads_containerd_back_to_the_live_file_being_replaced(tmp_path):
    """The edit of drop-in t as the check step hands it over: t's candidate written already, config.toml
    spelled out. b and c import t; c imports b too: c's copy must name neither b nor t, or containerd would
    load the live b and through it the live t, whose old value wins (it is read last)."""
    assert CONTAINERD_1, 'containerd 1.6 is needed (make deps)'
    paths = _nested_tree(tmp_path)
    main, t = paths['config'], paths['t']
    candidate = 'version = 2\noom_score = -2\n'
    files, problems = load_tree(main, parse_toml(read(main)), V16, overrides={t: parse_toml(candidate)})
    assert problems == [] and [p for p, _d in files] == [main, t, paths['b'], paths['c'], paths['x']]
    t_candidate = write_temp(t, candidate.encode('utf-8'))
    copy = copies_for_containerd(files, {main: read(main), t: candidate}, {t: t_candidate},
                                 lambda path, text: write_temp(path, text.encode('utf-8')), V16)
    t_copy, b_copy, c_copy, x = parse_toml(read(copy))['imports']
    assert t_copy == t_candidate and x == paths['x'] and os.path.dirname(c_copy) == str(tmp_path)
    assert parse_toml(read(b_copy)).get('imports', []) == []
    assert parse_toml(read(c_copy))['imports'] == [paths['x']]  # x is no copy: its entry stays, in its place
    dump = parse_toml(assert_containerd_accepts(copy, CONTAINERD_1))
    assert dump['oom_score'] == -2  # the candidate of t, never the live t
    assert dump['debug']['level'] == 'debug'  # x is read


def test_a_drop_in_that_is_no_longer_utf8_when_copied_is_a_config_error_naming_it(tmp_path):
    main, dropin, text = _self_importing_tree(tmp_path)
    files, _problems = load_tree(main, parse_toml(text), V16)
    with open(dropin, 'wb') as f:  # rewritten by someone else after the tree was read
        f.write(b'version = 2\n# caf\xe9\n')
    with pytest.raises(ConfigError) as err:
        copies_for_containerd(files, {main: text}, {}, lambda p, t: write_temp(p, t.encode('utf-8')), V16)
    assert str(err.value).startswith('cannot read %s: it is not UTF-8 (' % dropin)
    assert str(err.value).endswith('). Nothing was written. Fix: save it as UTF-8.')
    assert not [n for n in os.listdir(str(tmp_path)) if n.endswith(TEMP_SUFFIX)]


@pytest.mark.parametrize('text', ['version = 2\noom_score = -1\n', 'version = 2\nimports = "conf.d/*.toml"\n',
                                  'version = 2\nimports = ["/etc/containerd/conf.d/a.toml"]\n'])
def test_a_file_that_imports_none_of_the_copied_files_is_handed_back_as_it_is(text):
    # no imports, an imports that is no list (the checks name that), or only files that are not copied
    copied = set(['/etc/containerd/config.toml', '/etc/containerd/conf.d/b.toml'])
    assert without_imports_of(text, parse_toml(text), '/etc/containerd/conf.d/x.toml', copied, V16) == text
