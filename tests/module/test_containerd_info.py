# -*- coding: utf-8 -*-
"""containerd_info: read-only facts, run as Ansible runs it, checked against
the real containerd 1.6, 1.7 and 2.1 binaries' own `config dump`.

Every test also proves the module wrote nothing: the bytes of every file
under the test's folder (config tree, state dir, baseline store) and the
folder listings are the same before and after, and no lock file appears.
"""

import json
import os
import re
import subprocess
import sys

import pytest
import tomlkit

from helpers.common import (
    COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, REPO, assert_containerd_accepts,
    config_dump, nvidia_tree, read, without_containerd)
from helpers.readiness import fake_journalctl

MOD = 'containerd_info'
V2_CRI = 'io.containerd.grpc.v1.cri'
V3_RT = 'io.containerd.cri.v1.runtime'
V3_IMAGES = 'io.containerd.cri.v1.images'
KATA_TYPE = 'io.containerd.kata-qemu.v2'


def tree_state(workdir):
    """Every folder listing and file's bytes under workdir (the module's own ansible-tmp args files aside)."""
    out = {}
    for root, dirs, files in os.walk(workdir):
        dirs[:] = sorted(d for d in dirs if not (root == workdir and d == 'ansible-tmp'))
        rel = os.path.relpath(root, workdir)
        out[rel + '/'] = (sorted(dirs), sorted(files))
        for name in files:
            full = os.path.join(root, name)
            st = os.lstat(full)
            out[os.path.join(rel, name)] = (read(full, 'rb'), st.st_mode, st.st_mtime_ns)
    return out


@pytest.fixture
def info(run_module, workdir):
    """containerd_info, in normal and check mode: the same result, and nothing under workdir changed."""
    def call(expect_fail=False, **args):
        before = tree_state(workdir)
        res = run_module(MOD, expect_fail=expect_fail, **args)
        after = tree_state(workdir)
        assert after == before, 'containerd_info changed files: %s' % sorted(
            k for k in set(before) | set(after) if before.get(k) != after.get(k))
        checked = run_module(MOD, check=True, expect_fail=expect_fail, **args)
        assert tree_state(workdir) == before
        assert not res.get('changed') and not checked.get('changed')
        for r in (res, checked):
            r.pop('invocation', None)
        assert checked == res, 'check mode gives another result'
        return res
    return call


def dump(path, binary):
    return tomlkit.parse(assert_containerd_accepts(path, binary)).unwrap()


def state_ledger(state_dir, config_path):
    name = os.path.abspath(config_path).strip('/').replace('%', '%25').replace('/', '%2F')
    return json.loads(read(os.path.join(state_dir, 'ledger', name + '.json')))


# ------------------------------------------------------------------ the NVIDIA toolkit's drop-in
@pytest.mark.parametrize('label', ['1.6', '1.7'])
def test_1x_runtimes_and_default_come_from_the_dropin_that_replaces_the_cri_table(info, workdir, label):
    binary = dict([('1.6', CONTAINERD_1), ('1.7', CONTAINERD_17)])[label]
    assert binary, 'run make deps'
    main, dropin = nvidia_tree(workdir, 'c16')
    res = info(path=main, containerd_bin=binary)
    assert res['containerd']['bin'] == binary and res['containerd']['major_minor'] == label
    assert res['containerd']['version'].startswith(label + '.') and res['containerd']['known_from'] == 'binary'
    assert res['config']['exists'] and res['config']['version'] == 2
    assert len(res['config']['sha256']) == 64
    assert res['imports']['files'] == [main, dropin]
    [entry] = res['imports']['entries']
    assert entry['glob'] and entry['files'] == [dropin] and not entry['missing'] and not entry['duplicate']
    assert entry['imported_by'] == main and entry['resolved'] == os.path.join(workdir, 'etc', 'conf.d', '*.toml')
    assert res['cri_plugin_ids'] == [V2_CRI]
    assert res['cri_plugin_files'][V2_CRI] == dropin

    merged = dump(main, binary)['plugins'][V2_CRI]['containerd']
    assert res['default_runtime'] == dict(name='nvidia', file=dropin, default=False, exists=True)
    assert merged['default_runtime_name'] == 'nvidia'
    assert sorted(res['runtimes']) == sorted(merged['runtimes']) == ['nvidia', 'nvidia-cdi', 'nvidia-legacy', 'runc']
    for name, rt in res['runtimes'].items():
        assert rt['file'] == dropin and rt['files'] == [dropin] and not rt['builtin'], name
        assert rt['BinaryName'] == merged['runtimes'][name]['options']['BinaryName']
        assert rt['SystemdCgroup'] is merged['runtimes'][name]['options']['SystemdCgroup'] is True
        assert rt['runtime_type'] == merged['runtimes'][name]['runtime_type'] == 'io.containerd.runc.v2'
        assert rt['privileged_without_host_devices'] is False and rt['ConfigPath'] is None
    assert res['runtimes']['nvidia']['BinaryName'] == '/usr/local/nvidia/toolkit/nvidia-container-runtime'
    assert res['dump_confirmed'] is True and res['dump_disagreements'] == [] and res['dump_error'] is None
    assert res['problems'] == [] and res['ledgers'] == []


