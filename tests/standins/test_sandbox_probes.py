"""Readiness probes on a node prepared like a real kubelet node, against real containerd 1.6, 1.7 and 2.1.

The daemon's k8s.io namespace holds only the node's sandbox (pause) image,
under the name its effective config gives (``sandbox_image`` of config
version 2, ``pinned_images.sandbox`` of version 3, read from ``config dump``:
the defaults of each version, or a drop-in's value): a static ``/pause`` built
from tests/images/pause/pause.c, no shell, no /bin/true, no test probe image.
containerd_readiness probes runc, nvidia (the nvidia-container-runtime
stand-in as BinaryName) and kata handlers (the kata shim stand-in, by
runtime_path and by PATH) with it by default: each task is started, seen
running, stopped with SIGTERM and removed. A missing image fails the check and
says why; a handler's own env and command reach its container; a nydus proxy
plugin whose containerd-nydus-grpc does not answer fails its check.

Needs root, gcc with a static libc, runc, busybox-static (``make deps``).
"""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, REPO

from helpers.standins import MAKE_PROBE as MAKE_IMAGE, PROBE_IMAGE, STANDINS, active_systemctl, sh

IMAGES = os.path.join(REPO, "tests", "images")
HANDLERS = ["runc", "nvidia", "kata-qemu", "kata-clh"]
CUSTOM_SANDBOX = "registry.example.internal/pause:3.10-node"


def runtimes_toml(table, base, nydus=False):
    """The runtime handlers as the GPU toolkit and kata-deploy write them, under TABLE."""
    nvidia = os.path.join(STANDINS, "nvidia-container-runtime")
    shim = os.path.join(base, "kata", "bin", "containerd-shim-kata-v2")
    text = """
[{t}.runc]
  runtime_type = "io.containerd.runc.v2"
[{t}.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [{t}.nvidia.options]
    BinaryName = "{nvidia}"
[{t}.kata-qemu]
  runtime_type = "io.containerd.kata-qemu.v2"
  runtime_path = "{shim}"
  privileged_without_host_devices = true
  pod_annotations = ["io.katacontainers.*"]
  [{t}.kata-qemu.options]
    ConfigPath = "/opt/kata/share/defaults/kata-containers/configuration-qemu.toml"
[{t}.kata-clh]
  runtime_type = "io.containerd.kata-clh.v2"
""".format(t=table, nvidia=nvidia, shim=shim)
    if nydus:
        text += '[{t}.kata-qemu-coco-dev]\n  runtime_type = "io.containerd.kata-qemu-coco-dev.v2"\n' \
                '  snapshotter = "nydus"\n'.format(t=table)
    return text


def config_text(version, base, extra="", nydus=False):
    if version == 2:
        cri = 'plugins."io.containerd.grpc.v1.cri"'
        head = """version = 2
[plugins."io.containerd.internal.v1.opt"]
  path = "{base}/opt"
[{cri}]
  disable_tcp_service = true
  stream_server_port = "0"
[{cri}.containerd]
  default_runtime_name = "runc"
""".format(base=base, cri=cri)
        table = cri + ".containerd.runtimes"
    else:
        head = """version = 3
[plugins.'io.containerd.internal.v1.opt']
  path = '{base}/opt'
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_port = '0'
[plugins.'io.containerd.cri.v1.runtime'.containerd]
  default_runtime_name = 'runc'
""".format(base=base)
        table = "plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes"
    if nydus:  # as the Confidential Containers operator configures it
        head += '[proxy_plugins]\n  [proxy_plugins.nydus]\n    type = "snapshot"\n    address = "%s/nydus.sock"\n' % base
    return extra + head + runtimes_toml(table, base, nydus)


def dump_sandbox(binary, path):
    """The sandbox image of the effective config, from the node's own config dump."""
    res = sh([binary, "--config", path, "config", "dump"])
    assert res.returncode == 0, res.stderr
    import tomllib  # Python 3.11+ on the test host

    dump = tomllib.loads(res.stdout)
    if dump.get("version", 1) >= 3:
        return dump["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"]
    return dump["plugins"]["io.containerd.grpc.v1.cri"]["sandbox_image"]


