# -*- coding: utf-8 -*-
"""The baseline store (_baseline) when something is off: damaged or missing copies, a store that cannot
be made, a folder that is not ours, snapshots taken in the same microsecond, a write that fails half
way, leftovers of a killed run; and the tree reader on files that are not plain configs."""

import errno
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import (
    Attrs,
    DiskSource,
    OverlaySource,
    Store,
    TreeFile,
    read_tree,
    utc_now,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from helpers.baseline import locked_store


def write(path, data):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), 'wb' if isinstance(data, bytes) else 'w') as f:
        f.write(data)
    return str(path)


def tree_file(path, raw, role='config'):
    return TreeFile(path, raw, Attrs(0o644, 0, 0), role)


def snapshot(store, raw=b'version = 2\n', ledger=None, dump=None, stamp=None, effective=None):
    """One snapshot of /etc/containerd/config.toml holding raw; returns the loaded baseline."""
    if stamp is None:
        _now, stamp = utc_now()
    manifest = dict(format=1, config='/etc/containerd/config.toml', include_imports=True,
                    ledger=dict(path='/state/ledger.json', sha256=sha256_bytes(ledger)) if ledger is not None else None)
    if effective is not None:
        manifest['effective'] = effective
    store.write(manifest, [tree_file('/etc/containerd/config.toml', raw)], ledger, stamp, dump)
    return store.load()


@pytest.fixture
def store(tmp_path):
    with locked_store(tmp_path / 'store') as s:
        yield s


# ------------------------------------------------------------------ the tree
def test_a_config_with_a_byte_order_mark_is_read_and_its_bytes_kept(tmp_path):
    raw = b'\xef\xbb\xbfversion = 2\n'
    main = write(tmp_path / 'config.toml', raw)
    (f,) = read_tree(main).files
    assert f.error is None and f.data == {'version': 2} and f.raw == raw


def test_a_config_that_is_not_utf8_is_kept_with_the_byte_named(tmp_path):
    main = write(tmp_path / 'config.toml', b'version = 2\n# caf\xe9\n')
    (f,) = read_tree(main).files
    assert f.error == '%s is not UTF-8 text (byte 17)' % main and f.data is None


def test_an_imports_entry_that_is_no_string_is_a_problem_and_the_next_entry_is_read(tmp_path):
    dropin = write(tmp_path / 'a.toml', 'version = 2\n')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = [7, "%s"]\n' % dropin)
    tree = read_tree(main)
    assert tree.problems == ['%s: imports entry 7 is not a string' % main]
    assert [f.path for f in tree.files] == [main, dropin]


def test_a_dropin_without_imports_does_not_end_the_walk(tmp_path):
    # containerd reads every file breadth first: a leaf listed first does not hide the next file's imports
    leaf = write(tmp_path / 'leaf.toml', 'version = 2\n')
    deep = write(tmp_path / 'deep.toml', 'version = 2\n')
    mid = write(tmp_path / 'mid.toml', 'version = 2\nimports = ["%s"]\n' % deep)
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (leaf, mid))
    assert [f.path for f in read_tree(main).files] == [main, leaf, mid, deep]


def test_a_missing_import_is_recorded_and_the_next_entry_is_read(tmp_path):
    there = write(tmp_path / 'b.toml', 'version = 2\n')
    gone = str(tmp_path / 'a.toml')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (gone, there))
    tree = read_tree(main)
    assert tree.missing == [dict(entry=gone, path=gone, imported_by=main)]
    assert [f.path for f in tree.files] == [main, there]


def test_a_dangling_link_a_glob_matches_is_missing_and_the_next_match_is_read(tmp_path):
    conf_d = tmp_path / 'conf.d'
    os.makedirs(str(conf_d))
    os.symlink(str(tmp_path / 'nowhere.toml'), str(conf_d / 'a.toml'))
    there = write(conf_d / 'b.toml', 'version = 2\n')
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d)
    tree = read_tree(main)
    assert tree.missing == [dict(entry='%s/*.toml' % conf_d, path=str(conf_d / 'a.toml'), imported_by=main)]
    assert [f.path for f in tree.files] == [main, there]


