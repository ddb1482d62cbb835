#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Install or remove the kata payload (kata-deploy's /opt/kata) on the node.

Run by the coco role with ansible.builtin.script; prints one JSON object.

  coco_payload.py install --archive A --dest D --root opt/kata --manifest M [--require P]...
  coco_payload.py remove --dest D --manifest M

install
  Unpacks the members of the tarball A that lie under --root into D. Every
  file is written to a temporary name in its folder, flushed and renamed, and
  only when its bytes, mode or link target differ, so a second run changes
  nothing. Members that would land outside D (absolute names, "..", links
  pointing out) are refused before anything is written.
  The manifest M records what was in D before the first install
  ("preexisting", never removed) and every path the payload owns. It is
  written before the first file is touched, so a run killed half way is
  finished by the next run and still removed completely by "remove".
  Paths the manifest owns that the new archive no longer has are removed
  (an upgrade leaves no stale files). --require names paths (relative to D
  or absolute) that must exist afterwards, e.g. the shim and each
  configuration-<shim>.toml; the run fails naming the missing ones.

remove
  Removes what the manifest owns (files and links, then folders that are
  empty and were not there before), then the manifest, then the copy of
  the archive the role made (install --archive-is-cache). Without a manifest
  nothing is removed: a payload that nodeguard did not install is left alone.
"""

from __future__ import absolute_import, division, print_function

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile

FORMAT = 1


class PayloadError(Exception):
    pass


def emit(obj, rc=0):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()
    sys.exit(rc)


def fsync_dir(path):
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path, data, mode):
    """Write bytes atomically (see atomic_write_stream)."""
    atomic_write_stream(path, io.BytesIO(data), mode)


def atomic_symlink(path, target):
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, ".%s.%d.ng-tmp" % (os.path.basename(path), os.getpid()))
    try:
        os.unlink(tmp)
    except OSError:
        pass
    os.symlink(target, tmp)
    try:
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(folder)


def load_manifest(path):
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read().decode("utf-8"))
    except IOError:
        return None
    except ValueError as exc:
        raise PayloadError("the payload manifest %s is damaged (%s). Move it aside; the payload "
                           "files it listed must then be removed by hand." % (path, exc))
    if data.get("format") != FORMAT:
        raise PayloadError("the payload manifest %s has unknown format %r" % (path, data.get("format")))
    return data


def save_manifest(path, data):
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o700)
    atomic_write(path, (json.dumps(data, indent=1, sort_keys=True) + "\n").encode("utf-8"), 0o600)


def clean_rel(name):
    """A member name as a clean relative path, or raise."""
    parts = []
    for part in name.replace("\\", "/").split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            raise PayloadError("archive member %r leaves the payload folder ('..'); refusing the archive" % name)
        parts.append(part)
    return "/".join(parts)


def inside(rel_folder, target):
    """True when a link target, relative to rel_folder, stays inside the payload."""
    if os.path.isabs(target):
        return False
    joined = os.path.normpath(os.path.join(rel_folder, target))
    return not (joined == ".." or joined.startswith("../") or joined.startswith("/"))


def walk_existing(dest):
    out = []
    if not os.path.isdir(dest):
        return out
    for root, dirs, files in os.walk(dest):
        rel_root = os.path.relpath(root, dest)
        for name in dirs + files:
            rel = os.path.normpath(os.path.join(rel_root, name))
            out.append(rel)
    return sorted(out)


def read_members(archive, root):
    """Open the archive; return (tar, entries). Entries are dicts (rel, type, mode, and
    member - the TarInfo whose data a file gets - or target for a link): folders first,
    then archive order. File data is streamed later, never held in memory whole (a real
    kata payload has files of hundreds of MB). The caller closes tar."""
    root = clean_rel(root or "")
    entries = {}
    order = []
    try:
        tar = tarfile.open(archive, "r:*")
    except (IOError, OSError, tarfile.TarError) as exc:
        raise PayloadError("cannot read the payload archive %s: %s" % (archive, exc))
    try:
        members = tar.getmembers()
        by_name = {}
        for m in members:
            by_name[clean_rel(m.name)] = m
        for m in members:
            name = clean_rel(m.name)
            if root:
                if name == root:
                    continue
                if not name.startswith(root + "/"):
                    continue
                rel = name[len(root) + 1:]
            else:
                rel = name
            if not rel:
                continue
            mode = m.mode & 0o7777
            if m.isdir():
                entry = dict(rel=rel, type="dir", mode=mode or 0o755)
            elif m.isreg():
                entry = dict(rel=rel, type="file", mode=mode or 0o644, member=m)
            elif m.issym():
                if not inside(os.path.dirname(rel), m.linkname):
                    raise PayloadError("archive member %r is a link to %r, outside the payload folder; "
                                       "refusing the archive" % (m.name, m.linkname))
                entry = dict(rel=rel, type="link", target=m.linkname)
            elif m.islnk():
                src = by_name.get(clean_rel(m.linkname))
                if src is None or not src.isreg():
                    raise PayloadError("archive member %r is a hard link to %r, which is not a regular file "
                                       "in the archive" % (m.name, m.linkname))
                entry = dict(rel=rel, type="file", mode=mode or (src.mode & 0o7777) or 0o644, member=src)
            else:
                raise PayloadError("archive member %r is a device, fifo or other special file; refusing the "
                                   "archive" % m.name)
            if rel not in entries:
                order.append(rel)
            entries[rel] = entry
    except (IOError, OSError, tarfile.TarError, EOFError) as exc:
        tar.close()
        raise PayloadError("cannot read the payload archive %s: %s" % (archive, exc))
    except PayloadError:
        tar.close()
        raise
    if not entries:
        tar.close()
        raise PayloadError("the payload archive %s has nothing under %r. Fix: set coco_payload_root to the "
                           "folder inside the archive that holds bin/ and share/ (kata-deploy's tarball: "
                           "opt/kata)." % (archive, root or "/"))
    # every parent folder is an entry too
    for rel in list(order):
        parent = os.path.dirname(rel)
        while parent:
            if parent not in entries:
                entries[parent] = dict(rel=parent, type="dir", mode=0o755)
                order.append(parent)
            parent = os.path.dirname(parent)
    # folders first (shallow to deep), then the rest in archive order
    dirs = sorted((r for r in order if entries[r]["type"] == "dir"), key=lambda r: (r.count("/"), r))
    rest = [r for r in order if entries[r]["type"] != "dir"]
    return tar, [entries[r] for r in dirs + rest]


def same_content(path, tar, member):
    """True when the file at path has exactly the member's bytes (streamed)."""
    src = tar.extractfile(member)
    with open(path, "rb") as f:
        while True:
            a = src.read(1 << 20)
            b = f.read(1 << 20)
            if a != b:
                return False
            if not a:
                return True


