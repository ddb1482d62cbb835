#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side helper of the coco role: one call instead of many small tasks.

Run with ansible.builtin.script; prints one JSON object; standard library only.

  facts          read-only: containerd version, config version, what the
                 ledger says the owner added, coco's drop-ins and folder,
                 kubectl / kubeconfig / node name
  mkdir-dropin   create the drop-in folder, writing a marker FIRST so that
                 uninstall knows coco created it (also after a kill in between)
  write-file     write a drop-in atomically (temporary file in the same
                 folder, validated by a command, flushed, renamed, folder
                 flushed) only when its bytes or mode differ
  remove-dropins delete drop-ins that the config no longer imports, then the
                 drop-in folder when coco created it and it is empty
"""

from __future__ import absolute_import, division, print_function

import argparse
import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile

TOML_VERSION_RE = re.compile(r"(?m)^\s*version\s*=\s*(\d+)\s*(?:#.*)?$")
VERSION_RE = re.compile(r"\bv?(\d+)\.(\d+)(?:\.(\d+))?")


class HelperError(Exception):
    pass


def emit(obj, rc=0):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()
    sys.exit(rc)


def run(argv, timeout=60):
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ, LC_ALL="C"))
    except OSError as exc:
        return 127, "", str(exc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return 124, out.decode("utf-8", "replace"), "timed out after %ss" % timeout
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def which(name):
    if os.path.isabs(name):
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")


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


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except (IOError, OSError):
        return None


def ledger_path(state_dir, config_path):
    name = os.path.abspath(config_path).strip("/").replace("%", "%25").replace("/", "%2F")
    return os.path.join(state_dir, "ledger", name + ".json")


def owned_from_ledger(state_dir, config_path, owner):
    path = ledger_path(state_dir, config_path)
    raw = read_text(path)
    out = dict(ledger=path, runtimes=[], tables=[], settings=[], imports=[], ledger_error=None)
    if raw is None:
        return out
    try:
        records = json.loads(raw).get("records", [])
    except (ValueError, AttributeError) as exc:
        out["ledger_error"] = "%s is damaged: %s" % (path, exc)
        return out
    for rec in records:
        if not isinstance(rec, dict) or rec.get("owner") != owner or rec.get("kind") == "released":
            continue
        resource = rec.get("resource") or ""
        if resource.startswith("runtime:"):
            name = resource[len("runtime:"):].split("#", 1)[0]
            if name not in out["runtimes"]:
                out["runtimes"].append(name)
            if rec.get("kind") == "table" and name not in out["tables"]:
                out["tables"].append(name)
        elif resource.startswith("setting:"):
            key = resource[len("setting:"):]
            if key not in out["settings"]:
                out["settings"].append(key)
        elif resource.startswith("import:"):
            key = resource[len("import:"):]
            if key not in out["imports"]:
                out["imports"].append(key)
    return out


def imports_of(text):
    """The imports entries of a config (tomllib or tomlkit; a regex when the file does not parse)."""
    if text is None:
        return []
    data = None
    try:
        import tomllib  # Python 3.11+
        data = tomllib.loads(text)
    except ImportError:
        try:
            import tomlkit
            # only the imports list is read: no unwrap() (tomlkit < 0.11 has none),
            # its items are str subclasses
            entries = tomlkit.parse(text).get("imports")
            data = {"imports": [str(e) for e in entries if isinstance(e, str)]
                    if isinstance(entries, list) else entries}
        except Exception:  # noqa: BLE001 - unparseable: fall back to the regex
            data = None
    except Exception:  # noqa: BLE001
        data = None
    if isinstance(data, dict):
        entries = data.get("imports") or []
        return [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    m = re.search(r"(?ms)^\s*imports\s*=\s*\[(.*?)\]", text)
    if not m:
        return []
    return [a or b for a, b in re.findall(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'", m.group(1))]


def resolve(entry, config_path):
    if os.path.isabs(entry):
        return os.path.normpath(entry)
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(config_path)), entry))


def cmd_facts(args):
    containerd = which("containerd")
    version_text, major, release = "", 0, "0.0"
    if containerd:
        rc, out, err = run([containerd, "--version"], timeout=30)
        version_text = (out or err).strip()
        for word in version_text.split()[1:]:
            m = VERSION_RE.match(word)
            if m:
                major, release = int(m.group(1)), "%s.%s" % (m.group(1), m.group(2))
                break
    text = read_text(args.config)
    try:
        with open(args.config, "rb") as f:
            config_sha256 = hashlib.sha256(f.read()).hexdigest()
    except (IOError, OSError):
        config_sha256 = None
    cfg_version = None
    if text is not None:
        m = TOML_VERSION_RE.search(text)
        cfg_version = int(m.group(1)) if m else 1
    imports = imports_of(text)
    owned = owned_from_ledger(args.state_dir, args.config, args.owner)
    dropins = {}
    for path in args.dropin or []:
        try:
            with open(path, "rb") as f:
                dropin_sha256 = hashlib.sha256(f.read()).hexdigest()
        except (IOError, OSError):
            dropin_sha256 = None
        dropins[path] = dict(exists=os.path.exists(path), sha256=dropin_sha256,
                             imported=any(resolve(e, args.config) == os.path.normpath(path) for e in imports),
                             owned_import=os.path.normpath(path) in owned["imports"])
    kube = dict(enabled=False, reason="", kubectl="", kubeconfig="", node="")
    if args.kubernetes == "false":
        kube["reason"] = "coco_kubernetes is false"
    else:
        kubectl = which(args.kubectl or "kubectl")
        configs = [c for c in (args.kubeconfig or []) if c and os.path.exists(c)]
        if not kubectl:
            kube["reason"] = "no kubectl (%s) on the node" % (args.kubectl or "kubectl in PATH")
        elif not configs:
            kube["reason"] = "no kubeconfig on the node (tried %s)" % ", ".join(args.kubeconfig or [])
        else:
            kube.update(enabled=True, kubectl=kubectl, kubeconfig=configs[0])
        kube["node"] = args.node_name or socket.gethostname()
    return dict(
        changed=False,
        containerd=containerd or "",
        containerd_version_text=version_text,
        containerd_major=major,
        containerd_release=release,
        config_exists=text is not None,
        config_sha256=config_sha256,
        config_version=cfg_version,
        imports=imports,
        owned=owned,
        dropins=dropins,
        dropin_dir_exists=os.path.isdir(args.dropin_dir) if args.dropin_dir else False,
        dropin_dir_marker=os.path.exists(args.marker) if args.marker else False,
        payload_manifest=os.path.exists(args.manifest) if args.manifest else False,
        kube=kube,
    )


def cmd_mkdir_dropin(args):
    if os.path.isdir(args.dir):
        return dict(changed=False, dir=args.dir)
    folder = os.path.dirname(args.marker)
    if not os.path.isdir(folder):
        os.makedirs(folder, 0o700)
    if not os.path.exists(args.marker):
        atomic_write(args.marker, (args.dir + "\n").encode("utf-8"), 0o600, validate=None)
    os.makedirs(args.dir, 0o755)
    os.chmod(args.dir, 0o755)
    fsync_dir(os.path.dirname(args.dir))
    return dict(changed=True, dir=args.dir, marker=args.marker)


def atomic_write(path, data, mode, validate):
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), suffix=".ng-tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if validate:
            argv = [a.replace("%s", tmp) for a in shlex.split(validate)]
            rc, out, err = run(argv, timeout=120)
            if rc != 0:
                detail = (err or out).strip().splitlines()
                raise HelperError("refusing to write %s: validation \"%s\" failed (rc=%s): %s. Nothing was written."
                                  % (path, validate, rc, " | ".join(detail[-3:]) or "no output"))
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(folder)


def cmd_write_file(args):
    data = base64.b64decode(args.content_b64)
    mode = int(args.mode, 8)
    try:
        st = os.lstat(args.dest)
    except OSError:
        st = None
    if st is not None and os.path.islink(args.dest):
        raise HelperError("%s is a symbolic link; coco does not write through links" % args.dest)
    if st is not None and (st.st_mode & 0o7777) == mode:
        with open(args.dest, "rb") as f:
            if f.read() == data:
                return dict(changed=False, dest=args.dest)
    if not os.path.isdir(os.path.dirname(args.dest)):
        raise HelperError("folder %s does not exist" % os.path.dirname(args.dest))
    atomic_write(args.dest, data, mode, args.validate or None)
    return dict(changed=True, dest=args.dest)


def cmd_remove_dropins(args):
    text = read_text(args.config)
    imports = [resolve(e, args.config) for e in imports_of(text)]
    removed, kept = [], []
    for path in args.file or []:
        if os.path.normpath(path) in imports:
            kept.append(path)       # still imported: deleting it would leave a dangling import
            continue
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass
    if removed:
        fsync_dir(os.path.dirname(removed[0]))
    dir_removed = False
    if args.marker and os.path.exists(args.marker) and os.path.isdir(args.dir):
        try:
            os.rmdir(args.dir)
            dir_removed = True
        except OSError:
            pass    # not empty: other files live there; keep the marker for a later run
    if args.marker and os.path.exists(args.marker) and (dir_removed or not os.path.exists(args.dir)):
        os.unlink(args.marker)
    return dict(changed=bool(removed) or dir_removed, removed=removed, kept=kept, dir_removed=dir_removed,
                imports=imports)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="cmd")
    p = sub.add_parser("facts")
    p.add_argument("--config", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--owner", required=True)
    p.add_argument("--dropin", action="append")
    p.add_argument("--dropin-dir", default="")
    p.add_argument("--marker", default="")
    p.add_argument("--manifest", default="")
    p.add_argument("--kubernetes", default="auto")
    p.add_argument("--kubectl", default="")
    p.add_argument("--kubeconfig", action="append")
    p.add_argument("--node-name", default="")
    p = sub.add_parser("mkdir-dropin")
    p.add_argument("--dir", required=True)
    p.add_argument("--marker", required=True)
    p = sub.add_parser("write-file")
    p.add_argument("--dest", required=True)
    p.add_argument("--content-b64", required=True)
    p.add_argument("--mode", default="0644")
    p.add_argument("--validate", default="")
    p = sub.add_parser("remove-dropins")
    p.add_argument("--config", required=True)
    p.add_argument("--file", action="append")
    p.add_argument("--dir", default="")
    p.add_argument("--marker", default="")
    args = parser.parse_args(argv)
    handlers = {"facts": cmd_facts, "mkdir-dropin": cmd_mkdir_dropin,
                "write-file": cmd_write_file, "remove-dropins": cmd_remove_dropins}
    if args.cmd not in handlers:
        parser.print_usage(sys.stderr)
        emit(dict(failed=True, msg="no command given"), rc=2)
    try:
        emit(handlers[args.cmd](args))
    except HelperError as exc:
        emit(dict(failed=True, msg=str(exc)), rc=1)
    except (IOError, OSError) as exc:
        emit(dict(failed=True, msg="%s: %s" % (getattr(exc, "filename", None) or args.cmd, exc)), rc=1)


if __name__ == "__main__":
    main()
