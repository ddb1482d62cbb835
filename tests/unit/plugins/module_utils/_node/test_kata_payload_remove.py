# -*- coding: utf-8 -*-
"""_payload: removing the kata payload exactly (what the manifest owns), the
manifest and its lock, and the --diff view, in process (fast)."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import kata_payload as _payload
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import PayloadError

from helpers.kata_payload import BASIC, Payload


def test_remove_takes_exactly_what_was_installed(p):
    p.install(p.archive(BASIC + [('lib/a/b/c', 'file', b'', 0o644)]))
    res = p.remove()
    assert res == dict(changed=True, dest=p.dest, removed_count=10, kept_preexisting=0, manifest=p.manifest,
                       removed=['bin/shim', 'lib/a/b/c', 'share/conf-qemu.toml', 'share/conf.toml', 'lib/a/b/',
                                'lib/a/', 'bin/', 'lib/', 'share/', p.dest + '/'])  # deepest folders first
    assert not os.path.exists(p.dest) and not os.path.exists(p.manifest)
    assert os.path.isdir(os.path.dirname(p.dest))


def test_without_a_manifest_nothing_is_removed(p):
    os.makedirs(p.dest)
    assert p.remove() == dict(changed=False, dest=p.dest, removed=[], removed_count=0, manifest=p.manifest,
                              msg='no payload manifest at %s: nodeguard did not install a payload here, nothing '
                                  'removed' % p.manifest)
    assert os.path.isdir(p.dest)


def test_what_was_there_before_stays(p):
    """The operator's folder and file, and a dest that existed before the install (even empty)."""
    os.makedirs(p.path('bin'))
    with open(p.path('bin/operator-tool'), 'w') as f:
        f.write('mine')
    p.install(p.archive(BASIC))
    res = p.remove()
    assert res['kept_preexisting'] == 2
    assert res['removed'] == ['bin/shim', 'share/conf-qemu.toml', 'share/conf.toml', 'share/']
    assert sorted(os.listdir(p.dest)) == ['bin'] and os.listdir(p.path('bin')) == ['operator-tool']
    q = Payload(p.tmp / 'q')
    os.makedirs(q.dest)
    q.install(q.archive(BASIC))
    q.remove()
    assert os.listdir(q.dest) == []


def test_files_added_later_keep_their_folders(p):
    p.install(p.archive(BASIC))
    with open(p.path('share/operator.toml'), 'w') as f:
        f.write('x')
    res = p.remove()
    assert res['removed'] == ['bin/shim', 'share/conf-qemu.toml', 'share/conf.toml', 'bin/']
    assert os.listdir(p.dest) == ['share'] and os.listdir(p.path('share')) == ['operator.toml']


def test_an_owned_folder_replaced_by_a_link_is_unlinked_not_followed(p, tmp_path):
    p.install(p.archive(BASIC))
    elsewhere = tmp_path / 'elsewhere'
    elsewhere.mkdir()
    (elsewhere / 'keep').write_text('x')
    os.remove(p.path('bin/shim'))
    os.rmdir(p.path('bin'))
    os.symlink(str(elsewhere), p.path('bin'))
    res = p.remove()
    assert 'bin' in res['removed']
    assert not os.path.lexists(p.path('bin')) and (elsewhere / 'keep').exists()


def test_a_file_that_cannot_be_unlinked_is_left_and_not_listed(p, monkeypatch):
    """A busy file (a bind-mount over it, say) stays; the others still go."""
    p.install(p.archive(BASIC))
    real = os.unlink
    busy = p.path('bin/shim')

    def unlink(path, *a, **kw):
        if path == busy:
            raise OSError(16, 'Device or resource busy')
        return real(path, *a, **kw)
    monkeypatch.setattr(_payload.os, 'unlink', unlink)
    removed = _payload._remove_owned(p.dest, ['bin', 'bin/shim', 'share', 'share/conf-qemu.toml'], set(), False)
    assert removed == ['share/conf-qemu.toml']
    assert os.path.exists(busy) and not os.path.exists(p.path('share/conf-qemu.toml'))


def test_check_mode_lists_the_same_and_removes_nothing(p):
    p.install(p.archive(BASIC + [('lib/a/b/c', 'file', b'', 0o644)]))
    with open(p.path('share/operator.toml'), 'w') as f:
        f.write('x')
    res = p.remove(check=True)
    assert res['removed'] == ['bin/shim', 'lib/a/b/c', 'share/conf-qemu.toml', 'share/conf.toml', 'lib/a/b/',
                              'lib/a/', 'bin/', 'lib/']
    assert os.path.exists(p.path('lib/a/b/c')) and os.path.exists(p.manifest)
    os.remove(p.path('share/operator.toml'))
    res = p.remove(check=True)
    assert res['removed'][-2:] == ['share/', p.dest + '/']
    real = p.remove()
    assert real['removed'] == res['removed']


def test_the_roles_cached_archive_goes_with_the_payload(p, tmp_path):
    cache_dir = tmp_path / 'cache'
    cache_dir.mkdir()
    archive = p.archive(BASIC)
    cached = str(cache_dir / 'kata.tar.gz')
    os.rename(archive, cached)
    p.install(cached, archive_is_cache=True)
    assert json.load(open(p.manifest))['cache'] == cached
    res = p.remove(check=True)
    assert res['removed'][-1] == cached and os.path.exists(cached)
    res = p.remove()
    assert res['removed'][-1] == cached
    assert not os.path.exists(str(cache_dir))      # its folder, once empty


