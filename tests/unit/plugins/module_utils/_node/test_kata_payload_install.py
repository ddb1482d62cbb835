# -*- coding: utf-8 -*-
"""_payload: reading the kata archive and installing it, in process (fast).

tests/module/test_containerd_kata_payload.py runs the module on the
stand-in payload; these pin each rule on a small archive made here: which
members are refused, the modes and folders they get, what counts as
"already there", and the manifest written before the first file.
"""

import hashlib
import os
import stat

import pytest

from helpers.common import make_tar
from helpers.kata_payload import BASIC, Payload
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import kata_payload as _payload
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import (
    PayloadError,
    read_members,
)


def entries_of(tmp_path, members, root='opt/kata'):
    tar, entries = read_members(make_tar(tmp_path / 'p.tar.gz', members), root)
    tar.close()
    return [dict((k, v) for k, v in e.items() if k != 'member') for e in entries]


# ---------------------------------------------------------------- the archive

def test_member_names_are_cleaned_and_dot_dot_refused():
    assert _payload.clean_rel('./opt//kata/./bin\\shim') == 'opt/kata/bin/shim'
    assert _payload.clean_rel('') == ''
    with pytest.raises(PayloadError, match=r"'opt/\.\./etc' leaves the payload folder"):
        _payload.clean_rel('opt/../etc')


@pytest.mark.parametrize('folder,target,ok', [
    ('bin', 'shim', True), ('bin', '../lib/x', True), ('', 'lib/x', True),
    ('', '..', False), ('bin', '../..', False), ('bin', '../../etc/passwd', False), ('', '/etc/passwd', False),
])
def test_a_link_must_stay_inside_the_payload(folder, target, ok):
    assert _payload.inside(folder, target) is ok


def test_modes_default_like_tar_and_special_bits_are_kept(tmp_path):
    got = entries_of(tmp_path, [('opt/kata/d0', 'dir', None, 0), ('opt/kata/d7', 'dir', None, 0o700),
                                ('opt/kata/f0', 'file', b'', 0), ('opt/kata/f6', 'file', b'', 0o600),
                                ('opt/kata/suid', 'file', b'', 0o104755)])
    assert [(e['rel'], e['mode']) for e in got] == [('d0', 0o755), ('d7', 0o700), ('f0', 0o644), ('f6', 0o600),
                                                    ('suid', 0o4755)]


def test_a_hard_link_is_a_copy_of_its_file(tmp_path):
    members = [('opt/kata/bin/a', 'file', b'A', 0o750), ('opt/kata/bin/b', 'hard', 'opt/kata/bin/a', 0),
               ('opt/kata/bin/c', 'hard', './opt/kata/bin/a', 0o700)]
    tar, entries = read_members(make_tar(tmp_path / 'h.tar', members, 'w'), 'opt/kata')
    try:
        by = dict((e['rel'], e) for e in entries)
        assert by['bin/b']['type'] == 'file' and by['bin/b']['mode'] == 0o750
        assert by['bin/c']['mode'] == 0o700
        assert tar.extractfile(by['bin/b']['member']).read() == b'A'
    finally:
        tar.close()
    zero = entries_of(tmp_path, [('opt/kata/a', 'file', b'', 0), ('opt/kata/b', 'hard', 'opt/kata/a', 0)])
    assert zero[1] == {'rel': 'b', 'type': 'file', 'mode': 0o644}


@pytest.mark.parametrize('members,why', [
    ([('opt/kata/b', 'hard', 'opt/kata/none', 0o644)], 'hard link to'),
    ([('opt/kata/d', 'dir', None, 0o755), ('opt/kata/b', 'hard', 'opt/kata/d', 0o644)], 'hard link to'),
    ([('opt/kata/up', 'link', '..', 0o777)], 'outside the payload folder'),
    ([('opt/kata/f', 'fifo', None, 0o644)], 'special file'),
])
def test_members_that_could_escape_or_are_not_files_refuse_the_archive(tmp_path, members, why):
    with pytest.raises(PayloadError, match=why):
        entries_of(tmp_path, [('opt/kata/ok', 'file', b'', 0o644)] + members)


