# -*- coding: utf-8 -*-
"""containerd_imports, run the way Ansible runs it, judged by real containerd.

The Confidential Containers report (seed 003) left a node with the same
drop-in imported three times, an import of a deleted file, ``imports = [ , ]``
and once no config.toml at all.  Each state is a fixture here; the real
containerd (1.6 for version 2 files, 2.1 for version 3) says whether the node
would start before and after the module ran.
"""

import json
import os
import subprocess

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_2, assert_containerd_accepts, config_dump, read

V2_CRI = 'io.containerd.grpc.v1.cri'
V3_CRI = 'io.containerd.cri.v1.runtime'

NYDUS = '''version = 2

[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''
# what kata-deploy writes for one shim: a runtimes.kata table and nothing else
KATA_V2 = '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata-qemu]
  runtime_type = "io.containerd.kata-qemu.v2"
  privileged_without_host_devices = true
'''
KATA_V3 = '''version = 3

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]
  runtime_type = 'io.containerd.kata-qemu.v2'
  privileged_without_host_devices = true
'''


def dropin(path, name, text):
    """Write a drop-in in <config folder>/conf.d and return its absolute path."""
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    os.makedirs(folder, exist_ok=True)
    full = os.path.join(folder, name)
    with open(full, 'w') as f:
        f.write(text)
    return full


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def with_imports(fixture_text, entries):
    """A fixture's text with an imports line after its version line (as the operator's sed leaves it)."""
    line = 'imports = [%s]' % ', '.join('"%s"' % e for e in entries)
    out = []
    for ln in fixture_text.splitlines(True):
        out.append(ln)
        if ln.startswith('version ='):
            out.append(line + '\n')
    return ''.join(out)


def data_of(path):
    return tomlkit.parse(read(path)).unwrap()


def dumped(path, binary=None):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, err[-2000:]
    return tomlkit.parse(out).unwrap()


@pytest.fixture
def containerd2_env(workdir):
    """PATH with containerd 2.1 first: the module reads its version and validates with it."""
    if CONTAINERD_2 is None:
        pytest.fail('containerd 2.x is not unpacked in build/containerd2: run `make deps`')
    folder = os.path.join(workdir, 'bin2')
    os.makedirs(folder)
    os.symlink(CONTAINERD_2, os.path.join(folder, 'containerd'))
    return {'PATH': folder + os.pathsep + os.environ['PATH']}


def temps_beside(path):
    folder = os.path.dirname(path)
    return [n for n in os.listdir(folder) if n.startswith('.') and 'nodeguard' in n and not n.endswith('.lock')]


# ----------------------------------------------------------- seed states
def test_seed_triple_duplicate_folded_and_node_starts(run_module, config, containerd_daemon):
    base = read(config('v2_kubeadm.toml'))
    path = config('v2_kubeadm.toml')
    nydus = dropin(path, 'nydus-snapshotter.toml', NYDUS)
    kata = dropin(path, 'kata-deploy.toml', 'version = 2\n')
    write(path, with_imports(base, [nydus, nydus, nydus, kata]))
    # containerd tolerates the duplicates (loads each file once)
    assert_containerd_accepts(path)
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco')
    assert res['changed']
    assert res['duplicates_removed'] == [nydus, nydus]
    assert res['imports'] == [nydus, kata]
    assert res['added'] == [] and res['removed'] == [] and res['missing'] == []
    assert data_of(path)['imports'] == [nydus, kata]
    assert dumped(path)['proxy_plugins']['nydus']['type'] == 'snapshot'
    # the re-run the operator did on a failed install adds nothing
    again = run_module('containerd_imports', path=path, imports=[nydus], owner='coco')
    assert not again['changed'] and again['duplicates_removed'] == []
    daemon = containerd_daemon(path)
    assert daemon.up, daemon.log_text()[-2000:]
    assert daemon.plugins().get(V2_CRI) == 'ok', daemon.log_text()[-3000:]


