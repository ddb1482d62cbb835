"""nvidia-container-runtime's legacy mode (v1.17.8), and readiness catching its missing hook.

In legacy mode the real runtime adds nvidia-container-runtime-hook as a
prestart hook to every container; without the hook on containerd's PATH (or
named in the runtime's config.toml) every container through the handler fails:
"error running hook #0: fork/exec /usr/bin/nvidia-container-runtime-hook: no
such file or directory". A real containerd on a private socket runs the
stand-in as the ``nvidia`` handler's BinaryName, with the runtime's config.toml
under its own XDG_CONFIG_HOME (the real runtime reads it there first), and
containerd_readiness probes through the handler as node_readiness does.

Needs root, Debian's containerd, runc and busybox-static (``make deps``).
"""

import os
import subprocess
import sys
import time

import pytest

from helpers.standins import MAKE_PROBE, PROBE_IMAGE, STANDINS, active_systemctl, sh, stop_containerd

DEFAULT_HOOK = "/usr/bin/nvidia-container-runtime-hook"
CRI = 'plugins."io.containerd.grpc.v1.cri"'


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("these tests start containerd and need root (run: make deps)", pytrace=False)
    assert not os.path.exists(DEFAULT_HOOK), "a real hook is installed here: the missing-hook case cannot be shown"
    base = tmp_path_factory.mktemp("legacy")
    logs, xdg = base / "logs", base / "xdg" / "nvidia-container-runtime"
    logs.mkdir()
    xdg.mkdir(parents=True)
    config = base / "config.toml"
    config.write_text("""\
version = 2
root = "{base}/root"
state = "{base}/state"

[grpc]
  address = "{base}/containerd.sock"

[plugins]
  [{cri}]
    disable_tcp_service = true
    stream_server_port = "0"
    [{cri}.containerd]
      default_runtime_name = "runc"
      [{cri}.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
      [{cri}.containerd.runtimes.nvidia]
        runtime_type = "io.containerd.runc.v2"
        [{cri}.containerd.runtimes.nvidia.options]
          BinaryName = "{nvidia}"
""".format(base=base, cri=CRI, nvidia=os.path.join(STANDINS, "nvidia-container-runtime")))
    env = dict(os.environ, XDG_CONFIG_HOME=str(base / "xdg"), NODEGUARD_STANDIN_LOG_DIR=str(logs))
    log = open(str(base / "containerd.log"), "w")
    proc = subprocess.Popen(["containerd", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT, env=env)
    ctr = ["ctr", "--address", str(base / "containerd.sock")]
    deadline = time.monotonic() + 30
    while sh(ctr + ["version"], timeout=10).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("containerd did not start:\n" + (base / "containerd.log").read_text()[-3000:])
        time.sleep(0.2)
    probe_tar = base / "probe.tar"
    res = sh([sys.executable, MAKE_PROBE, "--busybox", "/bin/busybox", "--out", str(probe_tar), "--name", PROBE_IMAGE])
    assert res.returncode == 0, res.stderr
    assert sh(ctr + ["-n", "k8s.io", "images", "import", str(probe_tar)]).returncode == 0
    yield dict(base=base, config=str(config), address=str(base / "containerd.sock"), runtime_config=xdg / "config.toml",
               logs=logs, ctr=ctr)
    stop_containerd(proc, ctr, base, log)


@pytest.fixture
def readiness(node, run_module, tmp_path):
    bin_dir = active_systemctl(tmp_path / "bin")

    def run(expect_fail=False):
        res = run_module("containerd_readiness", expect_fail=expect_fail, path=node["config"], address=node["address"],
                         handlers=["runc", "nvidia"], probe_image=PROBE_IMAGE, probe_command=["/bin/true"],
                         probe_image_required=True, kubernetes="false", timeout=30, check_drift=False,
                         env={"PATH": "%s:%s" % (bin_dir, os.environ["PATH"])})
        report = res["readiness"]
        return report, dict((c["name"], c) for c in report["checks"]), report["probes"]
    return run


def hook_log(node):
    path = node["logs"] / "nvidia-hook.log"
    return path.read_text() if path.exists() else ""


def test_legacy_mode_without_the_hook_fails_every_container_and_readiness_says_so(node, readiness):
    node["runtime_config"].write_text('[nvidia-container-runtime]\nmode = "legacy"\n')
    report, checks, probes = readiness(expect_fail=True)
    assert report["failed"] == ["probe:nvidia"], report["failed"]
    assert checks["probe:runc"]["status"] == "pass"          # runc's own handler is untouched
    assert checks["handler:nvidia"]["status"] == "pass"      # the handler is configured: only a probe shows it
    stderr = probes["nvidia"]["stderr"]
    assert "error running hook #0" in stderr and "fork/exec %s: no such file or directory" % DEFAULT_HOOK in stderr, \
        stderr


def test_legacy_mode_with_the_hook_runs_it_before_the_container(node, readiness):
    hook = os.path.join(STANDINS, "nvidia-container-runtime-hook")
    node["runtime_config"].write_text('[nvidia-container-runtime]\nmode = "legacy"\n\n'
                                      '[nvidia-container-runtime-hook]\npath = "%s"\n' % hook)
    before = hook_log(node)
    report, checks, probes = readiness()
    assert report["ok"], report["failed"]
    ran = hook_log(node)[len(before):]
    assert probes["nvidia"]["argv"][-2] in ran and " prestart " in ran, ran   # the probe's container id, hook args
    assert probes["runc"]["argv"][-2] not in ran                                # only through the nvidia handler


def test_without_legacy_mode_no_hook_is_added(node, readiness):
    node["runtime_config"].write_text('[nvidia-container-runtime]\nmode = "auto"\n')
    before = hook_log(node)
    report, _checks, _probes = readiness()
    assert report["ok"], report["failed"]
    assert hook_log(node) == before
