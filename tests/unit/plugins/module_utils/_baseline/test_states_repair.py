# -*- coding: utf-8 -*-
"""state: repair of containerd_baseline (_baseline_states.do_repair and its drop-in step), in process.

containerd 2.1 (build/containerd2) reads the version 3 tree: a drop-in's
keys deep-merge over config.toml's, so a drop-in can change what containerd
runs.  validate: none and no load test keep each run to milliseconds;
tests/module/test_baseline_effective.py runs the same paths with every
check on the real NVIDIA toolkit files.
"""

import os

import pytest

from helpers.baseline import Node, hand_made_baseline, stub_containerd

from helpers.common import CONTAINERD_2
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for
import json
import sys

RT3 = 'plugins."io.containerd.cri.v1.runtime".containerd'
CRUN = """version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'crun'

    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun]
      runtime_type = 'io.containerd.runc.v2'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun.options]
        BinaryName = '/usr/bin/crun'
"""


@pytest.fixture
def node(tmp_path, capsys):
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    n = Node(tmp_path, capsys, text='v3_default.toml')
    n.conf_d = os.path.join(n.etc, 'conf.d')
    os.makedirs(n.conf_d)
    n.dropin = os.path.join(n.conf_d, '50-crun.toml')
    n.write(n.read().replace('imports = []', 'imports = ["%s/*.toml"]' % n.conf_d))
    n.args = dict(containerd_bin=CONTAINERD_2)
    return n


def _without_default(node):
    """config.toml with no default_runtime_name: containerd runs its own default, runc."""
    node.write(node.read().replace("      default_runtime_name = 'runc'\n", ''))


def test_a_default_a_dropin_set_since_is_removed_there_when_the_baseline_had_none(node):
    _without_default(node)
    snap = node.run(**node.args)
    rec = [r for r in snap['effective'] if r['key'] == 'cri.default_runtime_name'][0]
    assert (rec['value'], rec['default'], rec['file']) == ('runc', True, None)
    node.write(CRUN, node.dropin)
    main = node.read()
    r = node.run(state='repair', **node.args)
    assert r['changed'] and r['written'] == [node.dropin] and r['left'] == []
    assert r['repaired'] == [dict(key='cri.default_runtime_name', path=RT3 + '.default_runtime_name',
                                  file=node.dropin, change='added', before='crun', after=None)]
    # only that key went: the drop-in's runtime stays; config.toml is untouched; nothing drifts any more
    assert node.read(node.dropin) == CRUN.replace("    default_runtime_name = 'crun'\n", '')
    assert node.read() == main
    assert r['effective_drift'] == []
    assert [w for w in r['warnings'] if 'the repair was written to' in w] == [
        '%s: the repair was written to %s, which decides cri.default_runtime_name; the program that writes that '
        'drop-in (e.g. the NVIDIA toolkit with --set-as-default) may write it again: configure it not to, or run '
        'the repair again after it' % (node.path, node.dropin)]
    again = node.run(state='repair', **node.args)
    assert not again['changed'] and again['written'] == [] and again['repaired'] == []


def test_check_mode_repair_judges_the_candidate_dropin_and_writes_nothing(node):
    _without_default(node)
    node.run(**node.args)
    node.write(CRUN, node.dropin)
    before = (node.read(), node.read(node.dropin))
    r = node.run(state='repair', check=True, **node.args)
    assert r['changed'] and (node.read(), node.read(node.dropin)) == before
    assert [(x['key'], x['file'], x['after']) for x in r['repaired']] == [
        ('cri.default_runtime_name', node.dropin, None)]
    # what containerd would run with the candidate drop-in: its default again, nothing left
    assert r['effective_drift'] == [] and r['left'] == []
    (rec,) = [e for e in r['effective'] if e['key'] == 'cri.default_runtime_name']
    assert (rec['value'], rec['default']) == ('runc', True)