def test_seed_dangling_import_stops_containerd_and_prune_repairs_it(run_module, config, containerd_daemon):
    path = config('v2_kubeadm.toml')
    gone = os.path.join(os.path.dirname(path), 'config.toml.d', 'nydus-snapshotter.toml')
    write(path, with_imports(read(path), [gone]))
    before = read(path, 'rb')
    # before: containerd refuses to start
    rc, _out, err = config_dump(path)
    assert rc != 0 and 'no such file or directory' in err
    broken = containerd_daemon(path)
    assert not broken.up
    assert 'no such file or directory' in broken.log_text()

    # adding another import to this node is refused: the result would still not start
    kata = dropin(path, 'kata-deploy.toml', KATA_V2.replace('kata-qemu', 'kata'))
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', allow_plugin_override=True,
                     expect_fail=True)
    assert gone in res['msg'] and 'prune_missing' in res['msg']
    assert read(path, 'rb') == before

    # check mode reports the repair and writes nothing
    res = run_module('containerd_imports', path=path, imports=[], prune_missing=True, check=True)
    assert res['changed'] and res['pruned'] == [gone] and res['imports'] == []
    assert read(path, 'rb') == before

    res = run_module('containerd_imports', path=path, imports=[], prune_missing=True, backup=True)
    assert res['changed']
    assert res['pruned'] == [gone] and res['removed'] == [gone]
    assert res['imports'] == [] and res['missing'] == []
    assert read(res['backup_file'], 'rb') == before
    assert data_of(path)['imports'] == []
    assert_containerd_accepts(path)
    daemon = containerd_daemon(path)
    assert daemon.up, daemon.log_text()[-2000:]
    assert daemon.plugins().get(V2_CRI) == 'ok'
    again = run_module('containerd_imports', path=path, imports=[], prune_missing=True)
    assert not again['changed']


def test_seed_dangling_import_removed_with_state_absent(run_module, config):
    path = config('v2_flat.toml')
    gone = os.path.join(os.path.dirname(path), 'conf.d', 'nydus.toml')
    write(path, with_imports(read(path), [gone, gone]))
    assert config_dump(path)[0] != 0
    res = run_module('containerd_imports', path=path, imports=[gone], owner='coco', state='absent')
    assert res['changed'] and res['removed'] == [gone] and res['imports'] == []
    assert_containerd_accepts(path)


def test_seed_unparsable_imports_fails_with_line_and_column_and_writes_nothing(run_module, config):
    path = config('v2_kubeadm.toml')
    text = read(path).replace('version = 2\n', 'version = 2\nimports = [ , ]\n')
    write(path, text)
    # containerd 1.6 panics on this file
    rc, _out, err = config_dump(path)
    assert rc != 0 and 'unhandled token' in err
    nydus = dropin(path, 'nydus.toml', NYDUS)
    for check in (False, True):
        res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', check=check,
                         expect_fail=True)
        assert path in res['msg']
        assert 'line 4, column 12' in res['msg']
        assert res['line'] == 4 and res['col'] == 12
        assert 'containerd_baseline' in res['msg'] and 'Nothing was written' in res['msg']
        assert read(path) == text
    assert temps_beside(path) == []


