# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kata payload (kata-deploy's /opt/kata) unpacked from a tarball, and removed again (containerd_kata_payload).

Install unpacks the members under ``root`` into ``dest``, each file through
``_atomic`` (temporary name in its folder, flushed, renamed) and only when
its bytes, mode or link target differ. A manifest in the state folder
records what was in ``dest`` before the first install (never removed) and
every path the payload owns; it is written before the first file is
touched, so a run killed half way is finished by the next one and still
removed completely. Remove deletes exactly what the manifest owns.

Check mode runs the same plan and writes nothing: ``plan_*`` return what
would change, ``apply_*`` do it.

Archives: gzip, xz and bzip2 through ``tarfile``; zstd (kata 3.21 and later
ship ``kata-static-<version>-<arch>.tar.zst``) through ``tarfile`` on Python
3.14+, else the ``zstandard`` package, else the node's ``zstd`` program,
streamed (``ZstdStream``): no uncompressed copy is written anywhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os
import subprocess
import sys
import tarfile

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    atomic_symlink,
    atomic_write,
    atomic_write_stream,
    clean_stale_temps,
    fsync_dir,
    read_json,
    remove_quietly,
    sha256_file,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.process import which

FORMAT = 1
CHUNK = 1 << 20
# the result lists this many paths of each kind (a real payload has thousands); the counts are exact
LISTED = 100


class PayloadError(Exception):
    pass


# ------------------------------------------------------------------ zstd
ZSTD_MAGIC = b'\x28\xb5\x2f\xfd'
ZSTD_FIX = ('Fix: install zstd on the node (Debian/Ubuntu: apt-get install zstd; RHEL/Fedora: dnf install zstd) '
            'or the zstandard Python package, or give a .tar.xz / .tar.gz payload.')


def is_zstd(path):
    with open(path, 'rb') as f:
        return f.read(4) == ZSTD_MAGIC


def tarfile_reads_zstd():
    """Python 3.14+ reads .tar.zst itself."""
    return 'zst' in getattr(tarfile.TarFile, 'OPEN_METH', {})


def find_zstd():
    """The zstd program in PATH, or None (an empty PATH entry is not the working folder: nothing runs from there)."""
    return which('zstd', extra=())


def zstd_opener(archive):
    """A function giving a fresh decompressed stream of archive (read from its start), and what it uses."""
    try:
        import zstandard  # pylint: disable=import-outside-toplevel
    except ImportError:
        zstandard = None
    if zstandard is not None:
        return (lambda: _PackageStream(zstandard, archive)), 'zstandard'
    binary = find_zstd()
    if binary is not None:
        return (lambda: _ProgramStream(binary, archive)), binary
    raise PayloadError('the payload archive %s is zstd-compressed (.tar.zst, as kata ships since 3.21) and this node '
                       'cannot read zstd: Python %d.%d\'s tarfile reads it only from 3.14, the zstandard package is '
                       'not installed and there is no zstd program in PATH. Nothing was written. %s'
                       % (archive, sys.version_info[0], sys.version_info[1], ZSTD_FIX))


class _PackageStream(object):
    """The zstandard package's decompressing reader over the archive."""

    def __init__(self, zstandard, archive):
        self._file = open(archive, 'rb')
        self._reader = zstandard.ZstdDecompressor().stream_reader(self._file, read_size=CHUNK)

    def read(self, size):
        return self._reader.read(size)

    def close(self):
        self._reader.close()
        self._file.close()


class _ProgramStream(object):
    """`zstd -dc ARCHIVE`'s output; a failure (damaged archive) is raised at its end, with zstd's words."""

    def __init__(self, binary, archive):
        self._archive = archive
        # a stream read chunk by chunk while zstd runs: run_command would hold the whole output in memory
        self._proc = subprocess.Popen([binary, '-dcq', '--', archive], stdin=subprocess.DEVNULL,  # pylint: disable=consider-using-with,ansible-bad-function
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=CHUNK)

    def read(self, size):
        data = self._proc.stdout.read(size)
        if not data:
            err = self._proc.stderr.read().decode('utf-8', 'replace').strip()
            if self._proc.wait() != 0:
                raise IOError('zstd cannot decompress %s: %s'
                              % (self._archive, err or 'exit %d' % self._proc.returncode))
        return data

    def close(self):
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.stdout.close()
        self._proc.stderr.close()
        self._proc.wait()


