# -*- coding: utf-8 -*-
"""state: check of containerd_baseline (_baseline_states.do_check), in process.

What check says for each way the node can differ from its baseline: a
config that is gone (and was gone when the baseline was taken), one that
lost its version line, an imports list that is no list, a protected key
changed in config.toml where a drop-in decides what containerd runs (not in
effect) next to one that is in effect, and a node that matches.
"""

import os

from helpers.baseline import Node, hand_made_baseline
from helpers.common import CONTAINERD_2

KUBEADM_RUNC_CGROUP = 'SystemdCgroup = true'


def test_a_node_that_matches_its_baseline_passes_and_names_the_protected_paths(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    r = node.run(state='check', protect=['cri.runtimes.runc', 'oom_score'])
    assert r['changed'] is False and r['drifted'] is False and r['problems'] == [] and r['effective_drift'] == []
    assert r['protect'] == [dict(key='cri.runtimes.runc',
                                 path='plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc'),
                            dict(key='oom_score', path='oom_score')]
    assert 'msg' not in r


def test_a_config_missing_then_and_now_is_only_said_to_be_missing(tmp_path, capsys):
    # restore cannot put back a config the baseline never had: no "Fix: state: restore" advice
    node = Node(tmp_path, capsys, text=None)
    node.run()
    r = node.run(state='check', expect_fail=True)
    assert r['msg'] == '%s does not exist' % node.path
    assert r['problems'] == [r['msg']] and r['protected_drift'] is None


def test_a_config_that_lost_its_version_line_is_named_and_not_compared(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read().replace('version = 2\n', ''))
    r = node.run(state='check', expect_fail=True)
    assert r['msg'].startswith('%s has no "version" key' % node.path)
    assert r['problems'] == [r['msg']]
    assert r['drift'] is None and r['protected_drift'] is None


def test_an_imports_entry_that_is_no_string_is_a_problem_the_check_fails_on(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    node.run()
    node.write(node.read().replace('version = 2\n', 'version = 2\nimports = [7]\n'))
    r = node.run(state='check', expect_fail=True)
    problem = '%s: imports entry 7 is not a string' % node.path
    assert problem in r['problems']
    assert r['msg'].startswith('%s would not load: %s' % (node.path, problem))
    assert r['drifted'] is True and r['protected_drift'] == [] and r['effective_drift'] == []


def _tree_with_a_cri_dropin(node):
    """config.toml imports conf.d/*.toml; 99-cri.toml holds the whole CRI table (containerd 1.x takes
    the drop-in's table instead of config.toml's)."""
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    kubeadm = node.read()
    node.write(kubeadm.replace('version = 2\n', 'version = 2\nimports = ["%s/*.toml"]\noom_score = 0\n' % conf_d))
    cri = kubeadm[kubeadm.index('  [plugins."io.containerd.grpc.v1.cri"]'):kubeadm.index('# Metrics')]
    dropin = node.write('version = 2\n[plugins]\n' + cri, os.path.join(conf_d, '99-cri.toml'))
    return dropin


def test_protected_drift_hidden_by_a_dropin_is_told_apart_from_drift_in_effect(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    dropin = _tree_with_a_cri_dropin(node)
    node.run()
    # config.toml's runc and oom_score change; containerd 1.6 runs the drop-in's runc, config.toml's oom_score
    text = node.read().replace(KUBEADM_RUNC_CGROUP, 'SystemdCgroup = false')
    text = text.replace('oom_score = 0', 'oom_score = -999')
    node.write(text)
    r = node.run(state='check', protect=['cri.runtimes.runc', 'oom_score'], expect_fail=True)
    by_key = dict((e['key'], e) for e in r['protected_drift'])
    assert by_key['cri.runtimes.runc']['in_effect'] is False
    assert by_key['cri.runtimes.runc']['shadowed_by'] == dropin
    assert by_key['oom_score']['in_effect'] is True and 'shadowed_by' not in by_key['oom_score']
    assert ('(cri.runtimes.runc: not what containerd runs now, because of %s; it would be once that file goes)'
            % dropin) in r['msg']
    # only oom_score changed what containerd runs
    assert [d['key'] for d in r['effective_drift']] == ['oom_score']
    assert r['msg'].startswith("what containerd runs drifted from baseline 'default' (taken %s): oom_score is "
                               "changed" % r['created'])


def test_a_baseline_copy_of_an_unknown_version_is_compared_in_the_current_files_layout(tmp_path, capsys):
    # a store written by hand (or an older tool): its copy declares version 1; the keys are looked up
    # where the current version 2 file keeps them
    node = Node(tmp_path, capsys)
    hand_made_baseline(node, b'version = 1\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                             b'default_runtime_name = "crun"\n')
    r = node.run(state='check', protect=['cri.default_runtime_name'], expect_fail=True)
    (d,) = r['protected_drift']
    assert (d['key'], d['change'], d['before'], d['after']) == ('cri.default_runtime_name', 'changed', 'crun', 'runc')
    # its effective value is read from the stored copy in the version 2 layout too
    assert [(e['key'], e['before'], e['after']) for e in r['effective_drift']] == [
        ('cri.default_runtime_name', 'crun', 'runc')]


def test_a_change_in_config_toml_that_containerd_2_runs_is_in_effect_though_a_dropin_wrote_the_plugin_last(
        tmp_path, capsys):
    # containerd 2.x merges: the drop-in adds a CRI setting, config.toml's runc is still what runs
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    node = Node(tmp_path, capsys, text='v3_default.toml')
    conf_d = os.path.join(node.etc, 'conf.d')
    os.makedirs(conf_d)
    node.write(node.read().replace('imports = []', 'imports = ["%s/*.toml"]' % conf_d))
    dropin = node.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n",
                        os.path.join(conf_d, '50-cdi.toml'))
    node.run(containerd_bin=CONTAINERD_2)
    node.write(node.read().replace('SystemdCgroup = true', 'SystemdCgroup = false'))
    r = node.run(state='check', containerd_bin=CONTAINERD_2, expect_fail=True)
    (runc,) = [e for e in r['effective'] if e['key'] == 'cri.runtimes.runc']
    assert (runc['file'], runc['owner']) == (node.path, dropin)
    (d,) = r['protected_drift']
    assert d['key'] == 'cri.runtimes.runc' and d['in_effect'] is True and 'shadowed_by' not in d
    assert 'not what containerd runs now' not in r['msg']


def test_a_config_gone_since_the_baseline_says_restore_puts_it_back(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    taken = node.run()
    os.unlink(node.path)
    r = node.run(state='check', expect_fail=True)
    assert r['msg'] == ("%s does not exist (it did when baseline 'default' (taken %s) was taken). Fix: state: "
                        "restore puts it back." % (node.path, taken['created']))
    assert r['drift']['files']['removed'] == [node.path]


def test_a_config_that_is_no_longer_toml_says_restore_puts_back_the_bytes(tmp_path, capsys):
    node = Node(tmp_path, capsys)
    taken = node.run()
    node.write('version = 2\n[plugins\n')
    r = node.run(state='check', expect_fail=True)
    assert 'not valid TOML' in r['msg']
    assert r['msg'].endswith(". Fix: state: restore puts back baseline 'default' (taken %s) byte for byte."
                             % taken['created'])


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
