"""Do to config.toml what the NVIDIA toolkit's revert did in the seed report.

With its runtime name set to runc, the toolkit's install only added
BinaryName to runc; its revert (on every pod termination) deletes the
configured runtime's table whole and keeps default_runtime_name = "runc".
Like the toolkit it re-serialises the file and writes it in place (no
temporary file). Test helper of the gpu_toolkit scenario.
"""
import sys

import tomlkit

path = sys.argv[1] if len(sys.argv) > 1 else "/etc/containerd/config.toml"
with open(path) as fh:
    doc = tomlkit.parse(fh.read())
plugin = "io.containerd.cri.v1.runtime" if int(doc.get("version", 1)) >= 3 else "io.containerd.grpc.v1.cri"
runtimes = doc["plugins"][plugin]["containerd"]["runtimes"]
del runtimes["runc"]
with open(path, "w") as fh:
    fh.write(tomlkit.dumps(doc))
print("deleted plugins.%s.containerd.runtimes.runc; default_runtime_name = %s"
      % (plugin, doc["plugins"][plugin]["containerd"].get("default_runtime_name")))
