#!/usr/bin/env python
"""Check a coco test node after each step; one JSON object on stdout.

  check_node.py --phase installed|removed|any --handlers a,b,c [--pristine FILE]
                [--dropin F]... [--install-dir D] [--host NAME] [--restarts N] [--allow-pending]

Always: config.toml exists and parses; its imports have no duplicate (as
containerd resolves them) and no entry naming a missing file; containerd
config dump succeeds; the unit is active and was started after the last
change of the config files (it runs the current config); the CRI plugin is
ok. installed: every handler is in the effective config, the drop-ins of
this containerd version exist. removed: no handler is left, no drop-in, no
payload, and config.toml is byte-identical to --pristine.
Also reports the number of containerd starts in the journal and the number
of calls the kata shim stand-in logged, and judges them: exit 1 with the
reason on stderr unless the node is sound (ok, or only still running the
previous config with --allow-pending), containerd started --restarts times
since the previous check, and after an install the kata shim was called.
"""

import argparse
import datetime
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
import time


# the longest containerd may take to leave activating/deactivating before the check
SETTLE_SECONDS = 90


def run(argv, timeout=60):
    try:
        p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, check=False,
                           env=dict(os.environ, LC_ALL="C"))
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)


def load_toml(text):
    try:
        import tomllib
        return tomllib.loads(text)
    except ImportError:
        import tomlkit
        return tomlkit.parse(text).unwrap()


def dig(data, *keys):
    for k in keys:
        if not isinstance(data, dict) or k not in data:
            return None
        data = data[k]
    return data


def fingerprint(dump):
    """sha256 of the dump as the restart contract records it: trailing newlines
    and the top-level imports line (random order on 1.x) left out."""
    text = re.sub(r"(?m)^imports = \[.*\]\n?", "", dump.rstrip("\r\n"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def start_time(unit):
    rc, out, dummy = run(["systemctl", "show", unit, "--property=ExecMainStartTimestamp", "--value",
                          "--timestamp=us+utc"])
    value = out.strip()
    if rc != 0 or not value:
        return 0.0
    # "Sun 2026-11-29 21:02:31.123456 UTC"
    m = re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)", value)
    if not m:
        return 0.0
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in m.group(1) else "%Y-%m-%d %H:%M:%S"
    dt = datetime.datetime.strptime(m.group(1), fmt).replace(tzinfo=datetime.timezone.utc)
    return dt.timestamp()


def kata_stamp_since(path, started):
    """Whether readiness recorded a kata handler's passing probe after containerd's current start."""
    try:
        with open(path) as f:
            handlers = json.load(f).get("handlers") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return started is not None and any(
        name.startswith("kata-") and float((stamp or {}).get("time") or 0) >= started for name, stamp in handlers.items())


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="/etc/containerd/config.toml")
    ap.add_argument("--phase", choices=["installed", "removed", "any"], default="any")
    ap.add_argument("--handlers", default="")
    ap.add_argument("--pristine", default="")
    ap.add_argument("--dropin", action="append", default=[])
    ap.add_argument("--install-dir", default="/opt/kata")
    ap.add_argument("--kata-log", default="/var/log/nodeguard-standin/kata.log")
    ap.add_argument("--stamps", default="/var/lib/nodeguard/readiness/probes.json",
                    help="readiness's stamps of probes that passed (a re-run that changed nothing reuses them)")
    ap.add_argument("--state", default="/var/lib/nodeguard-test/check-state.json",
                    help="counters of the previous check (containerd starts, kata shim calls)")
    # the verdict (exit 1 and the reason on stderr when the node is not sound)
    ap.add_argument("--host", default="", help="the inventory name, for the message")
    ap.add_argument("--restarts", type=int, default=None, help="containerd starts expected since the previous check")
    ap.add_argument("--allow-pending", action="store_true",
                    help="after a killed run containerd may still run the previous config")
    return ap.parse_args()