def test_2x_runtimes_deep_merge_and_the_later_file_wins(info, workdir):
    assert CONTAINERD_2, 'run make deps'
    main, dropin = nvidia_tree(workdir, 'c2')
    res = info(path=main, containerd_bin=CONTAINERD_2)
    assert res['containerd']['major_minor'] == '2.1' and res['config']['version'] == 3
    assert res['cri_plugin_ids'] == [V3_RT, V3_IMAGES, V2_CRI]
    # deep merge: the drop-in decides the runtime plugin's keys it sets, the images table stays config.toml's
    assert res['cri_plugin_files'] == {V3_RT: dropin, V3_IMAGES: main, V2_CRI: main}
    merged = dump(main, CONTAINERD_2)['plugins'][V3_RT]['containerd']
    assert res['default_runtime'] == dict(name='nvidia', file=dropin, default=False, exists=True)
    assert merged['default_runtime_name'] == 'nvidia'
    assert sorted(res['runtimes']) == sorted(merged['runtimes'])
    # the drop-in's copy of runc sets every key config.toml's does: each merged value is the drop-in's
    assert res['runtimes']['runc']['files'] == [dropin] and res['runtimes']['runc']['file'] == dropin
    assert res['runtimes']['nvidia']['files'] == [dropin]
    for name, rt in res['runtimes'].items():
        assert rt['BinaryName'] == merged['runtimes'][name]['options']['BinaryName']
        assert rt['SystemdCgroup'] is True and rt['table']['sandboxer'] == 'podsandbox'
    assert res['dump_confirmed'] is True and res['dump_disagreements'] == [] and res['problems'] == []


def test_2x_builtin_runc_and_a_runtime_defined_only_in_a_dropin(info, workdir):
    """2.x runs its built-in runc under any config; a kata drop-in only adds its handler."""
    assert CONTAINERD_2, 'run make deps'
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write('version = 3\nimports = ["conf.d/*.toml"]\n')
    kata = os.path.join(etc, 'conf.d', 'kata.toml')
    with open(kata, 'w') as f:
        f.write('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata-qemu]\n'
                'runtime_type = "%s"\nruntime_path = "/opt/kata/bin/containerd-shim-kata-v2"\n'
                'privileged_without_host_devices = true\n'
                '[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata-qemu.options]\n'
                'ConfigPath = "/opt/kata/share/defaults/kata-containers/configuration-qemu.toml"\n' % KATA_TYPE)
    res = info(path=main, containerd_bin=CONTAINERD_2)
    merged = dump(main, CONTAINERD_2)['plugins'][V3_RT]['containerd']
    assert sorted(res['runtimes']) == sorted(merged['runtimes']) == ['kata-qemu', 'runc']
    assert res['runtimes']['runc']['builtin'] and res['runtimes']['runc']['file'] is None
    k = res['runtimes']['kata-qemu']
    assert (k['file'], k['runtime_type'], k['runtime_path'], k['privileged_without_host_devices']) == (
        kata, KATA_TYPE, '/opt/kata/bin/containerd-shim-kata-v2', True)
    assert k['ConfigPath'] == merged['runtimes']['kata-qemu']['options']['ConfigPath']
    assert res['default_runtime'] == dict(name='runc', file=None, default=True, exists=True)
    assert merged['default_runtime_name'] == 'runc'
    assert res['dump_confirmed'] is True, res['dump_disagreements']


