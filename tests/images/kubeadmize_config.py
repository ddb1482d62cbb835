#!/usr/bin/env python
"""Turn ``containerd config default`` output into a kubeadm node's config.toml.

What the Kubernetes "container runtimes" guide tells an operator to do:
write the default config, then switch the runc runtime to the systemd cgroup
driver. This adds the comments such a file carries, so that tests can check
that comments and blank lines survive an edit. Plain text edits only: the
key layout and quoting stay exactly what the node's containerd wrote.
"""

from __future__ import annotations

import argparse
import re
import sys

HEADER = """\
# /etc/containerd/config.toml
#
# kubeadm node ({image}): generated with `containerd config default`,
# then SystemdCgroup switched on for the kubelet's systemd cgroup driver.
# Managed by hand; nodeguard.containerd keeps a baseline of this file.

"""

SYSTEMD_COMMENT = "# The kubelet runs with cgroupDriver: systemd; runc must match it.\n"


def kubeadmize(text: str, image: str) -> str:
    lines = text.splitlines(keepends=True)
    out = []
    hits = 0
    for line in lines:
        match = re.match(r"^(\s*)SystemdCgroup = false\s*$", line)
        if match:
            indent = match.group(1)
            out.append(indent + SYSTEMD_COMMENT)
            out.append(indent + "SystemdCgroup = true\n")
            hits += 1
            continue
        out.append(line)
    if hits != 1:
        raise SystemExit(f"expected exactly one 'SystemdCgroup = false' line, found {hits}")
    body = "".join(out)
    if not body.endswith("\n"):
        body += "\n"
    return HEADER.format(image=image) + body


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True)
    parser.add_argument("src")
    parser.add_argument("dest")
    args = parser.parse_args(argv)
    with open(args.src, encoding="utf-8") as fh:
        text = fh.read()
    result = kubeadmize(text, args.image)
    with open(args.dest, "w", encoding="utf-8") as fh:
        fh.write(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