def test_edit_in_config_leaves_what_a_dropin_decides_and_says_where(node):
    node.run(**node.args)
    node.write(CRUN, node.dropin)
    before = node.read(node.dropin)
    r = node.run(state='repair', edit_in='config', **node.args)
    assert not r['changed'] and node.read(node.dropin) == before and r['repaired'] == []
    (left,) = r['left']
    assert left['key'] == 'cri.default_runtime_name' and left['file'] == node.dropin
    assert left['why'].endswith('; edit_in: config keeps the repair in %s, and %s decides this key (edit_in: auto '
                                'repairs it there)' % (node.path, node.dropin))
    assert ['repair left cri.default_runtime_name (%s): %s' % (node.dropin, left['why'])] == [
        w for w in r['warnings'] if w.startswith('repair left')]


def test_a_repair_of_both_files_reports_both_diffs_and_both_writes(node):
    node.run(**node.args)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    node.write(CRUN, node.dropin)
    r = node.run(state='repair', diff=True, **node.args)
    assert r['written'] == [node.path, node.dropin]
    assert [(x['key'], x['file']) for x in r['repaired']] == [('cri.runtimes.runc', node.path),
                                                              ('cri.default_runtime_name', node.dropin)]
    assert isinstance(r['diff'], list) and len(r['diff']) == 2
    assert "default_runtime_name = 'runc'" in r['diff'][1]['after']
    assert 'SystemdCgroup = true' in node.read() and "default_runtime_name = 'runc'" in node.read(node.dropin)


def test_a_repair_of_config_toml_alone_reports_one_diff(node):
    node.run(**node.args)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    r = node.run(state='repair', diff=True, **node.args)
    assert r['written'] == [node.path] and isinstance(r['diff'], dict)
    assert 'SystemdCgroup = true' in r['diff']['after'] and 'SystemdCgroup = false' in r['diff']['before']


def test_a_refused_dropin_repair_says_what_was_repaired_before_it(node):
    node.run(**node.args)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    node.write(CRUN, node.dropin)
    # the drop-in's own ledger is damaged: its transaction refuses to start
    lpath = ledger_path_for(node.state_dir, node.dropin)
    os.makedirs(os.path.dirname(lpath), exist_ok=True)
    with open(lpath, 'w') as f:
        f.write('{"records": [')
    r = node.run(state='repair', expect_fail=True, **node.args)
    assert r['msg'].startswith('%s was repaired as far as it goes (cri.runtimes.runc); the repair of %s, which '
                               'decides cri.default_runtime_name, was refused: ' % (node.path, node.dropin))
    assert r['written'] == [node.path] and [x['key'] for x in r['repaired']] == ['cri.runtimes.runc']
    assert r['restored_keys'] == [dict(key='cri.runtimes.runc', path=RT3 + '.runtimes.runc', change='changed')]
    assert 'SystemdCgroup = true' in node.read() and node.read(node.dropin) == CRUN


def test_a_refused_dropin_repair_with_nothing_to_do_in_config_toml_says_so(node):
    node.run(**node.args)
    node.write(CRUN, node.dropin)
    lpath = ledger_path_for(node.state_dir, node.dropin)
    os.makedirs(os.path.dirname(lpath), exist_ok=True)
    with open(lpath, 'w') as f:
        f.write('not json')
    r = node.run(state='repair', expect_fail=True, **node.args)
    assert r['msg'].startswith('%s was repaired as far as it goes (nothing to do there); the repair of %s'
                               % (node.path, node.dropin))
    assert r['written'] == [] and r['repaired'] == []


def test_a_baseline_copy_that_is_no_config_is_named_before_anything_is_read(node):
    hand_made_baseline(node, b'version = 1\n')
    before = node.read()
    r = node.run(state='repair', expect_fail=True, **node.args)
    assert r['msg'].startswith("the copy of %s in baseline 'default' cannot be read as a config: %s declares "
                               "version = 1" % (node.path, node.path))
    assert node.read() == before