# how far back a zstd stream can seek without starting the decompression again: tarfile reads a member to
# compare it with the node's file, then again to write it when it differs
REWIND_BYTES = 8 * 1024 * 1024


class ZstdStream(io.RawIOBase):
    """The decompressed tar as a seekable file for tarfile: forward seeks read ahead, a backward seek within the
    last REWIND_BYTES replays them, a longer one starts the decompression again. tarfile reads the member list once
    (the checks), then each member's data in archive order, so a payload is decompressed about twice and never
    stored uncompressed; memory stays within REWIND_BYTES."""

    def __init__(self, opener):
        io.RawIOBase.__init__(self)
        self._opener = opener
        self._stream = opener()
        self._pos = 0
        self._history = bytearray()  # the last bytes read, up to REWIND_BYTES
        self._replay = 0             # how many of them a backward seek gave back to read again

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def _read(self, size):
        if self._replay:
            start = len(self._history) - self._replay
            data = bytes(self._history[start:start + size])
            self._replay -= len(data)
        else:
            data = self._stream.read(size)
            self._history += data
            if len(self._history) > REWIND_BYTES:
                del self._history[:len(self._history) - REWIND_BYTES]
        self._pos += len(data)
        return data

    def readinto(self, buf):
        data = self._read(len(buf))
        buf[:len(data)] = data
        return len(data)

    def seek(self, offset, whence=io.SEEK_SET):
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence != io.SEEK_SET:
            raise io.UnsupportedOperation('a zstd stream cannot seek from its end')
        back = self._pos - offset
        if 0 < back <= len(self._history) - self._replay:
            self._replay += back
            self._pos = offset
        elif back > 0:
            self._stream.close()
            self._stream = self._opener()
            self._pos, self._history, self._replay = 0, bytearray(), 0
        while self._pos < offset:
            if not self._read(min(CHUNK, offset - self._pos)):
                break
        return self._pos

    def close(self):
        if not self.closed:
            self._stream.close()
        io.RawIOBase.close(self)


class _StreamTarFile(tarfile.TarFile):
    """A TarFile that closes the stream it was opened on (tarfile leaves a given fileobj open)."""
    stream = None

    def close(self):
        try:
            tarfile.TarFile.close(self)
        finally:
            if self.stream is not None:
                self.stream.close()


def open_archive(archive):
    """The archive as an open tarfile (any compression tarfile reads, and zstd)."""
    if is_zstd(archive) and not tarfile_reads_zstd():
        stream = io.BufferedReader(ZstdStream(zstd_opener(archive)[0]), CHUNK)
        try:
            tar = _StreamTarFile.open(fileobj=stream, mode='r:')
        except Exception:
            stream.close()
            raise
        tar.stream = stream
        return tar
    return tarfile.open(archive, 'r:*')


# ------------------------------------------------------------------ manifest
def load_manifest(path):
    data = read_json(path, lambda why: PayloadError('the payload manifest %s is damaged (%s). Move it aside; the payload '
                                                    'files it listed must then be removed by hand.' % (path, why)))
    if data is None:
        return None
    if not isinstance(data, dict) or data.get('format') != FORMAT:
        raise PayloadError('the payload manifest %s has unknown format %r'
                           % (path, data.get('format') if isinstance(data, dict) else data))
    return data


def save_manifest(path, data):
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o700)
    atomic_write(path, (json.dumps(data, indent=1, sort_keys=True) + '\n').encode('utf-8'), mode=0o600)


