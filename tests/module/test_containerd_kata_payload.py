# -*- coding: utf-8 -*-
"""containerd_kata_payload: the kata payload unpacked file by file with a manifest, and removed exactly.

Ported from the coco role's molecule checks of files/coco_payload.py (the
script it replaces), plus what a module adds: check mode and the result lists.
The archive is tests/standins/make_kata_payload.sh's stand-in, laid out like
kata-deploy's tarball.
"""

import json
import os
import subprocess
import tarfile

import pytest

from helpers.common import REPO, make_tar, read

SHIM = 'bin/containerd-shim-kata-v2'
QEMU = 'share/defaults/kata-containers/configuration-qemu.toml'


@pytest.fixture
def payload(workdir):
    out = os.path.join(workdir, 'cache', 'kata.tar.gz')
    subprocess.run(['bash', os.path.join(REPO, 'tests', 'standins', 'make_kata_payload.sh'), out, 'qemu', 'qemu-tdx'],
                   check=True, capture_output=True)
    return out


def _args(workdir, **kw):
    args = dict(dest=os.path.join(workdir, 'opt', 'kata'), manifest=os.path.join(workdir, 'state', 'm.json'))
    args.update(kw)
    return args


def _tree(root):
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = ('link', os.readlink(full))
            elif os.path.isdir(full):
                out[rel] = ('dir', oct(os.stat(full).st_mode & 0o7777))
            else:
                out[rel] = ('file', oct(os.stat(full).st_mode & 0o7777), read(full, 'rb'))
    return out


def test_install_idempotent_and_remove_exactly(run_module, workdir, payload):
    dest = os.path.join(workdir, 'opt', 'kata')
    os.makedirs(dest)
    with open(os.path.join(dest, 'operator-note'), 'w') as f:
        f.write('mine\n')
    res = run_module('containerd_kata_payload', archive=payload, require=[SHIM, QEMU], archive_is_cache=True,
                     **_args(workdir))
    assert res['changed'] and SHIM in res['installed'] and res['updated'] == []
    assert os.access(os.path.join(dest, SHIM), os.X_OK)
    assert os.readlink(os.path.join(dest, 'share/defaults/kata-containers/configuration.toml')) \
        == 'configuration-qemu.toml'
    assert res['preexisting_kept'] == 1
    manifest = json.loads(read(os.path.join(workdir, 'state', 'm.json')))
    assert manifest['state'] == 'installed' and SHIM in manifest['owned'] and manifest['preexisting'] == ['operator-note']
    # a second run changes nothing
    again = run_module('containerd_kata_payload', archive=payload, require=[SHIM], archive_is_cache=True,
                       **_args(workdir))
    assert not again['changed'] and again['installed_count'] == again['updated_count'] == 0
    # a file changed by hand is put back, only that one
    with open(os.path.join(dest, QEMU), 'a') as f:
        f.write('# hand edit\n')
    fixed = run_module('containerd_kata_payload', archive=payload, archive_is_cache=True, **_args(workdir))
    assert fixed['changed'] and fixed['updated'] == [QEMU] and fixed['installed'] == []
    # no temporary file is left anywhere
    assert not [n for n in _tree(dest) if 'nodeguard-tmp' in n]
    # remove: everything of the payload, the operator's file stays, the cached archive goes
    gone = run_module('containerd_kata_payload', state='absent', **_args(workdir))
    assert gone['changed'] and gone['kept_preexisting'] == 1 and payload in gone['removed']
    assert sorted(os.listdir(dest)) == ['operator-note']
    assert not os.path.exists(payload)
    assert not os.path.exists(os.path.join(workdir, 'state', 'm.json'))
    # without a manifest nothing is removed
    again = run_module('containerd_kata_payload', state='absent', **_args(workdir))
    assert not again['changed'] and 'nothing removed' in again['msg']


def test_created_dest_removed_and_cache_kept_unless_asked(run_module, workdir, payload):
    dest = os.path.join(workdir, 'opt', 'kata')
    run_module('containerd_kata_payload', archive=payload, **_args(workdir))
    run_module('containerd_kata_payload', state='absent', **_args(workdir))
    assert not os.path.exists(dest)  # created by the install: removed
    assert os.path.isfile(payload)  # not the role's copy: a user's archive stays


def test_check_mode_changes_nothing_and_reports(run_module, workdir, payload):
    dest = os.path.join(workdir, 'opt', 'kata')
    res = run_module('containerd_kata_payload', check=True, diff=True, archive=payload, require=[SHIM, QEMU],
                     **_args(workdir))
    assert res['changed'] and SHIM in res['installed'] and './' in res['installed']
    assert SHIM in res['diff']['after']
    assert not os.path.exists(dest) and not os.path.exists(os.path.join(workdir, 'state'))
    run_module('containerd_kata_payload', archive=payload, **_args(workdir))
    before = _tree(dest)
    with open(os.path.join(dest, QEMU), 'w') as f:
        f.write('changed\n')
    before = _tree(dest)
    res = run_module('containerd_kata_payload', check=True, archive=payload, **_args(workdir))
    assert res['changed'] and res['updated'] == [QEMU]
    assert _tree(dest) == before
    res = run_module('containerd_kata_payload', check=True, state='absent', **_args(workdir))
    assert res['changed'] and SHIM in res['removed'] and dest + '/' in res['removed']
    assert _tree(dest) == before and os.path.exists(os.path.join(workdir, 'state', 'm.json'))


