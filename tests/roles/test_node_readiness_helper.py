"""The node_readiness helper's logic, without a node.

The helper (roles/node_readiness/files/nodeguard_readiness.py) runs on the
node; here its pieces run on files and fake programs: the imports walk, the
probe command line derived from a handler's table, drift accounting against
the ledger, and the Kubernetes checks with a fake kubectl. Its systemd and
containerd parts run for real in the Molecule readiness scenario and in
tests/standins.
"""

import argparse
import json
import os
import stat

CRI = "io.containerd.grpc.v1.cri"
RUNC = ["plugins", CRI, "containerd", "runtimes", "runc"]


def args(**kw):
    base = dict(
        probe_image="localhost/ng-probe:latest",
        probe_command=["/bin/true"],
        pass_config_path=True,
        drift_result=None,
        drift_accounted=[],
        baseline_name="default",
        state_dir="/nonexistent",
        config="/etc/containerd/config.toml",
        kubectl=None,
        kubeconfig=[],
        node_name="node1",
        static_pods=[],
        kube_timeout=0,
    )
    base.update(kw)
    return argparse.Namespace(**base)


# ------------------------------------------------------------------ imports
def test_imports_walk_finds_missing_duplicate_and_nested(nr, tmp_path):
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    (conf_d / "10-a.toml").write_text('version = 2\nimports = ["../nested.toml"]\n')
    (tmp_path / "nested.toml").write_text("version = 2\n")
    (tmp_path / "drop.toml").write_text("version = 2\n")
    main = tmp_path / "config.toml"
    main.write_text(
        "version = 2\nimports = [%s]\n"
        % ", ".join(
            json.dumps(x)
            for x in [
                str(tmp_path / "drop.toml"),
                "drop.toml",  # relative to the main file's folder: the same file again
                str(tmp_path / "gone.toml"),
                str(conf_d / "*.toml"),
                str(tmp_path / "none.d" / "*.toml"),  # a glob that matches nothing is fine
            ]
        )
    )
    entries, errors = nr.walk_imports(str(main))
    assert errors == []
    missing = [e["entry"] for e in entries if not e["glob"] and not e["exists"]]
    assert missing == [str(tmp_path / "gone.toml")]
    # The nested import of conf.d/10-a.toml was followed, relative to its own folder.
    assert any(e["file"] == str(conf_d / "10-a.toml") and e["path"] == str(tmp_path / "nested.toml") for e in entries)
    paths = [e["path"] for e in entries]
    assert paths.count(str(tmp_path / "drop.toml")) == 2


def test_imports_walk_reports_bad_toml(nr, tmp_path):
    main = tmp_path / "config.toml"
    main.write_text('version = 2\nimports = [ , "/x.toml"]\n')  # what the CoCo operator left behind
    entries, errors = nr.walk_imports(str(main))
    assert entries == [] and len(errors) == 1 and str(main) in errors[0]


# ------------------------------------------------------------------ probe command line
def test_probe_argv_runc_handler_uses_its_binary_and_cgroup_driver(nr):
    table = {"runtime_type": "io.containerd.runc.v2", "options": {"BinaryName": "/usr/bin/nvidia-container-runtime", "SystemdCgroup": True}}
    probe_id, argv, notes = nr.probe_argv(args(), "nvidia", table, {"name": "nvidia"}, "k8s.io", "/run/c.sock", "ctr")
    assert argv[:7] == ["ctr", "--address", "/run/c.sock", "-n", "k8s.io", "run", "--rm"]
    assert argv[argv.index("--runtime") + 1] == "io.containerd.runc.v2"
    assert argv[argv.index("--runc-binary") + 1] == "/usr/bin/nvidia-container-runtime"
    assert argv[argv.index("--cgroup") + 1] == "system.slice:nodeguard-probe:" + probe_id
    assert "--runc-systemd-cgroup" in argv
    assert argv[-3:] == ["localhost/ng-probe:latest", probe_id, "/bin/true"]
    assert notes == []