def test_a_key_the_nodes_containerd_drops_is_a_dump_disagreement(info, config):
    """1.6 does not know a runtime's sandboxer (2.x): the model keeps it, config dump does not."""
    path = config('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                  'runtime_type = "io.containerd.runc.v2"\nsandboxer = "podsandbox"\n')
    assert 'sandboxer' not in dump(path, CONTAINERD_1)['plugins'][V2_CRI]['containerd']['runtimes']['runc']
    res = info(path=path, containerd_bin=CONTAINERD_1)
    assert res['runtimes']['runc']['table']['sandboxer'] == 'podsandbox'
    assert res['dump_confirmed'] is False
    [d] = res['dump_disagreements']
    assert d['key'].endswith('runtimes.runc.sandboxer') and d['model'] == 'podsandbox' and d['dump'] is None
    no_dump = info(path=path, containerd_bin=CONTAINERD_1, dump=False)
    assert no_dump['dump_confirmed'] is None and no_dump['dump_disagreements'] == []
    assert 'dump: false' in no_dump['dump_error']


def test_2x_drops_the_runtime_keys_containerd_2_removed(info, config):
    """A version 2 kubeadm config on 2.1: runtime_engine and runtime_root are gone from containerd 2.0."""
    assert CONTAINERD_2, 'run make deps'
    path = config('v2_kubeadm.toml')
    res = info(path=path, containerd_bin=CONTAINERD_2)
    assert res['cri_plugin_ids'][0] == V3_RT and res['runtimes']['runc']['SystemdCgroup'] is True
    runc = dump(path, CONTAINERD_2)['plugins'][V3_RT]['containerd']['runtimes']['runc']
    assert 'runtime_engine' not in runc and runc['options']['SystemdCgroup'] is True
    assert res['dump_confirmed'] is False
    keys = sorted(d['key'].rsplit('.', 1)[-1] for d in res['dump_disagreements'])
    assert keys == ['runtime_engine', 'runtime_root'], res['dump_disagreements']
    assert all('unknown to this containerd' in d['why'] for d in res['dump_disagreements'])


# ------------------------------------------------------------------ imports
def test_missing_and_duplicated_imports_are_reported(info, workdir, config):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    extra = os.path.join(etc, 'conf.d', '10-extra.toml')
    with open(extra, 'w') as f:
        f.write('version = 2\n')
    gone = os.path.join(etc, 'conf.d', 'nydus-snapshotter.toml')
    text = read(os.path.join(FIXTURES, 'v2_kubeadm.toml'))
    path = config('imports = ["%s", "conf.d/10-extra.toml", "%s", "conf.d/none-*.toml"]\n' % (extra, gone) + text)
    res = info(path=path, containerd_bin=CONTAINERD_1)
    assert res['imports']['files'] == [path, extra]
    e = res['imports']['entries']
    assert [x['entry'] for x in e] == [extra, 'conf.d/10-extra.toml', gone, 'conf.d/none-*.toml']
    assert [x['duplicate'] for x in e] == [False, True, False, False]
    assert [x['missing'] for x in e] == [False, False, True, False]
    assert e[3]['glob'] and e[3]['files'] == [] and e[1]['resolved'] == extra
    assert res['imports']['duplicates'] == [dict(entry='conf.d/10-extra.toml', resolved=extra, imported_by=path)]
    assert res['imports']['missing'] == [dict(entry=gone, path=gone, imported_by=path)]
    assert any(gone in p and 'cannot be read' in p for p in res['imports']['problems'])
    assert any(gone in p for p in res['problems'])
    assert e[2]['problems'] and gone in e[2]['problems'][0]
    # containerd 1.6 itself refuses the tree: the dump fails and says why
    rc, _out, err = config_dump(path, CONTAINERD_1)
    assert rc != 0
    assert res['dump_confirmed'] is False and 'config dump failed' in res['dump_error']
    assert 'no such file or directory' in res['dump_error']
    # the runtimes are still reported from the files that load
    assert res['default_runtime'] == dict(name='runc', file=path, default=False, exists=True)
    assert res['runtimes']['runc']['SystemdCgroup'] is True


# ------------------------------------------------------------------ version 1 and broken files
def test_version_1_config_is_reported_with_a_problem(info, config):
    path = config('v1_legacy.toml')
    res = info(path=path, containerd_bin=CONTAINERD_1)
    assert res['config']['version'] == 1 and res['config']['exists']
    assert any('version 1' in p and path in p for p in res['problems']), res['problems']
    # containerd 1.6 reads plugins.cri as the version 2 CRI table
    assert res['default_runtime']['name'] == 'runc' and res['runtimes']['runc']['file'] == path


@pytest.mark.parametrize('where', ['config', 'dropin'])
def test_a_file_that_is_not_toml_fails_naming_it_and_the_parse_error(info, workdir, config, where):
    bad = 'version = 2\n[plugins\nx = 1\n'
    if where == 'config':
        path = target = config(bad)
    else:
        target = config(bad, filename='broken.toml')
        path = config('version = 2\nimports = ["broken.toml"]\n')
    res = info(path=path, containerd_bin=CONTAINERD_1, expect_fail=True)
    assert target in res['msg'] and 'is not valid TOML' in res['msg'] and 'line' in res['msg'], res['msg']
    assert res['config']['path'] == path


def test_missing_config_reports_containerd_defaults(info, workdir):
    path = os.path.join(workdir, 'etc', 'config.toml')
    os.makedirs(os.path.dirname(path))
    res = info(path=path, containerd_bin=CONTAINERD_1)
    assert res['config'] == dict(path=path, exists=False, version=None, sha256=None, generated_by=None)
    assert res['imports']['files'] == [] and res['ledgers'] == []
    assert res['runtimes']['runc']['builtin'] and res['default_runtime']['name'] == 'runc'
    assert res['dump_confirmed'] is None and any('does not exist' in p for p in res['problems'])


def test_no_binary_uses_containerd_version_and_says_the_dump_did_not_run(info, config, tmp_path):
    path = config('v2_kubeadm.toml')
    hide, env = without_containerd(tmp_path)
    res = info(path=path, containerd_version='1.7', env=env, prefix=hide)
    assert res['containerd'] == dict(bin=None, version='1.7', major_minor='1.7', known_from='containerd_version')
    assert res['dump_confirmed'] is None and 'no containerd binary' in res['dump_error']
    assert res['default_runtime'] == dict(name='runc', file=path, default=False, exists=True)


# ------------------------------------------------------------------ ledgers
def test_ledger_records_by_owner_after_real_edits(info, run_module, workdir):
    """containerd_runtime on the 1.6 NVIDIA layout writes kata into the drop-in; a setting goes to config.toml too."""
    main, dropin = nvidia_tree(workdir, 'c16')
    state = run_module.state_dir
    res = run_module('containerd_runtime', path=main, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
                     inherit='none', containerd_bin=CONTAINERD_1)
    assert res['changed'] and res['file'] == dropin
    res = run_module('containerd_imports', path=main, imports=[os.path.join(workdir, 'etc', 'conf.d', '*.toml')],
                     owner='gpu', containerd_bin=CONTAINERD_1)
    got = info(path=main, containerd_bin=CONTAINERD_1)
    by_file = dict((x['file'], x) for x in got['ledgers'])
    assert dropin in by_file
    d = by_file[dropin]
    assert d['ledger_path'] == os.path.join(state, 'ledger', dropin.strip('/').replace('/', '%2F') + '.json')
    assert d['owners'] == ['coco'] and d['in_sync'] is True and d['note'] is None and d['error'] is None
    stored = state_ledger(state, dropin)
    assert d['config_sha256'] == stored['config_sha256']
    [rec] = d['records_by_owner']['coco']
    want = [r for r in stored['records'] if r['owner'] == 'coco']
    assert [dict((k, v) for k, v in rec.items() if k != 'key')] == want
    assert rec['kind'] == 'table' and rec['key'] == 'plugins."%s".containerd.runtimes.kata-qemu' % V2_CRI
    assert 'kata-qemu' in got['runtimes'] and got['runtimes']['kata-qemu']['file'] == dropin
    if main in by_file:  # the imports entry was already there: a record only when the module took it over
        assert set(by_file[main]['owners']) <= set(['gpu'])
    # a foreign edit after the write: the ledger no longer describes the file, and says so
    with open(dropin, 'a') as f:
        f.write('\n# edited by hand\n')
    again = info(path=main, containerd_bin=CONTAINERD_1)
    assert dict((x['file'], x) for x in again['ledgers'])[dropin]['in_sync'] is False


def test_ledger_of_config_toml_lists_each_owner(info, run_module, config):
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit',
               options={'BinaryName': '/usr/bin/nvidia-container-runtime'}, containerd_bin=CONTAINERD_1)
    run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations', value=False,
               owner='coco', containerd_bin=CONTAINERD_1)
    res = info(path=path, containerd_bin=CONTAINERD_1)
    [led] = res['ledgers']
    assert led['file'] == path and led['owners'] == ['coco', 'gpu_toolkit']
    stored = state_ledger(run_module.state_dir, path)['records']
    for owner in ('coco', 'gpu_toolkit'):
        assert [dict((k, v) for k, v in r.items() if k != 'key') for r in led['records_by_owner'][owner]] == \
            [r for r in stored if r['owner'] == owner]
    [key_rec] = led['records_by_owner']['coco']
    assert key_rec['kind'] == 'key' and key_rec['key'].endswith('containerd.disable_snapshot_annotations')
    assert res['runtimes']['nvidia']['BinaryName'] == '/usr/bin/nvidia-container-runtime'
    assert res['runtimes']['nvidia']['SystemdCgroup'] is True  # inherited from runc