def atomic_write_stream(path, src, mode):
    """Write a stream atomically: temporary file in the folder, copied, flushed, renamed, folder flushed."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".ng-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(folder)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def remove_path(path):
    """Remove a file or link; True if something was removed."""
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            return False
        os.unlink(path)
        return True
    except OSError:
        return False


def remove_owned(dest, owned, preexisting):
    """Remove the owned paths (files/links first, then empty folders, deepest first)."""
    removed = []
    keep = set(preexisting)
    dirs = []
    for rel in owned:
        if rel in keep:
            continue
        full = os.path.join(dest, rel)
        if os.path.isdir(full) and not os.path.islink(full):
            dirs.append(rel)
        elif remove_path(full):
            removed.append(rel)
    for rel in sorted(dirs, key=lambda r: (-r.count("/"), r)):
        full = os.path.join(dest, rel)
        try:
            os.rmdir(full)
            removed.append(rel + "/")
        except OSError:
            pass  # not empty: something that is not the payload's lives there
    return removed


def cmd_install(args):
    dest = os.path.abspath(args.dest)
    tar, entries = read_members(args.archive, args.root)
    try:
        return install_entries(args, dest, tar, entries)
    finally:
        tar.close()


def install_entries(args, dest, tar, entries):
    manifest = load_manifest(args.manifest)
    changed = False
    if manifest is None or os.path.abspath(manifest.get("dest", dest)) != dest:
        if manifest is not None:
            raise PayloadError("the payload manifest %s belongs to %s, not %s. Fix: remove the payload "
                               "(coco_state: absent) before moving coco_install_dir."
                               % (args.manifest, manifest.get("dest"), dest))
        manifest = dict(format=FORMAT, dest=dest, dest_created=not os.path.exists(dest),
                        preexisting=walk_existing(dest), owned=[], archive_sha256=None, state="installing")
        save_manifest(args.manifest, manifest)
    preexisting = set(manifest.get("preexisting", []))
    new_owned = [e["rel"] for e in entries]
    # record what we are about to own before touching it
    owned_before = list(manifest.get("owned", []))
    union = sorted(set(owned_before) | set(new_owned))
    if union != sorted(owned_before) or manifest.get("state") != "installing":
        manifest["owned"] = union
        manifest["state"] = "installing"
        save_manifest(args.manifest, manifest)
    if not os.path.isdir(dest):
        os.makedirs(dest, 0o755)
        changed = True
    written = []
    for e in entries:
        full = os.path.join(dest, e["rel"])
        if e["type"] == "dir":
            if os.path.islink(full) or (os.path.exists(full) and not os.path.isdir(full)):
                raise PayloadError("%s exists and is not a folder; the payload needs a folder there" % full)
            if not os.path.isdir(full):
                os.mkdir(full, e["mode"])
                os.chmod(full, e["mode"])
                written.append(e["rel"] + "/")
            continue
        if os.path.isdir(full) and not os.path.islink(full):
            raise PayloadError("%s is a folder; the payload has a file there" % full)
        if e["type"] == "file":
            same = False
            if os.path.isfile(full) and not os.path.islink(full):
                st = os.stat(full)
                if st.st_size == e["member"].size and (st.st_mode & 0o7777) == e["mode"]:
                    same = same_content(full, tar, e["member"])
            if not same:
                atomic_write_stream(full, tar.extractfile(e["member"]), e["mode"])
                written.append(e["rel"])
        else:
            if not (os.path.islink(full) and os.readlink(full) == e["target"]):
                atomic_symlink(full, e["target"])
                written.append(e["rel"])
    # what an earlier payload owned that this one no longer has
    stale = [r for r in owned_before if r not in set(new_owned)]
    removed = remove_owned(dest, stale, preexisting) if stale else []
    missing = []
    for req in args.require or []:
        path = req if os.path.isabs(req) else os.path.join(dest, req)
        if not os.path.exists(path):
            missing.append(path)
    archive_sha = sha256_file(args.archive)
    manifest.update(owned=sorted(new_owned), state="installed", archive_sha256=archive_sha,
                    cache=os.path.abspath(args.archive) if args.archive_is_cache else None)
    save_manifest(args.manifest, manifest)
    if missing:
        raise PayloadError("the payload from %s does not provide %s. Nothing in containerd's config was "
                           "changed. Fix: use a kata payload that has these files, or adjust "
                           "coco_runtime_classes / coco_shim_path." % (args.archive, ", ".join(missing)))
    changed = changed or bool(written) or bool(removed)
    return dict(changed=changed, dest=dest, entries=len(entries), written=written[:50],
                written_count=len(written), stale_removed=removed, archive_sha256=archive_sha,
                manifest=args.manifest, preexisting_kept=len(preexisting))


def remove_cache(paths):
    """Delete the cached copies of the archive (never a user's own file: the role passes
    only copies it made), then their folder when empty."""
    removed = []
    for path in paths or []:
        if remove_path(path):
            removed.append(path)
            try:
                os.rmdir(os.path.dirname(path))
            except OSError:
                pass
    return removed


def cmd_remove(args):
    dest = os.path.abspath(args.dest)
    manifest = load_manifest(args.manifest)
    if manifest is None:
        return dict(changed=False, dest=dest, removed=[], removed_count=0,
                    msg="no payload manifest at %s: nodeguard did not install a payload here, nothing removed"
                    % args.manifest)
    if os.path.abspath(manifest.get("dest", dest)) != dest:
        raise PayloadError("the payload manifest %s belongs to %s, not %s; nothing removed"
                           % (args.manifest, manifest.get("dest"), dest))
    preexisting = set(manifest.get("preexisting", []))
    removed = remove_owned(dest, manifest.get("owned", []), preexisting)
    if manifest.get("dest_created") and os.path.isdir(dest):
        try:
            os.rmdir(dest)
            removed.append(dest + "/")
        except OSError:
            pass
    os.unlink(args.manifest)
    fsync_dir(os.path.dirname(args.manifest))
    removed.extend(remove_cache([manifest["cache"]] if manifest.get("cache") else []))
    return dict(changed=True, dest=dest, removed=removed[:50], removed_count=len(removed),
                kept_preexisting=len(preexisting))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    p = sub.add_parser("install")
    p.add_argument("--archive", required=True)
    p.add_argument("--dest", required=True)
    p.add_argument("--root", default="opt/kata")
    p.add_argument("--manifest", required=True)
    p.add_argument("--require", action="append")
    p.add_argument("--archive-is-cache", action="store_true",
                   help="the archive is the role's own copy: remove deletes it too")
    r = sub.add_parser("remove")
    r.add_argument("--dest", required=True)
    r.add_argument("--manifest", required=True)
    args = parser.parse_args(argv)
    try:
        if args.cmd == "install":
            emit(cmd_install(args))
        elif args.cmd == "remove":
            emit(cmd_remove(args))
        parser.print_usage(sys.stderr)
        emit(dict(failed=True, msg="no command given"), rc=2)
    except PayloadError as exc:
        emit(dict(failed=True, msg=str(exc)), rc=1)
    except (IOError, OSError) as exc:
        emit(dict(failed=True, msg="%s: %s" % (getattr(exc, "filename", None) or "payload", exc)), rc=1)


if __name__ == "__main__":
    main()
