#!/usr/bin/env python
"""Print a node_readiness report (JSON) as a table: check / result / reason."""

import json
import shutil
import sys
import textwrap


def main(path):
    with open(path) as fh:
        report = json.load(fh)
    ctd = report["containerd"]
    width = max(shutil.get_terminal_size((120, 20)).columns, 100)
    print(
        "containerd %s, %s (config version %s), runtimes: %s (default %s)"
        % (ctd["version"], ctd["config_path"], ctd["config_version"], ", ".join(ctd["runtimes"] or []), ctd["default_runtime_name"])
    )
    if ctd.get("came_back_seconds") is not None:
        print("containerd came back %.3f s after its last restart (startup %s s)" % (ctd["came_back_seconds"], ctd["startup_seconds"]))
    if ctd.get("start_limit_hit"):
        print("systemd start-limit-hit was seen" + (" and cleared with reset-failed" if ctd.get("reset_failed_done") else ""))
    name_w = max(len("CHECK"), *(len(c["name"]) for c in report["checks"]))
    head = "%-*s  %-6s  %-8s  " % (name_w, "CHECK", "RESULT", "REQUIRED")
    reason_w = max(width - len(head), 30)
    print()
    print(head + "REASON")
    print("-" * (len(head) + min(reason_w, 60)))
    for check in report["checks"]:
        lines = textwrap.wrap(check["reason"], reason_w) or [""]
        prefix = "%-*s  %-6s  %-8s  " % (name_w, check["name"], check["status"].upper(), "yes" if check["required"] else "no")
        print(prefix + lines[0])
        for line in lines[1:]:
            print(" " * len(prefix) + line)
    print()
    verdict = "READY" if report["ok"] else "NOT READY (failed: %s)" % ", ".join(report["failed"])
    print("%s: %s" % (report["summary"], verdict))


if __name__ == "__main__":
    main(sys.argv[1])
