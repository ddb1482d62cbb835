# -*- coding: utf-8 -*-
"""_baseline_states rules the mutation run of 05fad31 found untested (tests/mutation,
A group): the checks a snapshot and a repair make before anything is asked or written, the warnings of a
broken baseline, keep: 0, how often containerd is asked, which drop-in a repair writes and what from, the
file a repair through a link names, and the file attributes a check-mode restore must predict.

In process (tests/unit/baseline_inproc.py); containerd 2.1 (build/containerd2) where the tree is a
version 3 one, stand-ins (stub_containerd, behind a logging wrapper) where the test counts what
containerd is asked.
"""

import json
import os
import subprocess
import sys

import pytest

from baseline_inproc import Node, hand_made_baseline, manifest_of, stub_containerd

from conftest import CONTAINERD_2
from test_baseline_states_repair import CRUN

RUNTIME_V3 = "plugins.'io.containerd.cri.v1.runtime'"
BROKEN = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "crun"\n'


def logged_containerd(folder, **stub_args):
    """A stand-in containerd (stub_containerd) behind a wrapper that logs each call's arguments, one line each.

    Returns (binary, calls): calls() lists the logged argument lines, the candidate's temporary path left out.
    """
    inner_dir = os.path.join(str(folder), 'inner')
    os.makedirs(inner_dir)
    inner = stub_containerd(inner_dir, **stub_args)
    log = os.path.join(str(folder), 'calls.log')
    binary = os.path.join(str(folder), 'containerd')
    with open(binary, 'w') as f:
        f.write('#!/bin/sh\necho "$1 $3" >> %s\nexec %s "$@"\n' % (json.dumps(log), json.dumps(inner)))
    os.chmod(binary, 0o755)

    def calls():
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return [line.strip() for line in f]
    return binary, calls