def _runc_without_options(node):
    """config.toml's runc loses its options (SystemdCgroup and BinaryName): a protected drift in config.toml."""
    node.write(node.read().replace("            BinaryName = ''\n            SystemdCgroup = true\n", ''))


def _options_dropin(node, name, **keys):
    body = ''.join("        %s = %s\n" % (k, v) for k, v in sorted(keys.items()))
    head = "version = 3\n[plugins]\n  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
    return node.write(head + body, os.path.join(node.conf_d, name))


def test_a_key_two_dropins_already_set_as_the_baseline_had_it_is_left_in_config_toml(node):
    # containerd runs the baseline's runc (the drop-ins set its options); writing them into config.toml too
    # would change nothing containerd runs, and two files would then hold what one owner should
    node.run(**node.args)
    _runc_without_options(node)
    a = _options_dropin(node, '10-cgroup.toml', SystemdCgroup='true')
    b = _options_dropin(node, '20-binary.toml', BinaryName="''")
    held = node.read()
    r = node.run(state='repair', protect=['cri.runtimes.runc'], **node.args)
    assert not r['changed'] and node.read() == held and r['repaired'] == [] and r['effective_drift'] == []
    (left,) = r['left']
    assert (left['key'], left['file'], left['shadowed_by']) == ('cri.runtimes.runc', node.path, a)
    assert left['why'].endswith('would have no effect: several drop-ins set it too (%s, %s). Left as it is (it '
                                'comes into effect again if that file goes: state: restore puts the whole baseline '
                                'back)' % (a, b))


def test_a_key_one_dropin_already_sets_as_the_baseline_had_it_is_put_back_in_config_toml(node):
    node.run(**node.args)
    _runc_without_options(node)
    _options_dropin(node, '10-runc.toml', SystemdCgroup='true', BinaryName="''")
    r = node.run(state='repair', protect=['cri.runtimes.runc'], **node.args)
    assert r['changed'] and r['written'] == [node.path] and r['left'] == []
    assert [(x['key'], x['file'], x['change']) for x in r['repaired']] == [('cri.runtimes.runc', node.path, 'changed')]
    assert "BinaryName = ''" in node.read() and 'SystemdCgroup = true' in node.read()


def _dump_controlled(node, tmp_path, version_out):
    """A stand-in containerd whose config dump prints the file dump.toml (a copy of config.toml to start)."""
    dump = tmp_path / 'dump.toml'
    dump.write_text(node.read())
    os.makedirs(str(tmp_path / 'bin'))
    return stub_containerd(tmp_path / 'bin', version_out=version_out, dump_file=dump), dump


def test_what_containerd_runs_against_config_toml_is_left_to_restore(tmp_path, capsys):
    # containerd (its dump) runs another default than config.toml says: no file of the tree to put it in
    node = Node(tmp_path, capsys)
    binary, dump = _dump_controlled(node, tmp_path, 'containerd github.com/containerd/containerd v1.6.99 x')
    args = dict(containerd_bin=binary, validate='auto')
    node.run(**args)
    dump.write_text(node.read().replace('default_runtime_name = "runc"', 'default_runtime_name = "crun"'))
    held = node.read()
    r = node.run(state='repair', **args)
    assert not r['changed'] and node.read() == held and r['repaired'] == []
    (left,) = r['left']
    assert (left['key'], left['compared'], left['after']) == ('cri.default_runtime_name', 'config dump', 'crun')
    assert left['why'].endswith("; the value in effect comes from %s, and putting the baseline's value there would "
                                "not make containerd run it. Left as it is: state: restore puts back the whole "
                                "baseline" % node.path)


