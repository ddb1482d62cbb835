"""The playbooks as AWX runs job templates, on the readiness nodes.

ansible-runner with a private data dir: the playbooks as the project, the
collection installed from its built tarball into the job's own collections
folder (as an execution environment holds it), an inventory of the three
nodes with their connection vars (as an AWX inventory holds them: the
scenario's own inventory asks the test-only container_pid lookup, which a
job does not have), and extra vars only: no ansible.cfg and no ANSIBLE_*
setting of the checkout or of molecule reaches the job. The jobs run once for all three nodes (session
fixture), after test_readiness.py (file order), and leave each node's config
as they found it:

  verify.yml      readiness report, passes
  snapshot.yml    the baseline exists already: kept, nothing changes
  gpu_toolkit.yml present: adopts the nvidia runtime the node already has
                  (same binary, nothing to write), then absent: the runtime it
                  did not create stays
  coco.yml        absent on a node coco never installed: nothing to undo
  repair.yml      a healthy node: nothing to repair, no restart
  restore.yml     the config is the baseline: nothing to put back
"""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest
import testinfra

NODES = ["ng-bookworm", "ng-trixie", "ng-ctd21"]
CONFIG = "/etc/containerd/config.toml"
JOBS = [
    ("verify.yml", {"node_readiness_probe": False}),
    ("snapshot.yml", {}),
    ("gpu_toolkit.yml", {"gpu_toolkit_state": "present",
                         "gpu_toolkit_runtime_binary": "/usr/local/bin/nvidia-container-runtime",
                         "gpu_toolkit_serial": 3, "node_readiness_probe": False}),
    ("gpu_toolkit.yml", {"gpu_toolkit_state": "absent", "gpu_toolkit_serial": 3, "node_readiness_probe": False}),
    ("coco.yml", {"coco_state": "absent", "coco_serial": 3, "node_readiness_probe": False}),
    ("repair.yml", {}),
    ("restore.yml", {"nodeguard_verify": False}),
]


def pid_of(node):
    """The node's PID on this host (the jobs do not reboot it)."""
    out = subprocess.run(["podman", "container", "inspect", "--format", "{{.State.Pid}}", node],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def starts(box):
    out = box.check_output("journalctl -u containerd -o cat --no-pager")
    return sum(1 for line in out.splitlines() if line.startswith("Started containerd"))


@pytest.fixture(scope="session")
def jobs():
    import ansible_runner

    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    pdd = tempfile.mkdtemp(prefix="ng-awx-job-")
    shutil.copytree(os.path.join(project, "playbooks"), os.path.join(pdd, "project"))
    os.makedirs(os.path.join(pdd, "env"))
    bindir = os.path.dirname(shutil.which("ansible-playbook") or sys.executable)
    collections = os.path.join(pdd, "collections")
    # molecule's ANSIBLE_COLLECTIONS_PATH holds the checkout's link: with it, ansible-galaxy would find the
    # collection "already installed" and put nothing into the job's folder
    clean = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
    build = subprocess.run([os.path.join(bindir, "ansible-galaxy"), "collection", "build", "--output-path", pdd, project],
                           capture_output=True, text=True, check=False, env=clean)
    assert build.returncode == 0, build.stderr
    (tarball,) = glob.glob(os.path.join(pdd, "nodeguard-containerd-*.tar.gz"))
    install = subprocess.run([os.path.join(bindir, "ansible-galaxy"), "collection", "install", "--force", "-p",
                              collections, tarball], capture_output=True, text=True, check=False, env=clean)
    assert install.returncode == 0, install.stderr
    assert os.path.isfile(os.path.join(collections, "ansible_collections", "nodeguard", "containerd", "MANIFEST.json")), \
        install.stdout + install.stderr
    inventory = os.path.join(pdd, "inventory.json")
    with open(inventory, "w") as f:
        json.dump({"all": {"hosts": dict((node, {
            "ansible_connection": "community.docker.nsenter", "ansible_nsenter_pid": pid_of(node),
            "ansible_python_interpreter": "/usr/bin/python3"}) for node in NODES)}}, f)
    before = {}
    for node in NODES:
        box = testinfra.get_host("podman://" + node)
        before[node] = (hashlib.sha256(box.file(CONFIG).content).hexdigest(), starts(box))
    results = []
    with pytest.MonkeyPatch.context() as mp:
        for name in [n for n in os.environ if n.startswith("ANSIBLE_")]:
            mp.delenv(name)   # nothing of the checkout's or molecule's settings
        mp.setenv("PATH", bindir + os.pathsep + os.environ.get("PATH", ""))
        for playbook, extra in JOBS:
            runner = ansible_runner.run(
                private_data_dir=pdd, playbook=playbook, inventory=inventory,
                extravars=dict(extra, target=",".join(NODES)),
                envvars={"ANSIBLE_COLLECTIONS_PATH": collections, "ANSIBLE_NOCOLOR": "1"},
                quiet=True, timeout=900)
            out = runner.stdout.read()
            changed, task_paths = {}, set()
            for ev in runner.events:
                data = ev.get("event_data") or {}
                if ev.get("event") == "playbook_on_stats":
                    changed = data.get("changed", {})
                if data.get("task_path"):
                    task_paths.add(data["task_path"])
            results.append(dict(playbook=playbook, extra=extra, status=runner.status, rc=runner.rc, out=out,
                                changed=changed, task_paths=sorted(task_paths), artifacts=os.path.join(pdd, "artifacts", runner.config.ident)))
    yield dict(before=before, results=results, pdd=pdd)
    shutil.rmtree(pdd, ignore_errors=True)


def test_every_job_succeeds_through_ansible_runner(jobs):
    for job in jobs["results"]:
        assert job["status"] == "successful" and job["rc"] == 0, (job["playbook"], job["extra"], job["out"][-4000:])
        # the runner kept the job's artifacts as AWX does (status, rc, stdout)
        with open(os.path.join(job["artifacts"], "status")) as f:
            assert f.read().strip() == "successful"
        assert os.path.getsize(os.path.join(job["artifacts"], "stdout")) > 0


def test_the_jobs_ran_on_the_installed_collection_not_the_checkout(jobs):
    installed = os.path.join(jobs["pdd"], "collections", "ansible_collections", "nodeguard", "containerd") + "/"
    for job in jobs["results"]:
        role_tasks = [p for p in job["task_paths"] if "/roles/" in p]
        assert role_tasks, job["playbook"]
        assert all(p.startswith(installed) for p in role_tasks), (job["playbook"], role_tasks[:3])
    with open(os.path.join(installed, "MANIFEST.json")) as f:
        assert json.load(f)["collection_info"]["name"] == "containerd"


def test_each_node_is_as_the_jobs_found_it(name, jobs):
    box = testinfra.get_host("podman://" + name)
    sha, started = jobs["before"][name]
    assert hashlib.sha256(box.file(CONFIG).content).hexdigest() == sha
    # nothing changed in effect, so nothing restarted containerd
    assert starts(box) == started
    assert box.service("containerd").is_running
    for job in jobs["results"]:
        if job["playbook"] in ("snapshot.yml", "repair.yml", "restore.yml", "coco.yml"):
            assert job["changed"].get(name, 0) == 0, (job["playbook"], job["out"][-3000:])


@pytest.fixture(scope="module")
def name(host):
    return host.backend.get_hostname()