def test_probe_argv_kata_handler_uses_runtime_path_and_config_path(nr):
    table = {
        "runtime_type": "io.containerd.kata-qemu-tdx.v2",
        "runtime_path": "/opt/kata/bin/containerd-shim-kata-v2",
        "snapshotter": "nydus",
        "options": {"ConfigPath": "/opt/kata/share/defaults/kata-containers/configuration-qemu-tdx.toml"},
    }
    argv, notes = nr.probe_argv(args(), "kata-qemu-tdx", table, {"name": "kata-qemu-tdx"}, "k8s.io", "/s", "ctr")[1:]
    assert argv[argv.index("--runtime") + 1] == "/opt/kata/bin/containerd-shim-kata-v2"
    assert argv[argv.index("--runtime-config-path") + 1].endswith("configuration-qemu-tdx.toml")
    assert "--runc-binary" not in argv
    assert any("nydus" in n for n in notes)
    # Per handler, or for all: leave ConfigPath out (stand-in shims), and say so.
    argv, notes = nr.probe_argv(args(), "k", table, {"name": "k", "pass_config_path": False}, "k8s.io", "/s", "ctr")[1:]
    assert "--runtime-config-path" not in argv and any("ConfigPath" in n for n in notes)
    argv = nr.probe_argv(args(pass_config_path=False), "k", table, {"name": "k"}, "k8s.io", "/s", "ctr")[1]
    assert "--runtime-config-path" not in argv


def test_probe_argv_shim_found_by_type_and_custom_image(nr):
    table = {"runtime_type": "io.containerd.kata-clh.v2"}
    spec = {"name": "kata-clh", "image": "registry.example/busybox:1", "command": ["/bin/sh", "-c", "exit 0"]}
    probe_id, argv = nr.probe_argv(args(), "kata-clh", table, spec, "k8s.io", "/s", "ctr")[:2]
    assert argv[argv.index("--runtime") + 1] == "io.containerd.kata-clh.v2"
    assert argv[-5:] == ["registry.example/busybox:1", probe_id, "/bin/sh", "-c", "exit 0"]


# ------------------------------------------------------------------ drift
def write_ledger(nr, tmp_path, config, records):
    path = nr.ledger_path_for(str(tmp_path), config)
    os.makedirs(os.path.dirname(path))
    with open(path, "w") as fh:
        json.dump({"format": 1, "config": config, "records": records}, fh)


def drift(nr, tmp_path, result, **kw):
    return nr.evaluate_drift(args(drift_result=json.dumps(result), state_dir=str(tmp_path), **kw))


RUNC_PATH = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'
RUNC_TABLE = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True}}


def test_drift_none(nr, tmp_path):
    res = drift(nr, tmp_path, {"changed": False, "protected_drift": [], "drift": {}})
    assert res["status"] == "pass" and res["unaccounted"] == []


def test_drift_runc_removed_is_named(nr, tmp_path):
    """The GPU report: the toolkit's revert deleted the runc table."""
    item = {"key": "cri.runtimes.runc", "path": RUNC_PATH, "change": "removed", "before": RUNC_TABLE, "after": None}
    res = drift(nr, tmp_path, {"failed": True, "msg": "protected keys drifted", "protected_drift": [item]})
    assert res["status"] == "fail"
    assert RUNC_PATH in res["reason"] and "removed" in res["reason"]


def test_drift_recorded_by_an_owner_in_the_ledger_is_accounted(nr, tmp_path):
    """nvidia as runtime name `runc`: BinaryName added by the gpu role, recorded in the ledger."""
    after = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": True, "BinaryName": "/usr/bin/nvidia-container-runtime"}}
    item = {"key": "cri.runtimes.runc", "path": RUNC_PATH, "change": "changed", "before": RUNC_TABLE, "after": after}
    config = "/etc/containerd/config.toml"
    write_ledger(nr, tmp_path, config, [
        {"owner": "gpu_toolkit", "resource": "runc", "kind": "key", "path": RUNC + ["options", "BinaryName"],
         "prior": None, "value": '"/usr/bin/nvidia-container-runtime"', "seq": 1},
    ])
    res = drift(nr, tmp_path, {"protected_drift": [item]}, config=config)
    assert res["status"] == "pass", res
    assert res["accounted"] == [{"path": RUNC_PATH, "change": "changed", "by": "gpu_toolkit"}]


