"""A mixed fleet rolled out as AWX runs job templates.

ansible-runner with a private data dir: the playbooks as the project, the
collection installed from its built tarball into the job's own collections
folder (as an execution environment holds it; the approach of
molecule/readiness/tests/test_runner_awx.py), an inventory written here
(the nodes through nsenter) and extra vars only: no ansible.cfg and no
ANSIBLE_* setting of the checkout or of molecule reaches a job. The story
runs once (session fixture); the tests then judge what it left:

  poisoned   site.yml with fleet-bookworm-2's nvidia stand-in exiting 1: the
             rollout stops in batch 2 (site.yml's own batch gate: meta
             end_play), the fleet report still runs at the end of the job
             (rolled out / rolled back / not reached), then the job fails the
             rolled-back node
  cured      the stand-in back, the same job again: the rest of the fleet
  uninstall  gpu_toolkit_state absent (coco too with FLEET_FULL=1)

Knobs: FLEET_FULL=1 (coco in every run), FLEET_SERIAL (default 2).
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

NODES = ["fleet-bookworm-1", "fleet-trixie-1", "fleet-ctd21-1", "fleet-bookworm-2", "fleet-trixie-2", "fleet-ctd21-2"]
SERIAL = int(os.environ.get("FLEET_SERIAL", "2"))
FULL = os.environ.get("FLEET_FULL", "") in ("1", "true", "yes")
POISONED = "fleet-bookworm-2"
BATCHES = [NODES[i:i + SERIAL] for i in range(0, len(NODES), SERIAL)]
POISONED_BATCH = [i for i, b in enumerate(BATCHES) if POISONED in b][0]
EARLIER = [n for b in BATCHES[:POISONED_BATCH] for n in b]
LATER = [n for b in BATCHES[POISONED_BATCH + 1:] for n in b]
SAME_BATCH = [n for n in BATCHES[POISONED_BATCH] if n != POISONED]
STANDIN = "/usr/local/bin/nvidia-container-runtime"
ROLLOUT_PLAY = "GPU and Confidential Containers runtimes in containerd"   # site.yml's play
# what a byte-for-byte comparison covers: containerd's config tree and nodeguard's state (ledgers, baselines)
TREES = "/etc/containerd /var/lib/nodeguard"
SITE_VARS = {
    "gpu_toolkit_runtime_binary": STANDIN,
    "node_readiness_probe_image_required": True,
    # the stand-in kata shim runs the runc shim, which refuses kata's ConfigPath option
    "node_readiness_pass_config_path": False,
    "nodeguard_serial": SERIAL,
    "nodeguard_max_fail_percentage": 0,
    "nodeguard_become": False,   # nsenter reaches the node as root
}


def node(name, *cmd):
    return subprocess.run(["podman", "exec", name] + list(cmd), capture_output=True, text=True, check=False)


def starts(name):
    out = node(name, "journalctl", "-u", "containerd", "-o", "cat", "--no-pager").stdout
    return sum(1 for line in out.splitlines() if line.startswith("Started containerd"))


def tree(name, paths=TREES):
    """{path: sha256} of every file under the trees."""
    out = node(name, "sh", "-c", "find %s -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum" % paths).stdout
    return dict(reversed(line.split(None, 1)) for line in out.splitlines())


def runtimes(name):
    """The runtimes containerd itself runs (config dump of its config)."""
    out = node(name, "containerd", "config", "dump").stdout
    return sorted(set(line.split(".runtimes.")[1].split("]")[0].split(".")[0].strip("'\"")
                      for line in map(str.strip, out.splitlines()) if ".runtimes." in line and line.startswith("[")))


def config_files(name):
    """The config files containerd reads: /etc/containerd without nodeguard's lock file and the dated backups
    the roles keep beside an edited file (config.toml.<pid>.<date>~)."""
    return dict((path, sha) for path, sha in tree(name, "/etc/containerd").items()
                if not path.endswith("~") and not os.path.basename(path).endswith(".nodeguard.lock"))


def snapshot():
    return {n: dict(tree=tree(n), config=config_files(n), starts=starts(n), runtimes=runtimes(n))
            for n in NODES}


class Jobs(object):
    """A private data dir with the playbooks and the installed collection; one runner job at a time."""

    def __init__(self):
        project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
        self.pdd = tempfile.mkdtemp(prefix="ng-fleet-job-")
        shutil.copytree(os.path.join(project, "playbooks"), os.path.join(self.pdd, "project"))
        os.makedirs(os.path.join(self.pdd, "env"))
        os.makedirs(os.path.join(self.pdd, "inventory"))
        self.bindir = os.path.dirname(shutil.which("ansible-playbook") or sys.executable)
        self.collections = os.path.join(self.pdd, "collections")
        # molecule's ANSIBLE_COLLECTIONS_PATH holds the checkout's link: with it, ansible-galaxy would find the
        # collection "already installed" and put nothing into the job's folder
        clean = dict((k, v) for k, v in os.environ.items() if not k.startswith("ANSIBLE_"))
        galaxy = os.path.join(self.bindir, "ansible-galaxy")
        build = subprocess.run([galaxy, "collection", "build", "--output-path", self.pdd, project],
                               capture_output=True, text=True, check=False, env=clean)
        assert build.returncode == 0, build.stderr
        (tarball,) = glob.glob(os.path.join(self.pdd, "nodeguard-containerd-*.tar.gz"))
        install = subprocess.run([galaxy, "collection", "install", "--force", "-p", self.collections, tarball],
                                 capture_output=True, text=True, check=False, env=clean)
        assert install.returncode == 0, install.stderr
        self.write_inventory()

    def write_inventory(self):
        hosts = {}
        for n in NODES:
            pid = json.loads(subprocess.run(["podman", "container", "inspect", n], capture_output=True, text=True,
                                            check=True).stdout)[0]["State"]["Pid"]
            hosts[n] = {"ansible_connection": "community.docker.nsenter", "ansible_nsenter_pid": pid,
                        "ansible_python_interpreter": "/usr/bin/python3"}
        group_vars = {}
        if FULL:
            group_vars["coco_payload_archive"] = os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"],
                                                              "kata-payload.tar.gz")
            # podman test nodes run the kata stand-in shim, not VMs: no TDX/SNP to check for
            group_vars["coco_check_node"] = False
        with open(os.path.join(self.pdd, "inventory", "hosts.json"), "w") as f:
            json.dump({"all": {"children": {"fleet": {"hosts": hosts}}, "vars": group_vars}}, f)

    def run(self, playbook, extra):
        import ansible_runner
        with pytest.MonkeyPatch.context() as mp:
            for name in [n for n in os.environ if n.startswith("ANSIBLE_")]:
                mp.delenv(name)   # nothing of the checkout's or molecule's settings
            mp.setenv("PATH", self.bindir + os.pathsep + os.environ.get("PATH", ""))
            began = time.time()
            runner = ansible_runner.run(
                private_data_dir=self.pdd, playbook=playbook, extravars=dict(extra, target="fleet"),
                envvars={"ANSIBLE_COLLECTIONS_PATH": self.collections, "ANSIBLE_NOCOLOR": "1"},
                quiet=True, timeout=3600)
            wall = time.time() - began
        artifacts = os.path.join(self.pdd, "artifacts", runner.config.ident)
        out = runner.stdout.read()
        stats, tasks, asked = {}, [], []
        for ev in runner.events:
            data = ev.get("event_data", {})
            if ev.get("event") == "playbook_on_stats":
                stats = data
            elif str(ev.get("event", "")).startswith("runner_on_"):
                tasks.append(dict(play=data.get("play"), host=data.get("host"), task=data.get("task")))
                # the fleet report's containerd_info call, a task of each node of the play
                if ev.get("event") in ("runner_on_ok", "runner_on_failed", "runner_on_unreachable") and \
                        str(data.get("task", "")).startswith("Ask each node readiness did not count"):
                    asked.append(data.get("host"))
            elif ev.get("event") in ("runner_item_on_ok", "runner_item_on_failed", "runner_item_on_unreachable") and \
                    str(data.get("task", "")).startswith("Ask the report's nodes outside this play"):
                asked.append(data.get("res", {}).get("item"))   # and of the nodes out of the play, in a loop
        report = None
        path = os.path.join(artifacts, "nodeguard-fleet-report.json")
        if os.path.isfile(path):
            with open(path) as f:
                report = json.load(f)
        print("\n%s %s: %s in %.0f s; report %s" % (playbook, json.dumps(extra, sort_keys=True)[:80],
                                                    runner.status, wall, path if report else "none"))
        return dict(status=runner.status, rc=runner.rc, out=out, stats=stats, tasks=tasks, began=began, wall=wall,
                    artifacts=artifacts, report=report, asked=sorted(asked))


def states(present):
    state = "present" if present else "absent"
    return {"gpu_toolkit_state": state, "coco_state": state if FULL else "skip"}


@pytest.fixture(scope="session")
def story():
    jobs = Jobs()
    steps = {"before": snapshot()}
    # 1. poisoned: the stand-in exits non-zero on one node of the second batch
    assert node(POISONED, "sh", "-c", "printf '#!/bin/sh\\nexit 1\\n' > %s && chmod 0755 %s" % (STANDIN, STANDIN)
                ).returncode == 0
    steps["poisoned_job"] = jobs.run("site.yml", dict(SITE_VARS, **states(True)))
    steps["poisoned"] = snapshot()
    # 2. cured, the same job again
    assert node(POISONED, "cp", "/usr/local/lib/nvidia-container-runtime.good", STANDIN).returncode == 0
    steps["cured_job"] = jobs.run("site.yml", dict(SITE_VARS, **states(True)))
    steps["cured"] = snapshot()
    # 3. uninstall across the fleet
    steps["uninstall_job"] = jobs.run("site.yml", dict(SITE_VARS, **states(False)))
    steps["uninstalled"] = snapshot()
    steps["pdd"] = jobs.pdd
    with open(os.path.join(os.environ["MOLECULE_EPHEMERAL_DIRECTORY"], "fleet-story.json"), "w") as f:
        json.dump({k: (dict(v, out=v["out"][-20000:]) if isinstance(v, dict) and "out" in v else v)
                   for k, v in steps.items()}, f, indent=1, default=str)
    yield steps
    shutil.rmtree(jobs.pdd, ignore_errors=True)


def rows(job):
    assert job["report"], job["out"][-4000:]
    return {r["node"]: r for r in job["report"]["rows"]}


def test_the_poisoned_rollout_stops_at_its_batch(story):
    job = story["poisoned_job"]
    assert job["status"] == "failed" and job["rc"] != 0, job["out"][-4000:]
    # the poisoned node failed with the reason, rolled back and ready again
    assert "site converge failed on %s" % POISONED in job["out"], job["out"][-4000:]
    assert "node ready again" in job["out"], job["out"][-4000:]
    assert set(job["stats"].get("failures", {})) == {POISONED}, job["stats"].get("failures")
    # the later batches were never reached: no task of the rollout play ran there (the report's plays come after)
    rollout = [t for t in job["tasks"] if t["play"] == ROLLOUT_PLAY]
    assert rollout and not [t for t in rollout if t["host"] in LATER], [t for t in rollout if t["host"] in LATER][:3]
    for n in LATER:
        assert n not in job["stats"].get("changed", {}), n
    # site.yml stopped the rollout itself (meta end_play after the batch): the report ran at the job's end,
    # before the job failed the rolled-back node
    assert job["report"] is not None, job["out"][-4000:]
    assert os.path.isfile(os.path.join(job["artifacts"], "nodeguard-fleet-report.html"))
    assert job["report"]["stopped"]["batch"] == POISONED_BATCH + 1, job["report"]["stopped"]
    assert job["report"]["stopped"]["failed"] == [POISONED], job["report"]["stopped"]
    assert job["out"].index("Render the fleet report") < job["out"].rindex("site converge failed on %s" % POISONED)


def test_the_poisoned_node_is_back_on_its_baseline_restarted_once_more_and_ready(story):
    before, after = story["before"][POISONED], story["poisoned"][POISONED]
    assert after["config"] == before["config"], (before["config"], after["config"])
    # one start onto the new config, one back onto the baseline
    assert after["starts"] - before["starts"] == 2
    assert after["runtimes"] == before["runtimes"]
    row = rows(story["poisoned_job"])[POISONED]
    assert row["status"] == "rolled back" and row["readiness"] == "ready", row
    assert row["reason"].startswith("site converge failed on %s" % POISONED) and "node ready again" in row["reason"], row
    assert row["restarts"] == 2 and "nvidia" not in row["runtimes"], row
    # the report asked every node but those of the last batch reached whose readiness check counted just before
    # it: the first batch (checked a batch earlier), the rolled-back node (its run failed), the later batches
    # (not reached); the other node of the poisoned batch's restarts came from its readiness check
    assert story["poisoned_job"]["asked"] == sorted(EARLIER + [POISONED] + LATER), story["poisoned_job"]["asked"]


def test_later_batches_are_byte_identical_and_not_restarted(story):
    for n in LATER:
        before, after = story["before"][n], story["poisoned"][n]
        assert after["tree"] == before["tree"], n
        assert after["starts"] == before["starts"], n
        row = rows(story["poisoned_job"])[n]
        assert row["status"] == "not reached" and "untouched" in row["detail"], row
        assert row["restarts"] == 0 and row["seconds"] is None and row["changed"] is None, row


def test_earlier_batches_keep_their_install_and_are_ready(story):
    report = rows(story["poisoned_job"])
    for n in EARLIER + SAME_BATCH:
        after = story["poisoned"][n]
        assert "nvidia" in after["runtimes"], (n, after["runtimes"])
        assert after["starts"] - story["before"][n]["starts"] == 1, n
        assert report[n]["readiness"] == "ready" and report[n]["status"] == "rolled out", report[n]
        assert report[n]["restarts"] == 1 and report[n]["seconds"] > 0, report[n]


def test_the_cured_run_changes_only_the_rest_of_the_fleet(story):
    job = story["cured_job"]
    assert job["status"] == "successful", job["out"][-4000:]
    changed = {n for n, c in job["stats"].get("changed", {}).items() if c}
    done = set(EARLIER + SAME_BATCH)
    assert changed == set(NODES) - done, changed
    for n in done:
        assert story["cured"][n]["tree"] == story["poisoned"][n]["tree"], n
    for n in NODES:
        assert "nvidia" in story["cured"][n]["runtimes"], n
    # over the whole install story: one containerd start per node, two more on the rolled-back one
    for n in NODES:
        delta = story["cured"][n]["starts"] - story["before"][n]["starts"]
        assert delta == (3 if n == POISONED else 1), (n, delta)
    report = rows(job)
    assert all(r["readiness"] == "ready" and r["status"] == "rolled out" for r in report.values()), report
    assert {n: r["restarts"] for n, r in report.items()} == {n: (0 if n in done else 1) for n in NODES}
    # the last batch's readiness checks counted the starts since the job's first event just before the report:
    # only the earlier batches' nodes were asked again
    assert job["asked"] == sorted(n for b in BATCHES[:-1] for n in b), job["asked"]


def test_uninstall_gives_every_node_its_original_bytes(story):
    job = story["uninstall_job"]
    assert job["status"] == "successful", job["out"][-4000:]
    for n in NODES:
        assert story["uninstalled"][n]["config"] == story["before"][n]["config"], n
        assert story["uninstalled"][n]["runtimes"] == story["before"][n]["runtimes"], n
    report = rows(job)
    assert all(r["readiness"] == "ready" and r["restarts"] == 1 and r["status"] == "rolled out"
               for r in report.values()), report
    assert job["asked"] == sorted(n for b in BATCHES[:-1] for n in b), job["asked"]


def test_every_report_covers_the_fleet_in_its_artifacts(story):
    for key in ("poisoned_job", "cured_job", "uninstall_job"):
        job = story[key]
        assert [r["node"] for r in job["report"]["rows"]] == NODES
        assert os.path.isfile(os.path.join(job["artifacts"], "nodeguard-fleet-report.html"))
        versions = {r["node"]: (r["containerd"] or "")[:3] for r in job["report"]["rows"]}
        assert versions == {n: {"bookworm": "1.6", "trixie": "1.7", "ctd21": "2.1"}[n.split("-")[1]] for n in NODES}
        assert "nodeguard fleet report: 6 node(s)" in job["out"]