def test_only_members_under_root_are_taken_and_parents_are_added(tmp_path):
    got = entries_of(tmp_path, [('other/x', 'file', b'', 0o644), ('opt/kata', 'dir', None, 0o700),
                                ('opt/kata/share/defaults/kata/c.toml', 'file', b'', 0o644),
                                ('opt/kataX/y', 'file', b'', 0o644), ('opt/kata/bin/shim', 'file', b'', 0o755),
                                ('opt/kata/bin', 'dir', None, 0o750)])
    # folders first, shallow to deep; the rest in archive order
    assert [(e['rel'], e['type'], e.get('mode')) for e in got] == [
        ('bin', 'dir', 0o750), ('share', 'dir', 0o755), ('share/defaults', 'dir', 0o755),
        ('share/defaults/kata', 'dir', 0o755), ('share/defaults/kata/c.toml', 'file', 0o644),
        ('bin/shim', 'file', 0o755)]


def test_an_archive_of_a_folders_contents_needs_no_root(tmp_path):
    """`tar -C /opt/kata -czf kata.tgz .` names its members ./bin/...; root '' takes them all."""
    got = entries_of(tmp_path, [('.', 'dir', None, 0o755), ('./bin', 'dir', None, 0o755),
                                ('./bin/shim', 'file', b'', 0o755)], root='')
    assert [e['rel'] for e in got] == ['bin', 'bin/shim']
    got = entries_of(tmp_path, [('./bin/shim', 'file', b'', 0o755)], root=None)
    assert [e['rel'] for e in got] == ['bin', 'bin/shim']


def test_a_member_listed_twice_counts_once_the_last_wins(tmp_path):
    got = entries_of(tmp_path, [('opt/kata/a', 'file', b'1', 0o600), ('opt/kata/b', 'file', b'', 0o644),
                                ('opt/kata/a', 'file', b'22', 0o640)])
    assert [(e['rel'], e['mode']) for e in got] == [('a', 0o640), ('b', 0o644)]


def test_an_archive_with_nothing_under_root_names_the_fix(tmp_path):
    with pytest.raises(PayloadError, match=r"has nothing under 'opt/kata'\. Fix: set root"):
        entries_of(tmp_path, [('kata/bin/shim', 'file', b'', 0o755)])
    with pytest.raises(PayloadError, match=r"has nothing under '/'"):
        entries_of(tmp_path, [('.', 'dir', None, 0o755)], root='')