def test_seed_missing_config(run_module, workdir, config):
    path = os.path.join(workdir, 'etc', 'config.toml')
    nydus = dropin(path, 'nydus.toml', NYDUS)
    # containerd given that --config refuses to start
    proc = subprocess.run([CONTAINERD_1, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          check=False, timeout=60)
    assert proc.returncode != 0 and 'no such file or directory' in proc.stderr
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', expect_fail=True)
    assert path in res['msg'] and 'create: true' in res['msg'] and 'containerd_baseline' in res['msg']
    assert not os.path.exists(path)
    # create: true starts from the node's `containerd config default`
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', create=True)
    assert res['changed'] and res['imports'] == [nydus] and res['added'] == [nydus]
    assert dumped(path)['proxy_plugins']['nydus']['address'].endswith('containerd-nydus-grpc.sock')
    again = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', create=True)
    assert not again['changed']


def test_create_makes_the_missing_config_folder_readable_for_containerd(run_module, workdir):
    path = os.path.join(workdir, 'fresh', 'containerd', 'config.toml')
    old = os.umask(0o022)  # the module inherits it, as from a login shell
    try:
        res = run_module('containerd_imports', path=path, imports=[], owner='coco', create=True)
    finally:
        os.umask(old)
    assert os.path.isfile(path), res
    assert oct(os.stat(os.path.dirname(path)).st_mode & 0o777) == oct(0o755)


def test_a_missing_config_folder_without_create_is_named(run_module, workdir):
    path = os.path.join(workdir, 'nothing', 'config.toml')
    res = run_module('containerd_imports', path=path, imports=[], owner='coco', expect_fail=True)
    assert res['msg'] == ('folder %s does not exist (no containerd here?). Fix: install containerd, or set '
                          'create: true.' % os.path.dirname(path))
    assert not os.path.exists(os.path.dirname(path))


def test_an_unknown_file_owner_is_named(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    # a key containerd 1.6 runs (it has no CDI: enable_cdi is refused before the file's owner is looked up)
    res = run_module('containerd_setting', path=path, key='images.snapshotter', value='native', owner='gpu',
                     file_owner='no-such-user-here', expect_fail=True)
    assert res['msg'] == "file_owner: no such user 'no-such-user-here'"
    assert read(path, 'rb') == original


def test_a_config_beyond_4_mb_is_refused_with_its_size(run_module, config):
    path = config('version = 2\n' + '# padding\n' * 500000)
    res = run_module('containerd_setting', path=path, key='cri.enable_cdi', value=True, owner='gpu',
                     expect_fail=True)
    assert res['msg'].startswith('%s is 4.8 MB; nodeguard edits configs of up to 4 MB' % path), res['msg']


# ----------------------------------------------------- 1.x replace vs 2.x merge
def test_v1x_plugin_table_clobber_is_real_and_refused(run_module, config, containerd_daemon, workdir):
    path = config('v2_flat.toml')
    original = read(path, 'rb')
    kata = dropin(path, 'kata-deploy.toml', KATA_V2)
    # by hand, the way the operator's sed does it: containerd 1.6 starts, but the
    # drop-in's CRI table replaced the main one and runc is gone
    by_hand = os.path.join(workdir, 'etc', 'by-hand.toml')
    write(by_hand, with_imports(original.decode(), [kata]))
    cri = dumped(by_hand)['plugins'][V2_CRI]['containerd']
    assert 'runc' not in cri['runtimes'] and 'kata-qemu' in cri['runtimes']
    daemon = containerd_daemon(by_hand)
    assert daemon.up, daemon.log_text()[-2000:]
    assert daemon.plugins().get(V2_CRI) != 'ok'
    assert 'runc' in daemon.log_text()

    # the module (containerd 1.6 found on the node) refuses it, naming what would be lost
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', expect_fail=True)
    assert kata in res['msg'] and 'plugins."%s"' % V2_CRI in res['msg']
    assert "runtime 'runc' would be lost" in res['msg']
    assert 'containerd 1.6' in res['msg'] and 'allow_plugin_override' in res['msg']
    assert res['overrides'][0]['plugin'] == V2_CRI
    assert read(path, 'rb') == original
    # also in check mode
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', check=True, expect_fail=True)
    assert 'allow_plugin_override' in res['msg']
    # allow_plugin_override turns off only that check: the default runtime would still be gone
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', allow_plugin_override=True,
                     expect_fail=True)
    assert "containerd uses 'runc'" in res['msg'] and 'drops its built-in runc' in res['msg']
    assert read(path, 'rb') == original
    # on containerd 2.x plugin tables merge, runc stays
    assert CONTAINERD_2, 'run make deps'
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', containerd_bin=CONTAINERD_2)
    assert res['changed'] and res['added'] == [kata]


def test_v1x_override_allowed_when_the_dropin_carries_the_runtimes(run_module, config, containerd_daemon):
    """A drop-in that copies the whole CRI table (as nvidia-ctk 1.18 does) but drops a key."""
    path = config('v2_flat.toml')
    write(path, read(path) + '\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = false\n')
    full = dropin(path, '99-nvidia.toml', '''version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
    SystemdCgroup = true

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
    BinaryName = "/usr/bin/nvidia-container-runtime"
    SystemdCgroup = true
''')
    res = run_module('containerd_imports', path=path, imports=[full], owner='gpu', expect_fail=True)
    assert 'enable_cdi would be lost' in res['msg']
    res = run_module('containerd_imports', path=path, imports=[full], owner='gpu', allow_plugin_override=True)
    assert res['changed'] and res['added'] == [full]
    cri = dumped(path)['plugins'][V2_CRI]['containerd']['runtimes']
    assert cri['runc']['options']['SystemdCgroup'] is True and 'nvidia' in cri
    daemon = containerd_daemon(path)
    assert daemon.up and daemon.plugins().get(V2_CRI) == 'ok', daemon.log_text()[-3000:]


def test_v3_same_dropin_is_merged_by_containerd_2(run_module, config, containerd_daemon, containerd2_env):
    path = config('v3_default.toml')
    original = read(path, 'rb')
    kata = dropin(path, 'kata-deploy.toml', KATA_V3)
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', env=containerd2_env)
    assert res['changed'] and res['added'] == [kata] and res['imports'] == [kata]
    assert res['config_version'] == 3
    # formatting: the file's single quotes, the line stays where it was
    assert "imports = ['%s']\n" % kata in read(path)
    merged = dumped(path, CONTAINERD_2)['plugins'][V3_CRI]['containerd']['runtimes']
    assert merged['runc']['options']['SystemdCgroup'] is True
    assert merged['kata-qemu']['runtime_type'] == 'io.containerd.kata-qemu.v2'
    daemon = containerd_daemon(path, CONTAINERD_2)
    assert daemon.up, daemon.log_text()[-2000:]
    assert daemon.plugins().get(V3_CRI) == 'ok', daemon.log_text()[-3000:]
    # and back: `imports = []` again, byte for byte
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', state='absent',
                     env=containerd2_env)
    assert res['changed'] and res['removed'] == [kata]
    assert read(path, 'rb') == original


