"""Verify of the coco scenario: the final state of each node after the
install/uninstall loop, the interrupted runs, the coexistence runs and the
reboot - and the evidence they left.

Runs under `molecule verify` (testinfra, one run per node). Commands go
straight to the container with testinfra's podman backend.
"""

import json
import os

import pytest
import testinfra

CONFIG = "/etc/containerd/config.toml"
PRISTINE = "/var/lib/nodeguard-test/config.toml.pristine"
BASELINE = "/var/lib/nodeguard/baselines/default/current/files/000-config.toml"
LEDGER = "/var/lib/nodeguard/ledger/etc%2Fcontainerd%2Fconfig.toml.json"
KATA = ["kata-qemu", "kata-qemu-coco-dev", "kata-qemu-tdx", "kata-qemu-snp", "kata-dragonball"]
CHECK = "/usr/bin/python3 /usr/local/lib/nodeguard-test/check_node.py --phase removed --handlers %s --pristine %s" % (
    ",".join(KATA + ["nvidia"]), PRISTINE)


@pytest.fixture(scope="module")
def name(host):
    return host.backend.get_hostname()


@pytest.fixture(scope="module")
def box(name):
    return testinfra.get_host("podman://" + name)


@pytest.fixture(scope="module")
def check(box):
    # a separate state file, so the scenario's own counters stay as they are
    return json.loads(box.check_output(CHECK + " --state /tmp/coco-verify-state.json"))


def test_node_is_sound_and_pristine(check):
    assert check["ok"], check["failures"]


def test_config_byte_identical_to_baseline_and_pristine(box):
    config = box.file(CONFIG)
    assert config.exists
    assert config.sha256sum == box.file(BASELINE).sha256sum
    assert config.sha256sum == box.file(PRISTINE).sha256sum
    assert config.mode == 0o644


def test_no_kata_handler_left(check):
    assert not set(KATA + ["nvidia"]) & set(check["effective_runtimes"]), check["effective_runtimes"]
    assert "runc" in check["effective_runtimes"]


def test_no_dropin_payload_or_state_left(box):
    assert not box.file("/etc/containerd/config.toml.d").exists
    assert not box.file("/opt/kata").exists
    assert not box.file("/var/lib/nodeguard/coco/payload-manifest.json").exists
    assert not box.file("/var/lib/nodeguard/coco/dropin-dir-created").exists
    # containerd_dropin's ledgers (the drop-ins coco wrote, the folder it created) go with the files
    left = box.check_output("ls /var/lib/nodeguard/ledger/ 2>/dev/null || true").split()
    assert [n for n in left if "config.toml.d" in n] == [], left
    payload_cache = box.file("/var/lib/nodeguard/coco/payload")
    assert not payload_cache.exists or not payload_cache.listdir()


def test_ledger_holds_nothing_of_coco(box):
    ledger = box.file(LEDGER)
    if not ledger.exists:
        return
    records = json.loads(ledger.content_string).get("records", [])
    assert [r for r in records if r.get("owner") in ("coco", "gpu_toolkit") and r.get("kind") != "released"] == []


def test_no_leftover_temp_or_backup_files(box):
    left = box.check_output("find /etc/containerd -name '*.ng-tmp' -o -name '*nodeguard-tmp*'")
    assert left.strip() == ""


def test_kata_handler_really_ran_containers(box):
    # two shim calls (start, delete) per probe container; one probe per install
    iterations = int(os.environ.get("COCO_ITERATIONS", "8") or 8)
    log = box.file("/var/log/nodeguard-standin/kata.log")
    assert log.exists
    calls = log.content_string.splitlines()
    assert len(calls) >= 2 * iterations, len(calls)
    assert all("/opt/kata/bin/containerd-shim-kata-v2" in line for line in calls)


def test_cri_plugin_ok_after_reboot(box):
    assert box.service("containerd").is_running
    rows = box.check_output("ctr plugins ls")
    assert any(line.split()[-1] == "ok" and (" cri " in line or "cri.v1" in line and "runtime" in line)
               for line in rows.splitlines() if "cri" in line), rows


def test_loop_report(name):
    folder = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
    path = os.path.join(folder, "coco-loop-%s.json" % name)
    if not folder or not os.path.exists(path):
        pytest.skip("no loop report at %s (run the whole sequence)" % path)
    with open(path) as f:
        report = json.load(f)
    iterations = int(os.environ.get("COCO_ITERATIONS", "8") or 8)
    assert int(report["iterations"]) == iterations


def test_kubernetes_labels_each_with_one_meaning(name, box):
    if name != "coco-bookworm":
        pytest.skip("only coco-bookworm has the kubectl stand-in")
    labels = json.loads(box.file("/var/log/nodeguard-standin/kubectl-labels.json").content_string)
    # after the final uninstall neither label is left
    assert "katacontainers.io/kata-runtime" not in labels
    assert "nodeguard.io/coco" not in labels
    calls = box.file("/var/log/nodeguard-standin/kubectl.log").content_string.splitlines()
    # kata-runtime is only ever "true" (never "cleanup"), set together with the ready state
    runtime_values = set()
    for line in calls:
        for word in line.split():
            if word.startswith("katacontainers.io/kata-runtime="):
                runtime_values.add(word.split("=", 1)[1])
    assert runtime_values == {"true"}, runtime_values
    # the label calls (the RuntimeClass step asks `get nodes -l katacontainers.io/kata-runtime=true` too)
    labels_set = [line for line in calls if " label node " in line]
    ready = [line for line in labels_set if "katacontainers.io/kata-runtime=true" in line]
    assert ready and all("nodeguard.io/coco=ready" in line for line in ready)
    # uninstall removes the runtime label first
    assert any("katacontainers.io/kata-runtime-" in line and "nodeguard.io/coco=uninstalling" in line
               for line in calls)


def test_runtimeclasses_created_with_the_handlers_and_removed_with_them(name, box):
    if name != "coco-bookworm":
        pytest.skip("only coco-bookworm has the kubectl stand-in")
    # after the final uninstall none of the role's RuntimeClasses is left
    classes = json.loads(box.file("/var/log/nodeguard-standin/kubectl-runtimeclasses.json").content_string)
    assert classes == {}
    calls = box.file("/var/log/nodeguard-standin/kubectl.log").content_string.splitlines()
    creates = [i for i, line in enumerate(calls) if line.split()[-3:] == ["create", "-f", "-"]]
    deletes = [i for i, line in enumerate(calls)
               if " delete runtimeclass -l app.kubernetes.io/managed-by=nodeguard,nodeguard.io/owner=coco " in line + " "]
    assert creates and deletes
    # created only once the node is ready (right after its ready labels), deleted after the uninstall's labels
    for i in creates:
        assert "nodeguard.io/coco=ready" in calls[i - 1], calls[i - 1]
    assert max(deletes) > max(creates)
    # the manifests the role rendered on the controller, one per handler, each selecting the labelled nodes
    folder = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""), "artifacts")
    with open(os.path.join(folder, "coco-runtimeclasses-%s.yaml" % name)) as f:
        rendered = f.read()
    assert [line.split()[1] for line in rendered.splitlines() if line.startswith("handler:")] == KATA
    assert rendered.count("katacontainers.io/kata-runtime: 'true'") == len(KATA)