def test_an_archive_that_is_not_one_or_is_cut_short_is_refused(tmp_path):
    junk = tmp_path / 'junk.tar.gz'
    junk.write_bytes(b'not a tarball at all' * 100)
    with pytest.raises(PayloadError, match='cannot read the payload archive'):
        read_members(str(junk), 'opt/kata')
    with pytest.raises(PayloadError, match='cannot read the payload archive'):
        read_members(str(tmp_path / 'none.tar.gz'), 'opt/kata')
    whole = make_tar(tmp_path / 'whole.tar', [('opt/kata/f%d' % i, 'file', os.urandom(3000), 0o644)
                                              for i in range(20)], 'w')
    with open(whole, 'rb') as f:
        raw = f.read()
    for name, data in (('cut.tar', raw[:len(raw) // 2 + 100]),):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(PayloadError, match='cannot read the payload archive'):
            read_members(str(tmp_path / name), 'opt/kata')
    gz = make_tar(tmp_path / 'whole.tar.gz', [('opt/kata/f%d' % i, 'file', os.urandom(3000), 0o644)
                                              for i in range(20)])
    with open(gz, 'rb') as f:
        raw = f.read()
    (tmp_path / 'cut.tar.gz').write_bytes(raw[:len(raw) // 2])
    with pytest.raises(PayloadError, match='cannot read the payload archive'):
        read_members(str(tmp_path / 'cut.tar.gz'), 'opt/kata')


# ---------------------------------------------------------------- install

def test_install_writes_the_payload_and_a_manifest(p, tmp_path):
    archive = p.archive(BASIC)
    res = p.install(archive)
    assert res['changed'] and res['installed'] == ['./', 'bin/', 'share/', 'bin/shim', 'share/conf-qemu.toml',
                                                   'share/conf.toml']
    assert res['installed_count'] == 6 and res['updated'] == [] and res['removed'] == []
    assert res['entries'] == 5 and res['preexisting_kept'] == 0
    with open(archive, 'rb') as f:
        assert res['archive_sha256'] == hashlib.sha256(f.read()).hexdigest()
    assert p.mode('bin/shim') == 0o755 and p.mode('share/conf-qemu.toml') == 0o644 and p.mode('.') == 0o755
    assert os.readlink(p.path('share/conf.toml')) == 'conf-qemu.toml'
    m = p.read_manifest()
    assert m == {'format': 1, 'dest': p.dest, 'dest_created': True, 'preexisting': [], 'cache': None,
                 'owned': ['bin', 'bin/shim', 'share', 'share/conf-qemu.toml', 'share/conf.toml'],
                 'archive_sha256': res['archive_sha256'], 'state': 'installed'}
    # private: it lists the node's files
    assert stat.S_IMODE(os.stat(p.manifest).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(p.manifest)).st_mode) == 0o700


def test_a_second_install_changes_nothing(p):
    archive = p.archive(BASIC)
    p.install(archive)
    again = p.install(archive)
    assert not again['changed']
    assert again['installed'] == again['updated'] == again['removed'] == []


def test_what_was_changed_by_hand_is_put_back_and_only_that(p):
    archive = p.archive(BASIC + [('big', 'file', b'x' * (_payload.CHUNK + 10) + b'tail', 0o644)])
    p.install(archive)
    with open(p.path('share/conf-qemu.toml'), 'wb') as f:
        f.write(b'a = 2\n')                                # same size, other bytes
    os.chmod(p.path('bin/shim'), 0o700)                    # same bytes, other mode
    os.remove(p.path('share/conf.toml'))
    os.symlink('elsewhere.toml', p.path('share/conf.toml'))  # the link pointed elsewhere
    with open(p.path('big'), 'r+b') as f:
        f.seek(_payload.CHUNK + 10)
        f.write(b'TAIL')                                   # differs after the first chunk
    res = p.install(archive)
    assert res['changed'] and res['installed'] == []
    assert sorted(res['updated']) == ['big', 'bin/shim', 'share/conf-qemu.toml', 'share/conf.toml']
    assert p.mode('bin/shim') == 0o755
    with open(p.path('share/conf-qemu.toml'), 'rb') as f:
        assert f.read() == b'a = 1\n'
    assert os.readlink(p.path('share/conf.toml')) == 'conf-qemu.toml'
    assert not p.install(archive)['changed']


def test_a_file_or_link_where_the_payload_has_the_other_is_replaced(p):
    archive = p.archive(BASIC)
    p.install(archive)
    os.remove(p.path('bin/shim'))
    os.symlink(p.path('share/conf-qemu.toml'), p.path('bin/shim'))   # a link to a file
    os.remove(p.path('share/conf.toml'))
    with open(p.path('share/conf.toml'), 'w') as f:                 # a file where the link was
        f.write('x')
    res = p.install(archive)
    assert sorted(res['updated']) == ['bin/shim', 'share/conf.toml']
    assert not os.path.islink(p.path('bin/shim')) and os.readlink(p.path('share/conf.toml')) == 'conf-qemu.toml'


def test_a_clash_with_a_folder_is_refused(p):
    archive = p.archive(BASIC)
    os.makedirs(p.path('bin/shim'))
    with pytest.raises(PayloadError, match='bin/shim is a folder; the payload has a file there'):
        p.install(archive)
    q = Payload(p.tmp / 'q')
    os.makedirs(q.dest)
    with open(q.path('bin'), 'w') as f:
        f.write('')
    with pytest.raises(PayloadError, match='bin exists and is not a folder'):
        q.install(q.archive(BASIC))
    r = Payload(p.tmp / 'r')
    os.makedirs(os.path.join(str(p.tmp), 'r', 'real-bin'))
    os.makedirs(r.dest)
    os.symlink(os.path.join(str(p.tmp), 'r', 'real-bin'), r.path('bin'))  # a link to a folder is not the folder
    with pytest.raises(PayloadError, match='bin exists and is not a folder'):
        r.install(r.archive(BASIC))


def test_a_failed_run_leaves_a_manifest_that_owns_both_payloads(p):
    """The manifest is written before the first file: what the old payload owned and what the new
    one starts to write are both removed by state absent, even after a failure half way."""
    p.install(p.archive([('lib/old', 'file', b'o', 0o644), ('bin/shim', 'file', b's', 0o755)]))
    os.makedirs(p.path('zz/clash'))
    with pytest.raises(PayloadError, match='is a folder'):
        p.install(p.archive([('bin/shim', 'file', b's2', 0o755), ('zz/clash', 'file', b'', 0o644)]))
    m = p.read_manifest()
    assert m['state'] == 'installing'
    assert m['owned'] == ['bin', 'bin/shim', 'lib', 'lib/old', 'zz', 'zz/clash']
    # the same payload again, failing again: still marked as not finished
    with pytest.raises(PayloadError):
        p.install(p.archive([('bin/shim', 'file', b's2', 0o755), ('zz/clash', 'file', b'', 0o644)]))
    assert p.read_manifest()['state'] == 'installing'
    # a retry with more files, failing again: what it wrote before the failure is owned too
    with pytest.raises(PayloadError):
        p.install(p.archive([('bin/shim', 'file', b's2', 0o755), ('new/file', 'file', b'n', 0o644),
                             ('zz/clash', 'file', b'', 0o644)]))
    assert os.path.exists(p.path('new/file'))
    assert p.read_manifest()['owned'] == ['bin', 'bin/shim', 'lib', 'lib/old', 'new', 'new/file', 'zz', 'zz/clash']


def test_a_finished_payload_failing_on_its_next_run_is_marked_unfinished(p):
    archive = p.archive(BASIC)
    p.install(archive)
    os.remove(p.path('bin/shim'))
    os.makedirs(p.path('bin/shim'))
    with pytest.raises(PayloadError):
        p.install(archive)
    assert p.read_manifest()['state'] == 'installing'


def test_an_upgrade_removes_what_the_new_payload_lacks(p):
    p.install(p.archive(BASIC + [('lib/old/x', 'file', b'x', 0o644)]))
    res = p.install(p.archive(BASIC))
    assert res['changed'] and res['installed'] == res['updated'] == []
    assert res['removed'] == ['lib/old/x', 'lib/old/', 'lib/']
    assert not os.path.exists(p.path('lib'))
    assert p.read_manifest()['owned'] == ['bin', 'bin/shim', 'share', 'share/conf-qemu.toml', 'share/conf.toml']


def test_files_that_were_there_before_are_never_owned(p):
    os.makedirs(p.path('bin'))
    with open(p.path('bin/operator-tool'), 'w') as f:
        f.write('mine')
    res = p.install(p.archive(BASIC))
    assert res['preexisting_kept'] == 2 and './' not in res['installed'] and 'bin/' not in res['installed']
    m = p.read_manifest()
    assert m['preexisting'] == ['bin', 'bin/operator-tool'] and m['dest_created'] is False


def test_required_files_must_be_provided(p, tmp_path):
    archive = p.archive(BASIC)
    outside = tmp_path / 'usr-bin-qemu'
    outside.write_text('')
    res = p.install(archive, require=['bin/shim', str(outside)])
    assert res['changed']
    with pytest.raises(PayloadError) as exc:
        p.install(archive, require=['bin/shim', 'bin/qemu-system-x86_64', str(tmp_path / 'nope')])
    msg = str(exc.value)
    missing = (p.path('bin/qemu-system-x86_64'), tmp_path / 'nope')
    assert ('does not provide %s, %s. Nothing in containerd' % missing) in msg


def test_the_result_lists_the_first_100_paths_and_counts_all(p):
    res = p.install(p.archive([('f%03d' % i, 'file', b'', 0o644) for i in range(150)]), check=True)
    assert res['installed_count'] == 151 and len(res['installed']) == 100
    assert res['installed'][:2] == ['./', 'f000'] and res['installed'][-1] == 'f098'


def test_missing_archive_is_an_error_except_in_check_mode(p, tmp_path):
    missing = str(tmp_path / 'not-yet.tar.gz')
    with pytest.raises(PayloadError, match='cannot read the payload archive'):
        p.install(missing)
    res = p.install(missing, check=True)
    assert res == dict(changed=True, dest=p.dest, entries=0, installed=[], installed_count=0, updated=[],
                       updated_count=0, removed=[], removed_count=0, archive_sha256=None, manifest=p.manifest,
                       preexisting_kept=0, msg='%s is not on the node yet (check mode): the whole payload would be '
                                               'installed' % missing)


def test_in_check_mode_an_archive_about_to_be_replaced_is_not_read(p):
    """The file at archive is the older payload that an earlier task (check mode did not run it) would replace:
    it lacks what is required, yet check mode says the new payload would be installed instead of failing on it;
    the real run (archive_pending is ignored there) reads the file and refuses it."""
    archive = p.archive(BASIC)
    res = p.install(archive, check=True, require=['bin/qemu'], archive_pending=True)
    assert (res['changed'], res['installed'], res['archive_sha256']) == (True, [], None)
    assert res['msg'] == '%s would be replaced (check mode): the whole payload would be installed' % archive
    assert not os.path.exists(p.dest) and not os.path.exists(p.manifest)
    with pytest.raises(PayloadError, match='does not provide'):
        p.install(archive, require=['bin/qemu'], archive_pending=True)


def test_check_mode_reports_the_same_and_writes_nothing(p, tmp_path):
    archive = p.archive(BASIC)
    res = p.install(archive, check=True, require=['bin/shim', 'share/conf.toml'])
    assert res['installed'] == ['./', 'bin/', 'share/', 'bin/shim', 'share/conf-qemu.toml', 'share/conf.toml']
    assert not os.path.exists(str(tmp_path / 'opt')) and not os.path.exists(str(tmp_path / 'state'))
    with pytest.raises(PayloadError, match='does not provide'):
        p.install(archive, check=True, require=['bin/qemu'])
    p.install(p.archive(BASIC + [('lib/x', 'file', b'', 0o644)]))
    with open(p.path('bin/shim'), 'ab') as f:
        f.write(b'#')
    before = p.read_manifest()
    res = p.install(archive, check=True)
    assert res['updated'] == ['bin/shim'] and res['removed'] == ['lib/x', 'lib/']
    assert os.path.exists(p.path('lib/x')) and p.read_manifest() == before


def test_a_manifest_of_another_dest_is_refused(p, tmp_path):
    p.install(p.archive(BASIC))
    with pytest.raises(PayloadError, match='belongs to %s, not %s' % (p.dest, tmp_path / 'other')):
        p.install(p.archive(BASIC), dest=str(tmp_path / 'other'))


# ------------------------------------------------------------------ the result's path lists and their counts
def test_the_result_lists_the_first_hundred_paths_and_counts_them_all(tmp_path):
    p = Payload(tmp_path)
    members = [('bin/f%03d' % i, 'file', b'x', 0o644) for i in range(101)]
    res = p.install(p.archive(members))
    assert res['installed_count'] >= 101 and len(res['installed']) == 100