# ------------------------------------------------------- module behaviour
def test_check_diff_idempotent_and_uninstall_gives_back_the_bytes(run_module, config, workdir):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    nydus = dropin(path, 'nydus.toml', NYDUS)
    glob = os.path.join(os.path.dirname(path), 'conf.d', '*.toml')
    res = run_module('containerd_imports', path=path, imports=[nydus, glob], owner='coco', check=True, diff=True)
    assert res['changed'] and res['added'] == [nydus, glob]
    assert read(path, 'rb') == original
    assert res['diff']['before'] == original.decode()
    assert 'imports = ["%s", "%s"]\n' % (nydus, glob) in res['diff']['after']
    assert not os.path.exists(os.path.join(workdir, 'state', 'ledger'))

    res = run_module('containerd_imports', path=path, imports=[nydus, glob], owner='coco', diff=True)
    assert res['changed'] and res['imports'] == [nydus, glob]
    assert read(path).startswith('# containerd config for a kubeadm node')
    assert 'version = 2\nroot = "/var/lib/containerd"\nstate = "/run/containerd"\nimports = [' in read(path)
    assert_containerd_accepts(path)
    ledger_dir = os.path.join(workdir, 'state', 'ledger')
    ledger = json.loads(read(os.path.join(ledger_dir, os.listdir(ledger_dir)[0])))
    recs = [r for r in ledger['records'] if r['kind'] == 'import']
    assert sorted(r['resource'] for r in recs) == sorted(['import:' + nydus, 'import:' + glob])
    assert [r['created_key'] for r in sorted(recs, key=lambda r: r['seq'])] == [True, False]

    for check in (True, False):
        again = run_module('containerd_imports', path=path, imports=[nydus, glob], owner='coco', check=check,
                           diff=True)
        assert not again['changed'] and 'diff' not in again

    res = run_module('containerd_imports', path=path, imports=[glob, nydus], owner='coco', state='absent')
    assert res['changed'] and res['removed'] == [glob, nydus]
    assert read(path, 'rb') == original
    again = run_module('containerd_imports', path=path, imports=[glob, nydus], owner='coco', state='absent')
    assert not again['changed']