def manifest_lock(path, timeout, check_mode):
    """The manifest's lock (two runs on one payload wait for each other); check mode creates no lock file."""
    folder = os.path.dirname(path)
    if not check_mode and not os.path.isdir(folder):
        os.makedirs(folder, 0o700)
    if check_mode and not os.path.isdir(folder):
        return None
    return FileLock(path, timeout, create=not check_mode)


# ------------------------------------------------------------------ archive
def clean_rel(name):
    """A member name as a clean relative path, or raise."""
    parts = []
    for part in name.replace('\\', '/').split('/'):
        if part in ('', '.'):
            continue
        if part == '..':
            raise PayloadError("archive member %r leaves the payload folder ('..'); refusing the archive" % name)
        parts.append(part)
    return '/'.join(parts)


def inside(rel_folder, target):
    """True when a link target, relative to rel_folder, stays inside the payload."""
    if os.path.isabs(target):
        return False
    joined = os.path.normpath(os.path.join(rel_folder, target))
    return not (joined == '..' or joined.startswith('../') or joined.startswith('/'))


def _entry(member, rel, by_name):
    mode = member.mode & 0o7777
    if member.isdir():
        return dict(rel=rel, type='dir', mode=mode or 0o755)
    if member.isreg():
        return dict(rel=rel, type='file', mode=mode or 0o644, member=member)
    if member.issym():
        if not inside(os.path.dirname(rel), member.linkname):
            raise PayloadError('archive member %r is a link to %r, outside the payload folder; refusing the archive'
                               % (member.name, member.linkname))
        return dict(rel=rel, type='link', target=member.linkname)
    if member.islnk():
        src = by_name.get(clean_rel(member.linkname))
        if src is None or not src.isreg():
            raise PayloadError('archive member %r is a hard link to %r, which is not a regular file in the archive'
                               % (member.name, member.linkname))
        return dict(rel=rel, type='file', mode=mode or (src.mode & 0o7777) or 0o644, member=src)
    raise PayloadError('archive member %r is a device, fifo or other special file; refusing the archive'
                       % member.name)


def read_members(archive, root):
    """(open tarfile, entries): folders first (shallow to deep), then the rest in archive order.

    Every member is checked before anything is written. File data is
    streamed later, never held in memory whole. The caller closes the tar.
    """
    root = clean_rel(root or '')
    try:
        tar = open_archive(archive)
    except (IOError, OSError, tarfile.TarError) as exc:
        raise PayloadError('cannot read the payload archive %s: %s' % (archive, exc))
    entries, order = {}, []
    try:
        members = tar.getmembers()
        by_name = dict((clean_rel(m.name), m) for m in members)
        for m in members:
            name = clean_rel(m.name)
            if root:
                if not name.startswith(root + '/'):
                    continue
                rel = name[len(root) + 1:]
            else:
                rel = name
            if not rel:
                continue
            if rel not in entries:
                order.append(rel)
            entries[rel] = _entry(m, rel, by_name)
    except (IOError, OSError, tarfile.TarError, EOFError) as exc:
        tar.close()
        raise PayloadError('cannot read the payload archive %s: %s' % (archive, exc))
    except PayloadError:
        tar.close()
        raise
    if not entries:
        tar.close()
        raise PayloadError('the payload archive %s has nothing under %r. Fix: set root (coco_payload_root) to the '
                           'folder inside the archive that holds bin/ and share/ (kata-deploy\'s tarball: opt/kata).'
                           % (archive, root or '/'))
    for rel in list(order):  # every parent folder is an entry too
        parent = os.path.dirname(rel)
        while parent:
            if parent not in entries:
                entries[parent] = dict(rel=parent, type='dir', mode=0o755)
                order.append(parent)
            parent = os.path.dirname(parent)
    dirs = sorted((r for r in order if entries[r]['type'] == 'dir'), key=lambda r: (r.count('/'), r))
    rest = [r for r in order if entries[r]['type'] != 'dir']
    return tar, [entries[r] for r in dirs + rest]


