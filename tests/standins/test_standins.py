"""The stand-in runtimes against a real containerd (no GPU, no kata here).

A containerd daemon on a private socket, with its root and state under a
temporary folder, is configured the way the GPU toolkit and kata-deploy
configure a node: an ``nvidia`` runtime whose ``options.BinaryName`` is the
nvidia-container-runtime stand-in, a ``kata-qemu`` runtime whose
``runtime_path`` is the kata shim stand-in from the stand-in payload, and a
``kata-clh`` runtime found by containerd as ``containerd-shim-kata-clh-v2``
in PATH. Probe containers are started through each handler with the
command line node_readiness derives from the effective config, and the
stand-ins' logs show they were really used.

Needs root, Debian's containerd, runc and busybox-static (``make deps``).
"""

import json
import os
import subprocess
import sys
import tarfile
import time

import pytest

from helpers.standins import MAKE_PROBE, PROBE_IMAGE, STANDINS, active_systemctl, require, sh, stop_containerd

BUSYBOX = "/bin/busybox"


# The test containerd: runc, the nvidia stand-in (BinaryName), a broken handler, kata through runtime_path
# and kata-clh through the shim in PATH.
CONFIG_TEMPLATE = """\
version = 2
root = "{base}/root"
state = "{base}/state"

[grpc]
  address = "{base}/containerd.sock"

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "{base}/opt"
  [{cri}]
    disable_tcp_service = true
    stream_server_port = "0"
    [{cri}.containerd]
      default_runtime_name = "runc"
      [{cri}.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [{cri}.containerd.runtimes.runc.options]
          SystemdCgroup = false
      [{cri}.containerd.runtimes.nvidia]
        runtime_type = "io.containerd.runc.v2"
        [{cri}.containerd.runtimes.nvidia.options]
          BinaryName = "{nvidia}"
          SystemdCgroup = false
      [{cri}.containerd.runtimes.broken]
        runtime_type = "io.containerd.runc.v2"
        [{cri}.containerd.runtimes.broken.options]
          BinaryName = "{base}/no-such-runtime"
      [{cri}.containerd.runtimes.kata-qemu]
        runtime_type = "io.containerd.kata-qemu.v2"
        runtime_path = "{shim}"
        privileged_without_host_devices = true
        pod_annotations = ["io.katacontainers.*"]
        [{cri}.containerd.runtimes.kata-qemu.options]
          ConfigPath = "{payload}/opt/kata/share/defaults/kata-containers/configuration-qemu.toml"
      [{cri}.containerd.runtimes.kata-clh]
        runtime_type = "io.containerd.kata-clh.v2"
"""


