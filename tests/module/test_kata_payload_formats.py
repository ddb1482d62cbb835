# -*- coding: utf-8 -*-
"""containerd_kata_payload on current kata payloads: .tar.zst (kata 3.21+, 4.x), .tar.xz and .tar.gz, in the
3.x layout (Go shim, configurations in share/defaults/kata-containers/) and the 4.x one (runtime-rs beside it).

The archives are built by tests/standins/make_kata_payload.sh with the real gzip, xz and zstd. Python here is
older than 3.14, so .tar.zst goes through the node's zstd program, streamed; a node with neither zstd nor the
zstandard package gets an error naming the fix, and nothing is written.
"""

import os
import subprocess
import sys

import pytest

from helpers.common import COLLECTIONS_ROOT, REPO, make_tar

GO_SHIM = 'bin/containerd-shim-kata-v2'
RS_SHIM = 'runtime-rs/bin/containerd-shim-kata-v2'
CONF = 'share/defaults/kata-containers/configuration-%s.toml'
RS_CONF = 'share/defaults/kata-containers/runtime-rs/configuration-%s.toml'


def build(workdir, name, layout='3', shims=()):
    out = os.path.join(workdir, 'cache', name)
    subprocess.run(['bash', os.path.join(REPO, 'tests', 'standins', 'make_kata_payload.sh'), '--layout', layout, out]
                   + list(shims), check=True, capture_output=True)
    return out


def args(workdir, **kw):
    out = dict(dest=os.path.join(workdir, 'opt', 'kata'), manifest=os.path.join(workdir, 'state', 'm.json'))
    out.update(kw)
    return out


def nothing_written(workdir):
    """No payload file and no manifest (the manifest's lock file is taken before the archive is read)."""
    return not os.path.exists(os.path.join(workdir, 'opt')) \
        and not os.path.exists(os.path.join(workdir, 'state', 'm.json'))


def test_python_here_cannot_read_zstd_itself():
    """The zstd tests below exercise the zstd program only while tarfile cannot read zstd (Python < 3.14)."""
    import tarfile
    assert sys.version_info < (3, 14) and 'zst' not in getattr(tarfile.TarFile, 'OPEN_METH', {})


@pytest.mark.parametrize('ext', ['tar.gz', 'tar.xz', 'tar.zst'])
@pytest.mark.parametrize('layout', ['3', '4'])
def test_each_format_and_layout_installs_idempotently_and_is_removed(run_module, workdir, ext, layout):
    archive = build(workdir, 'kata-static-x-amd64.' + ext, layout)
    require = [GO_SHIM, CONF % 'qemu', CONF % 'qemu-tdx']
    if layout == '4':
        require += [RS_SHIM, RS_CONF % 'dragonball', RS_CONF % 'qemu-runtime-rs']
    res = run_module('containerd_kata_payload', archive=archive, require=require, **args(workdir))
    dest = os.path.join(workdir, 'opt', 'kata')
    assert res['changed'] and res['installed_count'] == res['entries'] + 1  # + dest itself
    assert res['layout']['go'] == dict(shim=GO_SHIM, configurations=['qemu', 'qemu-coco-dev', 'qemu-snp', 'qemu-tdx'])
    if layout == '4':
        assert res['layout']['rs'] == dict(shim=RS_SHIM, configurations=['dragonball', 'qemu-runtime-rs'])
        assert os.access(os.path.join(dest, RS_SHIM), os.X_OK)
    else:
        assert res['layout']['rs'] == dict(shim=None, configurations=[])
    with open(os.path.join(dest, CONF % 'qemu-tdx')) as f:
        assert 'confidential_guest = true' in f.read()
    again = run_module('containerd_kata_payload', archive=archive, require=require, **args(workdir))
    assert not again['changed'] and again['installed'] == [] and again['updated'] == []
    run_module('containerd_kata_payload', state='absent', **args(workdir))
    assert not os.path.exists(dest)