# kata's layout under /opt/kata: the Go runtime (kata 3.x's default) and runtime-rs (4.x's default) side by side
GO_SHIM = 'bin/containerd-shim-kata-v2'
RS_SHIM = 'runtime-rs/bin/containerd-shim-kata-v2'
CONFIG_DIR = 'share/defaults/kata-containers'
RS_CONFIG_DIR = CONFIG_DIR + '/runtime-rs'


def _configurations(rels, folder):
    """The shim names of folder/configuration-<shim>.toml among rels."""
    out = []
    for rel in rels:
        head, name = os.path.split(rel)
        if head == folder and name.startswith('configuration-') and name.endswith('.toml'):
            out.append(name[len('configuration-'):-len('.toml')])
    return sorted(out)


def describe_layout(rels):
    """Which kata runtimes a payload (paths relative to dest) carries: each shim and its configurations."""
    rels = set(rels)
    return dict(go=dict(shim=GO_SHIM if GO_SHIM in rels else None, configurations=_configurations(rels, CONFIG_DIR)),
                rs=dict(shim=RS_SHIM if RS_SHIM in rels else None, configurations=_configurations(rels, RS_CONFIG_DIR)))


def layout_text(layout):
    """The layout in words, for an error message."""
    parts = []
    for key, what, folder in (('go', 'Go runtime', CONFIG_DIR), ('rs', 'runtime-rs', RS_CONFIG_DIR)):
        part = layout[key]
        parts.append('%s: shim %s, configurations in %s/ for %s' % (
            what, part['shim'] or 'none', folder, ', '.join(part['configurations']) or 'no shim'))
    return '; '.join(parts)


def _same_content(path, tar, member):
    src = tar.extractfile(member)
    with open(path, 'rb') as f:
        while True:
            a = src.read(CHUNK)
            b = f.read(CHUNK)
            if a != b:
                return False
            if not a:
                return True


def walk_existing(dest):
    out = []
    if not os.path.isdir(dest):
        return out
    for root, dirs, files in os.walk(dest):
        rel_root = os.path.relpath(root, dest)
        for name in dirs + files:
            out.append(os.path.normpath(os.path.join(rel_root, name)))
    return sorted(out)


# ------------------------------------------------------------------ install
def _what_differs(dest, tar, e):
    """None when the path already is what the entry says, else 'installed' or 'updated'; raise on a clash."""
    full = os.path.join(dest, e['rel'])
    exists = os.path.lexists(full)
    is_dir = os.path.isdir(full) and not os.path.islink(full)
    if e['type'] == 'dir':
        if exists and not is_dir:
            raise PayloadError('%s exists and is not a folder; the payload needs a folder there' % full)
        return None if is_dir else 'installed'
    if is_dir:
        raise PayloadError('%s is a folder; the payload has a file there' % full)
    if e['type'] == 'file':
        if os.path.isfile(full) and not os.path.islink(full):
            st = os.stat(full)
            if st.st_size == e['member'].size and (st.st_mode & 0o7777) == e['mode'] \
                    and _same_content(full, tar, e['member']):
                return None
        return 'updated' if exists else 'installed'
    if os.path.islink(full) and os.readlink(full) == e['target']:
        return None
    return 'updated' if exists else 'installed'


def _remove_owned(dest, owned, preexisting, check_mode):
    """Remove owned paths (files and links first, then empty folders, deepest first); return what went."""
    removed, dirs = [], []
    for rel in owned:
        if rel in preexisting:
            continue
        full = os.path.join(dest, rel)
        if os.path.isdir(full) and not os.path.islink(full):
            dirs.append(rel)
        elif os.path.lexists(full):
            if not check_mode:
                try:
                    os.unlink(full)
                except OSError:
                    continue
            removed.append(rel)
    gone = set(removed)
    for rel in sorted(dirs, key=lambda r: (-r.count('/'), r)):
        full = os.path.join(dest, rel)
        if check_mode:
            # empty once what goes before it went
            left = [n for n in os.listdir(full) if os.path.join(rel, n) not in gone]
            if not left:
                removed.append(rel + '/')
                gone.add(rel)
            continue
        try:
            os.rmdir(full)
            removed.append(rel + '/')
        except OSError:
            pass  # not empty: something that is not the payload's lives there
    return removed