def test_ledger_mid_write_gives_the_records_of_the_bytes_read(info, run_module, config):
    """A ledger saved for a config write that never happened (a crash, or another task right before its rename):
    the records returned are those of the file as it is; the ledger file is not touched (the fixture checks)."""
    path = config('v2_kubeadm.toml')
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu_toolkit',
               options={'BinaryName': '/usr/bin/nvidia-container-runtime'}, containerd_bin=CONTAINERD_1)
    state = run_module.state_dir
    name = os.path.abspath(path).strip('/').replace('/', '%2F')
    lpath = os.path.join(state, 'ledger', name + '.json')
    led = json.loads(read(lpath))
    before = dict(config_sha256=led['config_sha256'], records=led['records'])
    led['previous'] = before
    led['config_sha256'] = '0' * 64
    led['records'] = led['records'] + [dict(owner='coco', resource='runtime:kata', kind='table', seq=9,
                                            path=['plugins', V2_CRI, 'containerd', 'runtimes', 'kata'])]
    with open(lpath, 'w') as f:
        json.dump(led, f)
    res = info(path=path, containerd_bin=CONTAINERD_1)
    [got] = res['ledgers']
    assert got['in_sync'] is False and got['note'] and 'rolled the ledger back' in got['note']
    assert got['owners'] == ['gpu_toolkit'] and 'coco' not in got['records_by_owner']
    assert json.loads(read(lpath))['config_sha256'] == '0' * 64