def test_drift_beyond_what_the_ledger_records_fails(nr, tmp_path):
    after = {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": False, "BinaryName": "/x"}}
    item = {"key": "cri.runtimes.runc", "path": RUNC_PATH, "change": "changed", "before": RUNC_TABLE, "after": after}
    config = "/etc/containerd/config.toml"
    write_ledger(nr, tmp_path, config, [
        {"owner": "gpu_toolkit", "kind": "key", "path": RUNC + ["options", "BinaryName"], "prior": None, "value": '"/x"', "seq": 1},
    ])
    res = drift(nr, tmp_path, {"protected_drift": [item]}, config=config)
    assert res["status"] == "fail"
    assert res["unaccounted"][0]["keys"] == [RUNC_PATH + ".options.SystemdCgroup"]
    assert "SystemdCgroup" in res["reason"]


def test_drift_accounted_by_the_operator(nr, tmp_path):
    item = {"key": "cri.default_runtime_name", "path": 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name',
            "change": "changed", "before": "runc", "after": "nvidia"}
    res = drift(nr, tmp_path, {"protected_drift": [item]},
                drift_accounted=['plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name'])
    assert res["status"] == "pass" and res["accounted"][0]["by"] == "node_readiness_drift_accounted"


def test_drift_module_errors(nr, tmp_path):
    res = drift(nr, tmp_path, {"failed": True, "msg": "no baseline 'default' in /var/lib/nodeguard/baselines"})
    assert res["status"] == "skip" and "no baseline" in res["reason"]
    res = drift(nr, tmp_path, {"failed": True, "msg": "/etc/containerd/config.toml is not valid TOML", "protected_drift": None})
    assert res["status"] == "fail" and "not valid TOML" in res["reason"]


def test_parse_key_path_quotes(nr):
    assert nr.parse_key_path("plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc") == [
        "plugins", "io.containerd.cri.v1.runtime", "containerd", "runtimes", "runc"]
    assert nr.parse_key_path(RUNC_PATH) == RUNC
    assert nr.render_path(RUNC) == RUNC_PATH


# ------------------------------------------------------------------ kubernetes
def fake_kubectl(tmp_path, node_ready, pods):
    cond = {"type": "Ready", "status": "True" if node_ready else "False", "reason": "KubeletReady" if node_ready else "KubeletNotReady"}
    node = {"status": {"conditions": [cond]}}
    items = [
        {
            "metadata": {"name": "%s-node1" % name},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if phase == "Running" else "False"}]},
        }
        for name, phase in pods.items()
    ]
    (tmp_path / "node.json").write_text(json.dumps(node))
    (tmp_path / "pods.json").write_text(json.dumps({"items": items}))
    script = tmp_path / "kubectl"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in\n'
        '  *"get node node1 "*) cat %s ;;\n'
        '  *"get pods -n kube-system"*) cat %s ;;\n'
        '  *) echo "unexpected: $*" >&2; exit 1 ;;\n'
        "esac\n" % (tmp_path / "node.json", tmp_path / "pods.json")
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    kubeconfig = tmp_path / "admin.conf"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    return str(script), str(kubeconfig)


def test_kubernetes_skipped_with_reason_without_kubectl(nr, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    res = nr.do_kubernetes(args(kubectl=str(tmp_path / "kubectl")))
    assert res == {"ran": False, "reason": "kubectl not found on the node"}
    kubectl = fake_kubectl(tmp_path, True, {})[0]
    res = nr.do_kubernetes(args(kubectl=kubectl, kubeconfig=[str(tmp_path / "missing.conf")]))
    assert not res["ran"] and "no kubeconfig" in res["reason"]


def test_kubernetes_node_ready_and_static_pods(nr, tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, True, {"etcd": "Running", "kube-apiserver": "Running"})
    res = nr.do_kubernetes(args(kubectl=kubectl, kubeconfig=[kubeconfig], static_pods=["etcd", "kube-apiserver"]))
    assert res["ran"] and res["ready"], res
    assert all(p["ok"] for p in res["static_pods"].values())


def test_kubernetes_crash_looping_static_pod_fails(nr, tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, True, {"etcd": "Pending"})
    res = nr.do_kubernetes(args(kubectl=kubectl, kubeconfig=[kubeconfig], static_pods=["etcd", "kube-apiserver"]))
    assert res["ready"]
    assert res["static_pods"]["etcd"] == {"ok": False, "reason": "phase=Pending ready=False"}
    assert not res["static_pods"]["kube-apiserver"]["ok"] and "not found" in res["static_pods"]["kube-apiserver"]["reason"]


def test_kubernetes_node_not_ready(nr, tmp_path):
    kubectl, kubeconfig = fake_kubectl(tmp_path, False, {})
    res = nr.do_kubernetes(args(kubectl=kubectl, kubeconfig=[kubeconfig]))
    assert res["ran"] and not res["ready"] and "KubeletNotReady" in res["reason"]