def _write_members(dest, tar, entries, check_mode):
    """Write the members that differ from what dest has; (installed, updated) as listed in the result."""
    installed, updated = [], []
    if not os.path.isdir(dest):
        if not check_mode:
            os.makedirs(dest, 0o755)
        installed.append('./')
    for e in entries:
        how = _what_differs(dest, tar, e) if os.path.isdir(dest) else 'installed'
        if how is None:
            continue
        (installed if how == 'installed' else updated).append(e['rel'] + ('/' if e['type'] == 'dir' else ''))
        if check_mode:
            continue
        full = os.path.join(dest, e['rel'])
        if e['type'] == 'dir':
            os.mkdir(full, e['mode'])
            os.chmod(full, e['mode'])
            fsync_dir(os.path.dirname(full))
        elif e['type'] == 'file':
            clean_stale_temps(full)  # a killed run's half-written copy
            atomic_write_stream(full, tar.extractfile(e['member']), e['mode'], chunk=CHUNK)
        else:
            clean_stale_temps(full)
            atomic_symlink(full, e['target'])
    return installed, updated


def _missing_required(require, dest, provided, check_mode):
    """The required paths (relative to dest, or absolute) that are not there (in check mode: nor provided)."""
    missing = []
    for req in require:
        path = os.path.normpath(req if os.path.isabs(req) else os.path.join(dest, req))
        if not (os.path.exists(path) or (check_mode and path in provided)):
            missing.append(path)
    return missing


def install(params, check_mode):
    """Unpack the archive into dest; the module's result."""
    dest = os.path.abspath(params['dest'])
    archive = params['archive']
    manifest_path = params['manifest']
    if check_mode and (params.get('archive_pending') or not os.path.exists(archive)):
        # copied or downloaded by an earlier task that check mode did not run: the file there now (if any) is an
        # older archive, and reading it would judge the wrong payload
        state = 'would be replaced' if os.path.exists(archive) else 'is not on the node yet'
        return dict(changed=True, dest=dest, entries=0, installed=[], installed_count=0, updated=[], updated_count=0,
                    removed=[], removed_count=0, archive_sha256=None, manifest=manifest_path, preexisting_kept=0,
                    msg='%s %s (check mode): the whole payload would be installed' % (archive, state))
    tar, entries = read_members(archive, params['root'])
    try:
        manifest = load_manifest(manifest_path)
        if manifest is not None and os.path.abspath(manifest.get('dest', dest)) != dest:
            raise PayloadError('the payload manifest %s belongs to %s, not %s. Fix: remove the payload (state: '
                               'absent, coco_state: absent) before moving dest (coco_install_dir).'
                               % (manifest_path, manifest.get('dest'), dest))
        if manifest is None:
            manifest = dict(format=FORMAT, dest=dest, dest_created=not os.path.exists(dest),
                            preexisting=walk_existing(dest), owned=[], archive_sha256=None, state='installing')
            if not check_mode:
                save_manifest(manifest_path, manifest)
        preexisting = set(manifest.get('preexisting', []))
        new_owned = [e['rel'] for e in entries]
        owned_before = list(manifest.get('owned', []))
        union = sorted(set(owned_before) | set(new_owned))
        # record what we are about to own before touching it
        if not check_mode and (union != sorted(owned_before) or manifest.get('state') != 'installing'):
            manifest.update(owned=union, state='installing')
            save_manifest(manifest_path, manifest)
        installed, updated = _write_members(dest, tar, entries, check_mode)
        # what an earlier payload owned that this one no longer has
        new_set = set(new_owned)
        stale = [r for r in owned_before if r not in new_set]
        removed = _remove_owned(dest, stale, preexisting, check_mode) if stale else []
        provided = set(os.path.normpath(os.path.join(dest, r)) for r in new_owned)
        missing = _missing_required(params.get('require') or [], dest, provided, check_mode)
        archive_sha = sha256_file(archive)
        cache = os.path.abspath(archive) if params.get('archive_is_cache') else None
        # the copy of an earlier archive (another URL or file name): the role's own, no longer read by anyone
        old_cache = manifest.get('cache') if manifest.get('cache') != cache else None
        if not check_mode:
            manifest.update(owned=sorted(new_owned), state='installed', archive_sha256=archive_sha, cache=cache)
            save_manifest(manifest_path, manifest)
        removed.extend(_remove_cache(old_cache, check_mode))
    finally:
        tar.close()
    layout = describe_layout(new_owned)
    if missing:
        raise PayloadError('the payload from %s does not provide %s. Nothing in containerd\'s config was changed. '
                           'The payload has %s. Fix: use a kata payload that has these files, or adjust require '
                           '(coco_runtime_classes: a class\'s runtime, go or rs, picks the shim and the folder of its '
                           'configuration; coco_shim_path).' % (archive, ', '.join(missing), layout_text(layout)))
    return dict(changed=bool(installed or updated or removed), dest=dest, layout=layout,
                entries=len(entries), installed=installed[:LISTED], installed_count=len(installed),
                updated=updated[:LISTED], updated_count=len(updated), removed=removed[:LISTED],
                removed_count=len(removed), archive_sha256=archive_sha, manifest=manifest_path,
                preexisting_kept=len(preexisting))