def test_a_folder_where_a_file_is_expected_is_refused(tmp_path):
    os.makedirs(str(tmp_path / 'conf.d' / 'a.toml'))
    main = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s"]\n' % (tmp_path / 'conf.d' / 'a.toml'))
    with pytest.raises(ConfigError) as exc:
        read_tree(main)
    assert str(exc.value) == '%s is not a regular file; nodeguard only copies files.' % (tmp_path / 'conf.d' / 'a.toml')


def test_a_path_through_a_file_is_missing_and_other_errors_are_raised(tmp_path):
    plain = write(tmp_path / 'plain', 'x')
    assert DiskSource().read(os.path.join(plain, 'config.toml')) is None   # ENOTDIR
    loop = str(tmp_path / 'loop.toml')
    os.symlink(loop, loop)
    with pytest.raises(OSError) as exc:
        DiskSource().read(loop)
    assert exc.value.errno == errno.ELOOP


def test_an_overlay_file_stands_in_for_the_one_on_disk(tmp_path):
    main = write(tmp_path / 'config.toml', 'version = 2\n# on disk\n')
    mine = (b'version = 2\n# baseline\n', Attrs(0o600, 0, 0))
    (f,) = read_tree(main, True, OverlaySource({main: mine})).files
    assert f.raw == mine[0] and f.attrs.mode == 0o600


# ------------------------------------------------------------------ reading a baseline
def test_the_ledger_copy_is_checked_against_its_checksum(store):
    b = snapshot(store, ledger=b'{"records": []}\n')
    assert b.ledger_bytes() == b'{"records": []}\n'
    with open(os.path.join(b.folder, 'ledger.json'), 'ab') as f:
        f.write(b' ')
    with pytest.raises(ConfigError) as exc:
        b.ledger_bytes()
    assert str(exc.value).startswith('the ledger copy in baseline %s is damaged (checksum mismatch)' % b.folder)
    os.unlink(os.path.join(b.folder, 'ledger.json'))
    with pytest.raises(ConfigError):
        b.ledger_bytes()


def test_no_ledger_copy_is_none(store):
    assert snapshot(store).ledger_bytes() is None


def test_the_stored_dump_is_read_checked_and_named_when_damaged(store):
    b = snapshot(store, dump=b'version = 2\n[plugins]\n')
    assert b.dump_data() == {'version': 2, 'plugins': {}}
    where = os.path.join(b.folder, 'effective.toml')
    with open(where, 'ab') as f:
        f.write(b'# changed\n')
    with pytest.raises(ConfigError) as exc:
        b.dump_data()
    assert '(checksum mismatch)' in str(exc.value) and b.folder in str(exc.value)
    os.unlink(where)
    with pytest.raises(ConfigError) as exc:
        b.dump_data()
    assert 'is damaged (missing)' in str(exc.value)


@pytest.mark.parametrize('dump', [b'this is [[ not toml', b'version = "\xff"\n'])
def test_a_stored_dump_that_cannot_be_read_confirms_nothing(store, dump):
    assert snapshot(store, dump=dump).dump_data() is None


def test_a_baseline_without_a_dump_has_none(store):
    assert snapshot(store).dump_data() is None
    assert snapshot(store, raw=b'version = 2\n#2\n', effective=dict(values=[])).dump_data() is None


def test_a_stored_copy_is_read_once_and_then_kept(store):
    b = snapshot(store)
    rec = b.config_record
    assert b.read(rec) == b'version = 2\n'
    os.unlink(b.stored_path(rec))
    # the bytes checked once are the ones every later reader of this run gets
    assert b.read(rec) == b'version = 2\n'
    assert [(p, raw) for p, (raw, _attrs) in b.read_all().items()] == [(rec['path'], b'version = 2\n')]


