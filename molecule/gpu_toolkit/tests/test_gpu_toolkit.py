"""Verify of the gpu_toolkit scenario: the final state of each node and the
evidence the sequence recorded on it.

Runs under `molecule verify` (testinfra, one run per node) after install,
idempotence, uninstall + reboot, idempotence, the rescue step and the seed
step (toolkit's revert, reboot, repair; not on gpu-dropin). Commands go
straight to the container with testinfra's podman backend.

gpu-dropin starts from the NVIDIA toolkit >= 1.18 layout (conf.d/99-nvidia.toml
with the whole CRI plugin table, imported by config.toml): the toolkit's
runtimes and default stay, and every change of the role lives in the drop-in.
"""

import json
import os

import pytest
import testinfra

EFFECTIVE = "python3 /usr/local/libexec/nodeguard/ng_effective.py"
CONFIG_VERSION = {"gpu-bookworm": 2, "gpu-trixie": 2, "gpu-ctd21": 3, "gpu-dropin": 2, "gpu-dropin21": 3}
GPU_HANDLERS = {"gpu-bookworm": ["nvidia", "runc"], "gpu-trixie": ["nvidia"], "gpu-ctd21": ["nvidia", "nvidia-cdi"],
                "gpu-dropin": ["nvidia", "nvidia-experimental"], "gpu-dropin21": ["nvidia", "nvidia-experimental"]}
# what each node runs before nodeguard and after its uninstall: runtimes, default
TOOLKIT_RUNTIMES = ["nvidia", "nvidia-cdi", "nvidia-legacy", "runc"]
DROPIN_NODES = ("gpu-dropin", "gpu-dropin21")
BASE = dict((n, (TOOLKIT_RUNTIMES, "nvidia")) for n in DROPIN_NODES)
DROPIN = "/etc/containerd/conf.d/99-nvidia.toml"
CONFIG = "/etc/containerd/config.toml"
# where each runtime's edit must land: 1.x reads the CRI table from the drop-in only;
# 2.x merges, so a runtime the drop-in does not define stays in config.toml
EDIT_FILES = {"gpu-dropin": {"nvidia": DROPIN, "nvidia-experimental": DROPIN},
              "gpu-dropin21": {"nvidia": DROPIN, "nvidia-experimental": CONFIG}}
CRI_RUNTIMES = {2: 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.',
                3: 'plugins."io.containerd.cri.v1.runtime".containerd.runtimes.'}
TOOLKIT_BINARY = "/usr/local/nvidia/toolkit/nvidia-container-runtime"


def base(name):
    return BASE.get(name, (["runc"], "runc"))


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


def module(host, name, **args):
    """A collection module on the node, through testinfra's Ansible backend (not in check mode).

    At least one option: ad-hoc `-a '{}'` is taken for raw params, which the modules refuse.
    """
    assert args
    result = host.ansible("nodeguard.containerd." + name, json.dumps(args), check=False)
    assert not result.get("failed"), result
    return result


def test_probe_container_runs_through_the_default_runtime(host, node):
    report = module(host, "containerd_readiness", step="check", handlers=["runc"], probe_image_required=True,
                    check_drift=False, kubernetes="false", timeout=30, fail=False)["readiness"]
    checks = {c["name"]: c for c in report["checks"]}
    assert report["ok"], report["failed"]
    assert checks["probe:runc"]["status"] == "pass", checks["probe:runc"]
    assert report["containerd"]["default_runtime_name"] == base(node[0])[1]
    # containerd_info, nodeguard's merged view confirmed by config dump, says the same
    info = module(host, "containerd_info", dump=True)
    assert info["dump_confirmed"] is True, info["dump_disagreements"]
    assert info["default_runtime"]["name"] == base(node[0])[1] and info["default_runtime"]["exists"]
    assert sorted(info["runtimes"]) == base(node[0])[0]