def start_containerd(base, config, pathbin, logs, ctr):
    """containerd on config (the stand-ins' folder first in PATH, their log folder set), once ctr answers."""
    daemon_env = dict(os.environ)
    daemon_env["PATH"] = "%s:%s" % (pathbin, daemon_env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"))
    daemon_env["NODEGUARD_STANDIN_LOG_DIR"] = str(logs)
    daemon_log = open(str(base / "containerd.log"), "w")
    proc = subprocess.Popen(
        ["containerd", "--config", str(config)], stdout=daemon_log, stderr=subprocess.STDOUT, env=daemon_env
    )
    deadline = time.monotonic() + 30
    while sh(ctr + ["version"], timeout=10).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            daemon_log.close()
            pytest.fail("containerd did not start:\n" + (base / "containerd.log").read_text()[-3000:])
        time.sleep(0.2)
    return proc, daemon_log


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    require(os.geteuid() == 0, "these tests start containerd and need root")
    for tool in ("containerd", "ctr", "runc", "containerd-shim-runc-v2"):
        require(sh(["which", tool]).returncode == 0, "%s not installed" % tool)
    require(os.access(BUSYBOX, os.X_OK), "%s (busybox-static) not installed" % BUSYBOX)

    base = tmp_path_factory.mktemp("ctd")
    logs = base / "logs"
    payload = base / "payload"
    pathbin = base / "bin"
    for folder in (logs, payload, pathbin):
        folder.mkdir()

    # The kata stand-in payload, unpacked where kata-deploy puts /opt/kata.
    tarball = base / "kata-payload.tar.gz"
    res = sh(["bash", os.path.join(STANDINS, "make_kata_payload.sh"), str(tarball)])
    assert res.returncode == 0, res.stderr
    with tarfile.open(str(tarball)) as tar:
        tar.extractall(str(payload))
    shim = payload / "opt" / "kata" / "bin" / "containerd-shim-kata-v2"
    # containerd looks up runtime_type io.containerd.kata-clh.v2 as
    # containerd-shim-kata-clh-v2 in PATH.
    os.symlink(str(shim), str(pathbin / "containerd-shim-kata-clh-v2"))

    nvidia = os.path.join(STANDINS, "nvidia-container-runtime")
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    config = base / "config.toml"
    config.write_text(CONFIG_TEMPLATE.format(base=base, cri=cri, nvidia=nvidia, shim=shim, payload=payload))
    address = str(base / "containerd.sock")
    ctr = ["ctr", "--address", address]
    proc, daemon_log = start_containerd(base, config, pathbin, logs, ctr)

    probe_tar = base / "probe.tar"
    res = sh([sys.executable, MAKE_PROBE, "--busybox", BUSYBOX, "--out", str(probe_tar), "--name", PROBE_IMAGE])
    assert res.returncode == 0, res.stderr
    res = sh(ctr + ["-n", "k8s.io", "images", "import", str(probe_tar)])
    assert res.returncode == 0, res.stderr

    yield {
        "base": base,
        "config": str(config),
        "address": address,
        "ctr": ctr,
        "logs": logs,
        "shim": str(shim),
        "payload": payload,
        "tarball": tarball,
    }

    stop_containerd(proc, ctr, base, daemon_log)


@pytest.fixture
def check(env, run_module, tmp_path):
    """containerd_readiness step=check through these handlers; (report, {handler: probe result})."""
    bin_dir = active_systemctl(tmp_path / "bin")

    def run(handlers, pass_config_path=True, expect_fail=False):
        res = run_module("containerd_readiness", expect_fail=expect_fail, path=env["config"], address=env["address"],
                         handlers=handlers, probe_image=PROBE_IMAGE, probe_command=["/bin/true"], probe_image_required=True,
                         pass_config_path=pass_config_path, kubernetes="false", timeout=30,
                         env={"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])})
        report = res["readiness"]
        report["by_name"] = {c["name"]: c for c in report["checks"]}
        return report, report["probes"]
    return run


def probe_id(probe):
    return probe["argv"][-2]  # ... image, id, /bin/true


def log(env, name):
    path = env["logs"] / name
    return path.read_text() if path.exists() else ""


def test_kata_payload_layout(env):
    with tarfile.open(str(env["tarball"])) as tar:
        names = set(tar.getnames())
        members = {m.name: m for m in tar.getmembers()}
    assert "opt/kata/bin/containerd-shim-kata-v2" in names
    assert members["opt/kata/bin/containerd-shim-kata-v2"].mode & 0o111
    for shim in ("qemu", "qemu-coco-dev", "qemu-tdx", "qemu-snp"):
        assert "opt/kata/share/defaults/kata-containers/configuration-%s.toml" % shim in names
    assert members["opt/kata/share/defaults/kata-containers/configuration.toml"].issym()
    # Reproducible: the same bytes twice.
    again = env["base"] / "again.tar.gz"
    sh(["bash", os.path.join(STANDINS, "make_kata_payload.sh"), str(again)])
    assert again.read_bytes() == env["tarball"].read_bytes()


def test_cri_plugin_loads_with_the_stand_in_runtimes(check):
    report, probes = check([{"name": h, "probe": False} for h in ("runc", "nvidia", "kata-qemu", "kata-clh")])
    assert report["ok"], report["failed"]
    assert report["by_name"]["config_dump"]["status"] == "pass"
    assert report["containerd"]["cri_plugins"] == {"io.containerd.grpc.v1.cri": "ok"}
    assert all(report["by_name"]["handler:" + h]["status"] == "pass" for h in ("runc", "nvidia", "kata-qemu", "kata-clh"))
    assert probes == {}


def test_probe_through_runc(env, check):
    report, probes = check(["runc"])
    assert report["by_name"]["probe:runc"]["status"] == "pass", report["by_name"]["probe:runc"]
    argv = probes["runc"]["argv"]
    assert argv[argv.index("--runtime") + 1] == "io.containerd.runc.v2"
    assert "--runc-binary" not in argv
    assert probe_id(probes["runc"]) not in log(env, "nvidia.log") + log(env, "kata.log")


def test_probe_through_nvidia_binary_name(env, check):
    report, probes = check(["nvidia"])
    probe = probes["nvidia"]
    assert probe["ok"], probe
    argv = probe["argv"]
    assert argv[argv.index("--runc-binary") + 1] == os.path.join(STANDINS, "nvidia-container-runtime")
    lines = [line for line in log(env, "nvidia.log").splitlines() if probe_id(probe) in line]
    # runc is called for create, start and delete at least, each through the stand-in.
    assert any(" create " in line for line in lines), lines
    assert any(" start " in line for line in lines), lines
    assert len(lines) >= 3


def test_probe_through_kata_runtime_path(env, check):
    report, probes = check(["kata-qemu"], pass_config_path=False)
    probe = probes["kata-qemu"]
    assert probe["ok"], probe
    argv = probe["argv"]
    assert argv[argv.index("--runtime") + 1] == env["shim"]
    assert "--runtime-config-path" not in argv
    assert "ConfigPath" in report["by_name"]["probe:kata-qemu"]["reason"]  # the note says it was left out
    lines = [line for line in log(env, "kata.log").splitlines() if probe_id(probe) in line]
    assert lines and all(env["shim"] in line for line in lines), lines
    assert any(line.endswith(" start") for line in lines), lines


def test_probe_through_kata_shim_in_path(env, check):
    probe = check(["kata-clh"])[1]["kata-clh"]
    assert probe["ok"], probe
    assert probe["argv"][probe["argv"].index("--runtime") + 1] == "io.containerd.kata-clh.v2"
    lines = [line for line in log(env, "kata.log").splitlines() if probe_id(probe) in line]
    assert lines and all("containerd-shim-kata-clh-v2" in line for line in lines), lines


def test_probe_fails_when_the_handler_binary_is_missing(env, check):
    """The probe really uses the handler's own settings: a bad BinaryName fails it."""
    report, probes = check(["broken"], expect_fail=True)
    assert report["failed"] == ["probe:broken"]
    assert "no-such-runtime" in probes["broken"]["stderr"] or probes["broken"]["rc"] != 0
    assert probe_id(probes["broken"]) not in sh(env["ctr"] + ["-n", "k8s.io", "containers", "ls", "-q"]).stdout


def test_kata_config_path_is_refused_by_the_runc_based_stand_in(env, check):
    """Why test nodes set node_readiness_pass_config_path=false.

    A real kata shim reads options.ConfigPath; the stand-in hands the
    request to the runc shim, which does not know kata's option type.
    """
    probe = check(["kata-qemu"], pass_config_path=True, expect_fail=True)[1]["kata-qemu"]
    argv = probe["argv"]
    assert argv[argv.index("--runtime-config-path") + 1].endswith("configuration-qemu.toml")
    assert not probe["ok"]
    assert "runtimeoptions.v1.Options" in probe["stderr"], probe["stderr"]


def test_probe_image_builder_is_reproducible(tmp_path):
    out1, out2 = tmp_path / "a.tar", tmp_path / "b.tar"
    for out in (out1, out2):
        res = sh([sys.executable, MAKE_PROBE, "--busybox", BUSYBOX, "--out", str(out)])
        assert res.returncode == 0, res.stderr
    assert out1.read_bytes() == out2.read_bytes()
    with tarfile.open(str(out1)) as tar:
        index = json.load(tar.extractfile("index.json"))
    annotations = index["manifests"][0]["annotations"]
    assert annotations["io.containerd.image.name"] == PROBE_IMAGE
