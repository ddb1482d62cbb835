"""Print the CRI runtimes of containerd's effective config as JSON.

Test helper of the gpu_toolkit scenario: runs `containerd --config PATH
config dump` (main file and imports merged, as the daemon reads them) and
prints {"version", "default_runtime_name", "runtimes": {name: table}}.
"""
import json
import subprocess
import sys

try:
    import tomllib as toml_reader

    def loads(text):
        return toml_reader.loads(text)
except ImportError:  # Python < 3.11
    import tomlkit

    def loads(text):
        return tomlkit.parse(text).unwrap()

path = sys.argv[1] if len(sys.argv) > 1 else "/etc/containerd/config.toml"
out = subprocess.run(["containerd", "--config", path, "config", "dump"], capture_output=True, text=True, check=True)
data = loads(out.stdout)
version = data.get("version", 1)
plugin = "io.containerd.cri.v1.runtime" if version >= 3 else "io.containerd.grpc.v1.cri"
cri = data.get("plugins", {}).get(plugin, {}).get("containerd", {})
json.dump({"version": version, "default_runtime_name": cri.get("default_runtime_name"),
           "enable_cdi": data.get("plugins", {}).get(plugin, {}).get("enable_cdi"),
           "runtimes": cri.get("runtimes", {})}, sys.stdout, sort_keys=True, default=str)
sys.stdout.write("\n")