# ------------------------------------------------------------------ drift
def test_drift_against_a_baseline_after_a_hand_edit(info, run_module, workdir, config):
    path = config('v2_kubeadm.toml')
    store = os.path.join(workdir, 'baselines')
    snap = run_module('containerd_baseline', path=path, state='snapshot', store=store, load_test=False,
                      containerd_bin=CONTAINERD_1)
    assert snap['changed']
    clean = info(path=path, containerd_bin=CONTAINERD_1, baseline='default', baseline_store=store)
    assert clean['drift']['drifted'] is False and clean['drift']['effective_drift'] == []
    assert clean['drift']['snapshot'] == snap['snapshot']
    # by hand: runc loses SystemdCgroup, and a new default runtime that has no table
    text = read(path).replace('SystemdCgroup = true', 'SystemdCgroup = false')
    text = text.replace('default_runtime_name = "runc"', 'default_runtime_name = "crun"')
    with open(path, 'w') as f:
        f.write(text)
    res = info(path=path, containerd_bin=CONTAINERD_1, baseline='default', baseline_store=store)
    drift = res['drift']
    assert drift['drifted'] is True and drift['error'] is None
    eff = dict((e['key'], e) for e in drift['effective_drift'])
    assert eff['cri.default_runtime_name']['before'] == 'runc' and eff['cri.default_runtime_name']['after'] == 'crun'
    assert eff['cri.default_runtime_name']['file'] == path
    assert eff['cri.runtimes.runc']['change'] == 'changed'
    changed = dict((c['key'], c) for c in drift['tree']['changed'])
    assert changed['plugins."%s".containerd.runtimes.runc.options.SystemdCgroup' % V2_CRI]['after'] is False
    assert drift['tree']['files']['changed'] == [path]
    assert set(e['key'] for e in drift['protected_drift']) == set(['cri.default_runtime_name', 'cri.runtimes.runc'])
    # the node facts agree: crun is the default and has no table
    assert res['default_runtime'] == dict(name='crun', file=path, default=False, exists=False)
    assert any('crun' in p for p in res['problems'])
    # a baseline that does not exist is an error, not an empty drift
    res = info(path=path, containerd_bin=CONTAINERD_1, baseline='nope', baseline_store=store, expect_fail=True)
    assert 'no baseline' in res['msg']