def test_multiline_array_keeps_its_layout_and_comment(run_module, config):
    path = config('v2_flat.toml')
    one = dropin(path, 'one.toml', 'version = 2\n')
    two = dropin(path, 'two.toml', 'version = 2\n')
    three = dropin(path, 'three.toml', 'version = 2\n')
    text = read(path).replace('version = 2\n', "version = 2\nimports = [  # drop-ins, in merge order\n"
                              "    '%s',\n    '%s',\n]\n" % (one, two))
    write(path, text)
    res = run_module('containerd_imports', path=path, imports=[three], owner='x')
    assert res['changed']
    assert "imports = [  # drop-ins, in merge order\n    '%s',\n    '%s',\n    '%s',\n]\n" % (one, two, three) \
        in read(path)
    assert_containerd_accepts(path)
    res = run_module('containerd_imports', path=path, imports=[three], owner='x', state='absent')
    assert read(path) == text


def test_relative_entries_compare_resolved(run_module, config, containerd_daemon):
    path = config('v2_flat.toml')
    nydus = dropin(path, 'nydus.toml', NYDUS)
    res = run_module('containerd_imports', path=path, imports=['conf.d/nydus.toml'], owner='coco')
    assert res['changed'] and res['imports'] == ['conf.d/nydus.toml']
    # containerd resolves it against the config's folder too
    assert dumped(path)['proxy_plugins']['nydus']['type'] == 'snapshot'
    # the absolute spelling and a ./ spelling are the same entry
    for spelling in (nydus, './conf.d/../conf.d/nydus.toml'):
        again = run_module('containerd_imports', path=path, imports=[spelling], owner='coco')
        assert not again['changed'] and again['added'] == []
    # a second spelling written by someone else is a duplicate, folded on the next write
    write(path, read(path).replace('imports = ["conf.d/nydus.toml"]',
                                   'imports = ["conf.d/nydus.toml", "%s"]' % nydus))
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco')
    assert res['changed'] and res['duplicates_removed'] == [nydus]
    assert res['imports'] == ['conf.d/nydus.toml']
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', state='absent')
    assert res['removed'] == [nydus] and 'imports' not in data_of(path)


def test_prepend_and_order(run_module, config, containerd2_env):
    path = config('v3_default.toml')
    files = [dropin(path, '%s.toml' % n, 'version = 3\n') for n in ('a', 'b', 'c', 'd')]
    a, b, c, d = files
    run_module('containerd_imports', path=path, imports=[c], owner='x', env=containerd2_env)
    res = run_module('containerd_imports', path=path, imports=[a, b], owner='x', position='prepend',
                     env=containerd2_env)
    assert res['imports'] == [a, b, c]
    # an entry placed next to listed entries keeps the listed order
    res = run_module('containerd_imports', path=path, imports=[b, d, c], owner='y', env=containerd2_env)
    assert res['added'] == [d] and res['imports'] == [a, b, d, c]
    res = run_module('containerd_imports', path=path, imports=[c, a], owner='z', env=containerd2_env)
    assert not res['changed'] and any('another order' in w for w in res.get('warnings', []))
    assert dumped(path, CONTAINERD_2)['imports'] == [a, b, d, c]