@pytest.fixture(scope="module")
def pause_binary(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("these tests start containerd and need root", pytrace=False)
    out = tmp_path_factory.mktemp("pause") / "pause"
    res = sh(["cc", "-static", "-Os", "-s", "-o", str(out), os.path.join(IMAGES, "pause", "pause.c")])
    assert res.returncode == 0, "cannot build the static pause binary (make deps): " + res.stderr
    return str(out)


class KubeletNode(object):
    """A real containerd with the stand-in handlers and only the pause image in k8s.io."""

    def __init__(self, binary, version, pause, extra="", nydus=False, import_pause=True):
        self.binary = binary
        self.bindir = os.path.dirname(binary)
        self.base = tempfile.mkdtemp(prefix="ng-kubelet-", dir="/run")
        self.logs = os.path.join(self.base, "logs")
        pathbin = os.path.join(self.base, "bin")
        for folder in (self.logs, pathbin, os.path.join(self.base, "kata", "bin")):
            os.makedirs(folder)
        shim = os.path.join(self.base, "kata", "bin", "containerd-shim-kata-v2")
        shutil.copy(os.path.join(STANDINS, "containerd-shim-kata-v2"), shim)
        os.symlink(shim, os.path.join(pathbin, "containerd-shim-kata-clh-v2"))
        os.symlink(shim, os.path.join(pathbin, "containerd-shim-kata-qemu-coco-dev-v2"))
        active_systemctl(pathbin)
        self.pathbin = pathbin
        self.config = os.path.join(self.base, "config.toml")
        with open(self.config, "w") as fh:
            fh.write(config_text(version, self.base, extra, nydus))
        self.address = os.path.join(self.base, "containerd.sock")
        self.ctr = [os.path.join(self.bindir, "ctr") if os.path.exists(os.path.join(self.bindir, "ctr")) else "ctr",
                    "--address", self.address, "-n", "k8s.io"]
        env = dict(os.environ)
        # this version's runc shim first; the stand-ins log into self.logs and hand over to it
        env["PATH"] = "%s:%s:%s" % (self.bindir, pathbin, env.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"))
        env["NODEGUARD_STANDIN_LOG_DIR"] = self.logs
        shim_runc = os.path.join(self.bindir, "containerd-shim-runc-v2")
        env["NODEGUARD_STANDIN_RUNC_SHIM"] = shim_runc if os.path.exists(shim_runc) else shutil.which(
            "containerd-shim-runc-v2")
        self.log = open(os.path.join(self.base, "containerd.log"), "w")
        self.proc = subprocess.Popen([binary, "--config", self.config, "--address", self.address,
                                      "--root", os.path.join(self.base, "root"),
                                      "--state", os.path.join(self.base, "state")],
                                     stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 30
        while sh(self.ctr + ["version"], timeout=10).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail("containerd did not start:\n" + open(self.log.name).read()[-3000:])
            time.sleep(0.2)
        self.sandbox = dump_sandbox(binary, self.config)
        if import_pause:
            archive = os.path.join(self.base, "pause.tar")
            res = sh([sys.executable, MAKE_IMAGE, "--pause", pause, "--out", archive, "--name", self.sandbox])
            assert res.returncode == 0, res.stderr
            res = sh(self.ctr + ["images", "import", archive])
            assert res.returncode == 0, res.stderr

    def images(self):
        """The image names in k8s.io (the CRI plugin adds a sha256:<id> reference of each: left out)."""
        return [i for i in sh(self.ctr + ["images", "ls", "-q"]).stdout.split() if not i.startswith("sha256:")]

    def import_probe_image(self):
        archive = os.path.join(self.base, "probe.tar")
        res = sh([sys.executable, MAKE_IMAGE, "--busybox", "/bin/busybox", "--out", archive])
        assert res.returncode == 0, res.stderr
        assert sh(self.ctr + ["images", "import", archive]).returncode == 0

    def stand_in_log(self, name):
        path = os.path.join(self.logs, name)
        return open(path).read() if os.path.exists(path) else ""

    def check(self, run_module, expect_fail=False, **args):
        params = dict(path=self.config, address=self.address, containerd_bin=self.binary, handlers=HANDLERS,
                      pass_config_path=False, kubernetes="false", timeout=30, probe_timeout=30)
        params.update(args)
        res = run_module("containerd_readiness", expect_fail=expect_fail,
                         env={"PATH": "%s:%s" % (self.pathbin, os.environ["PATH"])}, **params)
        report = res["readiness"]
        report["by_name"] = dict((c["name"], c) for c in report["checks"])
        return report

    def stop(self):
        for task in sh(self.ctr + ["tasks", "ls", "-q"]).stdout.split():
            sh(self.ctr + ["tasks", "kill", "-s", "SIGKILL", task])
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        with open("/proc/self/mounts") as fh:
            mounts = [line.split()[1] for line in fh if line.split()[1].startswith(self.base)]
        for mnt in sorted(mounts, reverse=True):
            sh(["umount", "-l", mnt])
        shutil.rmtree(self.base, ignore_errors=True)


VERSIONS = {"1.6": (CONTAINERD_1, 2), "1.7": (CONTAINERD_17, 2), "2.1": (CONTAINERD_2, 3)}


@pytest.fixture
def kubelet_node(pause_binary):
    made = []

    def make(which, **kw):
        binary, version = VERSIONS[which]
        if binary is None:
            pytest.fail("containerd %s is missing: run `make deps`" % which, pytrace=False)
        node = KubeletNode(binary, version, pause_binary, **kw)
        made.append(node)
        return node
    yield make
    for node in made:
        node.stop()


@pytest.mark.parametrize("which", sorted(VERSIONS))
def test_every_handler_is_probed_with_the_sandbox_image_only(kubelet_node, run_module, which):
    node = kubelet_node(which)
    assert node.images() == [node.sandbox]  # like a kubelet node: the pause image, nothing else
    expected = {"1.6": "registry.k8s.io/pause:3.6", "1.7": "registry.k8s.io/pause:3.8",
                "2.1": "registry.k8s.io/pause:3.10"}[which]
    assert node.sandbox == expected  # each version's own default, from config dump (config.toml names none)
    report = node.check(run_module)
    assert report["ok"], [(c["name"], c["reason"]) for c in report["checks"] if c["status"] == "fail"]
    assert report["probe_image"]["image"] == expected
    assert report["probe_image"]["source"] == "sandbox image of the effective config"
    assert report["containerd"]["sandbox_image"] == expected
    for handler in HANDLERS:
        check, probe = report["by_name"]["probe:" + handler], report["probes"][handler]
        assert check["status"] == "pass" and check["required"], check
        assert probe["kind"] == "start" and probe["status"] == "RUNNING", probe
        assert probe["stopped_by"] == "SIGTERM", probe  # /pause exits on SIGTERM, as the real one
        assert "seen running, stopped by SIGTERM" in check["reason"]
        assert probe["argv"][-2:] == [expected, probe["argv"][-1]] and "--rm" not in probe["argv"]
    ids = dict((h, report["probes"][h]["argv"][-1]) for h in HANDLERS)
    nvidia, kata = node.stand_in_log("nvidia.log"), node.stand_in_log("kata.log")
    assert ids["nvidia"] in nvidia and " create " in nvidia, "runc was not called through the nvidia stand-in"
    kata_lines = kata.splitlines()
    assert any(node.base + "/kata/bin/containerd-shim-kata-v2" in line and ids["kata-qemu"] in line
               for line in kata_lines), kata
    assert any("containerd-shim-kata-clh-v2" in line and ids["kata-clh"] in line for line in kata_lines), kata
    assert ids["runc"] not in nvidia + kata
    # nothing left behind: no task, no container, no snapshot of a probe
    assert sh(node.ctr + ["tasks", "ls", "-q"]).stdout.split() == []
    assert sh(node.ctr + ["containers", "ls", "-q"]).stdout.split() == []
    assert not [s for s in sh(node.ctr + ["snapshots", "ls"]).stdout.split() if s.startswith("nodeguard-probe")]
    assert node.images() == [expected]  # nothing pulled or imported


def test_the_sandbox_image_of_a_drop_in_is_the_one_probed(kubelet_node, run_module, tmp_path):
    """The effective config decides (2.x merges the drop-in's pinned_images.sandbox), not config.toml alone."""
    dropin = tmp_path / "pause.toml"
    dropin.write_text("version = 3\n[plugins.'io.containerd.cri.v1.images'.pinned_images]\n  sandbox = '%s'\n"
                      % CUSTOM_SANDBOX)
    node = kubelet_node("2.1", extra="imports = ['%s']\n" % dropin)
    assert node.sandbox == CUSTOM_SANDBOX and node.images() == [CUSTOM_SANDBOX]
    report = node.check(run_module, handlers=["runc", "kata-qemu"])
    assert report["ok"], report["failed"]
    assert report["probe_image"]["image"] == CUSTOM_SANDBOX
    assert report["probes"]["kata-qemu"]["argv"][-2] == CUSTOM_SANDBOX


def test_a_missing_sandbox_image_fails_the_probes_and_says_why(kubelet_node, run_module):
    node = kubelet_node("1.6", import_pause=False)
    assert node.images() == []
    report = node.check(run_module, expect_fail=True, handlers=["runc", "nvidia"], probe_pull=False)
    assert report["failed"] == ["probe:runc", "probe:nvidia"]
    for handler in ("runc", "nvidia"):
        check = report["by_name"]["probe:" + handler]
        assert check["status"] == "fail" and check["required"]
        assert check["reason"] == ("the sandbox image of the effective config registry.k8s.io/pause:3.6 is not in "
                                   "containerd namespace k8s.io; not pulled (probe_pull is false)")
    assert report["probes"] == {}


def test_an_image_that_cannot_be_pulled_fails_with_the_pull_error(kubelet_node, run_module):
    node = kubelet_node("2.1")
    image = "registry.nodeguard.invalid/pause:3.10"  # .invalid never resolves: the pull fails at once
    report = node.check(run_module, expect_fail=True, handlers=["runc"], probe_image=image, probe_timeout=20)
    check = report["by_name"]["probe:runc"]
    assert check["status"] == "fail"
    assert check["reason"].startswith("probe image %s is not in containerd namespace k8s.io; pull failed: " % image)
    assert "registry.nodeguard.invalid" in check["reason"].split("pull failed: ")[1]
    assert report["probe_image"]["images"][image]["probe_image_pulled"] is False
    # a skip only when asked for, and then with the same reason
    report = node.check(run_module, handlers=["runc"], probe_image=image, probe_pull=False,
                        probe_image_required=False)
    check = report["by_name"]["probe:runc"]
    assert check["status"] == "skip" and not check["required"] and "probe_image_required is false" in check["reason"]


def test_a_handler_s_env_and_command_reach_its_container(kubelet_node, run_module):
    """One line of configuration per handler, as a GPU node's nvidia-smi -L would be."""
    node = kubelet_node("1.7")
    node.import_probe_image()
    line = {"name": "nvidia", "image": PROBE_IMAGE, "env": {"NVIDIA_VISIBLE_DEVICES": "all"},
            "command": 'sh -c \'test "$NVIDIA_VISIBLE_DEVICES" = all && echo devices=$NVIDIA_VISIBLE_DEVICES\''}
    report = node.check(run_module, handlers=["runc", line])
    assert report["ok"], report["failed"]
    probe = report["probes"]["nvidia"]
    assert probe["kind"] == "run" and probe["rc"] == 0 and "devices=all" in probe["stdout"]
    assert "--env" in probe["argv"] and "NVIDIA_VISIBLE_DEVICES=all" in probe["argv"]
    assert report["probes"]["runc"]["kind"] == "start"  # the others keep the sandbox image
    assert probe["argv"][-5] == PROBE_IMAGE and probe["argv"][-3:] == [
        "sh", "-c", 'test "$NVIDIA_VISIBLE_DEVICES" = all && echo devices=$NVIDIA_VISIBLE_DEVICES']
    assert probe["argv"][-4] in node.stand_in_log("nvidia.log")
    # without the env the same command fails, with its exit status
    line = dict(line, env={})
    report = node.check(run_module, expect_fail=True, handlers=[line])
    assert report["failed"] == ["probe:nvidia"] and "rc=1" in report["by_name"]["probe:nvidia"]["reason"]


def test_a_nydus_proxy_plugin_without_its_service_fails(kubelet_node, run_module):
    node = kubelet_node("2.1", nydus=True)
    report = node.check(run_module, expect_fail=True, handlers=["runc"])
    check = report["by_name"]["proxy_plugin:nydus"]
    assert check["status"] == "fail" and check["required"], check  # kata-qemu-coco-dev uses it
    assert check["reason"].startswith("containerd-nydus-grpc does not answer for proxy plugin nydus (type snapshot): "
                                      "socket %s/nydus.sock does not exist" % node.base), check
    assert "used by runtime kata-qemu-coco-dev" in check["reason"]
    assert report["failed"] == ["proxy_plugin:nydus"]


def grpc_server(folder, program, address):
    """A real gRPC server on address: the host's containerd, run under the name program."""
    binary = os.path.join(folder, program)
    shutil.copy(CONTAINERD_1, binary)
    config = os.path.join(folder, program + ".toml")
    with open(config, "w") as fh:
        fh.write("version = 2\ndisabled_plugins = ['io.containerd.grpc.v1.cri']\n")
    proc = subprocess.Popen([binary, "--config", config, "--address", address, "--root", os.path.join(folder, "sroot"),
                             "--state", os.path.join(folder, "sstate")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.exists(address) and time.monotonic() < deadline:
        time.sleep(0.1)
    return proc


@pytest.mark.parametrize("program, answers", [("containerd-nydus-grpc", True), ("containerd", False)])
def test_the_nydus_check_asks_the_socket_and_names_who_listens(kubelet_node, run_module, program, answers):
    """A gRPC server answers on the socket; it counts as nydus only when containerd-nydus-grpc listens there."""
    node = kubelet_node("1.7", nydus=True)
    server = grpc_server(node.base, program, os.path.join(node.base, "nydus.sock"))
    try:
        report = node.check(run_module, expect_fail=not answers, handlers=["runc"])
    finally:
        server.terminate()
        server.wait(timeout=20)
    check = report["by_name"]["proxy_plugin:nydus"]
    how = "a gRPC server answers on %s/nydus.sock" % node.base
    if answers:
        assert check["status"] == "pass", check
        assert check["reason"] == ("containerd-nydus-grpc answers for proxy plugin nydus (type snapshot): %s: "
                                   "containerd-nydus-grpc, pid %d; used by runtime kata-qemu-coco-dev"
                                   % (how, server.pid))
        assert report["ok"]
    else:
        assert check["status"] == "fail", check
        assert check["reason"].startswith("containerd-nydus-grpc does not answer for proxy plugin nydus (type "
                                          "snapshot): %s, but the process listening there is containerd (pid %d), "
                                          "not containerd-nydus-grpc" % (how, server.pid)), check


def test_the_pause_image_is_a_sandbox_image(pause_binary, tmp_path):
    """Entrypoint /pause as user 65535 and nothing else in it; the same bytes twice."""
    out1, out2 = tmp_path / "a.tar", tmp_path / "b.tar"
    for out in (out1, out2):
        res = sh([sys.executable, MAKE_IMAGE, "--pause", pause_binary, "--out", str(out), "--name", CUSTOM_SANDBOX])
        assert res.returncode == 0, res.stderr
    assert out1.read_bytes() == out2.read_bytes()
    with tarfile.open(str(out1)) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile("blobs/" + index["manifests"][0]["digest"].replace(":", "/")))
        config = json.load(tar.extractfile("blobs/" + manifest["config"]["digest"].replace(":", "/")))
        layer = tar.extractfile("blobs/" + manifest["layers"][0]["digest"].replace(":", "/")).read()
    assert index["manifests"][0]["annotations"]["io.containerd.image.name"] == CUSTOM_SANDBOX
    assert config["config"]["Entrypoint"] == ["/pause"] and config["config"]["User"] == "65535:65535"
    import io

    with tarfile.open(fileobj=io.BytesIO(layer)) as tar:
        assert tar.getnames() == ["pause"]