def test_the_same_payload_in_each_format_gives_the_same_tree(run_module, workdir):
    """An upgrade from .tar.xz to .tar.zst of the same payload changes nothing on the node."""
    xz = build(workdir, 'kata.tar.xz', '4')
    run_module('containerd_kata_payload', archive=xz, **args(workdir))
    res = run_module('containerd_kata_payload', archive=build(workdir, 'kata.tar.zst', '4'), **args(workdir))
    assert not res['changed'], res


def test_zstd_without_a_reader_fails_naming_the_fix_and_writes_nothing(run_module, workdir, tmp_path):
    archive = build(workdir, 'kata-static-3.21.0-amd64.tar.zst')
    # no zstd program in PATH, and an import of zstandard fails as on a node without the package
    empty = tmp_path / 'bin'
    empty.mkdir()
    blocker = tmp_path / 'block'
    blocker.mkdir()
    (blocker / 'zstandard.py').write_text('raise ImportError("not installed")\n')
    env = dict(PATH=str(empty), PYTHONPATH=str(blocker) + os.pathsep + COLLECTIONS_ROOT)
    res = run_module('containerd_kata_payload', archive=archive, expect_fail=True, env=env, **args(workdir))
    assert res['msg'].startswith('the payload archive %s is zstd-compressed (.tar.zst' % archive), res['msg']
    assert 'Fix: install zstd on the node' in res['msg'] and 'Nothing was written' in res['msg']
    assert nothing_written(workdir)


def test_a_damaged_zstd_archive_is_refused_before_anything_is_written(run_module, workdir):
    archive = build(workdir, 'kata.tar.zst')
    with open(archive, 'rb') as f:
        data = f.read()
    cut = archive + '.cut.tar.zst'
    with open(cut, 'wb') as f:
        f.write(data[:len(data) // 2])
    res = run_module('containerd_kata_payload', archive=cut, expect_fail=True, **args(workdir))
    assert res['msg'].startswith('cannot read the payload archive %s' % cut), res['msg']
    assert nothing_written(workdir)


@pytest.mark.parametrize('member, why', [
    (('opt/kata/../../etc/evil', 'file', b'x', 0o644), 'leaves the payload folder'),
    (('opt/kata/bin/out', 'link', '/etc/passwd', 0o777), 'outside the payload folder'),
])
def test_member_checks_run_on_zstd_archives_before_anything_is_written(run_module, workdir, member, why):
    plain = make_tar(os.path.join(workdir, 'bad.tar'), [('opt/kata/bin/ok', 'file', b'ok', 0o755), member], 'w')
    subprocess.run(['zstd', '-q', '--rm', plain, '-o', plain + '.zst'], check=True)
    res = run_module('containerd_kata_payload', archive=plain + '.zst', expect_fail=True, **args(workdir))
    assert why in res['msg'], res['msg']
    assert nothing_written(workdir)


def test_a_class_whose_files_are_missing_is_reported_with_what_the_payload_has(run_module, workdir):
    """A 3.x payload asked for a runtime-rs class: the message names the missing files and the layout found."""
    archive = build(workdir, 'kata.tar.zst', '3', ['qemu', 'qemu-nvidia-gpu'])
    res = run_module('containerd_kata_payload', archive=archive, require=[RS_SHIM, RS_CONF % 'dragonball'],
                     expect_fail=True, **args(workdir))
    dest = os.path.join(workdir, 'opt', 'kata')
    assert 'does not provide %s, %s' % (os.path.join(dest, RS_SHIM), os.path.join(dest, RS_CONF % 'dragonball')) \
        in res['msg'], res['msg']
    assert ('Go runtime: shim bin/containerd-shim-kata-v2, configurations in share/defaults/kata-containers/ for qemu, '
            'qemu-nvidia-gpu; runtime-rs: shim none') in res['msg'], res['msg']
