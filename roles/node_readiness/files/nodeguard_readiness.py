#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node-side helper of the nodeguard.containerd.node_readiness role.

Runs on the node (``ansible.builtin.script``), reads only, prints one JSON
object on stdout. Standard library only (Python 3.6+); TOML is read with
``tomllib`` (3.11+) or, failing that, ``tomlkit``/``toml``.

  wait     wait (bounded) until the containerd unit is active and its CRI
           plugins are ``ok``; recognise systemd's start-limit-hit, optionally
           ``systemctl reset-failed`` + start once; report how long containerd
           took to come back
  inspect  ``containerd config dump`` of the live config, imports (missing,
           duplicate), CRI plugin status, the expected runtime handlers in
           the effective config and, for each, the ``ctr run`` command line
           that starts a probe container through that handler's own settings
  probe    run one probe container command line (from ``inspect``) with a
           timeout and remove the container afterwards whatever happened
  pending  does containerd run the current config? (the restart contract of
           tasks/restart.yml): the fingerprint of ``config dump`` to record,
           whether the config loads at all, and whether a restart is pending
"""

from __future__ import absolute_import, division, print_function

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time

CRI_V1 = "io.containerd.grpc.v1.cri"
CRI_V2_RUNTIME = "io.containerd.cri.v1.runtime"
CRI_V2_IMAGES = "io.containerd.cri.v1.images"
RUNC_TYPES = ("io.containerd.runc.v2", "io.containerd.runc.v1")
GLOB_CHARS = re.compile(r"[*?\[]")


# ------------------------------------------------------------------ helpers
def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")


def run(argv, timeout=30, stdin=None):
    try:
        proc = subprocess.run(  # noqa: S603 - argv lists only
            argv,
            input=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            universal_newlines=True,
            timeout=timeout,
            check=False,
        )
        return proc.returncode, proc.stdout, proc.stderr
    except FileNotFoundError as exc:
        return 127, "", str(exc)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else ""
        return 124, out, "timed out after %s s" % timeout


def find_binary(name, explicit=None):
    if explicit:
        return explicit
    found = shutil.which(name)
    if found:
        return found
    for folder in ("/usr/bin", "/usr/local/bin", "/usr/sbin", "/usr/local/sbin", "/opt/bin"):
        candidate = os.path.join(folder, name)
        if os.access(candidate, os.X_OK):
            return candidate
    return name


def _plain(value):
    """tomlkit items as plain Python. tomlkit < 0.11 (Ubuntu 22.04's 0.9.2,
    Debian 11's 0.6.0) has no unwrap(); its containers are dicts, its arrays
    lists, its scalars str/int/float/datetime subclasses, its Bool has .value
    (the same walk as plugins/module_utils/_toml_text.plain)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        return dict((str(k), _plain(value[k])) for k in value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    for kind in (str, int, float):
        if isinstance(value, kind):
            return kind(value)
    if isinstance(getattr(value, "value", None), bool):
        return value.value
    return value  # dates and times compare as they are


def load_toml(text):
    """Parse TOML text to plain dicts; raise ValueError on bad TOML.

    A leading UTF-8 byte order mark is skipped, as containerd 1.x does."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        import tomllib  # Python 3.11+

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(str(exc))
    except ImportError:
        pass
    try:
        import tomlkit

        try:
            return _plain(tomlkit.parse(text))
        except Exception as exc:  # tomlkit raises several types
            raise ValueError(str(exc))
    except ImportError:
        pass
    try:
        import toml

        try:
            return toml.loads(text)
        except Exception as exc:
            raise ValueError(str(exc))
    except ImportError:
        raise ValueError("no TOML parser on the node (need Python 3.11+ or tomlkit)")


def dig(data, *keys):
    for key in keys:
        if not isinstance(data, dict) or key not in data:
            return None
        data = data[key]
    return data


def containerd_version(containerd):
    rc, out, err = run([containerd, "--version"], timeout=15)
    if rc != 0:
        return None, (err or out).strip()
    match = re.search(r"\s(v?\d+\.\d+\.\d+)", out)
    if not match:
        return None, out.strip()
    return match.group(1).lstrip("v"), out.strip()


def version_major(version):
    try:
        return int(version.split(".")[0])
    except (AttributeError, ValueError, IndexError):
        return None


def plugins_ls(ctr, address):
    rc, out, err = run([ctr, "--address", address, "plugins", "ls"], timeout=15)
    if rc != 0:
        return None, (err or out).strip()
    rows = []
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) < 3:
            continue
        rows.append({"type": cols[0], "id": cols[1], "status": cols[-1], "plugin": cols[0] + "." + cols[1]})
    return rows, None


def cri_plugin_ids(major, rows):
    ids = [CRI_V1]
    if (major is not None and major >= 2) or any(r["type"] == "io.containerd.cri.v1" for r in rows or []):
        ids += [CRI_V2_RUNTIME, CRI_V2_IMAGES]
    return ids


def cri_status(rows, ids):
    found = {}
    for row in rows or []:
        if row["plugin"] in ids:
            found[row["plugin"]] = row["status"]
    return {pid: found.get(pid, "missing") for pid in ids}


def systemd_show(unit, props):
    rc, out, err = run(["systemctl", "show", unit, "--property=" + ",".join(props)], timeout=15)
    result = {}
    if rc == 0:
        for line in out.splitlines():
            if "=" in line:
                key, value = line.split("=", 1)
                result[key] = value
    return result


# ------------------------------------------------------------------ wait
def cmd_wait(args):
    emit(do_wait(args))
    return 0


def do_wait(args):
    ctr = find_binary("ctr", args.ctr)
    containerd = find_binary("containerd", args.containerd)
    version = containerd_version(containerd)[0]
    major = version_major(version)
    props = [
        "ActiveState",
        "SubState",
        "Result",
        "LoadState",
        "NRestarts",
        "ExecMainStartTimestampMonotonic",
        "ActiveEnterTimestampMonotonic",
        "ActiveExitTimestampMonotonic",
    ]

    start = time.monotonic()
    deadline = start + args.timeout
    polls = 0
    first_ok = None
    reset_done = False
    start_limit_hit = False
    state = {}
    cri = {}
    plugin_error = None
    while True:
        polls += 1
        state = systemd_show(args.unit, props)
        active = state.get("ActiveState") == "active"
        if active:
            rows, plugin_error = plugins_ls(ctr, args.address or "/run/containerd/containerd.sock")
            cri = cri_status(rows, cri_plugin_ids(major, rows)) if rows is not None else {}
            if rows is not None and cri and all(v == "ok" for v in cri.values()):
                first_ok = time.monotonic()
                break
        if state.get("Result") == "start-limit-hit" and state.get("ActiveState") in ("failed", "inactive"):
            start_limit_hit = True
            if args.reset_failed and not reset_done:
                run(["systemctl", "reset-failed", args.unit], timeout=30)
                run(["systemctl", "start", "--no-block", args.unit], timeout=30)
                reset_done = True
                continue
            break
        if time.monotonic() >= deadline:
            break
        time.sleep(args.interval)

    now = time.monotonic()

    def mono(prop):
        try:
            value = int(state.get(prop, "0") or 0) / 1e6
        except ValueError:
            return None
        return value or None

    exec_start = mono("ExecMainStartTimestampMonotonic")
    active_enter = mono("ActiveEnterTimestampMonotonic")
    active_exit = mono("ActiveExitTimestampMonotonic")
    startup = None
    came_back = None
    up_for = None
    if first_ok is not None:
        if exec_start and active_enter and active_enter >= exec_start:
            startup = round(active_enter - exec_start, 3)
        # Ready: when systemd saw READY=1, or later when we had to wait for
        # the CRI plugins ourselves.
        ready = first_ok if polls > 1 else (active_enter or first_ok)
        if active_exit and ready >= active_exit:
            came_back = round(ready - active_exit, 3)
        if exec_start:
            up_for = round(now - exec_start, 3)
    ok = first_ok is not None
    recorded = None
    if ok and getattr(args, "record_fingerprint", None):
        recorded = record_fingerprint(args.state_dir, args.record_fingerprint)
    if ok:
        msg = "containerd active, CRI plugins ok after %.2f s of waiting" % (now - start)
    elif start_limit_hit:
        msg = (
            "systemd refused to start %s: start-limit-hit (too many restarts in a short time); "
            "run 'systemctl reset-failed %s' or set node_readiness_reset_failed" % (args.unit, args.unit)
        )
        if reset_done:
            msg = "start-limit-hit; reset-failed and start were tried, containerd still not ready"
    elif state.get("LoadState") == "not-found":
        msg = "unit %s not found" % args.unit
    elif state.get("ActiveState") != "active":
        msg = "containerd not active within %s s (ActiveState=%s SubState=%s Result=%s)" % (
            args.timeout,
            state.get("ActiveState"),
            state.get("SubState"),
            state.get("Result"),
        )
    else:
        msg = "containerd active but CRI plugins not ok within %s s: %s%s" % (
            args.timeout,
            ", ".join("%s=%s" % kv for kv in sorted(cri.items())) or "no plugin list",
            (" (" + plugin_error + ")") if plugin_error else "",
        )
    return (
        {
            "ok": ok,
            "msg": msg,
            "unit": args.unit,
            "active_state": state.get("ActiveState"),
            "sub_state": state.get("SubState"),
            "result": state.get("Result"),
            "n_restarts": state.get("NRestarts"),
            "start_limit_hit": start_limit_hit,
            "reset_failed_done": reset_done,
            "waited_seconds": round(now - start, 3),
            "polls": polls,
            "came_back_seconds": came_back,
            "startup_seconds": startup,
            "up_for_seconds": up_for,
            "cri_plugins": cri,
            "containerd_version": version,
            "recorded": recorded,
        }
    )


def record_fingerprint(state_dir, fingerprint):
    """Write the restart contract's record, always anew: its time is when
    containerd was last seen running this config (see do_pending)."""
    if not os.path.isdir(state_dir):
        os.makedirs(state_dir, 0o700)
    path = os.path.join(state_dir, "containerd-started.sha256")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, (fingerprint + "\n").encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(tmp, path)
    return path


# ------------------------------------------------------------------ inspect
def walk_imports(config_path):
    """Breadth-first walk of imports, as containerd does.

    Returns (entries, errors); each entry: file, entry, path, glob, exists.
    """
    entries = []
    errors = []
    queue = [os.path.abspath(config_path)]
    seen_files = set(queue)
    while queue:
        current = queue.pop(0)
        try:
            with open(current, "r") as fh:
                data = load_toml(fh.read())
        except (IOError, OSError, ValueError) as exc:
            errors.append("%s: %s" % (current, exc))
            continue
        imports = data.get("imports") or []
        if not isinstance(imports, list):
            errors.append("%s: imports is not a list" % current)
            continue
        base = os.path.dirname(current)
        for entry in imports:
            if not isinstance(entry, str):
                errors.append("%s: import entry %r is not a string" % (current, entry))
                continue
            path = entry if os.path.isabs(entry) else os.path.join(base, entry)
            path = os.path.normpath(path)
            is_glob = bool(GLOB_CHARS.search(entry))
            matches = sorted(glob.glob(path)) if is_glob else ([path] if os.path.exists(path) else [])
            entries.append({"file": current, "entry": entry, "path": path, "glob": is_glob, "exists": bool(matches)})
            for match in matches:
                if match not in seen_files:
                    seen_files.add(match)
                    queue.append(match)
    return entries, errors


# ------------------------------------------------------------------ pending
IMPORTS_LINE_RE = re.compile(r"(?m)^imports = \[.*\]\n?")


def dump_fingerprint(dump):
    """The effective config's fingerprint as the restart contract records it:
    sha256 of ``config dump`` without trailing newlines and without the
    top-level imports line, whose entries containerd 1.6/1.7 print in a random
    order (measured: three orders in six runs on 1.6.20); the imported tables
    are in the dump anyway, merged."""
    text = IMPORTS_LINE_RE.sub("", dump.rstrip("\r\n"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def unit_state(unit):
    """(ActiveState, when the unit's main process started in epoch seconds or 0.0).

    The start comes from ExecMainStartTimestampMonotonic, which every systemd
    has, against this machine's monotonic clock (containers share the host's)."""
    state = systemd_show(unit, ["ActiveState", "ExecMainStartTimestampMonotonic"])
    try:
        mono = int(state.get("ExecMainStartTimestampMonotonic") or 0) / 1e6
    except ValueError:
        mono = 0.0
    started = time.time() - (time.monotonic() - mono) if mono > 0 else 0.0
    return state.get("ActiveState") or "unknown", started


def do_pending(args):
    """Does containerd run the current config?

    No when it is not running. Yes when it started after the last change of
    the config, every file it imports (and the folders of glob imports) and
    the extra files, and every import could be read (whoever restarted it:
    another role's handler in the same play, systemd, an operator). Else yes
    only when the effective
    config has the fingerprint nodeguard recorded at its last restart AND
    containerd has not started again since that record (a run killed between
    its restart and the record, a manual restart). Otherwise a restart is
    pending. dump_ok says whether the config loads at all: when it does not,
    a restart is pending and the caller refuses it."""
    containerd = find_binary("containerd", args.containerd)
    rc, out, err = run([containerd, "--config", args.config, "config", "dump"], timeout=60)
    result = dict(changed=False, pending=False, dump_ok=rc == 0, fingerprint=None, reason="")
    if rc != 0:
        # pending, and refused by the caller: the file is not what containerd runs, and it cannot be
        result.update(pending=True, reason="containerd --config %s config dump failed: %s"
                      % (args.config, (err or out).strip()[-400:]))
        return result
    result["fingerprint"] = dump_fingerprint(out)
    active, started = unit_state(args.unit)
    result.update(active_state=active, started=started)
    if active != "active":
        result.update(pending=True, reason="%s is not running (ActiveState=%s)" % (args.unit, active))
        return result
    files = [os.path.abspath(args.config)]
    entries, walk_errors = walk_imports(args.config)
    for entry in entries:
        if entry["glob"]:
            # a file matched by a glob that was deleted or renamed changes only its folder
            files.append(os.path.dirname(entry["path"]))
            files.extend(sorted(glob.glob(entry["path"])))
        else:
            files.append(entry["path"])
    files.extend(args.file or [])
    newest, newest_path = 0.0, ""
    for path in files:
        try:
            st = os.stat(path)
        except OSError:
            continue
        # ctime too: a copy that keeps the old mtime (cp -p) still changes it
        changed = max(st.st_mtime, st.st_ctime)
        if changed > newest:
            newest, newest_path = changed, path
    result.update(newest=newest, newest_path=newest_path, walk_errors=walk_errors)
    # File times decide only when every import could be read (an unreadable
    # drop-in may have changed unseen); the fingerprint decides otherwise.
    if started > 0 and started > newest and not walk_errors:
        result["reason"] = "containerd started after the last change of its config files"
        return result
    fp_path = os.path.join(args.state_dir, "containerd-started.sha256")
    try:
        with open(fp_path) as fh:
            recorded = fh.read().strip()
        recorded_at = os.stat(fp_path).st_mtime
    except (IOError, OSError):
        recorded, recorded_at = None, 0.0
    result.update(recorded=recorded, recorded_at=recorded_at)
    if recorded is not None and recorded_at >= started and recorded == result["fingerprint"]:
        result["reason"] = "the effective config is the one nodeguard last restarted containerd with"
        return result
    result.update(pending=True, reason="%s changed after containerd started, and the effective config is not the one "
                  "nodeguard last restarted containerd with" % (newest_path or args.config))
    return result


def cmd_pending(args):
    emit(do_pending(args))
    return 0


def handler_spec(item):
    if isinstance(item, str):
        return {"name": item}
    return dict(item)


def probe_argv(args, name, table, spec, namespace, address, ctr):
    runtime_type = table.get("runtime_type") or table.get("type") or ""
    runtime_path = table.get("runtime_path") or ""
    options = table.get("options") or {}
    probe_id = "nodeguard-probe-%s-%d-%d" % (re.sub(r"[^A-Za-z0-9_.-]", "-", name), os.getpid(), int(time.time() * 1000) % 100000000)
    argv = [ctr, "--address", address, "-n", namespace, "run", "--rm"]
    notes = []
    if runtime_type in RUNC_TYPES:
        argv += ["--runtime", "io.containerd.runc.v2"]
        if runtime_path:
            notes.append("runtime_path %s not used by ctr for a runc-type runtime" % runtime_path)
        if options.get("BinaryName"):
            argv += ["--runc-binary", options["BinaryName"]]
        if options.get("Root"):
            argv += ["--runc-root", options["Root"]]
        if options.get("SystemdCgroup"):
            argv += ["--runc-systemd-cgroup", "--cgroup", "system.slice:nodeguard-probe:%s" % probe_id]
    else:
        argv += ["--runtime", runtime_path or runtime_type]
        config_path = options.get("ConfigPath")
        if config_path and spec.get("pass_config_path", args.pass_config_path):
            argv += ["--runtime-config-path", config_path]
        elif config_path:
            notes.append("options.ConfigPath %s not passed (pass_config_path is false)" % config_path)
    if table.get("snapshotter"):
        notes.append("handler snapshotter %s not used: the probe runs on the default snapshotter" % table["snapshotter"])
    argv += [spec.get("image") or args.probe_image, probe_id]
    command = spec.get("command") or args.probe_command
    argv += command
    return probe_id, argv, notes


def cmd_inspect(args):
    emit(do_inspect(args))
    return 0


def do_inspect(args):
    ctr = find_binary("ctr", args.ctr)
    containerd = find_binary("containerd", args.containerd)
    version, version_text = containerd_version(containerd)
    major = version_major(version)
    result = {
        "config_path": args.config,
        "containerd": containerd,
        "containerd_version": version,
        "containerd_version_text": version_text,
        "config_exists": os.path.exists(args.config),
    }

    # The raw file: parse error, imports.
    raw = None
    raw_error = None
    if result["config_exists"]:
        try:
            with open(args.config, "r") as fh:
                raw = load_toml(fh.read())
        except (IOError, OSError, ValueError) as exc:
            raw_error = str(exc)
    else:
        raw_error = "%s does not exist" % args.config
    result["config_parse_error"] = raw_error
    result["config_version"] = raw.get("version", 1) if isinstance(raw, dict) else None

    entries, import_errors = walk_imports(args.config) if raw is not None else ([], [raw_error])
    seen = {}
    for entry in entries:
        seen.setdefault(entry["path"], []).append(entry["file"])
    result["imports"] = entries
    result["imports_missing"] = [e["entry"] for e in entries if not e["glob"] and not e["exists"]]
    result["imports_duplicate"] = sorted(p for p, files in seen.items() if len(files) > 1)
    result["imports_errors"] = import_errors

    # The effective config.
    rc, out, err = run([containerd, "--config", args.config, "config", "dump"], timeout=60)
    result["dump_rc"] = rc
    result["dump_error"] = (err.strip().splitlines() or [""])[-1] if rc != 0 else ""
    effective = None
    if rc == 0:
        try:
            effective = load_toml(out)
        except ValueError as exc:
            result["dump_rc"] = -1
            result["dump_error"] = "config dump output is not valid TOML: %s" % exc
    result["effective_version"] = effective.get("version") if effective else None

    address = args.address or dig(effective or {}, "grpc", "address") or "/run/containerd/containerd.sock"
    result["address"] = address

    runtimes = {}
    default_runtime = None
    if effective:
        if (effective.get("version") or 1) >= 3:
            runtimes = dig(effective, "plugins", CRI_V2_RUNTIME, "containerd", "runtimes") or {}
            default_runtime = dig(effective, "plugins", CRI_V2_RUNTIME, "containerd", "default_runtime_name")
        else:
            runtimes = dig(effective, "plugins", CRI_V1, "containerd", "runtimes") or {}
            default_runtime = dig(effective, "plugins", CRI_V1, "containerd", "default_runtime_name")
    result["runtimes"] = sorted(runtimes)
    result["default_runtime_name"] = default_runtime

    rows, plugin_error = plugins_ls(ctr, address)
    ids = cri_plugin_ids(major, rows)
    result["cri_plugins"] = cri_status(rows, ids) if rows is not None else {pid: "unknown" for pid in ids}
    result["plugins_error"] = plugin_error

    # Expected handlers and their probe command lines.
    handlers = []
    for item in json.loads(args.handlers):
        spec = handler_spec(item)
        name = spec["name"]
        table = runtimes.get(name)
        entry = {
            "name": name,
            "present": table is not None,
            "probe": bool(spec.get("probe", args.probe_default)),
            "required": bool(spec.get("required", True)),
        }
        if table is not None:
            entry["runtime_type"] = table.get("runtime_type", "")
            entry["runtime_path"] = table.get("runtime_path", "")
            entry["options"] = table.get("options") or {}
            probe_id, argv, notes = probe_argv(args, name, table, spec, args.namespace, address, ctr)
            entry["probe_id"] = probe_id
            entry["probe_argv"] = argv
            entry["probe_notes"] = notes
        handlers.append(entry)
    result["handlers"] = handlers

    # The probe image, in the namespace the probes use.
    rc, out, err = run([ctr, "--address", address, "-n", args.namespace, "images", "ls", "-q"], timeout=30)
    images = out.split() if rc == 0 else []
    result["probe_image"] = args.probe_image
    result["probe_image_present"] = args.probe_image in images
    if not result["probe_image_present"] and args.probe_archive and os.path.exists(args.probe_archive):
        irc, iout, ierr = run(
            [ctr, "--address", address, "-n", args.namespace, "images", "import", args.probe_archive], timeout=120
        )
        result["probe_image_imported"] = irc == 0
        result["probe_image_import_error"] = (ierr or iout).strip() if irc != 0 else ""
        rc, out, err = run([ctr, "--address", address, "-n", args.namespace, "images", "ls", "-q"], timeout=30)
        result["probe_image_present"] = rc == 0 and args.probe_image in out.split()
    return result


# ------------------------------------------------------------------ probe
def cmd_probe(args):
    emit(do_probe(json.loads(args.argv), args.id, args.timeout))
    return 0


def do_probe(argv, probe_id, timeout):
    ctr_prefix = argv[: argv.index("run")]  # ctr --address A -n NS
    start = time.monotonic()
    rc, out, err = run(argv, timeout=timeout)
    elapsed = round(time.monotonic() - start, 3)
    if rc == 124:
        run(ctr_prefix + ["tasks", "kill", "-s", "SIGKILL", probe_id], timeout=15)
        time.sleep(0.5)
    # --rm removes the container on a normal exit; make sure of it.
    run(ctr_prefix + ["tasks", "delete", "-f", probe_id], timeout=15)
    run(ctr_prefix + ["containers", "delete", probe_id], timeout=15)
    return {
        "ok": rc == 0,
        "rc": rc,
        "seconds": elapsed,
        "stdout": out[-2000:],
        "stderr": err[-2000:],
        "argv": argv,
    }


# ------------------------------------------------------------------ kubernetes
def do_kubernetes(args):
    """Node Ready and static pods, when kubectl and a kubeconfig exist."""
    kubectl = find_binary("kubectl", args.kubectl) if args.kubectl else find_binary("kubectl")
    if not (os.path.isabs(kubectl) and os.access(kubectl, os.X_OK)):
        return {"ran": False, "reason": "kubectl not found on the node"}
    candidates = [c for c in (args.kubeconfig or []) if c]
    if os.environ.get("KUBECONFIG"):
        candidates.append(os.environ["KUBECONFIG"])
    kubeconfig = next((c for c in candidates if os.path.exists(c)), None)
    if not kubeconfig:
        return {"ran": False, "reason": "no kubeconfig found (looked at: %s)" % ", ".join(candidates)}
    node = args.node_name or os.uname()[1]
    base = [kubectl, "--kubeconfig", kubeconfig, "--request-timeout", "10s"]
    deadline = time.monotonic() + args.kube_timeout
    ready = None
    reason = ""
    pods = {}
    while True:
        rc, out, err = run(base + ["get", "node", node, "-o", "json"], timeout=20)
        if rc == 0:
            try:
                conds = json.loads(out).get("status", {}).get("conditions", [])
                cond = next((c for c in conds if c.get("type") == "Ready"), {})
                ready = cond.get("status") == "True"
                reason = "Ready=%s (%s)" % (cond.get("status"), cond.get("reason") or cond.get("message") or "")
            except ValueError as exc:
                ready, reason = False, "kubectl output not JSON: %s" % exc
        else:
            ready, reason = False, "kubectl get node %s failed: %s" % (node, (err or out).strip()[-300:])
        pods = {}
        if args.static_pods:
            prc, pout, perr = run(base + ["get", "pods", "-n", "kube-system", "-o", "json"], timeout=20)
            items = json.loads(pout).get("items", []) if prc == 0 else []
            for name in args.static_pods:
                pod = next((i for i in items if i.get("metadata", {}).get("name") == "%s-%s" % (name, node)), None)
                if pod is None:
                    pods[name] = (False, "pod %s-%s not found in kube-system" % (name, node))
                    continue
                phase = pod.get("status", {}).get("phase")
                conds = pod.get("status", {}).get("conditions", [])
                pready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)
                pods[name] = (phase == "Running" and pready, "phase=%s ready=%s" % (phase, pready))
        if (ready and all(v[0] for v in pods.values())) or time.monotonic() >= deadline:
            break
        time.sleep(2)
    return {
        "ran": True,
        "node": node,
        "kubeconfig": kubeconfig,
        "ready": bool(ready),
        "reason": reason,
        "static_pods": {k: {"ok": v[0], "reason": v[1]} for k, v in pods.items()},
    }


# ------------------------------------------------------------------ drift
def parse_key_path(value):
    """A key path as a list: from a list, or a dotted TOML key string."""
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    if not isinstance(value, str):
        return None
    parts = []
    for match in re.finditer(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s]+)', value):
        parts.append(next(g for g in match.groups() if g is not None))
    return parts


def render_path(parts):
    """A key path as TOML writes it: plugins."io.containerd.grpc.v1.cri".containerd."""
    return ".".join(p if re.match(r"^[A-Za-z0-9_-]+$", p) else '"%s"' % p for p in parts)


def leaf_diffs(before, after, prefix):
    """Key paths (lists) whose values differ between two tables."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from leaf_diffs(before.get(key), after.get(key), prefix + [str(key)])
    elif before != after:
        yield list(prefix)


def ledger_path_for(state_dir, config_path):
    """Same naming as plugins/module_utils/_ledger.py."""
    name = os.path.abspath(config_path).strip("/").replace("%", "%25").replace("/", "%2F")
    return os.path.join(state_dir, "ledger", name + ".json")


def evaluate_drift(args):
    """Protected drift that neither the ledger nor the operator accounts for."""
    if not args.drift_result:
        return None
    if args.drift_result.lstrip().startswith("{"):
        res = json.loads(args.drift_result)
    else:
        with open(args.drift_result, "r") as fh:
            res = json.load(fh)
    items = res.get("protected_drift")
    if items is None:
        msg = res.get("msg") or "containerd_baseline check returned no protected_drift"
        missing = bool(re.search(r"no baseline|not found|does not exist|missing baseline", msg, re.I))
        return {"status": "skip" if missing else "fail", "reason": msg, "unaccounted": [], "accounted": []}
    if isinstance(items, dict):  # {"changed": [...], "removed": [...]} style
        flat = []
        for kind, entries in items.items():
            for entry in entries or []:
                if isinstance(entry, dict):
                    entry = dict(entry, kind=entry.get("kind", kind))
                else:
                    entry = {"path": entry, "kind": kind}
                flat.append(entry)
        items = flat
    ledger_paths = []
    lpath = ledger_path_for(args.state_dir, args.config)
    if os.path.exists(lpath):
        try:
            with open(lpath, "r") as fh:
                for rec in json.load(fh).get("records", []):
                    if rec.get("kind") == "released":  # an undone change accounts for nothing
                        continue
                    path = parse_key_path(rec.get("path"))
                    if path:
                        ledger_paths.append((path, rec.get("owner"), rec.get("kind")))
        except (IOError, OSError, ValueError):
            pass
    operator = [p for p in (parse_key_path(x) for x in (args.drift_accounted or [])) if p]
    accounted, unaccounted = [], []
    for item in items:
        entry = item if isinstance(item, dict) else {"path": item}
        path = parse_key_path(entry.get("path") or entry.get("key"))
        change = entry.get("change") or entry.get("kind") or "changed"
        label = render_path(path) if path else json.dumps(entry, sort_keys=True)
        if not path:
            unaccounted.append({"path": label, "change": change, "by": None})
            continue
        # The keys that really differ inside the protected table.
        leaves = list(leaf_diffs(entry.get("before"), entry.get("after"), path)) if change == "changed" else [path]
        owners = set()
        uncovered = []
        for leaf in leaves or [path]:
            by = None
            for lp, lowner, _kind in ledger_paths:
                if leaf[: len(lp)] == lp:
                    by = lowner or "ledger"
                    break
            if by is None and any(leaf[: len(op)] == op for op in operator):
                by = "node_readiness_drift_accounted"
            if by is None:
                uncovered.append(render_path(leaf))
            else:
                owners.add(by)
        if uncovered:
            unaccounted.append({"path": label, "change": change, "by": None, "keys": uncovered})
        else:
            accounted.append({"path": label, "change": change, "by": ", ".join(sorted(owners))})
    if unaccounted:
        reason = "protected keys drifted from baseline %r: %s" % (
            args.baseline_name,
            "; ".join(
                "%s %s%s" % (u["path"], u["change"], (" (" + ", ".join(u["keys"]) + ")") if u.get("keys") and u["keys"] != [u["path"]] else "")
                for u in unaccounted
            ),
        )
        return {"status": "fail", "reason": reason, "unaccounted": unaccounted, "accounted": accounted}
    reason = "no unaccounted drift of protected keys against baseline %r" % args.baseline_name
    if accounted:
        reason += " (%d change(s) recorded by owners in the ledger)" % len(accounted)
    return {"status": "pass", "reason": reason, "unaccounted": [], "accounted": accounted}


# ------------------------------------------------------------------ check
def cmd_check(args):
    checks = []
    optional = set(args.optional_checks or [])

    def add(name, status, reason, required=True, **extra):
        entry = {"name": name, "status": status, "reason": reason, "required": bool(required) and name not in optional}
        entry.update(extra)
        checks.append(entry)

    wait = do_wait(args)
    add("containerd_active", "pass" if wait["active_state"] == "active" else "fail",
        "%s: %s" % (args.unit, wait["msg"]) if wait["active_state"] != "active" else
        "%s active (containerd %s)" % (args.unit, wait.get("containerd_version")))

    info = do_inspect(args)
    if info["dump_rc"] == 0:
        add("config_dump", "pass", "containerd config dump of %s succeeded (version %s)" % (args.config, info["effective_version"]))
    else:
        add("config_dump", "fail", "containerd --config %s config dump failed: %s" % (args.config, info["dump_error"] or info["dump_rc"]))

    if info["config_parse_error"]:
        add("imports_exist", "fail", "cannot read imports: %s" % info["config_parse_error"])
        add("imports_unique", "fail", "cannot read imports: %s" % info["config_parse_error"])
    else:
        n_entries = len(info["imports"])
        if info["imports_missing"]:
            add("imports_exist", "fail", "missing import(s): %s" % ", ".join(info["imports_missing"]))
        elif info["imports_errors"]:
            add("imports_exist", "fail", "; ".join(info["imports_errors"]))
        else:
            add("imports_exist", "pass", "%d import entr%s, every non-glob one exists" % (n_entries, "y" if n_entries == 1 else "ies"))
        if info["imports_duplicate"]:
            add("imports_unique", "fail", "imported more than once: %s" % ", ".join(info["imports_duplicate"]))
        else:
            add("imports_unique", "pass", "no file imported twice")

    cri = wait["cri_plugins"] if wait["ok"] else info["cri_plugins"]
    bad = {k: v for k, v in cri.items() if v != "ok"}
    if cri and not bad:
        add("cri_plugin", "pass", ", ".join("%s ok" % k for k in sorted(cri)))
    else:
        detail = ", ".join("%s=%s" % kv for kv in sorted(bad.items())) or info.get("plugins_error") or "no plugin list"
        add("cri_plugin", "fail", "CRI plugin not ok: %s" % detail)

    probes = {}
    for handler in info["handlers"]:
        name = handler["name"]
        if handler["present"]:
            desc = handler.get("runtime_type") or "?"
            if handler.get("runtime_path"):
                desc += " via " + handler["runtime_path"]
            if (handler.get("options") or {}).get("BinaryName"):
                desc += " BinaryName=" + handler["options"]["BinaryName"]
            add("handler:" + name, "pass", "runtime %s in the effective config (%s)" % (name, desc), handler["required"])
        else:
            has = ", ".join(info["runtimes"]) or "none"
            add("handler:" + name, "fail", "no runtime %s in the effective config (has: %s)" % (name, has), handler["required"])
        if not handler["probe"]:
            add("probe:" + name, "skip", "probe disabled for this handler", False)
            continue
        if not handler["present"]:
            add("probe:" + name, "fail", "handler %s not in the effective config" % name, handler["required"])
            continue
        if not wait["ok"]:
            add("probe:" + name, "fail", "containerd not ready: %s" % wait["msg"], handler["required"])
            continue
        if not info["probe_image_present"]:
            reason = "probe image %s not in containerd namespace %s" % (info["probe_image"], args.namespace)
            if info.get("probe_image_import_error"):
                reason += " (import of %s failed: %s)" % (args.probe_archive, info["probe_image_import_error"])
            if args.probe_image_required:
                add("probe:" + name, "fail", reason, handler["required"])
            else:
                add("probe:" + name, "skip", reason + "; set node_readiness_probe_image or node_readiness_probe_archive", False)
            continue
        res = do_probe(handler["probe_argv"], handler["probe_id"], args.probe_timeout)
        probes[name] = res
        notes = ("; " + "; ".join(handler["probe_notes"])) if handler["probe_notes"] else ""
        if res["ok"]:
            add("probe:" + name, "pass", "probe container exited 0 in %.2f s through %s%s" % (res["seconds"], name, notes), handler["required"])
        else:
            last = (res["stderr"].strip().splitlines() or res["stdout"].strip().splitlines() or [""])[-1]
            add("probe:" + name, "fail", "probe container through %s: rc=%s %s%s" % (name, res["rc"], last, notes), handler["required"])

    drift = None
    if args.check_drift:
        drift = evaluate_drift(args)
        if drift is None:
            add("baseline_drift", "fail", "drift check enabled but no containerd_baseline result was given")
        else:
            add("baseline_drift", drift["status"], drift["reason"], drift["status"] != "skip")
    else:
        add("baseline_drift", "skip", "disabled (node_readiness_check_drift: false)", False)

    kube = None
    if args.kubernetes == "false":
        add("kubernetes_node_ready", "skip", "disabled (node_readiness_kubernetes: false)", False)
    else:
        kube = do_kubernetes(args)
        if not kube["ran"]:
            status = "fail" if args.kubernetes == "true" else "skip"
            add("kubernetes_node_ready", status, kube["reason"], status == "fail")
        else:
            add("kubernetes_node_ready", "pass" if kube["ready"] else "fail", "node %s: %s" % (kube["node"], kube["reason"]))
            for pod, res in sorted(kube["static_pods"].items()):
                add("static_pod:" + pod, "pass" if res["ok"] else "fail", res["reason"])

    failed = [c["name"] for c in checks if c["status"] == "fail" and c["required"]]
    warnings = [c["name"] for c in checks if c["status"] == "fail" and not c["required"]]
    emit(
        {
            "ok": not failed,
            "failed": failed,
            "warnings": warnings,
            "summary": "%d passed, %d failed, %d skipped" % (
                sum(c["status"] == "pass" for c in checks),
                sum(c["status"] == "fail" for c in checks),
                sum(c["status"] == "skip" for c in checks),
            ),
            "checks": checks,
            "containerd": {
                "version": info.get("containerd_version") or wait.get("containerd_version"),
                "config_path": args.config,
                "config_version": info.get("config_version"),
                "runtimes": info.get("runtimes"),
                "default_runtime_name": info.get("default_runtime_name"),
                "cri_plugins": cri,
                "came_back_seconds": wait.get("came_back_seconds"),
                "startup_seconds": wait.get("startup_seconds"),
                "waited_seconds": wait.get("waited_seconds"),
                "start_limit_hit": wait.get("start_limit_hit"),
                "reset_failed_done": wait.get("reset_failed_done"),
                "imports": info.get("imports"),
            },
            "probes": probes,
            "drift": drift,
            "kubernetes": kube,
        }
    )
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="nodeguard node_readiness helper")
    parser.add_argument("--ctr", default=None)
    parser.add_argument("--containerd", default=None)
    sub = parser.add_subparsers(dest="command")

    wait = sub.add_parser("wait")
    wait.add_argument("--unit", default="containerd")
    wait.add_argument("--timeout", type=float, default=60)
    wait.add_argument("--interval", type=float, default=0.1)
    wait.add_argument("--address", default="/run/containerd/containerd.sock")
    wait.add_argument("--reset-failed", action="store_true")
    wait.add_argument("--record-fingerprint", default=None, help="once ready, record this as the restart contract's fingerprint")
    wait.add_argument("--state-dir", default="/var/lib/nodeguard")

    inspect = sub.add_parser("inspect")
    inspect.add_argument("--config", default="/etc/containerd/config.toml")
    inspect.add_argument("--address", default=None)
    inspect.add_argument("--namespace", default="k8s.io")
    inspect.add_argument("--handlers", default="[]", help="JSON list of names or {name, probe, ...}")
    inspect.add_argument("--probe-image", default="localhost/ng-probe:latest")
    inspect.add_argument("--probe-archive", default=None)
    inspect.add_argument("--probe-command", default='["/bin/true"]', type=json.loads)
    inspect.add_argument("--probe-default", default="true", type=lambda v: v.lower() in ("1", "true", "yes"))
    inspect.add_argument("--pass-config-path", default="true", type=lambda v: v.lower() in ("1", "true", "yes"))

    probe = sub.add_parser("probe")
    probe.add_argument("--argv", required=True, help="JSON list: the ctr command line from inspect")
    probe.add_argument("--id", required=True)
    probe.add_argument("--timeout", type=float, default=60)

    pending = sub.add_parser("pending", help="does containerd run the current config? (restart contract)")
    pending.add_argument("--config", default="/etc/containerd/config.toml")
    pending.add_argument("--state-dir", default="/var/lib/nodeguard")
    pending.add_argument("--unit", default="containerd")
    pending.add_argument("--file", action="append", default=[], help="another file whose change needs a restart")

    def truth(value):
        return str(value).lower() in ("1", "true", "yes", "on")

    check = sub.add_parser("check", help="every readiness check, one JSON report")
    check.add_argument("--unit", default="containerd")
    check.add_argument("--timeout", type=float, default=60)
    check.add_argument("--interval", type=float, default=0.1)
    check.add_argument("--reset-failed", type=truth, default=False)
    check.add_argument("--config", default="/etc/containerd/config.toml")
    check.add_argument("--address", default=None)
    check.add_argument("--namespace", default="k8s.io")
    check.add_argument("--handlers", default='["runc"]')
    check.add_argument("--probe-image", default="localhost/ng-probe:latest")
    check.add_argument("--probe-archive", default=None)
    check.add_argument("--probe-command", default='["/bin/true"]', type=json.loads)
    check.add_argument("--probe-default", type=truth, default=True)
    check.add_argument("--probe-image-required", type=truth, default=False)
    check.add_argument("--probe-timeout", type=float, default=60)
    check.add_argument("--pass-config-path", type=truth, default=True)
    check.add_argument("--check-drift", type=truth, default=False)
    check.add_argument("--drift-result", default=None, help="the containerd_baseline check result: JSON text or a file holding it")
    check.add_argument("--drift-accounted", default="[]", type=json.loads)
    check.add_argument("--baseline-name", default="default")
    check.add_argument("--state-dir", default="/var/lib/nodeguard")
    check.add_argument("--kubernetes", choices=("auto", "true", "false"), default="auto")
    check.add_argument("--kubectl", default=None)
    check.add_argument("--kubeconfig", default='["/etc/kubernetes/admin.conf", "/etc/kubernetes/kubelet.conf"]', type=json.loads)
    check.add_argument("--node-name", default=None)
    check.add_argument("--static-pods", default="[]", type=json.loads)
    check.add_argument("--kube-timeout", type=float, default=60)
    check.add_argument("--optional-checks", default="[]", type=json.loads)

    args = parser.parse_args(argv)
    if args.command == "check":
        return cmd_check(args)
    if args.command == "wait":
        return cmd_wait(args)
    if args.command == "inspect":
        return cmd_inspect(args)
    if args.command == "probe":
        return cmd_probe(args)
    if args.command == "pending":
        return cmd_pending(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