def test_runc_whole_and_no_gpu_runtime_left(node):
    name, box = node
    eff = json.loads(box.check_output(EFFECTIVE))
    assert eff["version"] == CONFIG_VERSION[name]
    assert sorted(eff["runtimes"]) == base(name)[0]
    assert eff["default_runtime_name"] == base(name)[1]
    runc = eff["runtimes"]["runc"]
    assert runc["runtime_type"] == "io.containerd.runc.v2"
    assert runc["options"]["SystemdCgroup"] is True
    if name == "gpu-trixie":
        # the seed's state: the toolkit's own BinaryName, in the baseline, kept
        assert runc["options"]["BinaryName"] == "/usr/local/bin/nvidia-container-runtime"
    else:
        assert runc["options"].get("BinaryName", "") == ""
    if name in DROPIN_NODES:
        # the toolkit's own runtime, its BinaryName given back
        assert eff["runtimes"]["nvidia"]["options"]["BinaryName"] == TOOLKIT_BINARY


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
    assert sorted(ev["effective"]["runtimes"]) == base(node[0])[0]
    if node[0] in DROPIN_NODES:
        assert ev["dropin_sha256"] == ev["dropin_before_sha256"] == ev["dropin_baseline_sha256"] != ""
        assert ev["probe_nvidia"] == "pass"
    assert ev["effective"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True


def test_uninstall_removed_the_package_it_installed(node):
    name, box = node
    ev = evidence(node, "after-reboot")
    if name == "gpu-bookworm":
        assert ev["package_binary"] == "package-binary-absent"
        assert not box.package("nvidia-container-toolkit").is_installed


def test_uninstall_kept_the_package_that_was_there_before_and_removed_the_apt_source(node):
    """gpu-bookworm lists nvidia-container-toolkit-base too, installed before nodeguard: never recorded, so the
    uninstall kept it; the toolkit and the apt source the install added went, and so did the record."""
    name, box = node
    if name != "gpu-bookworm":
        pytest.skip("installs no packages")
    seen = [json.loads(line) for line in evidence_file("packages.jsonl", name).splitlines() if line.strip()]
    assert [s["state"] for s in seen] == ["present", "present", "absent", "absent"], seen
    added = {"files": ["/etc/apt/sources.list.d/nvidia-container-toolkit.list"], "packages": ["nvidia-container-toolkit"]}
    assert [s["record"] for s in seen] == [added, added, None, None], seen
    assert [(s["toolkit"], s["base"], s["source"]) for s in seen] == [(True, True, True)] * 2 + [(False, True, False)] * 2
    assert box.package("nvidia-container-toolkit-base").is_installed
    assert not box.file("/etc/apt/sources.list.d/nvidia-container-toolkit.list").exists
    assert not box.file("/var/lib/nodeguard/gpu_toolkit-gpu_toolkit.json").exists


def test_failed_install_was_refused_or_rolled_back(node):
    ev = evidence(node, "rescue")
    assert "BinaryName /usr/local/bin/ng-no-such-runtime does not exist" in ev["refusal_message"]
    assert "set gpu_toolkit_check_binary: false" in ev["refusal_message"]
    assert "was not changed by this run; nothing rolled back" in ev["refusal_message"]
    assert "probe:nvidia-broken" in ev["message"]
    assert "Rolled back" in ev["message"] and "node ready again" in ev["message"]
    assert ev["ready"] is True
    assert ev["identical"] is True
    assert ev["dropin_identical"] is True
    assert sorted(ev["runtimes"]) == base(node[0])[0]
    assert int(ev["restarts"]) == 2


def test_seed_broke_readiness_and_repair_brought_the_node_back(node):
    if node[0] in DROPIN_NODES:
        pytest.skip("seed.yml does not run on the toolkit's drop-in nodes")
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


def test_the_ledgers_hold_nothing_of_gpu_toolkit(host, node):
    """Every ledger of the config tree (config.toml's, the drop-in's), read by containerd_info as the engine reads it.

    The rescue step's nvidia-broken, written to the drop-in, is taken out by
    the baseline restore, which puts back config.toml's ledger and rolls the
    drop-in's own back to its state before that write.
    """
    info = module(host, "containerd_info", dump=False)
    ledgers = dict((entry["file"], entry) for entry in info["ledgers"])
    if node[0] in DROPIN_NODES:
        assert DROPIN in ledgers, sorted(ledgers)
    else:
        # toolkit.yml ends each case with a restore to the baseline, taken before any ledger: a ledger left
        # is config.toml's at most, and none is as good (nothing of any owner is recorded)
        assert set(ledgers) <= set([CONFIG]), sorted(ledgers)
    for path, entry in ledgers.items():
        assert entry["error"] is None, entry
        records = entry["records_by_owner"].get("gpu_toolkit", [])
        # a 'released' mark only says the owner already undid its change to a runtime it did not create
        assert [r for r in records if r.get("kind") != "released"] == [], path


def test_on_the_toolkit_dropin_node_every_change_was_made_and_undone_in_the_dropin(node):
    """Module results of install, re-run, uninstall, re-run: where each change went and whether containerd runs it."""
    if node[0] not in DROPIN_NODES:
        pytest.skip("only the toolkit_dropin nodes start from the toolkit's drop-in")
    where = EDIT_FILES[node[0]]
    key = CRI_RUNTIMES[CONFIG_VERSION[node[0]]] + "nvidia.options.BinaryName"
    recorded = [json.loads(line) for line in evidence_file("dropin-runs.jsonl", node[0]).splitlines() if line.strip()]
    assert [r["state"] for r in recorded] == ["present", "present", "absent", "absent"]
    install, again, uninstall, again_absent = [r["result"] for r in recorded]
    # one containerd_config call each way: both runtimes' changes went to (and were undone in) their file,
    # each confirmed by the node's containerd
    for res in (install, uninstall):
        assert res["changed"] is True and res.get("files", [res["file"]]) == sorted(set(where.values())), res
        assert res["effects"], res
        for eff in res["effects"]:
            assert eff["file"] in where.values() and eff["in_effect"] is True, eff
            assert eff["confirmed_by"] == "config dump", eff
    by_name = dict((r["name"], r) for r in install["runtimes"])
    assert sorted(by_name) == ["nvidia", "nvidia-experimental"]
    # nvidia: the toolkit's table, only its BinaryName changed; nvidia-experimental: a table created there
    assert by_name["nvidia"]["created"] is False
    nvidia_effects = [e for e in install["effects"] if ".nvidia." in e["key"]]
    assert [e["key"] for e in nvidia_effects] == [key] and nvidia_effects[0]["file"] == where["nvidia"]
    assert nvidia_effects[0]["value"] == "/usr/local/bin/nvidia-container-runtime"
    assert by_name["nvidia-experimental"]["created"] is True
    assert by_name["nvidia-experimental"]["runtime"]["options"]["SystemdCgroup"] is True
    assert all(e["file"] == where["nvidia-experimental"] for e in install["effects"] if "nvidia-experimental" in e["key"])
    # the re-run: nothing changed, nothing to judge
    assert again["changed"] is False and again.get("effects", []) == [], again
    removed = dict((r["name"], r) for r in uninstall["runtimes"])
    assert sorted(removed) == ["nvidia", "nvidia-experimental"]
    assert removed["nvidia"]["removed"] is False and removed["nvidia"]["restored"] == [key]
    assert [e["value"] for e in uninstall["effects"] if e["key"] == key] == [TOOLKIT_BINARY]
    assert removed["nvidia-experimental"]["removed"] is True
    assert all(e["removed"] for e in uninstall["effects"] if "nvidia-experimental" in e["key"])
    # nothing of the role's left on record: the uninstall re-run (release_all) finds nothing and changes nothing
    assert again_absent["changed"] is False, again_absent
    assert again_absent["released"] == {"runtimes": [], "tables": [], "settings": [], "imports": []}, again_absent
    # the uninstall itself found both runtimes in the drop-in's ledger
    assert sorted(uninstall["released"]["runtimes"]) == ["nvidia", "nvidia-experimental"], uninstall
    assert uninstall["released"]["tables"] == ["nvidia-experimental"], uninstall
    # the restart contract saw the drop-in change: one restart per changing run, none on a re-run
    assert [r["restart"].get("restarted") for r in recorded] == [True, False, True, False]


TOOLKIT_CASES = ("v117-runc", "v120-toolkit-first", "v120-nodeguard-first")


@pytest.mark.parametrize("case", TOOLKIT_CASES)
def test_the_toolkit_stand_ins_leftovers_were_repaired_and_the_node_rebooted_ready(node, case):
    """toolkit.yml: what NVIDIA's toolkit (the stand-in, its real bytes) leaves beside gpu_toolkit, repaired."""
    if node[0] in DROPIN_NODES:
        pytest.skip("toolkit.yml does not run on the toolkit's drop-in nodes")
    ev = evidence(node, "toolkit-" + case)
    if case == "v117-runc":
        # the cleanup deleted runc (SystemdCgroup with it) and the default: 1.x's CRI plugin fails
        # (gpu_toolkit's nvidia is a runtimes table, so no built-in runc), 2.x runs a runc without SystemdCgroup
        assert not ev["left"]["ready"], ev["left"]
        runc = ev["left"]["effective"]["runtimes"].get("runc") or {}
        assert not (runc.get("options") or {}).get("SystemdCgroup"), runc
        assert ("cri_plugin" if CONFIG_VERSION[node[0]] == 2 else "baseline_drift") in ev["left"]["failed"]
        # gpu_toolkit's own runtime was kept by the repair
        assert ev["repaired"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/local/bin/nvidia-container-runtime"
    assert ev["repaired"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert ev["repaired"]["default_runtime_name"] == "runc"
    assert ev["rebooted_ready"] is True and ev["rebooted_cri"] == "pass", ev["rebooted_failed"]