def test_globs(run_module, config):
    path = config('v2_flat.toml')
    folder = os.path.join(os.path.dirname(path), 'conf.d')
    pattern = os.path.join(folder, '*.toml')
    os.makedirs(folder)
    # a glob that matches nothing is fine for containerd and for require_exists
    res = run_module('containerd_imports', path=path, imports=[pattern], owner='x', prune_missing=True)
    assert res['changed'] and res['missing'] == []
    assert_containerd_accepts(path)
    # it loads what appears later, and prune_missing never drops it
    dropin(path, 'nydus.toml', NYDUS)
    assert dumped(path)['proxy_plugins']['nydus']['type'] == 'snapshot'
    res = run_module('containerd_imports', path=path, imports=[], prune_missing=True)
    assert not res['changed'] and res['imports'] == [pattern]


def test_two_owners_share_one_entry(run_module, config):
    path = config('v2_kubeadm.toml')
    original = read(path, 'rb')
    nydus = dropin(path, 'nydus.toml', NYDUS)
    assert run_module('containerd_imports', path=path, imports=[nydus], owner='coco')['changed']
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='kata')
    assert not res['changed']
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='coco', state='absent')
    assert not res['changed'] and res['kept'] == [nydus] and res['imports'] == [nydus]
    assert any('kata' in w for w in res['warnings'])
    assert_containerd_accepts(path)
    res = run_module('containerd_imports', path=path, imports=[nydus], owner='kata', state='absent')
    assert res['changed'] and res['removed'] == [nydus]
    # the key coco created is gone again
    assert read(path, 'rb') == original


def test_require_exists(run_module, config):
    path = config('v2_flat.toml')
    original = read(path, 'rb')
    later = os.path.join(os.path.dirname(path), 'conf.d', 'later.toml')
    res = run_module('containerd_imports', path=path, imports=[later], owner='x', expect_fail=True)
    assert later in res['msg'] and 'does not exist' in res['msg'] and 'require_exists' in res['msg']
    assert read(path, 'rb') == original
    # require_exists: false adds it with a warning (containerd 1.6's config dump refuses it: validate none)
    res = run_module('containerd_imports', path=path, imports=[later], owner='x', require_exists=False,
                     validate='none')
    assert res['changed'] and res['missing'] == [later]
    assert any('does not exist' in w for w in res['warnings'])
    assert config_dump(path)[0] != 0
    dropin(path, 'later.toml', 'version = 2\n')
    assert_containerd_accepts(path)


def test_bad_input_and_not_an_array(run_module, config):
    path = config('v2_flat.toml')
    res = run_module('containerd_imports', path=path, imports=['/x\n[plugins]'], expect_fail=True)
    assert 'control character' in res['msg']
    write(path, read(path).replace('version = 2\n', 'version = 2\nimports = "/etc/x.toml"\n'))
    res = run_module('containerd_imports', path=path, imports=[], expect_fail=True)
    assert 'must be an array' in res['msg']


def test_v2_dropin_into_v3_config_is_warned(run_module, config, containerd2_env):
    """Measured on containerd 2.1.9: a version 2 drop-in's CRI runtimes do not reach a version 3 config."""
    path = config('v3_default.toml')
    kata = dropin(path, 'kata-deploy.toml', KATA_V2)
    res = run_module('containerd_imports', path=path, imports=[kata], owner='coco', env=containerd2_env)
    assert res['changed']
    assert any(w.startswith('%s: containerd 2.1 would not read these of its version 2 CRI keys: ' % kata)
               and 'containerd.runtimes' in w and 'version = 3' in w for w in res['warnings']), res['warnings']
    merged = dumped(path, CONTAINERD_2)['plugins'][V3_CRI]['containerd']['runtimes']
    assert 'kata-qemu' not in merged and 'runc' in merged
