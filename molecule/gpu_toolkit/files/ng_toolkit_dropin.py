"""Put the NVIDIA toolkit's >= 1.18 layout on the node, as its installer's setup does.

The shape is the real toolkit's (d34b304 = v1.20.0-27, fixtures
ctk-head-d34b304-installer-{c16,c2}-systemd-default.after-setup.* in
/work/shared/fixtures/nvidia-ctk/states): config.toml imports
/etc/containerd/conf.d/*.toml, and conf.d/99-nvidia.toml holds a copy of the
WHOLE CRI runtime plugin table, with the runtimes nvidia, nvidia-cdi and
nvidia-legacy (each a copy of runc with the toolkit's BinaryName) and
default_runtime_name = "nvidia". On containerd 1.x that table replaces
config.toml's; on 2.x it deep-merges and wins where both set a key.

The copy is built from this node's own config.toml, so runc and its
SystemdCgroup are the node's. config.toml only gains the imports entry
(`imports = []` becomes the glob; the toolkit re-serialises the file, which
changes nothing containerd reads). Test helper of the gpu_toolkit scenario.

usage: ng_toolkit_dropin.py CONFIG DROPIN TOOLKIT_DIR
"""
import copy
import os
import re
import sys

import tomlkit

config, dropin, toolkit_dir = sys.argv[1:4]
with open(config) as fh:
    text = fh.read()
data = tomlkit.parse(text).unwrap()
version = int(data.get("version", 1))
plugin = "io.containerd.cri.v1.runtime" if version >= 3 else "io.containerd.grpc.v1.cri"
cri = copy.deepcopy(data["plugins"][plugin])
runtimes = cri["containerd"]["runtimes"]
for name, suffix in (("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")):
    table = copy.deepcopy(runtimes["runc"])
    table.setdefault("options", {})["BinaryName"] = os.path.join(toolkit_dir, "nvidia-container-runtime" + suffix)
    runtimes[name] = table
cri["containerd"]["default_runtime_name"] = "nvidia"


def sorted_tables(table):
    """Keys sorted, as the toolkit's encoder writes them."""
    return dict((k, sorted_tables(v) if isinstance(v, dict) else v) for k, v in sorted(table.items()))


cri = sorted_tables(cri)

out = tomlkit.document()
out["version"] = version
out["plugins"] = {plugin: cri}
new_config, count = re.subn(r"(?m)^imports = \[\]$", 'imports = ["%s/*.toml"]' % os.path.dirname(dropin), text)
if count != 1:
    sys.exit("%s: expected one line 'imports = []', found %d" % (config, count))

# The toolkit's own layout (Go's TOML encoder): an empty [plugins] header,
# two spaces of indentation per level of a header, keys one level deeper.
lines, depth = ["[plugins]", ""], 0
for line in tomlkit.dumps(out).replace("version = %d\n" % version, "").strip("\n").splitlines():
    if line.startswith("["):
        depth = len(re.findall(r'"[^"]*"|\'[^\']*\'|[^.\[\]"\']+', line)) - 1
        lines.append("  " * depth + line)
    else:
        lines.append(("  " * (depth + 1) + line) if line else "")
os.makedirs(os.path.dirname(dropin), exist_ok=True)
with open(dropin, "w") as fh:
    fh.write("version = %d\n\n%s\n" % (version, "\n".join(lines)))
with open(config, "w") as fh:
    fh.write(new_config)
print("%s imports %s/*.toml; %s: plugins.%s with runtimes %s, default nvidia"
      % (config, os.path.dirname(dropin), dropin, plugin, ", ".join(cri["containerd"]["runtimes"])))