def test_a_dropin_already_holding_the_baseline_value_is_left_unchanged_and_the_drift_reported(tmp_path, capsys):
    # the drop-in sets the baseline's default, yet containerd (its dump) runs another: the drop-in is not
    # rewritten for it, and the drift is still reported with why
    n = Node(tmp_path, capsys, text='v3_default.toml')
    conf_d = os.path.join(n.etc, 'conf.d')
    os.makedirs(conf_d)
    n.write(n.read().replace('imports = []', 'imports = ["%s/*.toml"]' % conf_d))
    binary, dump = _dump_controlled(n, tmp_path, 'containerd github.com/containerd/containerd/v2 v2.1.99 x')
    args = dict(containerd_bin=binary, validate='auto')
    n.run(**args)
    dropin = n.write("version = 3\n[plugins]\n  [plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
                     "    default_runtime_name = 'runc'\n", os.path.join(conf_d, '50-x.toml'))
    held = n.read(dropin)
    dump.write_text(n.read().replace("default_runtime_name = 'runc'", "default_runtime_name = 'crun'"))
    r = n.run(state='repair', **args)
    assert not r['changed'] and r['written'] == [] and r['repaired'] == [] and n.read(dropin) == held
    (left,) = r['left']
    assert (left['key'], left['file'], left['after']) == ('cri.default_runtime_name', dropin, 'crun')
    assert left['why'].endswith('; the repair did not change that')
    assert 'repair left cri.default_runtime_name (%s): %s' % (dropin, left['why']) in r['warnings']


def test_a_default_from_a_dropin_gone_since_is_left_and_a_dropins_runc_is_repaired_from_config_tomls_text(node):
    # the baseline ran crun, set by a drop-in that is gone now; another drop-in turned runc's cgroup off
    node.write(CRUN, node.dropin)
    node.run(**node.args)
    os.unlink(node.dropin)
    cgroup = node.write("version = 3\n[plugins]\n  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc."
                        "options]\n    SystemdCgroup = false\n", os.path.join(node.conf_d, '60-cgroup.toml'))
    r = node.run(state='repair', **node.args)
    assert r['written'] == [cgroup]
    assert [(x['key'], x['file']) for x in r['repaired']] == [('cri.runtimes.runc', cgroup)]
    # runc's keys come back as config.toml (the baseline's source) writes them: single quotes and all
    assert "runtime_type = 'io.containerd.runc.v2'" in node.read(cgroup) and 'SystemdCgroup = true' in node.read(cgroup)
    (left,) = r['left']
    assert left['key'] == 'cri.default_runtime_name' and left['before_file'] == node.dropin
    assert left['why'].endswith("; the baseline's value came from %s, which containerd no longer loads. Left as it "
                                "is: state: restore puts that file back" % node.dropin)


