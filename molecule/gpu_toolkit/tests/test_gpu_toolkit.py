"""Verify of the gpu_toolkit scenario: the final state of each node and the
evidence the sequence recorded on it.

Runs under `molecule verify` (testinfra, one run per node) after install,
idempotence, uninstall + reboot, idempotence, the rescue step and the seed
step (toolkit's revert, reboot, repair). Commands go straight to the
container with testinfra's podman backend.
"""

import json
import os

import pytest
import testinfra

HELPER = "/usr/local/libexec/nodeguard/nodeguard_readiness.py"
EFFECTIVE = "python3 /usr/local/libexec/nodeguard/ng_effective.py"
CONFIG_VERSION = {"gpu-bookworm": 2, "gpu-trixie": 2, "gpu-ctd21": 3}
GPU_HANDLERS = {"gpu-bookworm": ["nvidia", "runc"], "gpu-trixie": ["nvidia"], "gpu-ctd21": ["nvidia", "nvidia-cdi"]}


@pytest.fixture(scope="module")
def node(host):
    name = host.backend.get_hostname()
    return name, testinfra.get_host("podman://" + name)


def evidence_file(name, host_name):
    """What the scenario's playbooks recorded on the controller for one node."""
    folder = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "evidence", host_name)
    with open(os.path.join(folder, name), encoding="utf-8") as fh:
        return fh.read()


def evidence(node, name):
    return json.loads(evidence_file(name + ".json", node[0]))


def runs(node):
    return [line.split() for line in evidence_file("runs.log", node[0]).splitlines() if line.strip()]


def test_containerd_active_and_cri_plugin_ok(node):
    box = node[1]
    assert box.service("containerd").is_running
    rows = box.check_output("ctr plugins ls")
    cri = [line.split() for line in rows.splitlines() if line.startswith("io.containerd.grpc.v1 ") and " cri " in line]
    assert cri and cri[0][-1] == "ok", rows


def test_probe_container_runs_through_the_default_runtime(node):
    box = node[1]
    out = box.check_output("python3 %s check --handlers '[\"runc\"]' --probe-image-required true --check-drift false "
                           "--kubernetes false --timeout 30" % HELPER)
    report = json.loads(out)
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"], report["failed"]
    assert checks["probe:runc"]["status"] == "pass", checks["probe:runc"]
    assert report["containerd"]["default_runtime_name"] == "runc"


def test_runc_whole_and_no_gpu_runtime_left(node):
    name, box = node
    eff = json.loads(box.check_output(EFFECTIVE))
    assert eff["version"] == CONFIG_VERSION[name]
    assert sorted(eff["runtimes"]) == ["runc"]
    runc = eff["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is True
    if name == "gpu-trixie":
        # the seed's state: the toolkit's own BinaryName, in the baseline, kept
        assert runc["options"]["BinaryName"] == "/usr/local/bin/nvidia-container-runtime"
    else:
        assert runc["options"].get("BinaryName", "") == ""


def test_each_converge_restarted_containerd_once_then_never(node):
    # install, its idempotence run, uninstall, its idempotence run
    recorded = runs(node)
    assert [(r[0], r[1]) for r in recorded] == [
        ("present", "restarts=1"),
        ("present", "restarts=0"),
        ("absent", "restarts=1"),
        ("absent", "restarts=0"),
    ], recorded


def test_the_stand_in_logged_a_probe_through_each_gpu_handler(node):
    name, box = node
    first = runs(node)[0]
    probes = first[2].split("=", 1)[1].split(",")
    for handler in GPU_HANDLERS[name]:
        assert "nodeguard-probe-" + handler in probes, first
    log = box.file("/var/log/nodeguard-standin/nvidia.log").content_string
    assert "nodeguard-probe-nvidia-" in log
    if name == "gpu-ctd21":
        assert "nvidia-container-runtime.cdi" in log


def test_after_uninstall_and_reboot_config_was_byte_identical_to_the_baseline(node):
    ev = evidence(node, "after-reboot")
    assert ev["ready"] is True and ev["cri_ok"] is True
    assert ev["probe_default"] == "pass"
    assert ev["config_sha256"] == ev["baseline_sha256"] == ev["before_sha256"]
    assert ev["drifted"] is False
    assert sorted(ev["effective"]["runtimes"]) == ["runc"]
    assert ev["effective"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True


def test_uninstall_removed_the_package_it_installed(node):
    name, box = node
    ev = evidence(node, "after-reboot")
    if name == "gpu-bookworm":
        assert ev["package_binary"] == "package-binary-absent"
        assert not box.package("nvidia-container-toolkit").is_installed


def test_failed_install_was_refused_or_rolled_back(node):
    ev = evidence(node, "rescue")
    assert "runtime binary missing or not executable" in ev["refusal_message"]
    assert "was not changed by this run; nothing rolled back" in ev["refusal_message"]
    assert "probe:nvidia-broken" in ev["message"]
    assert "Rolled back" in ev["message"] and "node ready again" in ev["message"]
    assert ev["ready"] is True
    assert ev["identical"] is True
    assert ev["runtimes"] == ["runc"]
    assert int(ev["restarts"]) == 2


def test_seed_broke_readiness_and_repair_brought_the_node_back(node):
    ev = evidence(node, "seed")
    if int(ev["broken_config_version"]) == 2:
        # containerd 1.x: default_runtime_name = "runc" without a runc table, the CRI plugin fails (the seed)
        assert "cri_plugin" in ev["broken_failed"]
        assert "handler:runc" in ev["broken_failed"]
        assert ev["broken_runc"] is None
    else:
        # containerd 2.x: runc comes back from the built-in defaults, without SystemdCgroup
        assert "baseline_drift" in ev["broken_failed"]
        assert not (ev["broken_runc"].get("options") or {}).get("SystemdCgroup")
    assert ev["repaired_ready"] is True
    assert ev["repaired_restart"]["restarted"] is True
    assert ev["effective"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert ev["effective"]["default_runtime_name"] == "runc"


def test_the_ledger_holds_nothing_of_gpu_toolkit(node):
    box = node[1]
    f = box.file("/var/lib/nodeguard/ledger/etc%2Fcontainerd%2Fconfig.toml.json")
    if f.exists:
        records = json.loads(f.content_string).get("records", [])
        # a 'released' mark only says the owner already undid its change to a runtime it did not create
        assert [r for r in records if r.get("owner") == "gpu_toolkit" and r.get("kind") != "released"] == []