def check_config(args, out, failures):
    """config.toml's bytes and data (None when missing or broken); its imports: no duplicate, none dangling."""
    try:
        with open(args.config, "rb") as f:
            raw = f.read()
    except OSError as exc:
        failures.append("config.toml missing: %s" % exc)
        raw = None
    data = None
    if raw is not None:
        out["config_sha256"] = hashlib.sha256(raw).hexdigest()
        try:
            data = load_toml(raw.decode("utf-8"))
        except Exception as exc:  # noqa: BLE001
            failures.append("config.toml does not parse: %s" % exc)
    if data is not None:
        imports = data.get("imports", []) or []
        out["imports"] = imports
        folder = os.path.dirname(os.path.abspath(args.config))
        resolved = [os.path.normpath(e if os.path.isabs(e) else os.path.join(folder, e)) for e in imports]
        dups = sorted(set(r for r in resolved if resolved.count(r) > 1))
        if dups:
            failures.append("duplicate imports: %s" % dups)
        for entry, full in zip(imports, resolved):
            if not any(c in entry for c in "*?[") and not os.path.exists(full):
                failures.append("dangling import: %s" % entry)
        out["config_version"] = data.get("version")
    return raw, data


def check_dump(args, out, failures):
    """(rc, output) of containerd config dump; the effective runtimes in out, runc among them."""
    dump_rc, dump, err = run(["containerd", "--config", args.config, "config", "dump"])
    effective = []
    if dump_rc != 0:
        failures.append("containerd config dump failed: %s" % (err or dump).strip()[-300:])
    else:
        try:
            eff = load_toml(dump)
            version = eff.get("version", 2)
            cri = "io.containerd.grpc.v1.cri" if version == 2 else "io.containerd.cri.v1.runtime"
            effective = sorted((dig(eff, "plugins", cri, "containerd", "runtimes") or {}).keys())
        except Exception as exc:  # noqa: BLE001
            failures.append("config dump output does not parse: %s" % exc)
    out["effective_runtimes"] = effective
    if "runc" not in effective:
        failures.append("runc missing from the effective config")
    return dump_rc, dump


def check_service(out, failures):
    """containerd active (once out of a transitional state) with its CRI plugin ok."""
    # A run killed mid-restart leaves systemd's restart job running: wait for
    # containerd to leave a transitional state (a slow start on a loaded
    # machine), then judge where it ended.
    waited = 0.0
    while True:
        rc, active, dummy = run(["systemctl", "is-active", "containerd"])
        if active.strip() not in ("activating", "deactivating", "reloading") or waited >= SETTLE_SECONDS:
            break
        time.sleep(0.5)
        waited += 0.5
    out["waited_for_settle"] = waited
    if active.strip() != "active":
        failures.append("containerd is %s%s" % (active.strip(), " after %.0f s" % waited if waited else ""))
    rc, plugins, err = run(["ctr", "plugins", "ls"])
    if not re.search(r"io\.containerd\.(grpc\.v1\s+cri|cri\.v1\s+runtime)\s+\S+\s+ok", plugins):
        failures.append("CRI plugin not ok: %s" % [l for l in plugins.splitlines() if "cri" in l])


def check_runs_current(args, data, dump_rc, dump, out, failures):
    """containerd runs the current config.

    It started after the last change of every config file, or the restart
    contract's fingerprint (written after containerd's last start) equals the
    effective config (any order of the imports line, which containerd 1.x
    prints in a random order, left out).
    """
    started = start_time("containerd")
    files = [args.config] + [d for d in args.dropin if os.path.exists(d)]
    for pattern in (data or {}).get("imports", []) or []:
        files.extend(glob.glob(pattern))
    newest = max([os.stat(f).st_mtime for f in files if os.path.exists(f)] or [0])
    out["containerd_started"] = started
    out["config_changed"] = newest
    if started < newest:
        fp_path = "/var/lib/nodeguard/containerd-started.sha256"
        try:
            recorded = open(fp_path).read().strip()
            recorded_at = os.stat(fp_path).st_mtime
        except OSError:
            recorded, recorded_at = "", 0
        same = dump_rc == 0 and recorded_at >= started and recorded == fingerprint(dump)
        out["runs_recorded_fingerprint"] = same
        if not same:
            failures.append("containerd (started %.3f) does not run the current config (changed %.3f)"
                            % (started, newest))