# ------------------------------------------------------------------ the action group
def test_group_module_defaults_reach_containerd_info(workdir, config):
    """module_defaults for group/nodeguard.containerd.containerd (lock_timeout, validate, backup too) do not break it."""
    path = config('v2_kubeadm.toml')
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write('''
- name: Group defaults
  hosts: localhost
  connection: local
  gather_facts: false
  module_defaults:
    group/nodeguard.containerd.containerd:
      path: {path}
      containerd_bin: {ctd}
      state_dir: {state}
      lock_timeout: 10
      validate: auto
      backup: false
  tasks:
    - name: Facts
      nodeguard.containerd.containerd_info:
      register: ctd
    - name: Check
      ansible.builtin.assert:
        that:
          - ctd.default_runtime.name == 'runc'
          - ctd.runtimes.runc.SystemdCgroup
          - ctd.config.path == '{path}'
          - not ctd.changed
'''.format(path=path, ctd=CONTAINERD_1, state=os.path.join(workdir, 'state')))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r'localhost\s*:\s*ok=2\s+changed=0', proc.stdout), proc.stdout[-2000:]
    assert not os.path.exists(os.path.join(workdir, 'state'))


# ------------------------------------------------------------------ owner and files (the coco role's facts)
def test_owned_by_one_owner_and_named_files(info, run_module, workdir, config):
    """What the coco role reads instead of its node script: one owner's records, its drop-ins, a glob import."""
    path = config('v2_debian_stock.toml')
    etc = os.path.dirname(path)
    dropin = os.path.join(etc, 'conf.d', 'nydus.toml')
    globbed = os.path.join(etc, 'glob.d', 'extra.toml')
    run_module('containerd_dropin', path=path, dropin=dropin, owner='coco',
               content='version = 2\n[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/n.sock"\n')
    run_module('containerd_imports', path=path, imports=[dropin], owner='coco')
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE,
               containerd_bin=CONTAINERD_1)
    run_module('containerd_setting', path=path, key='images.disable_snapshot_annotations', value=False, owner='coco')
    run_module('containerd_runtime', path=path, name='nvidia', owner='gpu', containerd_bin=CONTAINERD_1,
               options={'BinaryName': '/usr/bin/nvidia-container-runtime'})
    os.makedirs(os.path.dirname(globbed))
    with open(globbed, 'w') as f:
        f.write('version = 2\n')
    run_module('containerd_imports', path=path, imports=[os.path.join(etc, 'glob.d', '*.toml')], owner='gpu')
    missing = os.path.join(etc, 'nothing.toml')
    res = info(path=path, owner='coco', files=[dropin, os.path.dirname(dropin), globbed, missing], dump=False)
    owned = res['owned']
    assert owned['runtimes'] == ['kata-qemu'] and owned['tables'] == ['kata-qemu']
    assert owned['settings'] == ['plugins."io.containerd.grpc.v1.cri".containerd.disable_snapshot_annotations']
    assert owned['imports'] == [dropin]
    assert owned['files'] == sorted([dropin, os.path.dirname(dropin)]) and owned['error'] is None
    files = res['files']
    assert files[dropin]['exists'] and files[dropin]['type'] == 'file' and files[dropin]['imported']
    assert files[dropin]['imported_by'] == [path] and files[dropin]['loaded']
    assert files[dropin]['sha256'] and files[dropin]['owners'] == ['coco']
    assert files[os.path.dirname(dropin)]['type'] == 'directory'
    # loaded through a glob, but no plain entry names it: deleting it leaves no dangling import
    assert files[globbed]['loaded'] and not files[globbed]['imported'] and files[globbed]['owners'] == []
    assert files[missing] == dict(path=missing, exists=False, type=None, dangling=False, executable=False, sha256=None,
                                  imported=False, imported_by=[], loaded=False, owners=[])
    gpu = info(path=path, owner='gpu', dump=False)['owned']
    assert gpu['runtimes'] == ['nvidia'] and gpu['imports'] == [os.path.join(etc, 'glob.d', '*.toml')]
    assert 'owned' not in info(path=path, dump=False)