# ------------------------------------------------------------------ remove
def _remove_cache(path, check_mode):
    """The role's own copy of the archive (never a user's file: only archive_is_cache records one), then its empty folder."""
    if not path or not os.path.lexists(path) or os.path.isdir(path):
        return []
    if not check_mode:
        remove_quietly(path)
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass
    return [path]


def remove(params, check_mode):
    """Remove what the manifest owns; the module's result. Without a manifest nothing is removed."""
    dest = os.path.abspath(params['dest'])
    manifest_path = params['manifest']
    manifest = load_manifest(manifest_path)
    if manifest is None:
        return dict(changed=False, dest=dest, removed=[], removed_count=0, manifest=manifest_path,
                    msg='no payload manifest at %s: nodeguard did not install a payload here, nothing removed'
                    % manifest_path)
    if os.path.abspath(manifest.get('dest', dest)) != dest:
        raise PayloadError('the payload manifest %s belongs to %s, not %s; nothing removed'
                           % (manifest_path, manifest.get('dest'), dest))
    preexisting = set(manifest.get('preexisting', []))
    removed = _remove_owned(dest, manifest.get('owned', []), preexisting, check_mode)
    if manifest.get('dest_created') and os.path.isdir(dest):
        if check_mode:
            owned_gone = set(r.rstrip('/') for r in removed)
            if not [n for n in os.listdir(dest) if n not in owned_gone]:
                removed.append(dest + '/')
        else:
            try:
                os.rmdir(dest)
                removed.append(dest + '/')
            except OSError:
                pass
    if not check_mode:
        os.unlink(manifest_path)
        fsync_dir(os.path.dirname(manifest_path))
    removed.extend(_remove_cache(manifest.get('cache'), check_mode))
    return dict(changed=True, dest=dest, removed=removed[:LISTED], removed_count=len(removed),
                kept_preexisting=len(preexisting), manifest=manifest_path)


def diff_of(result):
    """A --diff view: the paths that change, as lists of lines."""
    before = ''.join('%s\n' % p for p in result.get('updated', []) + result.get('removed', []))
    after = ''.join('%s\n' % p for p in result.get('installed', []) + result.get('updated', []))
    return dict(before=before, after=after, before_header='%s (paths replaced or removed)' % result['dest'],
                after_header='%s (paths installed or replaced)' % result['dest'])