def count_since_last_check(args, out, failures):
    """containerd starts in the journal and kata shim calls, and their change since the previous check
    (whose counters are kept in --state)."""
    rc, journal, dummy = run(["journalctl", "-u", "containerd", "-o", "cat", "--no-pager"])
    out["containerd_starts"] = len(re.findall(r"^Started containerd", journal, re.M))
    try:
        with open(args.kata_log) as f:
            out["kata_calls"] = sum(1 for dummy in f)
    except OSError:
        out["kata_calls"] = 0

    try:
        with open(args.state) as f:
            prev = json.load(f)
    except (OSError, ValueError):
        prev = {}
    out["starts_delta"] = (out["containerd_starts"] - prev["containerd_starts"]) if "containerd_starts" in prev else None
    out["kata_delta"] = out["kata_calls"] - prev.get("kata_calls", 0)
    try:
        tmp = args.state + ".tmp"
        with open(tmp, "w") as f:
            json.dump(dict(containerd_starts=out["containerd_starts"], kata_calls=out["kata_calls"]), f)
        os.rename(tmp, args.state)
    except OSError as exc:
        failures.append("cannot record the counters in %s: %s" % (args.state, exc))


def check_phase(args, effective, raw, failures):
    """installed: every handler in the effective config. removed: none left, no drop-in, no payload, and
    config.toml byte-identical to --pristine."""
    handlers = [h for h in args.handlers.split(",") if h]
    if args.phase == "installed":
        missing = [h for h in handlers if h not in effective]
        if missing:
            failures.append("handlers missing from the effective config: %s" % missing)
    elif args.phase == "removed":
        left = [h for h in handlers if h in effective]
        if left:
            failures.append("handlers left in the effective config: %s" % left)
        for d in args.dropin:
            if os.path.exists(d):
                failures.append("drop-in left: %s" % d)
        if os.path.exists(args.install_dir):
            failures.append("payload left: %s" % args.install_dir)
        if args.pristine:
            with open(args.pristine, "rb") as f:
                if f.read() != raw:
                    failures.append("config.toml is not byte-identical to %s" % args.pristine)


def is_sound(args, out, failures):
    """ok (or, with --allow-pending, only still running the previous config), containerd started --restarts
    times since the previous check, and after an install the kata shim was called."""
    sound = (out["ok"] or (args.allow_pending and not [f for f in failures if "does not run the current config" not in f]))
    sound = sound and (args.restarts is None or out["starts_delta"] == args.restarts)
    # readiness runs a probe container through kata-qemu after every install that changed the config; a re-run
    # that changed nothing (containerd not restarted) may reuse the probe that passed on this very daemon
    out["kata_stamp_since_start"] = kata_stamp_since(args.stamps, out.get("containerd_started"))
    return sound and (args.phase != "installed" or out["kata_delta"] > 0
                      or (out["starts_delta"] == 0 and out["kata_stamp_since_start"]))


def main():
    args = parse_args()
    failures = []
    out = dict(phase=args.phase)
    raw, data = check_config(args, out, failures)
    dump_rc, dump = check_dump(args, out, failures)
    check_service(out, failures)
    check_runs_current(args, data, dump_rc, dump, out, failures)
    count_since_last_check(args, out, failures)
    check_phase(args, out["effective_runtimes"], raw, failures)
    out["failures"] = failures
    out["ok"] = not failures
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    if not is_sound(args, out, failures):
        sys.stderr.write("%s after %s: failures %s; containerd started %s times since the previous check (expected %s); "
                         "kata shim calls +%s; imports %s; effective runtimes %s\n"
                         % (args.host, args.phase, failures, out["starts_delta"],
                            "any" if args.restarts is None else args.restarts, out["kata_delta"], out.get("imports", []),
                            out.get("effective_runtimes")))
        sys.exit(1)


if __name__ == "__main__":
    main()