def test_owned_reports_a_damaged_ledger(info, run_module, workdir, config):
    path = config('v2_debian_stock.toml')
    run_module('containerd_runtime', path=path, name='kata-qemu', owner='coco', runtime_type=KATA_TYPE)
    name = os.path.abspath(path).strip('/').replace('%', '%25').replace('/', '%2F')
    with open(os.path.join(workdir, 'state', 'ledger', name + '.json'), 'w') as f:
        f.write('{not json')
    res = info(path=path, owner='coco', dump=False)
    assert 'damaged' in res['owned']['error'] and res['owned']['runtimes'] == []
    assert res['owned']['error'] in res['problems']


def test_commands_and_node_name_as_the_shell_finds_them(info, config, tmp_path):
    """kubectl as `command -v` finds it (PATH order, executables only), the node name, and kubeconfig candidates."""
    path = config('v2_debian_stock.toml')
    workdir = str(tmp_path)  # outside the tree info() compares: a dangling link cannot be read
    first, second = os.path.join(workdir, 'bin1'), os.path.join(workdir, 'bin2')
    for folder in (first, second):
        os.makedirs(folder)
    # not executable in the first folder: the shell skips it
    for folder, mode in ((first, 0o644), (second, 0o755)):
        with open(os.path.join(folder, 'kubectl'), 'w') as f:
            f.write('#!/bin/sh\n')
        os.chmod(os.path.join(folder, 'kubectl'), mode)
    given = os.path.join(first, 'kubectl')
    kubeconfig = os.path.join(workdir, 'kubelet.conf')
    with open(kubeconfig, 'w') as f:
        f.write('# kubeconfig\n')
    dangling = os.path.join(workdir, 'admin.conf')
    os.symlink(os.path.join(workdir, 'gone.conf'), dangling)
    linked = os.path.join(workdir, 'linked.conf')
    os.symlink(kubeconfig, linked)
    env_path = os.pathsep.join([first, second, os.environ['PATH']])
    names = ['kubectl', 'no-such-command-here', given, os.path.join(second, 'kubectl')]
    runnable = os.path.join(workdir, 'runtime-link')
    os.symlink(os.path.join(second, 'kubectl'), runnable)
    res = info(path=path, dump=False, commands=names, files=[dangling, linked, kubeconfig, given, runnable, second],
               env={'PATH': env_path})
    # bash's command -v (dash's prints any existing path given with a "/", executable or not)
    shell = subprocess.run(['bash', '-c', 'for c in "$@"; do command -v "$c" || echo; done', 'bash'] + names,
                           capture_output=True, text=True, env=dict(os.environ, PATH=env_path), check=True)
    assert [res['commands'][n] or '' for n in names] == shell.stdout.splitlines()
    assert res['commands'] == {'kubectl': os.path.join(second, 'kubectl'), 'no-such-command-here': None,
                               given: None, os.path.join(second, 'kubectl'): os.path.join(second, 'kubectl')}
    assert res['node_name'] == subprocess.run(['uname', '-n'], capture_output=True, text=True, check=True).stdout.strip()
    files = res['files']
    assert files[dangling]['exists'] and files[dangling]['dangling']
    assert files[linked]['type'] == 'link' and not files[linked]['dangling']
    assert not files[kubeconfig]['dangling'] and files[kubeconfig]['type'] == 'file'
    # executable as [ -f ] && [ -x ] judge it (links followed), the check gpu_toolkit makes of a BinaryName
    test_x = subprocess.run(['sh', '-c', 'for f do [ -f "$f" ] && [ -x "$f" ] && echo yes || echo no; done', 'sh',
                             dangling, linked, kubeconfig, given, runnable, second],
                            capture_output=True, text=True, check=True).stdout.split()
    assert [files[p]['executable'] for p in (dangling, linked, kubeconfig, given, runnable, second)] == \
        [x == 'yes' for x in test_x] == [False, False, False, False, True, False]
    assert info(path=path, dump=False)['commands'] == {}