def test_an_install_from_another_archive_removes_the_roles_earlier_copy(p, tmp_path):
    """A new payload URL gets a cache file of its own; the copy of the old one goes once the new one is
    installed, not before (check mode says so and keeps it), and a user's archive is never one of them."""
    cache_dir = tmp_path / 'cache'
    cache_dir.mkdir()
    old, new = str(cache_dir / 'aaa-kata.tar.gz'), str(cache_dir / 'bbb-kata.tar.gz')
    os.rename(p.archive(BASIC), old)
    os.rename(p.archive(BASIC + [('bin/extra', 'file', b'x', 0o755)]), new)
    p.install(old, archive_is_cache=True)
    res = p.install(new, archive_is_cache=True, check=True)
    assert res['changed'] and old in res['removed'] and os.path.exists(old)
    assert p.read_manifest()['cache'] == old
    res = p.install(new, archive_is_cache=True)
    assert res['changed'] and res['removed'] == [old] and res['installed'] == ['bin/extra']
    assert sorted(os.listdir(str(cache_dir))) == ['bbb-kata.tar.gz'] and p.read_manifest()['cache'] == new
    # the same archive again: nothing to remove
    assert p.install(new, archive_is_cache=True)['removed'] == []
    # an archive of the user's (remote_src): the role's copy goes, the user's file stays
    mine = p.archive(BASIC)
    res = p.install(mine, archive_is_cache=False)
    assert new in res['removed'] and not os.path.exists(new) and os.path.exists(mine)
    assert p.read_manifest()['cache'] is None
    assert p.install(mine, archive_is_cache=False)['removed'] == [] and os.path.exists(mine)


def test_a_cache_folder_with_other_files_stays(p, tmp_path):
    cache_dir = tmp_path / 'cache'
    cache_dir.mkdir()
    (cache_dir / 'other').write_text('')
    cached = str(cache_dir / 'kata.tar.gz')
    os.rename(p.archive(BASIC), cached)
    p.install(cached, archive_is_cache=True)
    p.remove()
    assert os.listdir(str(cache_dir)) == ['other']


def test_a_cache_already_gone_or_not_a_file_is_not_listed(p, tmp_path):
    cached = str(tmp_path / 'kata.tar.gz')
    os.rename(p.archive(BASIC), cached)
    p.install(cached, archive_is_cache=True)
    os.remove(cached)
    assert cached not in p.remove()['removed']
    assert _payload._remove_cache(str(tmp_path), False) == [] and os.path.isdir(str(tmp_path))
    assert _payload._remove_cache(None, False) == []


def test_remove_refuses_a_manifest_of_another_dest(p, tmp_path):
    p.install(p.archive(BASIC))
    with pytest.raises(PayloadError, match='belongs to %s, not %s; nothing removed' % (p.dest, tmp_path / 'x')):
        _payload.remove(dict(dest=str(tmp_path / 'x'), manifest=p.manifest), False)
    assert os.path.exists(p.path('bin/shim'))


# ---------------------------------------------------------------- the manifest

def test_a_damaged_or_unknown_manifest_is_refused_with_what_to_do(tmp_path):
    path = str(tmp_path / 'm.json')
    assert _payload.load_manifest(path) is None
    with open(path, 'w') as f:
        f.write('{"format": 1, "owned": [')
    with pytest.raises(PayloadError, match='is damaged .*Move it aside; the payload files it listed must then be '
                                           'removed by hand'):
        _payload.load_manifest(path)
    for data, shown in (([1], '[1]'), ({'format': 2}, '2'), ({}, 'None')):
        with open(path, 'w') as f:
            json.dump(data, f)
        with pytest.raises(PayloadError, match=r'has unknown format %s$' % shown.replace('[', r'\[').replace(']', r'\]')):
            _payload.load_manifest(path)
    with open(path, 'w') as f:
        json.dump({'format': 1, 'owned': ['a']}, f)   # as every release so far wrote it
    assert _payload.load_manifest(path) == {'format': 1, 'owned': ['a']}


def test_check_mode_makes_no_lock_file_or_folder(tmp_path):
    manifest = str(tmp_path / 'state' / 'm.json')
    assert _payload.manifest_lock(manifest, 5, True) is None
    assert not os.path.exists(str(tmp_path / 'state'))
    lock = _payload.manifest_lock(manifest, 5, False)
    assert os.stat(str(tmp_path / 'state')).st_mode & 0o777 == 0o700
    lock.acquire()
    lock.release()
    made = sorted(os.listdir(str(tmp_path / 'state')))
    assert len(made) == 1
    os.remove(os.path.join(str(tmp_path / 'state'), made[0]))
    check = _payload.manifest_lock(manifest, 5, True)
    assert check is not None
    check.acquire()
    check.release()
    assert os.listdir(str(tmp_path / 'state')) == []


def test_diff_shows_replaced_and_removed_before_installed_and_replaced_after():
    d = _payload.diff_of(dict(dest='/opt/kata', installed=['bin/a'], updated=['bin/b'], removed=['lib/c']))
    assert d == dict(before='bin/b\nlib/c\n', after='bin/a\nbin/b\n',
                     before_header='/opt/kata (paths replaced or removed)',
                     after_header='/opt/kata (paths installed or replaced)')
    assert _payload.diff_of(dict(dest='/d')) == dict(before='', after='', before_header='/d (paths replaced or removed)',
                                                     after_header='/d (paths installed or replaced)')
