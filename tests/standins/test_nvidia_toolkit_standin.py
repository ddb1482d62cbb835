"""The NVIDIA toolkit stand-in writes what the real toolkit wrote, byte for byte.

tests/fixtures/nvidia-ctk holds files NVIDIA's own binaries (v1.17.8 and
d34b304 = v1.20.0-27, built from source) wrote from the inputs in inputs/,
with their default paths. Each case runs tests/standins/nvidia-toolkit-standin
on the same input in a private mount namespace whose /etc/containerd is a
temporary folder (the real toolkit's paths, so the self-import names
/etc/containerd/config.toml as in the real files), with the containerd the
fixture was measured with answering `config dump`, and compares every file
it leaves with the fixture.

Needs root (unshare -m) and the real containerd binaries (make deps).
"""

import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STANDIN = os.path.join(REPO, "tests", "standins", "nvidia-toolkit-standin")
CTK = os.path.join(REPO, "tests", "fixtures", "nvidia-ctk")
CONTAINERD_16 = shutil.which("containerd")
CONTAINERD_21 = os.path.join(REPO, "build", "containerd2", "usr", "bin", "containerd")

V117 = "ctk-v1.17.8-installer-"
HEAD = "ctk-head-d34b304-installer-"

# (case id, input, containerd, environment, [(stand-in args, {file under /etc/containerd: fixture})])
CASES = [
    ("v1.17.8 default on a kubeadm 1.6 config", "c16-systemd.toml", CONTAINERD_16, {}, [
        (["setup"], {"config.toml": V117 + "c16-systemd-default.after-setup.config.toml"}),
        (["cleanup"], {"config.toml": V117 + "c16-systemd-default.after-cleanup.config.toml"}),
    ]),
    ("v1.17.8 default, runc's BinaryName already the toolkit's", "c16-systemd-runcbin.toml", CONTAINERD_16, {}, [
        (["setup"], {"config.toml": V117 + "c16-systemd-runcbin-default.after-setup.config.toml"}),
        (["cleanup"], {"config.toml": V117 + "c16-systemd-runcbin-default.after-cleanup.config.toml"}),
    ]),
    ("v1.17.8 with CONTAINERD_RUNTIME_CLASS=runc (the seed report)", "c16-systemd.toml", CONTAINERD_16,
     {"CONTAINERD_RUNTIME_CLASS": "runc"}, [
         (["setup"], {}),
         (["cleanup"], {"config.toml": V117 + "c16-systemd-runtime-class-runc.after-cleanup.config.toml"}),
     ]),
    ("nvidia-ctk v1.17.8 runtime configure on Debian's shipped config", "debian-shipped-config.toml",
     CONTAINERD_16, {}, [
         (["configure"], {"config.toml": "ctk-v1.17.8-nvidia-ctk-debian-shipped-config-default.configured.config.toml"}),
     ]),
    ("v1.20 drop-in layout on a version 2 config", "c16-systemd.toml", CONTAINERD_16, {}, [
        (["setup", "--layout", "v1.20"], {
            "config.toml": HEAD + "c16-systemd-default.after-setup.config.toml",
            "conf.d/99-nvidia.toml": HEAD + "c16-systemd-default.after-setup.conf.d-99-nvidia.toml"}),
    ]),
    ("v1.20 drop-in layout on a version 3 config", "c2-systemd.toml", CONTAINERD_21, {}, [
        (["setup", "--layout", "v1.20"], {
            "config.toml": HEAD + "c2-systemd-default.after-setup.config.toml",
            "conf.d/99-nvidia.toml": HEAD + "c2-systemd-default.after-setup.conf.d-99-nvidia.toml"}),
    ]),
]

# Runs inside `unshare -m`: /etc/containerd becomes $1, the steps run, each
# step's tree is copied to $2/<step>/.
RUNNER = r"""
set -e
mount --make-rprivate /
mkdir -p /etc/containerd
mount --bind "$1" /etc/containerd
out=$2; shift 2
step=0
while [ $# -gt 0 ]; do
    args=$1; shift
    # shellcheck disable=SC2086
    python3 "$STANDIN" $args --containerd "$CONTAINERD"
    mkdir -p "$out/$step"
    cp -a /etc/containerd/. "$out/$step/"
    step=$((step + 1))
done
"""


def _require():
    if os.geteuid() != 0:
        pytest.fail("these tests need root (unshare -m)", pytrace=False)
    if sys.version_info < (3, 11):
        pytest.fail("the stand-in reads TOML with tomllib (Python 3.11+)", pytrace=False)


def run_case(tmp_path, source, containerd, env, steps):
    live = tmp_path / "etc-containerd"
    out = tmp_path / "out"
    live.mkdir()
    out.mkdir()
    shutil.copyfile(os.path.join(CTK, "inputs", source), str(live / "config.toml"))
    full_env = dict(os.environ, STANDIN=STANDIN, CONTAINERD=containerd, **env)
    argv = ["unshare", "-m", "sh", "-c", RUNNER, "runner", str(live), str(out)]
    argv += [" ".join(args) for args, _expected in steps]
    res = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True, timeout=120, check=False)
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_standin_writes_the_real_toolkits_bytes(tmp_path, case):
    _require()
    _name, source, containerd, env, steps = case
    assert containerd and os.access(containerd, os.X_OK), "containerd binary missing (make deps)"
    out = run_case(tmp_path, source, containerd, env, steps)
    for index, (args, expected) in enumerate(steps):
        for name, fixture in expected.items():
            with open(os.path.join(CTK, fixture), "rb") as f:
                want = f.read()
            got_path = out / str(index) / name
            assert got_path.exists(), f"step {args}: {name} not written"
            assert got_path.read_bytes() == want, f"step {args}: {name} differs from {fixture}"


def test_runtime_class_runc_setup_overwrites_runcs_binary(tmp_path):
    """No file of the real setup with the runtime class runc was kept: what it must
    hold follows from the cleanup's fixture and the notes: runc's BinaryName is the
    toolkit's, runc is the default, and the self-import is there."""
    _require()
    out = run_case(tmp_path, "c16-systemd.toml", CONTAINERD_16, {"CONTAINERD_RUNTIME_CLASS": "runc"},
                   [(["setup"], {})])
    text = (out / "0" / "config.toml").read_text()
    assert 'imports = ["/etc/containerd/config.toml"]' in text
    assert 'default_runtime_name = "runc"' in text
    runc = text.split('containerd.runtimes.runc.options]')[1]
    assert 'BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"' in runc.split("\n\n")[0]
    assert "SystemdCgroup = true" in runc.split("\n\n")[0]
    assert "runtimes.nvidia]" not in text and "runtimes.nvidia-cdi]" in text


def test_v120_cleanup_removes_its_runtimes_from_both_files(tmp_path):
    """The v1.20 cleanup (ConfigWithDropIn.RemoveRuntime): the runtimes and the default
    leave the drop-in, whose CRI copy stays; config.toml keeps its import."""
    _require()
    out = run_case(tmp_path, "c16-systemd.toml", CONTAINERD_16, {},
                   [(["setup", "--layout", "v1.20"], {}), (["cleanup", "--layout", "v1.20"], {})])
    dropin = (out / "1" / "conf.d" / "99-nvidia.toml").read_text()
    assert "nvidia" not in dropin and "default_runtime_name" not in dropin
    assert "runtimes.runc.options]" in dropin
    with open(os.path.join(CTK, HEAD + "c16-systemd-default.after-setup.config.toml"), "rb") as f:
        assert (out / "1" / "config.toml").read_bytes() == f.read()