def test_a_missing_stored_copy_is_named(store):
    b = snapshot(store)
    os.unlink(b.stored_path(b.config_record))
    with pytest.raises(ConfigError) as exc:
        b.read(b.config_record)
    assert 'of /etc/containerd/config.toml is missing: the baseline is damaged' in str(exc.value)


def test_a_current_link_without_a_manifest_is_a_damaged_baseline(store):
    b = snapshot(store)
    os.unlink(os.path.join(b.folder, 'manifest.json'))
    with pytest.raises(ConfigError) as exc:
        store.load()
    assert str(exc.value).startswith('baseline %s has no manifest.json: it is damaged.' % b.folder)


def test_a_current_link_to_something_else_is_no_baseline(store):
    snapshot(store)
    os.unlink(os.path.join(store.folder, 'current'))
    os.symlink('/etc', os.path.join(store.folder, 'current'))
    assert store.current_id() is None and store.load() is None


# ------------------------------------------------------------------ the store folder
def test_a_store_that_cannot_be_made_is_named(tmp_path):
    write(tmp_path / 'file', 'x')
    store = Store(str(tmp_path / 'file' / 'store'), 'default')
    with pytest.raises(ConfigError) as exc:
        store.lock(1)
    assert str(exc.value).startswith('cannot create the baseline store %s (Not a directory)' % store.root)


def test_without_create_a_missing_store_is_not_made(tmp_path):
    store = Store(str(tmp_path / 'store'), 'default')
    assert store.lock(1, create=False) is None and not os.path.exists(store.root)
    assert store.snapshot_ids() == [] and store.current_id() is None


@pytest.mark.parametrize('kind', ['link', 'file'])
def test_a_name_that_is_a_link_or_a_file_is_not_a_baseline_folder(tmp_path, kind):
    store = Store(str(tmp_path / 'store'), 'default')
    os.makedirs(store.root)
    if kind == 'link':
        os.makedirs(str(tmp_path / 'elsewhere'))
        os.symlink(str(tmp_path / 'elsewhere'), store.folder)
    else:
        write(store.folder, 'x')
    with pytest.raises(ConfigError) as exc:
        store.load()
    assert str(exc.value).startswith('%s exists and is not a baseline folder.' % store.folder)
    with pytest.raises(ConfigError):
        store.remove()


def test_only_snapshot_folders_count_as_snapshots(store):
    first = snapshot(store)
    second = snapshot(store, raw=b'version = 2\n# 2\n')
    # a file with a snapshot's name is no snapshot, nor is the current link
    write(os.path.join(store.folder, '20000101T000000.000000Z'), 'x')
    assert store.snapshot_ids() == [os.path.basename(first.folder), os.path.basename(second.folder)]
    assert store.prune(0) == [first.folder]
    assert store.load().folder == second.folder


def test_snapshots_taken_in_the_same_microsecond_get_their_own_ids(store):
    _now, stamp = utc_now()
    ids = [os.path.basename(snapshot(store, raw=b'version = 2\n#%d\n' % n, stamp=stamp).folder) for n in range(3)]
    base = stamp.strftime('%Y%m%dT%H%M%S.%fZ')
    assert ids == [base, base + '-1', base + '-2']
    assert store.snapshot_ids() == sorted(ids)


def test_a_write_that_fails_half_way_leaves_the_current_baseline_and_no_temporary_folder(store):
    good = snapshot(store)

    class Unreadable(object):
        path, role, entry, imported_by, attrs = '/etc/containerd/config.toml', 'config', None, None, Attrs(0o644, 0, 0)
        raw = None   # memoryview(None) fails inside the write
        sha256 = sha256_bytes(b'')

    _now, stamp = utc_now()
    with pytest.raises(TypeError):
        store.write(dict(format=1, ledger=None), [Unreadable()], None, stamp)
    assert sorted(os.listdir(store.folder)) == sorted(['current', os.path.basename(good.folder)])
    assert store.load().folder == good.folder


