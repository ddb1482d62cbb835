"""The restart contract's decision: `nodeguard_readiness.py pending`.

roles/node_readiness/tasks/restart.yml, the one way nodeguard restarts
containerd, asks the node helper whether a restart is pending and records
the fingerprint it returns. Here the helper runs as on a node, against the
real containerd's `config dump`; only `systemctl show` is a stand-in that
reports the start time each test sets. containerd 1.6/1.7 print the imports
line of the dump in a random order, so the fingerprint leaves it out.
"""

import argparse
import hashlib
import itertools
import json
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import CONTAINERD_1, CONTAINERD_2, READINESS_HELPER as HELPER

CRI = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'
CRI_V3 = 'plugins."io.containerd.cri.v1.runtime".containerd.runtimes'
SYSTEMCTL = """#!/bin/sh
# stand-in: systemctl show containerd --property=ActiveState,ExecMainStartTimestampMonotonic
cat "$(dirname "$0")/show"
"""


@pytest.fixture
def node(tmp_path):
    """A config folder, a state folder and a systemctl whose start time the test sets."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "systemctl").write_text(SYSTEMCTL)
    (bin_dir / "systemctl").chmod(0o755)
    state = tmp_path / "state"
    state.mkdir()

    class Node(object):
        bin_dir = str(tmp_path / "bin")
        state_dir = str(tmp_path / "state")

        def started(self, epoch, active="active"):
            """systemd's view: the unit's state, and its start on the monotonic clock (µs)."""
            mono = int((time.monotonic() - (time.time() - epoch)) * 1e6)
            (bin_dir / "show").write_text("ActiveState=%s\nExecMainStartTimestampMonotonic=%d\n" % (active, mono))

        def pending(self, config, *extra, binary=CONTAINERD_1):
            argv = [sys.executable, HELPER, "--containerd", binary, "pending", "--config", str(config),
                    "--state-dir", str(state)] + [a for f in extra for a in ("--file", str(f))]
            env = dict(os.environ, PATH=str(bin_dir) + os.pathsep + os.environ["PATH"])
            proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120, check=True)
            return json.loads(proc.stdout)

        def record(self, fingerprint):
            (state / "containerd-started.sha256").write_text(fingerprint + "\n")

    return Node()


def write_config(tmp_path, version, table, drop_ins):
    imports = []
    for i in range(drop_ins):
        path = tmp_path / ("drop-%d.toml" % i)
        path.write_text('version = %d\n\n[%s.extra%d]\n  runtime_type = "io.containerd.runc.v2"\n'
                        % (version, table, i))
        imports.append('"%s"' % path)
    cfg = tmp_path / "config.toml"
    cfg.write_text('version = %d\nimports = [%s]\n\n[%s.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
                   % (version, ", ".join(imports), table))
    return cfg


def dump_of(binary, cfg):
    """stdout of `config dump` as Ansible's command module returns it."""
    proc = subprocess.run([binary, "--config", str(cfg), "config", "dump"], capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout.rstrip("\r\n")


def touch_later(path, seconds=2.0):
    later = time.time() + seconds
    os.utime(str(path), (later, later))
    return later


@pytest.mark.parametrize("binary,version,table", [
    pytest.param(CONTAINERD_1, 2, CRI, id="containerd-1.x"),
    pytest.param(CONTAINERD_2, 3, CRI_V3, id="containerd-2.x"),
])
def test_fingerprint_ignores_the_order_of_the_imports_line(tmp_path, nr, binary, version, table):
    if binary is None:
        pytest.fail("no containerd binary: run `make deps`")
    cfg = write_config(tmp_path, version, table, 3)
    dump = dump_of(binary, cfg)
    expected = nr.dump_fingerprint(dump)
    m = re.search(r"(?m)^imports = \[(.*)\]$", dump)
    assert m, "the dump has no imports line"
    entries = m.group(1).split(", ")
    assert len(entries) >= 3  # 1.x lists the main file too
    for order in list(itertools.permutations(entries))[1:]:
        other = dump[:m.start(1)] + ", ".join(order) + dump[m.end(1):]
        assert hashlib.sha256(other.encode()).hexdigest() != hashlib.sha256(dump.encode()).hexdigest()
        assert nr.dump_fingerprint(other) == expected
    # containerd's own repeated dumps of one config: one fingerprint
    assert {nr.dump_fingerprint(dump_of(binary, cfg)) for dummy in range(4)} == {expected}


def test_fingerprint_follows_the_content_of_imported_files(tmp_path, nr):
    cfg = write_config(tmp_path, 2, CRI, 2)
    before = nr.dump_fingerprint(dump_of(CONTAINERD_1, cfg))
    drop = tmp_path / "drop-1.toml"
    drop.write_text(drop.read_text() + "  privileged_without_host_devices = true\n")
    assert nr.dump_fingerprint(dump_of(CONTAINERD_1, cfg)) != before
    # only the top-level imports line is left out; an indented key of that name is config
    a = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/b"]'
    b = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/c"]'
    assert nr.dump_fingerprint(a) != nr.dump_fingerprint(b)


def test_started_after_the_last_change_is_not_pending(tmp_path, node):
    cfg = write_config(tmp_path, 2, CRI, 1)
    node.started(time.time() + 60)
    out = node.pending(cfg)
    assert out["dump_ok"] and not out["pending"], out
    assert out["fingerprint"] and "started after" in out["reason"]


def test_a_changed_import_makes_a_restart_pending(tmp_path, node):
    cfg = write_config(tmp_path, 2, CRI, 2)
    node.started(time.time())
    touch_later(tmp_path / "drop-1.toml")
    out = node.pending(cfg)
    assert out["pending"] and out["newest_path"] == str(tmp_path / "drop-1.toml"), out


def test_an_extra_file_counts_too(tmp_path, node):
    cfg = write_config(tmp_path, 2, CRI, 0)
    extra = tmp_path / "not-imported-yet.toml"
    extra.write_text("version = 2\n")
    node.started(time.time())
    touch_later(extra)
    assert not node.pending(cfg)["pending"]
    assert node.pending(cfg, extra)["pending"]


def test_same_effective_config_as_the_recorded_restart_is_not_pending(tmp_path, node):
    """A comment edit after nodeguard's restart: the files are newer, the effective config is the same."""
    cfg = write_config(tmp_path, 2, CRI, 0)  # no import: on 1.x a drop-in's CRI table would replace the main one
    node.started(time.time() - 30)
    first = node.pending(cfg)
    node.record(first["fingerprint"])  # what restart.yml writes after its restart
    cfg.write_text(cfg.read_text() + "# a comment\n")
    touch_later(cfg)
    out = node.pending(cfg)
    assert not out["pending"] and out["fingerprint"] == first["fingerprint"], out
    # a real change is pending again
    cfg.write_text(cfg.read_text().replace('runtime_type = "io.containerd.runc.v2"',
                                           'runtime_type = "io.containerd.runc.v2"\n  privileged_without_host_devices = true'))
    touch_later(cfg)
    out = node.pending(cfg)
    assert out["pending"], json.dumps(out)


def test_a_start_after_the_record_voids_it(tmp_path, node):
    """Killed between its restart and the record, or restarted by hand: the record no longer describes containerd."""
    cfg = write_config(tmp_path, 2, CRI, 0)
    node.record(node.pending(cfg)["fingerprint"])
    node.started(time.time() + 1)  # containerd started after the record was written
    touch_later(cfg, 5)            # and the file changed after that start
    out = node.pending(cfg)
    assert out["pending"] and out["recorded"] == out["fingerprint"], out


def test_a_config_containerd_cannot_load_is_pending_and_not_ok(tmp_path, node):
    cfg = tmp_path / "config.toml"
    cfg.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"\n')
    node.started(time.time() + 60)
    out = node.pending(cfg)
    assert out["pending"] and not out["dump_ok"] and str(cfg) in out["reason"], out


def test_containerd_not_running_is_pending(tmp_path, node):
    cfg = write_config(tmp_path, 2, CRI, 0)
    node.started(time.time() + 60, active="failed")
    out = node.pending(cfg)
    assert out["pending"] and "not running" in out["reason"] and out["active_state"] == "failed", out


def test_an_unreadable_import_leaves_the_decision_to_the_fingerprint(tmp_path, node, nr, monkeypatch):
    """File times cannot vouch for a drop-in the walk could not read: no shortcut, the fingerprint decides."""
    cfg = write_config(tmp_path, 2, CRI, 0)
    node.started(time.time() + 60)
    monkeypatch.setenv("PATH", node.bin_dir + os.pathsep + os.environ["PATH"])
    monkeypatch.setattr(nr, "walk_imports", lambda path: ([], ["%s: cannot read an import" % path]))
    args = argparse.Namespace(containerd=CONTAINERD_1, config=str(cfg), state_dir=node.state_dir, unit="containerd",
                              file=[])
    out = nr.do_pending(args)
    assert out["walk_errors"] and out["pending"], out
    node.record(out["fingerprint"])  # as restart.yml does after a restart, i.e. after containerd started
    later = time.time() + 120
    os.utime(os.path.join(node.state_dir, "containerd-started.sha256"), (later, later))
    assert not nr.do_pending(args)["pending"]


def test_a_file_deleted_from_a_glob_import_is_seen_through_its_folder(tmp_path, node):
    conf_d = tmp_path / "conf.d"
    conf_d.mkdir()
    (conf_d / "a.toml").write_text('version = 2\n[proxy_plugins.a]\n  type = "snapshot"\n  address = "/run/a.sock"\n')
    (conf_d / "b.toml").write_text('version = 2\n[proxy_plugins.b]\n  type = "snapshot"\n  address = "/run/b.sock"\n')
    cfg = tmp_path / "config.toml"
    cfg.write_text('version = 2\nimports = ["%s/*.toml"]\n' % conf_d)
    node.started(time.time() + 1)
    time.sleep(1.5)
    (conf_d / "b.toml").unlink()  # no remaining file changes; the folder does
    out = node.pending(cfg)
    assert out["pending"] and out["newest_path"] == str(conf_d), out


def test_the_record_is_rewritten_so_its_time_is_the_last_restart(tmp_path, nr):
    """Same fingerprint after a reboot: the record's time must still move (pending compares it with the start)."""
    state = tmp_path / "state"
    path = nr.record_fingerprint(str(state), "ab" * 32)
    old = time.time() - 3600
    os.utime(path, (old, old))
    nr.record_fingerprint(str(state), "ab" * 32)
    assert os.stat(path).st_mtime > old + 3000
    assert open(path).read() == "ab" * 32 + "\n"
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)


def test_a_copy_that_keeps_the_old_time_is_still_a_change(tmp_path, node):
    """cp -p over the config after containerd started: the mtime is old, the inode change time is not."""
    cfg = write_config(tmp_path, 2, CRI, 0)
    old = time.time() - 3600
    os.utime(str(cfg), (old, old))
    node.started(time.time() - 1)
    time.sleep(1.2)
    cfg.write_text(cfg.read_text().replace('runtime_type = "io.containerd.runc.v2"',
                                           'runtime_type = "io.containerd.runc.v2"\n  privileged_without_host_devices = true'))
    os.utime(str(cfg), (old, old))  # what cp -p / copystat leave
    out = node.pending(cfg)
    assert out["pending"], out