# ------------------------------------------------------------------ snapshot
def test_a_bad_protect_entry_fails_even_when_the_tree_is_the_baselines_already(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    first = node.run()
    r = node.run(overwrite=True, protect=['cri.runtimes.runc', 'a.""'], expect_fail=True)
    assert r['msg'] == 'protect entry \'a.""\' is empty.'
    assert node.snapshots() == [os.path.basename(first['snapshot'])]


def test_a_broken_baseline_warns_once_for_each_of_its_problems(tmp_path, capsys):
    node = Node(tmp_path, capsys, text=BROKEN)
    r = node.run(allow_broken=True)
    assert r['changed'] and len(r['problems']) >= 1 and manifest_of(r)['problems'] == r['problems']
    taken = [w for w in r['warnings'] if w.startswith("baseline 'default' was taken")]
    assert taken == ["baseline 'default' was taken of a config that would not load (allow_broken: true): %s" % p
                     for p in r['problems']]


def test_keep_0_is_allowed_and_keeps_only_the_current_snapshot(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run(keep=0)
    node.write('v2_flat.toml')
    last = node.run(overwrite=True, keep=0)
    assert last['changed'] and len(last['pruned']) == 1
    assert node.snapshots() == [os.path.basename(last['snapshot'])]


def test_the_version_of_the_containerd_option_is_the_baselines_when_the_binary_does_not_say_it(tmp_path, capsys):
    # the binary cannot tell its version: containerd_version stands in, and the snapshot records it as the
    # containerd that took it (manifest containerd.version stays unknown), so its dump is compared again
    node = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_rc=1)
    args = dict(containerd_bin=binary, containerd_version='1.7', validate='auto')
    m = manifest_of(node.run(**args))
    assert m['containerd']['version'] is None and m['effective']['containerd'] == [1, 7]
    node.write(node.read().replace('snapshotter = "overlayfs"', 'snapshotter = "native"'))
    r = node.run(state='check', protect=['images.snapshotter'], expect_fail=True, **args)
    (d,) = r['effective_drift']
    assert (d['before'], d['after'], d['compared']) == ('overlayfs', 'native', 'config dump')


# ------------------------------------------------------------------ repair: before anything is asked
def test_a_bad_protect_entry_fails_a_repair_before_containerd_is_asked(tmp_path, capsys):
    # a baseline that recorded no containerd and no effective values: reading its values would ask the node's
    node = Node(tmp_path, capsys)
    hand_made_baseline(node, node.read(mode='rb'))
    binary, calls = logged_containerd(tmp_path / 'bin')
    held = node.read()
    r = node.run(state='repair', containerd_bin=binary, protect=['cri.runtimes.runc', 'a.""'], expect_fail=True)
    assert r['msg'] == 'protect entry \'a.""\' is empty.' and node.read() == held
    assert calls() == []


# ------------------------------------------------------------------ repair: how often containerd is asked
def _dump_runs(calls):
    return [c for c in calls() if c.startswith('--config') and c.endswith('config')]


def test_a_repair_of_config_toml_alone_asks_containerd_for_each_dump_once(tmp_path, capsys):
    # the engine's check of the candidate and the judgement of the tree now: no third dump of the same tree
    node = Node(tmp_path, capsys)
    binary, calls = logged_containerd(tmp_path / 'bin')
    args = dict(containerd_bin=binary, validate='auto')
    node.run(**args)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    before = len(_dump_runs(calls))
    r = node.run(state='repair', **args)
    assert r['changed'] and r['written'] == [node.path] and 'SystemdCgroup = true' in node.read()
    assert r['effective_drift'] == [] and r['left'] == []
    assert len(_dump_runs(calls)) - before == 2


def test_a_check_mode_repair_runs_no_config_dump(tmp_path, capsys):
    # what containerd would run with the candidate is read from nodeguard's model of the candidate files
    node = Node(tmp_path, capsys)
    binary, calls = logged_containerd(tmp_path / 'bin')
    args = dict(containerd_bin=binary, validate='auto')
    node.run(**args)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    held = node.read()
    before = len(_dump_runs(calls))
    r = node.run(state='repair', check=True, **args)
    assert r['changed'] and node.read() == held and [x['key'] for x in r['repaired']] == ['cri.runtimes.runc']
    assert len(_dump_runs(calls)) == before


# ------------------------------------------------------------------ repair: the drop-in step
@pytest.fixture
def tree3(tmp_path, capsys):
    """containerd 2.1's version 3 config.toml importing conf.d/*.toml."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    n = Node(tmp_path, capsys, text='v3_default.toml')
    n.conf_d = os.path.join(n.etc, 'conf.d')
    os.makedirs(n.conf_d)
    n.write(n.read().replace('imports = []', 'imports = ["%s/*.toml"]' % n.conf_d))
    n.args = dict(containerd_bin=CONTAINERD_2)
    return n


def _dropin(node, name, table, body):
    return node.write("version = 3\n[plugins]\n  [%s%s]\n%s" % (RUNTIME_V3, table, body),
                      os.path.join(node.conf_d, name))


def test_a_runtime_changed_by_one_dropin_is_repaired_there_not_in_the_last_dropin_of_the_plugin(tree3):
    # 50 turns runc's cgroup driver off; 60, read last, only sets another key of the same plugin
    node = tree3
    node.run(**node.args)
    cgroup = _dropin(node, '50-cgroup.toml', '.containerd.runtimes.runc.options', '    SystemdCgroup = false\n')
    cdi = _dropin(node, '60-cdi.toml', '', '    enable_cdi = false\n')
    held = node.read(cdi)
    r = node.run(state='repair', protect=['cri.runtimes.runc'], **node.args)
    assert r['written'] == [cgroup] and [(x['key'], x['file']) for x in r['repaired']] == [
        ('cri.runtimes.runc', cgroup)]
    assert 'SystemdCgroup = true' in node.read(cgroup) and node.read(cdi) == held
    assert r['effective_drift'] == [] and r['left'] == []


def test_a_dropins_value_is_put_back_when_the_baseline_kept_no_copy_of_that_dropin(tree3):
    # include_imports: false stores config.toml only, but the snapshot recorded that the drop-in set the default
    node = tree3
    crun = node.write(CRUN, os.path.join(node.conf_d, '50-crun.toml'))
    snap = node.run(include_imports=False, **node.args)
    assert [f['path'] for f in snap['files']] == [node.path]
    (rec,) = [x for x in snap['effective'] if x['key'] == 'cri.default_runtime_name']
    assert (rec['value'], rec['file']) == ('crun', crun)
    node.write(CRUN.replace("default_runtime_name = 'crun'", "default_runtime_name = 'runc'"), crun)
    r = node.run(state='repair', protect=['cri.default_runtime_name'], **node.args)
    assert r['written'] == [crun] and r['left'] == [] and r['effective_drift'] == []
    assert [(x['file'], x['before'], x['after']) for x in r['repaired']] == [(crun, 'runc', 'crun')]
    assert node.read(crun) == CRUN


def test_a_baseline_copy_of_a_dropin_nodeguard_cannot_edit_is_not_copied_from(tmp_path, capsys):
    # containerd 1.6 reads a version 1 drop-in (plugins.cri) of a version 2 config.toml; nodeguard edits no
    # version 1 file, so the baseline's value goes back into today's (version 2) drop-in written afresh
    node = Node(tmp_path, capsys)
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    kubeadm = node.read()
    node.write(kubeadm.replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    crun_rt = '[plugins.cri.containerd.runtimes.crun]\n  runtime_type = "io.containerd.runc.v2"\n'
    dropin = node.write('version = 1\n[plugins.cri.containerd]\n  default_runtime_name = "crun"\n' + crun_rt,
                        os.path.join(conf_d, '50-crun.toml'))
    snap = node.run(allow_broken=True)
    (rec,) = [x for x in snap['effective'] if x['key'] == 'cri.default_runtime_name']
    assert (rec['value'], rec['file']) == ('crun', dropin)
    # today's drop-in carries the whole CRI table (version 2), with crun, running runc by default
    cri = kubeadm[kubeadm.index('  [plugins."io.containerd.grpc.v1.cri"]'):kubeadm.index('# Metrics')]
    node.write('version = 2\n[plugins]\n' + cri + crun_rt.replace('plugins.cri', 'plugins."io.containerd.grpc.v1.cri"'),
               dropin)
    r = node.run(state='repair', protect=['cri.default_runtime_name'])
    assert r['written'] == [dropin]
    assert [(x['file'], x['before'], x['after']) for x in r['repaired']] == [(dropin, 'runc', 'crun')]
    assert 'default_runtime_name = "crun"' in node.read(dropin) and r['effective_drift'] == []


# ------------------------------------------------------------------ check: protected drift in effect or not
def test_each_protected_drift_entry_with_a_record_is_marked_whatever_comes_before_it():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.states import in_effect_note
    path, dropin = '/etc/containerd/config.toml', '/etc/containerd/conf.d/50-x.toml'
    entries = [dict(key='images.snapshotter'), dict(key='cri.default_runtime_name'), dict(key='cri.runtimes.runc')]
    records = [dict(key='cri.default_runtime_name', file=dropin), dict(key='cri.runtimes.runc', file=None, owner=path)]
    assert in_effect_note(entries, records, path) == [
        dict(key='images.snapshotter'),
        dict(key='cri.default_runtime_name', in_effect=False, shadowed_by=dropin),
        dict(key='cri.runtimes.runc', in_effect=True)]


# ------------------------------------------------------------------ restore: file attributes in check mode
def _flags(path):
    return subprocess.check_output(['lsattr', '-d', path]).decode().split()[0]


def test_check_mode_restore_says_it_would_set_a_file_attribute_as_the_real_run_does(tmp_path, capsys):
    # the file is the baseline's byte for byte: only its attributes differ (chattr +A, which the file's owner
    # may set), and check mode must predict the real run's change
    scratch = tmp_path / 'scratch'
    scratch.write_text('x')
    if subprocess.call(['chattr', '+A', str(scratch)], stderr=subprocess.DEVNULL):
        pytest.skip('the filesystem of %s has no attribute A' % tmp_path)
    node = Node(tmp_path, capsys)
    node.run()
    preview = node.run(state='restore', check=True, attributes='+A')
    assert preview['changed'] is True and 'A' not in _flags(node.path)
    real = node.run(state='restore', attributes='+A')
    assert real['changed'] is True and 'A' in _flags(node.path)
    # nothing left to change: check mode says so
    assert node.run(state='restore', check=True)['changed'] is False


def test_a_repair_through_a_link_names_the_file_it_wrote(tmp_path, capsys):
    # config.toml is a link (follow: true): the file written is the link's target, and written says so
    node = Node(tmp_path, capsys)
    real = os.path.join(node.etc, 'real.toml')
    os.rename(node.path, real)
    os.symlink(real, node.path)
    node.run()
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'), real)
    r = node.run(state='repair', follow=True)
    assert r['changed'] and r['written'] == [real] and r['file'] == real
    assert os.path.islink(node.path) and 'SystemdCgroup = true' in node.read(real)


MERGING_CONTAINERD = """#!%(python)s
import glob, os, sys, tomllib
import tomlkit
if sys.argv[1] == '--version':
    print('containerd github.com/containerd/containerd/v2 v2.1.99 x')
    sys.exit(0)
if sys.argv[1:2] != ['--config'] or sys.argv[3:5] != ['config', 'dump']:
    sys.exit(3)


def merge(into, data):
    for k, v in data.items():
        if isinstance(v, dict) and isinstance(into.get(k), dict):
            merge(into[k], v)
        else:
            into[k] = v


with open(sys.argv[2], 'rb') as f:
    main = tomllib.load(f)
merged = {}
merge(merged, main)
for entry in main.get('imports') or []:
    for name in sorted(glob.glob(entry)):
        with open(name, 'rb') as f:
            merge(merged, dict((k, v) for k, v in tomllib.load(f).items() if k != 'version'))
if os.path.exists(%(flag)r):
    merged['plugins']['io.containerd.cri.v1.runtime']['containerd']['default_runtime_name'] = 'crun'
print(tomlkit.dumps(merged))
"""


def merging_containerd(folder):
    """A stand-in containerd 2.1 whose config dump deep-merges config.toml and its imports (version 3 files),
    and, once the file `flag` exists, runs 'crun' by default whatever the files say."""
    binary = os.path.join(str(folder), 'containerd')
    flag = os.path.join(str(folder), 'runs-crun')
    with open(binary, 'w') as f:
        f.write(MERGING_CONTAINERD % dict(python=sys.executable, flag=flag))
    os.chmod(binary, 0o755)
    return binary, flag


def test_a_key_a_dropin_already_holds_does_not_stop_the_repair_of_the_next_key_there(tree3):
    # containerd (its dump) runs another default than the drop-in sets, which is the baseline's: nothing to
    # write for that key; the drop-in's snapshotter, the next key, is still put back
    node = tree3
    binary, flag = merging_containerd(node.tmp)
    args = dict(containerd_bin=binary, validate='auto')
    node.run(**args)
    dropin = node.write("version = 3\n[plugins]\n  [plugins.'io.containerd.cri.v1.images']\n"
                        "    snapshotter = 'native'\n"
                        "  [%s.containerd]\n    default_runtime_name = 'runc'\n" % RUNTIME_V3,
                        os.path.join(node.conf_d, '50-x.toml'))
    open(flag, 'w').close()
    r = node.run(state='repair', protect=['cri.default_runtime_name', 'images.snapshotter'], **args)
    assert r['written'] == [dropin]
    assert [(x['key'], x['file'], x['before'], x['after']) for x in r['repaired']] == [
        ('images.snapshotter', dropin, 'native', 'overlayfs')]
    assert "snapshotter = 'overlayfs'" in node.read(dropin) and "default_runtime_name = 'runc'" in node.read(dropin)
    (left,) = r['left']
    assert (left['key'], left['file'], left['after'], left['compared']) == (
        'cri.default_runtime_name', dropin, 'crun', 'config dump')
