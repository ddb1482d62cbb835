# -*- coding: utf-8 -*-
"""The baseline store and the config tree reader."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    Attrs,
    OverlaySource,
    Store,
    _write_flushed,
    check_name,
    glob_match,
    read_tree,
    utc_now,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import _rebase_imports
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.restore import ledger_for_restore
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from helpers.baseline import Node


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), 'w') as f:
        f.write(text)
    return str(path)


@pytest.mark.parametrize('name', ['default', 'pre-gpu_1.2', 'A' * 64])
def test_good_names(name):
    check_name(name)


@pytest.mark.parametrize('name', ['', '.', '..', '../x', 'a/b', '-x', 'a b', 'A' * 65, '.hidden', 'x\n'])
def test_bad_names(name):
    with pytest.raises(ConfigError):
        check_name(name)


def test_glob_match_like_glob():
    assert glob_match('/etc/c/conf.d/*.toml', '/etc/c/conf.d/50-kata.toml')
    assert not glob_match('/etc/c/conf.d/*.toml', '/etc/c/conf.d/sub/50-kata.toml')
    assert not glob_match('/etc/c/conf.d/*.toml', '/etc/c/conf.d/.hidden.toml')
    assert glob_match('/etc/c/conf.d/.*.toml', '/etc/c/conf.d/.hidden.toml')
    assert glob_match('/etc/c/*/x.toml', '/etc/c/d/x.toml')


def test_read_tree_breadth_first_with_globs_relative_and_missing(tmp_path):
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["conf.d/*.toml", "/nope.toml", "b.toml"]\n')
    b = write(tmp_path / 'b.toml', 'version = 2\nimports = ["c.toml"]\n')
    c = write(tmp_path / 'c.toml', 'version = 2\n')
    z = write(tmp_path / 'conf.d' / 'z.toml', 'version = 2\nimports = ["../config.toml"]\n')
    a = write(tmp_path / 'conf.d' / 'a.toml', 'not toml = = \n')
    tree = read_tree(main)
    assert [f.path for f in tree.files] == [main, a, z, b, c]
    assert [f.role for f in tree.files] == ['config', 'import', 'import', 'import', 'import']
    assert tree.files[1].error and 'not valid TOML' in tree.files[1].error
    assert tree.missing == [dict(entry='/nope.toml', path='/nope.toml', imported_by=main)]
    assert tree.globs[0]['matched'] == [a, z]
    assert [f.path for f in read_tree(main, include_imports=False).files] == [main]
    assert read_tree(str(tmp_path / 'absent.toml')).config_missing


def test_overlay_source_adds_files_that_are_not_on_disk(tmp_path):
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["conf.d/*.toml", "gone.toml"]\n')
    gone = str(tmp_path / 'gone.toml')
    kata = str(tmp_path / 'conf.d' / '50-kata.toml')
    overlay = {gone: (b'version = 2\n', Attrs(0o600, 0, 0)), kata: (b'version = 2\n', Attrs(0o644, 0, 0))}
    tree = read_tree(main, True, OverlaySource(overlay))
    assert [f.path for f in tree.files] == [main, kata, gone] and tree.missing == []
    assert tree.files[2].attrs.mode == 0o600


def test_rebase_imports_only_touches_absolute_entries():
    text = "version = 3\n# keep\nimports = ['/etc/c/conf.d/*.toml', 'rel.toml']\n[a]\nb = 1\n"
    out = _rebase_imports(text, '/tmp/m')
    assert '/tmp/m/etc/c/conf.d/*.toml' in out and "'rel.toml'" in out and '# keep' in out


def test_ledger_copy_made_to_agree_with_the_restored_file():
    good = json.dumps({'format': 1, 'config_sha256': 'abc', 'records': [], 'previous': None}).encode()
    assert ledger_for_restore(good, 'abc') == good
    fixed = json.loads(ledger_for_restore(good, 'def').decode())
    assert fixed['config_sha256'] == 'def' and fixed['previous'] is None
    assert ledger_for_restore(None, 'abc') is None


class FakeTreeFile(object):
    def __init__(self, path, raw):
        self.path, self.raw, self.role = path, raw, 'config'
        self.attrs = Attrs(0o644, os.getuid(), os.getgid())
        self.entry = self.imported_by = None

    @property
    def sha256(self):
        import hashlib
        return hashlib.sha256(self.raw).hexdigest()


def _snap(store, n):
    _now, stamp = utc_now()
    return store.write(dict(format=1, ledger=None, config='/c.toml', include_imports=True),
                       [FakeTreeFile('/c.toml', b'v%d' % n)], None, stamp)


def test_store_write_load_prune_remove(tmp_path):
    store = Store(str(tmp_path / 'store'), 'default')
    assert store.lock(5) is not None
    assert store.load() is None
    folders = [_snap(store, n) for n in range(4)]
    assert len(set(folders)) == 4
    b = store.load()
    assert b.folder == folders[-1] and b.manifest['id'] == os.path.basename(folders[-1])
    assert b.read(b.config_record) == b'v3'
    assert oct(os.stat(b.stored_path(b.config_record)).st_mode & 0o777) == '0o600'
    assert oct(os.stat(os.path.dirname(b.stored_path(b.config_record))).st_mode & 0o777) == '0o700'
    assert store.prune(1) == folders[:2]
    assert store.snapshot_ids() == [os.path.basename(f) for f in folders[2:]]
    # leftovers of a killed run are cleaned by the next snapshot
    os.mkdir(os.path.join(store.folder, '.tmp-killed'))
    _snap(store, 9)
    assert not os.path.exists(os.path.join(store.folder, '.tmp-killed'))
    # a damaged copy is refused
    b = store.load()
    with open(b.stored_path(b.config_record), 'ab') as f:
        f.write(b'x')
    with pytest.raises(ConfigError) as exc:
        b.read(b.config_record)
    assert 'checksum mismatch' in str(exc.value)
    assert store.remove() and not os.path.exists(store.folder)
    assert not store.remove()
    store.unlock()


def test_store_refuses_folders_that_are_not_baselines(tmp_path):
    write(tmp_path / 'store' / 'etc' / 'passwd', 'root:x:0:0\n')
    store = Store(str(tmp_path / 'store'), 'etc')
    with pytest.raises(ConfigError):
        store.remove()
    with pytest.raises(ConfigError):
        _snap(store, 1)
    assert os.path.exists(str(tmp_path / 'store' / 'etc' / 'passwd'))


def test_the_store_root_is_made_private(tmp_path):
    # the baselines hold copies of config.toml and its ledger: only root reads them
    store = Store(str(tmp_path / 'nodeguard' / 'baselines'), 'default')
    old = os.umask(0o022)
    try:
        assert store.lock(5) is not None
    finally:
        os.umask(old)
        store.unlock()
    assert oct(os.stat(store.root).st_mode & 0o777) == '0o700'


def test_ids_with_no_name_on_this_node_are_kept_as_numbers():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import _group, _user
    assert _user(0) == 'root' and _group(0) == 'root'
    assert _user(2 ** 31 - 7) is None and _group(2 ** 31 - 7) is None


def test_a_file_whose_imports_is_no_array_is_a_problem_and_the_walk_goes_on(tmp_path):
    bad = write(tmp_path / 'bad.toml', 'version = 2\nimports = "oops"\n')
    good = write(tmp_path / 'good.toml', 'version = 2\nimports = ["%s"]\n' % (tmp_path / 'deep.toml'))
    deep = write(tmp_path / 'deep.toml', 'version = 2\n')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (bad, good))
    tree = read_tree(main)
    assert [f.path for f in tree.files] == [main, bad, good, deep]
    assert tree.problems == ['%s: "imports" is not an array' % bad]


def test_the_tree_is_read_breadth_first_as_containerd_loads_it(tmp_path):
    a2 = write(tmp_path / 'a2.toml', 'version = 2\n')
    b2 = write(tmp_path / 'b2.toml', 'version = 2\n')
    a = write(tmp_path / 'a.toml', 'version = 2\nimports = ["%s"]\n' % a2)
    b = write(tmp_path / 'b.toml', 'version = 2\nimports = ["%s"]\n' % b2)
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (a, b))
    assert [f.path for f in read_tree(main).files] == [main, a, b, a2, b2]


# ------------------------------------------------------------------ snapshots of a missing config, stored copies, keep and clean
def test_a_config_missing_then_and_now_is_the_same_tree_and_no_new_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=None)
    assert read_tree(node.path).config_missing is True
    first = node.run()
    again = node.run(overwrite=True)
    assert not again['changed'] and again['snapshot'] == first['snapshot']
    node.write('v2_kubeadm.toml')
    assert read_tree(node.path).config_missing is False
    taken = node.run(overwrite=True)
    assert taken['changed'] and not node.run(overwrite=True)['changed']
    assert len(node.snapshots()) == 2


def test_the_files_of_a_result_name_their_stored_copies(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    r = node.run()
    (f,) = r['files']
    assert (f['path'], f['role']) == (node.path, 'config')
    assert f['stored'].startswith(r['snapshot'] + os.sep)
    with open(f['stored'], 'rb') as copy:
        assert copy.read() == node.read(mode='rb')
    assert node.run(state='check')['files'] == r['files']


def test_keep_beyond_the_older_snapshots_prunes_none(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write('v2_flat.toml')
    node.run(overwrite=True)
    node.write('v2_kubeadm.toml')
    last = node.run(overwrite=True, keep=5)
    assert last['pruned'] == [] and len(node.snapshots()) == 3
    same = node.run(overwrite=True, keep=2)
    assert not same['changed'] and same['pruned'] == [] and len(node.snapshots()) == 3


def test_cleaning_a_store_folder_that_does_not_exist_is_no_error(tmp_path):
    store = Store(str(tmp_path / 'store'), 'default')
    assert store.clean_temps() is None
    assert not os.path.exists(store.folder)


# ------------------------------------------------------------------ globs, stored files never written over
@pytest.mark.parametrize('pattern, path, matches', [
    ('/etc/containerd/conf.d/*.toml', '/etc/containerd/conf.d/a.toml', True),
    ('/etc/containerd/*/x.toml', '/etc/containerd/conf.d', False),       # the pattern is longer than the path
    ('/etc/containerd/*.toml', '/etc/containerd/conf.d/a.toml', False),  # the path is longer than the pattern
    ('/etc/containerd/conf.d/*.toml', '/etc/containerd/conf.d/.hidden.toml', False),
    # glob.glob finds no hidden file for a pattern that does not start with "." (fnmatch alone would match)
    ('/etc/containerd/conf.d/[.]hidden.toml', '/etc/containerd/conf.d/.hidden.toml', False),
    ('/etc/containerd/conf.d/.hidden.toml', '/etc/containerd/conf.d/.hidden.toml', True),
])
def test_glob_match_as_glob_finds(pattern, path, matches):
    assert glob_match(pattern, path) is matches


def test_a_stored_file_is_never_written_over(tmp_path):
    target = str(tmp_path / 'stored')
    _write_flushed(target, b'one')
    with pytest.raises(OSError):
        _write_flushed(target, b'two')
    assert open(target, 'rb').read() == b'one'


def test_a_file_listed_before_a_glob_that_matches_it_too_does_not_hide_the_next_match(tmp_path):
    folder = tmp_path / 'conf.d'
    folder.mkdir()
    for name in ('a.toml', 'b.toml'):
        (folder / name).write_text('version = 2\n')
    config = tmp_path / 'config.toml'
    config.write_text('version = 2\nimports = ["%s", "%s"]\n' % (folder / 'a.toml', folder / '*.toml'))
    tree = read_tree(str(config), True)
    assert sorted(os.path.basename(f.path) for f in tree.files) == ['a.toml', 'b.toml', 'config.toml']
    assert tree.missing == []