# ------------------------------------------------------------------ starts of containerd from its journal
def test_starts_of_containerd_since_a_time_are_counted_from_its_journal(info, config, tmp_path):
    """systemd's own Started entries (by catalog id), not containerd's log lines that say so, nor stops."""
    path = config('v2_debian_stock.toml')
    fake = str(tmp_path / 'bin')
    calls = fake_journalctl(fake)
    env = {'PATH': fake + os.pathsep + os.environ['PATH']}
    res = info(path=path, dump=False, starts_since=1796280000.25, env=env)
    assert res['service_starts'] == dict(unit='containerd', since=1796280000.25, count=2, error=None)
    with open(calls) as f:
        asked = f.read().splitlines()
    assert asked[0] == '-u containerd -o json --no-pager --since @1796280000.250000'
    assert info(path=path, dump=False, starts_since=0, service='cri-containerd', env=env)['service_starts'][
        'unit'] == 'cri-containerd'
    with open(calls) as f:
        assert f.read().splitlines()[-1].startswith('-u cri-containerd ')
    # asked only when given a time
    assert 'service_starts' not in info(path=path, dump=False, env=env)


def test_an_unreadable_journal_gives_no_count_and_says_why(info, config, tmp_path):
    path = config('v2_debian_stock.toml')
    fake = str(tmp_path / 'bin')
    fake_journalctl(fake, fail='Permission denied')
    res = info(path=path, dump=False, starts_since=5, env={'PATH': fake + os.pathsep + os.environ['PATH']})
    starts = res['service_starts']
    assert starts['count'] is None and 'failed (rc=1)' in starts['error'] and 'Permission denied' in starts['error']
    assert starts['error'].startswith(os.path.join(fake, 'journalctl') + ' -u containerd')