def _tree_with_a_cri_dropin_v2(n):
    """containerd 1.6: config.toml (v2) imports conf.d; 99-cri.toml holds the whole CRI table, which replaces
    config.toml's."""
    conf_d = os.path.join(n.etc, 'conf.d')
    os.makedirs(conf_d)
    kubeadm = n.read()
    n.write(kubeadm.replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    cri = kubeadm[kubeadm.index('  [plugins."io.containerd.grpc.v1.cri"]'):kubeadm.index('# Metrics')]
    # the drop-in's runc runs without the systemd cgroup driver
    return n.write('version = 2\n[plugins]\n' + cri.replace('SystemdCgroup = true', 'SystemdCgroup = false'),
                   os.path.join(conf_d, '99-cri.toml'))


def test_on_containerd_1_a_change_hidden_by_the_dropins_table_is_left_with_why(tmp_path, capsys):
    n = Node(tmp_path, capsys)
    dropin = _tree_with_a_cri_dropin_v2(n)
    n.run()
    n.write(n.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    held = n.read()
    r = n.run(state='repair')
    assert not r['changed'] and n.read() == held and r['repaired'] == []
    (left,) = r['left']
    assert (left['key'], left['file'], left['shadowed_by']) == ('cri.runtimes.runc', n.path, dropin)
    assert 'putting it back there would have no effect: %s defines plugins."io.containerd.grpc.v1.cri" too' % dropin \
        in left['why']


def test_on_containerd_1_a_dropins_table_without_the_default_gets_the_baselines_default(tmp_path, capsys):
    # config.toml ran crun by default; a drop-in since carries the whole CRI table without a default, which
    # on 1.x replaces config.toml's: containerd falls back to runc.  The default goes back into the drop-in,
    # written as config.toml (where the baseline's value came from) writes it.
    n = Node(tmp_path, capsys)
    crun = ('\n        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]\n'
            '          runtime_type = "io.containerd.runc.v2"\n')
    cni = '\n    [plugins."io.containerd.grpc.v1.cri".cni]'
    n.write(n.read().replace('default_runtime_name = "runc"', "default_runtime_name = 'crun'").replace(cni, crun + cni))
    kubeadm = n.read()
    n.run()
    conf_d = os.path.join(n.etc, 'conf.d')
    os.makedirs(conf_d)
    cri = kubeadm[kubeadm.index('  [plugins."io.containerd.grpc.v1.cri"]'):kubeadm.index('# Metrics')]
    dropin = n.write('version = 2\n[plugins]\n' + cri.replace("      default_runtime_name = 'crun'\n", ''),
                     os.path.join(conf_d, '99-cri.toml'))
    n.write(kubeadm.replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\n' % conf_d))
    r = n.run(state='repair', protect=['cri.default_runtime_name'])
    assert r['written'] == [dropin] and r['left'] == []
    assert r['repaired'] == [dict(key='cri.default_runtime_name', file=dropin, change='removed', before=None,
                                  after='crun', path='plugins."io.containerd.grpc.v1.cri".containerd'
                                                     '.default_runtime_name')]
    assert "default_runtime_name = 'crun'" in n.read(dropin) and r['effective_drift'] == []


def test_repair_of_a_baseline_without_a_config_has_nothing_to_put_back(tmp_path, capsys):
    n = Node(tmp_path, capsys, text=None)
    n.run()
    n.write('v2_kubeadm.toml')
    r = n.run(state='repair', expect_fail=True)
    assert r['msg'] == ("baseline 'default' recorded that %s did not exist when it was taken, so it has no keys to "
                        "put back. Nothing was written." % n.path)


def test_a_bad_protect_entry_fails_before_the_config_is_touched(tmp_path, capsys):
    n = Node(tmp_path, capsys)
    n.run()
    n.write(n.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    held = n.read()
    r = n.run(state='repair', protect=['cri.runtimes.runc', 'a.""'], expect_fail=True)
    assert r['msg'] == 'protect entry \'a.""\' is empty.' and n.read() == held


def test_a_refused_repair_of_config_toml_fails_the_task(tmp_path, capsys):
    n = Node(tmp_path, capsys)
    n.run()
    n.write(n.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    held = n.read()
    lpath = ledger_path_for(n.state_dir, n.path)
    os.makedirs(os.path.dirname(lpath), exist_ok=True)
    with open(lpath, 'w') as f:
        f.write('{"records": [')
    r = n.run(state='repair', expect_fail=True)
    assert 'is damaged' in r['msg'] and n.read() == held


def test_the_result_names_each_load_test_once_under_load_test(tmp_path, capsys):
    # the stand-in's --version fails: the load test of the repaired file cannot run, which is said
    n = Node(tmp_path, capsys)
    binary = stub_containerd(tmp_path, version_rc=1)
    args = dict(containerd_bin=binary, validate='auto', load_test=True)
    n.run(**args)
    n.write(n.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    r = n.run(state='repair', **args)
    assert r['changed'] and 'load_tested' not in r
    (tested,) = r['load_test']
    (note,) = [x for x in tested['notes'] if x.startswith('load test could not run')]
    assert '%s: %s; the result was judged without it' % (n.path, note) in r['warnings']


RUNTIME_V3 = "plugins.'io.containerd.cri.v1.runtime'"


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
