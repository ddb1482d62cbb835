"""The restart contract's fingerprint of the effective config.

Three places compute it and must agree, or a role restarts containerd for a
config it already runs: roles/node_readiness/tasks/restart.yml (Jinja),
roles/gpu_toolkit/tasks/restart.yml (Jinja, a handler-safe copy) and
roles/coco/files/coco_node.py (Python, on the node). The dumps come from the
real containerd: containerd 1.6/1.7 print the entries of the imports line in
a random order, so the fingerprint leaves that line out.
"""

import hashlib
import importlib.util
import itertools
import os
import re
import subprocess

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar, trust_as_template

from conftest import CONTAINERD_1, CONTAINERD_2

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CRI = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'
CRI_V3 = 'plugins."io.containerd.cri.v1.runtime".containerd.runtimes'


@pytest.fixture(scope="module")
def coco_node():
    path = os.path.join(REPO, "roles", "coco", "files", "coco_node.py")
    spec = importlib.util.spec_from_file_location("coco_node", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def set_fact_expr(role, fact):
    with open(os.path.join(REPO, "roles", role, "tasks", "restart.yml")) as f:
        tasks = yaml.safe_load(f)
    for task in tasks:
        facts = task.get("ansible.builtin.set_fact") or {}
        if fact in facts:
            return facts[fact]
    raise AssertionError("no set_fact of %s in roles/%s/tasks/restart.yml" % (fact, role))


def render(expr, variables):
    return Templar(loader=DataLoader(), variables=variables).template(trust_as_template(expr)).strip()


def node_readiness_fp(stdout):
    expr = set_fact_expr("node_readiness", "__ng_restart_fingerprint")
    return render(expr, {"__ng_restart_dump": {"stdout": stdout}})


def gpu_toolkit_fp(stdout):
    expr = set_fact_expr("gpu_toolkit", "__gpu_toolkit_restart_fingerprint")
    # the handler's one shell task: the dump, a marker line, the recorded value
    read = stdout + "\n\n@@nodeguard-started@@\n" + "0" * 64
    return render(expr, {"__gpu_toolkit_restart_read": {"stdout": read}})


def command_stdout(argv):
    """stdout as ansible.builtin.command returns it (trailing newlines stripped)."""
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout.rstrip("\r\n")


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


def permuted(stdout):
    """The same dump with the imports line's entries in every other order."""
    m = re.search(r"(?m)^imports = \[(.*)\]$", stdout)
    assert m, "the dump has no imports line"
    entries = m.group(1).split(", ")
    assert len(entries) >= 3
    return [stdout[:m.start(1)] + ", ".join(p) + stdout[m.end(1):] for p in itertools.permutations(entries)][1:]


@pytest.mark.parametrize("binary,version,table", [
    pytest.param(CONTAINERD_1, 2, CRI, id="containerd-1.x"),
    pytest.param(CONTAINERD_2, 3, CRI_V3, id="containerd-2.x"),
])
def test_three_implementations_agree_and_ignore_the_imports_order(tmp_path, coco_node, binary, version, table):
    if binary is None:
        pytest.fail("no containerd binary: run `make deps`")
    cfg = write_config(tmp_path, version, table, 3)
    dump = command_stdout([binary, "--config", str(cfg), "config", "dump"])
    expected = coco_node.dump_fingerprint(dump)
    assert node_readiness_fp(dump) == expected
    assert gpu_toolkit_fp(dump) == expected
    for other in permuted(dump):
        assert hashlib.sha256(other.encode()).hexdigest() != hashlib.sha256(dump.encode()).hexdigest()
        assert coco_node.dump_fingerprint(other) == expected
        assert node_readiness_fp(other) == expected
        assert gpu_toolkit_fp(other) == expected
    # containerd's own repeated dumps of one config: one fingerprint
    again = {coco_node.dump_fingerprint(command_stdout([binary, "--config", str(cfg), "config", "dump"]))
             for dummy in range(4)}
    assert again == {expected}


def test_a_change_in_an_imported_file_changes_the_fingerprint(tmp_path, coco_node):
    if CONTAINERD_1 is None:
        pytest.fail("no containerd binary: run `make deps`")
    cfg = write_config(tmp_path, 2, CRI, 2)
    before = coco_node.dump_fingerprint(command_stdout([CONTAINERD_1, "--config", str(cfg), "config", "dump"]))
    drop = tmp_path / "drop-1.toml"
    drop.write_text(drop.read_text() + '  privileged_without_host_devices = true\n')
    after_dump = command_stdout([CONTAINERD_1, "--config", str(cfg), "config", "dump"])
    after = coco_node.dump_fingerprint(after_dump)
    assert after != before
    assert node_readiness_fp(after_dump) == after == gpu_toolkit_fp(after_dump)


def test_nested_imports_keys_are_kept(coco_node):
    """Only the top-level imports line is left out; an indented key of that name is config."""
    a = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/b"]'
    b = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/c"]'
    assert coco_node.dump_fingerprint(a) != coco_node.dump_fingerprint(b)
    assert node_readiness_fp(a) == coco_node.dump_fingerprint(a)
    assert node_readiness_fp(b) == coco_node.dump_fingerprint(b)