def test_upgrade_removes_what_the_new_payload_lacks(run_module, workdir):
    dest = os.path.join(workdir, 'opt', 'kata')
    old = make_tar(os.path.join(workdir, 'old.tar.gz'), [('opt/kata/bin/a', 'file', b'a', 0o755),
                                                         ('opt/kata/lib/old/x', 'file', b'x', 0o644)])
    new = make_tar(os.path.join(workdir, 'new.tar.gz'), [('opt/kata/bin/a', 'file', b'a2', 0o755)])
    run_module('containerd_kata_payload', archive=old, **_args(workdir))
    res = run_module('containerd_kata_payload', archive=new, **_args(workdir))
    assert res['updated'] == ['bin/a'] and 'lib/old/x' in res['removed'] and 'lib/old/' in res['removed']
    assert _tree(dest) == {'bin': ('dir', '0o755'), 'bin/a': ('file', '0o755', b'a2')}


@pytest.mark.parametrize('members, why', [
    ([('opt/kata/../../etc/evil', 'file', b'x', 0o644)], "leaves the payload folder"),
    ([('opt/kata/bin/out', 'link', '../../../etc/passwd', 0o777)], 'outside the payload folder'),
    ([('opt/kata/bin/abs', 'link', '/etc/passwd', 0o777)], 'outside the payload folder'),
    ([('opt/kata/fifo', 'fifo', None, 0o644)], 'special file'),
    ([('other/bin/a', 'file', b'a', 0o644)], "has nothing under 'opt/kata'"),
])
def test_hostile_archives_refused_before_anything_is_written(run_module, workdir, members, why):
    archive = make_tar(os.path.join(workdir, 'bad.tar.gz'), [('opt/kata/bin/ok', 'file', b'ok', 0o755)] + members
                       if 'nothing under' not in why else members)
    res = run_module('containerd_kata_payload', archive=archive, expect_fail=True, **_args(workdir))
    assert why in res['msg']
    assert not os.path.exists(os.path.join(workdir, 'opt'))
    assert not os.path.exists(os.path.join(workdir, 'state', 'm.json'))


def test_missing_required_file_fails_naming_it(run_module, workdir, payload):
    res = run_module('containerd_kata_payload', archive=payload, require=[SHIM, 'bin/qemu-system-x86_64'],
                     expect_fail=True, **_args(workdir))
    assert os.path.join(workdir, 'opt', 'kata', 'bin/qemu-system-x86_64') in res['msg']
    assert 'Nothing in containerd' in res['msg']
    # the payload is recorded, so absent removes it
    run_module('containerd_kata_payload', state='absent', **_args(workdir))
    assert not os.path.exists(os.path.join(workdir, 'opt', 'kata'))


def test_killed_install_is_finished_and_removable(run_module, workdir, payload):
    """A run killed after the manifest and some files: the next run completes, absent removes everything."""
    dest = os.path.join(workdir, 'opt', 'kata')
    os.makedirs(os.path.join(dest, 'bin'))
    manifest = os.path.join(workdir, 'state', 'm.json')
    os.makedirs(os.path.dirname(manifest))
    with tarfile.open(payload) as tar:
        owned = sorted(m.name[len('opt/kata/'):] for m in tar.getmembers() if m.name.startswith('opt/kata/'))
    with open(manifest, 'w') as f:
        json.dump(dict(format=1, dest=dest, dest_created=True, preexisting=[], owned=owned, archive_sha256=None,
                       state='installing'), f)
    # a half-written temporary file of the killed run
    stale = os.path.join(dest, 'bin', '.containerd-shim-kata-v2.abc123.nodeguard-tmp')
    with open(stale, 'w') as f:
        f.write('half')
    res = run_module('containerd_kata_payload', archive=payload, **_args(workdir))
    assert res['changed'] and not os.path.exists(stale)
    run_module('containerd_kata_payload', state='absent', **_args(workdir))
    assert not os.path.exists(dest)


def test_manifest_of_another_dest_is_refused(run_module, workdir, payload):
    run_module('containerd_kata_payload', archive=payload, **_args(workdir))
    res = run_module('containerd_kata_payload', archive=payload, expect_fail=True,
                     **_args(workdir, dest=os.path.join(workdir, 'elsewhere')))
    assert 'belongs to' in res['msg']
    res = run_module('containerd_kata_payload', state='absent', expect_fail=True,
                     **_args(workdir, dest=os.path.join(workdir, 'elsewhere')))
    assert 'nothing removed' in res['msg']
    assert os.path.isfile(os.path.join(workdir, 'opt', 'kata', SHIM))


def test_system_folder_refused(run_module, workdir, payload):
    res = run_module('containerd_kata_payload', archive=payload, dest='/opt', expect_fail=True,
                     manifest=os.path.join(workdir, 'm.json'))
    assert 'refused' in res['msg']