def test_the_next_snapshot_clears_what_a_killed_run_left(store):
    snapshot(store)
    os.mkdir(os.path.join(store.folder, '.tmp-killed'))
    write(os.path.join(store.folder, '.tmp-stray-file'), 'x')
    os.symlink('nowhere', os.path.join(store.folder, '.current.99999999'))
    write(os.path.join(store.folder, '.current.%d' % os.getpid()), 'not a link')
    b = snapshot(store, raw=b'version = 2\n# next\n')
    # a stray file with the temporary prefix is left (it is harmless), and does not stop the snapshot
    assert sorted(os.listdir(store.folder)) == sorted(['.tmp-stray-file', 'current'] + store.snapshot_ids())
    assert store.load().folder == b.folder


def test_stored_file_names_are_safe_and_bounded(store):
    _now, stamp = utc_now()
    long_name = '/etc/containerd/conf.d/' + 'a b$' * 30 + '.toml'
    files = [tree_file('/etc/containerd/config.toml', b'version = 2\n'),
             tree_file(long_name, b'version = 2\n', role='import')]
    store.write(dict(format=1, ledger=None), files, None, stamp)
    stored = [r['stored'] for r in store.load().files]
    assert stored[0] == 'files/000-config.toml'
    assert stored[1] == 'files/001-' + ('a_b_' * 30 + '.toml')[:80]


def test_an_overlay_file_the_pattern_does_not_match_is_not_found_by_the_glob(tmp_path):
    # the tree as it will be after a restore: a baseline file counts for a glob only where glob.glob would find it
    conf_d = str(tmp_path / 'conf.d')
    os.makedirs(conf_d)
    mine = (b'version = 2\n', Attrs(0o644, 0, 0))
    overlay = OverlaySource({conf_d + '/10-a.toml': mine, conf_d + '/20-b.conf': mine, conf_d + '/x/30-c.toml': mine})
    assert overlay.glob(conf_d + '/*.toml') == [conf_d + '/10-a.toml']


def test_a_name_that_would_be_taken_for_the_stores_lock_file_is_refused(tmp_path):
    # <store>/.<name>.nodeguard.lock is the lock of <name>: a baseline named like a lock file is refused
    with pytest.raises(ConfigError) as exc:
        Store(str(tmp_path), 'default.nodeguard.lock')
    assert str(exc.value).startswith("baseline name 'default.nodeguard.lock' is not valid.")
    assert Store(str(tmp_path), 'default.nodeguard.lock.d').name == 'default.nodeguard.lock.d'


@pytest.mark.parametrize('manifest, why', [
    ('[1]', "'list' object has no attribute 'get'"),
    ('{"format": 1', 'Expecting'),
    ('{"format": 99}', 'format 99'),
])
def test_a_damaged_manifest_is_named_with_what_is_wrong(store, manifest, why):
    b = snapshot(store)
    with open(os.path.join(b.folder, 'manifest.json'), 'w') as f:
        f.write(manifest)
    with pytest.raises(ConfigError) as exc:
        store.load()
    msg = str(exc.value)
    assert msg.startswith('the manifest of baseline %s is damaged (' % b.folder) and why in msg
    assert msg.endswith('Fix: take a new snapshot (overwrite: true) or remove it (state: absent).')


def test_a_foreign_file_among_the_snapshots_is_found(store):
    for n in range(6):
        snapshot(store, raw=b'version = 2\n#%d\n' % n)
    write(os.path.join(store.folder, 'notes.txt'), 'mine')
    with pytest.raises(ConfigError) as exc:
        store.load()
    assert 'holds notes.txt, which nodeguard did not put there' in str(exc.value)


def test_the_baseline_folder_is_private(tmp_path):
    s = Store(str(tmp_path / 'store'), 'default')
    old = os.umask(0o022)
    try:
        s.lock(5)
        snapshot(s)
    finally:
        os.umask(old)
        s.unlock()
    assert oct(os.stat(s.folder).st_mode & 0o777) == '0o700'
