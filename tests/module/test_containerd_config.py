# -*- coding: utf-8 -*-
"""containerd_config: one owner's drop-ins, imports, settings and runtimes in one module run.

The judge is the four single-purpose modules: one containerd_config call
must leave the same bytes, the same drop-ins and the same ledger records as
containerd_dropin + containerd_imports + containerd_setting +
containerd_runtime on a twin of the node, be a no-op the second time, undo
to the original bytes (and be undone by the single modules). Real
containerd (1.6 on the host, 1.7, 2.x) reads every result.
"""

import fcntl
import glob
import json
import os

import pytest

from helpers.common import assert_containerd_accepts, binary_of, read
from helpers.trees import CDI_DROPIN, DROPIN_MAIN, NODES

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import lock_path_for
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

KATA = '/opt/kata/bin/containerd-shim-kata-v2'
NYDUS = '''version = %d
[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''


def kata(shim):
    return dict(name='kata-' + shim, runtime_type='io.containerd.kata-%s.v2' % shim, runtime_path=KATA,
                inherit='none',
                settings={'privileged_without_host_devices': True, 'pod_annotations': ['io.katacontainers.*']},
                options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration-%s.toml' % shim})


RUNTIMES = [kata('qemu'), kata('qemu-tdx')]
SETTINGS = [dict(key='images.disable_snapshot_annotations', value=False)]


def dropin_of(path):
    return os.path.join(os.path.dirname(path), 'config.toml.d', 'nydus-snapshotter.toml')


def version_of(fixture):
    return 3 if fixture.startswith('v3') else 2


def ledgers(state_dir, etc):
    """Every ledger, by the file it is for, with the node's folder etc written as ETC (twins differ only there)."""
    out = {}
    for name in sorted(glob.glob(os.path.join(state_dir, 'ledger', '*.json'))):
        with open(name) as f:
            records = json.load(f)['records']
        key = os.path.basename(name).replace(etc.strip('/').replace('/', '%2F'), 'ETC')
        out[key] = json.loads(json.dumps(records).replace(etc, 'ETC'))
    return out


def same_text(path, other):
    """The two nodes' config.toml, each with its own folder in its imports."""
    return read(path).replace(os.path.dirname(path), 'ETC') == read(other).replace(os.path.dirname(other), 'ETC')


def install(run_module, path, binary, state_dir=None, **extra):
    args = dict(path=path, owner='coco', containerd_bin=binary,
                dropins=[dict(path=dropin_of(path), content=NYDUS % extra.pop('version'))],
                imports=[dropin_of(path)], settings=SETTINGS, runtimes=RUNTIMES)
    if state_dir:
        args['state_dir'] = state_dir
    args.update(extra)
    return run_module('containerd_config', **args)


def uninstall(run_module, path, binary, state_dir=None, **extra):
    args = dict(path=path, owner='coco', containerd_bin=binary, state='absent',
                dropins=[dict(path=dropin_of(path))], imports=[dropin_of(path)],
                settings=[dict(key=s['key']) for s in SETTINGS], runtimes=[dict(name=r['name']) for r in RUNTIMES])
    if state_dir:
        args['state_dir'] = state_dir
    args.update(extra)
    return run_module('containerd_config', **args)


def install_single(run_module, path, binary, state_dir, version):
    common = dict(path=path, owner='coco', containerd_bin=binary, state_dir=state_dir)
    run_module('containerd_dropin', dropin=dropin_of(path), content=NYDUS % version, **common)
    run_module('containerd_imports', imports=[dropin_of(path)], **common)
    run_module('containerd_setting', settings=SETTINGS, **common)
    run_module('containerd_runtime', runtimes=RUNTIMES, **common)


@pytest.mark.parametrize('fixture,which', NODES)
def test_one_call_equals_the_four_modules_and_undoes_to_the_original(run_module, config, twin, fixture, which):
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    other, other_state = twin(path)
    version = version_of(fixture)

    res = install(run_module, path, binary, version=version)
    assert res['changed']
    assert [d['dropin'] for d in res['dropins']] == [dropin_of(path)]
    assert res['dropins'][0]['changed'] and res['dropins'][0]['folder_created']
    assert res['imports']['added'] == [dropin_of(path)]
    assert [s['key'] for s in res['settings']] == ['images.disable_snapshot_annotations']
    assert res['settings'][0]['value'] is False
    assert [r['name'] for r in res['runtimes']] == ['kata-qemu', 'kata-qemu-tdx']
    assert all(r['created'] for r in res['runtimes'])
    assert res['file'] == path and res['validated']
    assert_containerd_accepts(path, binary)
    dump = assert_containerd_accepts(path, binary)
    assert 'kata-qemu-tdx' in dump and 'nydus' in dump

    install_single(run_module, other, binary, other_state, version)
    assert same_text(path, other)
    assert read(dropin_of(path), 'rb') == read(dropin_of(other), 'rb')
    mine = ledgers(run_module.state_dir, os.path.dirname(path))
    assert len(mine) == 3  # config.toml's, the drop-in's, the folder's
    assert mine == ledgers(other_state, os.path.dirname(other))

    # the same call with its state spelled out (a string from the module's JSON arguments)
    again = install(run_module, path, binary, version=version, state='present')
    assert not again['changed'] and not again['dropins'][0]['changed']
    assert same_text(path, other)

    gone = uninstall(run_module, path, binary)
    assert gone['changed']
    assert gone['imports']['removed'] == [dropin_of(path)]
    assert all(r['removed'] for r in gone['runtimes'])
    assert gone['dropins'][0]['removed'] and gone['dropins'][0]['folder_removed']
    assert read(path, 'rb') == original
    assert not os.path.exists(os.path.dirname(dropin_of(path)))
    # config.toml's ledger stays, empty, as after the single modules; the drop-in's and the folder's go
    assert list(ledgers(run_module.state_dir, os.path.dirname(path)).values()) == [[]]

    assert not uninstall(run_module, path, binary)['changed']
    assert read(path, 'rb') == original


@pytest.mark.parametrize('fixture,which', NODES[:1] + NODES[2:])
def test_the_single_modules_undo_it(run_module, config, fixture, which):
    binary = binary_of(which)
    path = config(fixture)
    original = read(path, 'rb')
    install(run_module, path, binary, version=version_of(fixture))
    common = dict(path=path, owner='coco', containerd_bin=binary, state='absent')
    run_module('containerd_runtime', runtimes=[dict(name=r['name']) for r in RUNTIMES], **common)
    run_module('containerd_setting', settings=[dict(key=s['key']) for s in SETTINGS], **common)
    run_module('containerd_imports', imports=[dropin_of(path)], **common)
    run_module('containerd_dropin', dropin=dropin_of(path), **common)
    assert read(path, 'rb') == original
    assert not os.path.exists(dropin_of(path))


def test_check_mode_writes_nothing_and_judges_the_imports_of_its_drop_ins(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    res = install(run_module, path, binary, version=2, check=True, diff=True)
    assert res['changed']
    assert res['imports']['added'] == [dropin_of(path)]
    assert [d['dropin'] for d in res['dropins']] == [dropin_of(path)]
    headers = [d['after_header'] for d in res['diff']]
    assert headers == ['%s (after)' % dropin_of(path), '%s (after)' % path]
    assert 'kata-qemu-tdx' in res['diff'][1]['after']
    assert not any('does not exist' in w for w in res.get('warnings', []))
    assert read(path, 'rb') == original
    assert not os.path.exists(os.path.dirname(dropin_of(path)))
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger'))


def test_an_import_of_a_file_nobody_writes_is_still_refused(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    missing = os.path.join(os.path.dirname(path), 'config.toml.d', 'other.toml')
    res = install(run_module, path, binary, version=2, imports=[dropin_of(path), missing], check=True,
                  expect_fail=True)
    assert 'other.toml does not exist' in res['msg']
    assert read(path, 'rb') == original


@pytest.mark.parametrize('bad,where', [
    (dict(dropins=[dict(path='relative.toml', content='version = 2\n')]), 'dropins[0].path'),
    (dict(dropins=[dict(path='/etc/x/a.toml')]), 'dropins[0] (/etc/x/a.toml): state=present needs its content'),
    (dict(state='present', dropins=[dict(path='/etc/x/b.toml')]),
     'dropins[0] (/etc/x/b.toml): state=present needs its content'),
    (dict(settings=[dict(key='images.disable_snapshot_annotations')]), 'settings[0]'),
    (dict(runtimes=[dict(name='bad name!')]), 'runtimes[0]'),
])
def test_bad_input_is_refused_before_anything_is_written(run_module, config, bad, where):
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'),
                     imports=[], expect_fail=True, **bad)
    assert where in res['msg'] and 'Fix' in res['msg']
    assert read(path, 'rb') == original
    assert not os.path.exists(os.path.join(run_module.state_dir, 'ledger'))


def test_a_drop_in_another_owner_still_imports_is_kept(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    install(run_module, path, binary, version=2)
    run_module('containerd_imports', path=path, owner='snapshotter-operator', imports=[dropin_of(path)],
               containerd_bin=binary)
    gone = uninstall(run_module, path, binary)
    assert gone['imports']['kept'] == [dropin_of(path)]
    assert gone['dropins'][0]['kept'] and not gone['dropins'][0]['removed']
    assert os.path.exists(dropin_of(path))
    assert_containerd_accepts(path, binary)
    # the runtimes and the setting are gone all the same
    text = read(path)
    assert 'kata-qemu' not in text and 'disable_snapshot_annotations = false' not in text


def test_a_key_a_drop_in_decides_goes_there_and_the_rest_to_config_toml(run_module, config):
    """enable_cdi is decided by a drop-in (2.x merges it): that part goes there, the others to config.toml,
    as separate calls would put them; the one result still lists every entry, and absent undoes both files."""
    binary = binary_of('2')
    dropin = config(CDI_DROPIN, filename='cdi.toml')
    path = config(DROPIN_MAIN % dropin)
    original, dropin_original = read(path, 'rb'), read(dropin, 'rb')
    settings = [dict(key='cri.enable_cdi', value=True), dict(key='cri.cdi_spec_dirs', value=['/etc/cdi'])]
    res = run_module('containerd_config', path=path, owner='gpu', containerd_bin=binary, settings=settings,
                     runtimes=[dict(name='nvidia', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})])
    assert res['changed'] and sorted(res['files']) == sorted([path, dropin]), res
    assert [s['key'] for s in res['settings']] == ['cri.enable_cdi', 'cri.cdi_spec_dirs']
    assert [r['name'] for r in res['runtimes']] == ['nvidia'] and res['runtimes'][0]['created']
    assert res['default_runtime_name'] == 'runc'
    # the drop-in may belong to another tool: the write there is said once, on install only
    said = [w for w in res['warnings'] if 'where containerd reads it' in w]
    assert len(said) == 1 and dropin in said[0], res['warnings']
    assert 'enable_cdi = true' in read(dropin) and 'cdi_spec_dirs' in read(path) and 'nvidia' in read(path)
    dump = assert_containerd_accepts(path, binary)
    assert 'nvidia-container-runtime' in dump
    undo = dict(settings=[dict(key=s['key']) for s in settings], runtimes=[dict(name='nvidia')])
    installed, dropin_installed = read(path, 'rb'), read(dropin, 'rb')
    ledger_files = ledgers(os.path.join(os.path.dirname(os.path.dirname(path)), 'state'), os.path.dirname(path))
    assert ledger_files, 'the install recorded nothing'
    # check mode previews the undo of both files (one write each when it runs), and writes nothing
    preview = run_module('containerd_config', check=True, diff=True, path=path, owner='gpu', containerd_bin=binary,
                         state='absent', **undo)
    assert preview['changed'] and sorted(preview['files']) == sorted([path, dropin]), preview
    assert read(path, 'rb') == installed and read(dropin, 'rb') == dropin_installed
    assert ledgers(os.path.join(os.path.dirname(os.path.dirname(path)), 'state'), os.path.dirname(path)) \
        == ledger_files
    gone = run_module('containerd_config', diff=True, path=path, owner='gpu', containerd_bin=binary, state='absent',
                      **undo)
    assert gone['changed'] and gone['runtimes'][0]['removed']
    assert not any('where containerd reads it' in w for w in gone.get('warnings', [])), gone['warnings']
    assert read(path, 'rb') == original and read(dropin, 'rb') == dropin_original
    # the preview showed what the run then did, file by file
    assert len(gone['diff']) == 2 and preview['diff'] == gone['diff'], (preview['diff'], gone['diff'])
    assert [s['key'] for s in preview['settings']] == [s['key'] for s in gone['settings']]


def test_a_drop_in_with_its_import_then_the_drop_in_alone(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    dropin = [dict(path=dropin_of(path), content=NYDUS % 2)]
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary, dropins=dropin,
                     imports=[dropin_of(path)])
    assert res['changed'] and res['imports']['added'] == [dropin_of(path)]
    assert 'containerd-nydus-grpc.sock' in assert_containerd_accepts(path, binary)
    # nothing for config.toml to do: no transaction, nothing changed
    alone = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary, dropins=dropin)
    assert not alone['changed'] and not alone['dropins'][0]['changed'] and 'imports' not in alone, alone
    gone = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary, state='absent',
                      dropins=[dict(path=dropin_of(path))], imports=[dropin_of(path)])
    assert gone['changed'] and gone['dropins'][0]['removed']
    assert read(path, 'rb') == original


def test_a_drop_in_that_would_replace_the_cri_table_on_1_x_is_refused_before_it_is_written(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    kata = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
            '  runtime_type = "io.containerd.kata.v2"\n')
    # refused before the drop-in is written, and in check mode (which writes no drop-in) alike
    for check in (True, False):
        res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary,
                         dropins=[dict(path=dropin_of(path), content=kata)], imports=[dropin_of(path)],
                         check=check, expect_fail=True)
        assert 'replaces the main config\'s plugins."io.containerd.grpc.v1.cri" table whole' in res['msg'], res
        assert 'allow_plugin_override' in res['msg'] and 'Already written' not in res['msg'], res['msg']
        assert res['key'] == 'imports'
        assert read(path, 'rb') == original
        assert not os.path.exists(os.path.dirname(dropin_of(path))), res['msg']
    # containerd 2.x merges plugin tables: the same drop-in is fine there
    path = config('v2_debian_stock.toml')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('2'),
                     dropins=[dict(path=dropin_of(path), content=kata)], imports=[dropin_of(path)])
    assert res['changed'] and res['imports']['added'] == [dropin_of(path)]


def test_an_entry_without_a_name_is_refused_by_the_argument_spec(run_module, config):
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary_of('host'),
                     runtimes=[dict(runtime_type='io.containerd.runc.v2')], expect_fail=True)
    assert 'missing required arguments: name' in res['msg'], res['msg']
    assert read(path, 'rb') == original


def test_a_held_lock_fails_with_its_own_message_and_writes_nothing(run_module, config):
    path = config('v2_debian_stock.toml')
    original = read(path, 'rb')
    fd = os.open(lock_path_for(path), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        res = install(run_module, path, binary_of('host'), version=2, lock_timeout=0.5, expect_fail=True)
    finally:
        os.close(fd)
    assert lock_path_for(path) in res['msg'] and not res['msg'].startswith('containerd_config failed'), res['msg']
    assert read(path, 'rb') == original and not os.path.exists(dropin_of(path))


def test_a_damaged_ledger_of_a_drop_in_is_named_and_nothing_more_is_written(run_module, config):
    binary = binary_of('host')
    path = config('v2_debian_stock.toml')
    install(run_module, path, binary, version=2)
    installed, dropin_bytes = read(path, 'rb'), read(dropin_of(path), 'rb')
    ledger = ledger_path_for(run_module.state_dir, dropin_of(path))
    with open(ledger, 'w') as f:
        f.write('{"records": [')
    res = uninstall(run_module, path, binary, expect_fail=True)
    assert ledger in res['msg'] and not res['msg'].startswith('containerd_config failed'), res['msg']
    # the uninstall reads every ledger of the tree before it writes: nothing was written
    assert read(dropin_of(path), 'rb') == dropin_bytes and read(path, 'rb') == installed
    assert 'written' not in res, res
    # an install reads the drop-in's ledger before it writes the drop-in: refused the same way
    res = install(run_module, path, binary, version=2, expect_fail=True,
                  dropins=[dict(path=dropin_of(path), content=NYDUS % 2 + '# changed\n')])
    assert ledger in res['msg'] and not res['msg'].startswith('containerd_config failed'), res['msg']
    assert read(dropin_of(path), 'rb') == dropin_bytes and read(path, 'rb') == installed


BARE_CRI = '''version = 2

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.6"
'''


def test_a_parent_table_the_set_created_goes_with_the_uninstall(run_module, config):
    """The setting creates the CRI plugin's containerd table, the runtime a table under it: the uninstall gives
    back the bare file, that table included. (The ledger records which owner created the table, so this holds in
    either order of undo: the order EditSet uses is not what makes it pass.)"""
    binary = binary_of('host')
    path = config(BARE_CRI)
    res = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary,
                     settings=SETTINGS, runtimes=RUNTIMES[:1])
    assert res['changed'] and 'disable_snapshot_annotations = false' in read(path)
    assert_containerd_accepts(path, binary)
    gone = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary, state='absent',
                      settings=[dict(key=s['key']) for s in SETTINGS], runtimes=[dict(name=RUNTIMES[0]['name'])])
    assert gone['changed'] and read(path) == BARE_CRI, read(path)


@pytest.mark.parametrize('fixture,which', [('v2_kubeadm.toml', 'host'), ('v3_default.toml', '2')])
def test_a_default_the_set_points_at_its_own_runtime_is_undone_in_one_call(run_module, config, fixture, which):
    """The set makes its runtime the default through a setting (cri.default_runtime_name). The uninstall puts the
    setting back before it removes the runtime; the other order meets a default that names the runtime and is
    refused ("kata-qemu is the default runtime ... set by coco")."""
    binary = binary_of(which)
    path = config(fixture)
    before = read(path)
    made = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary,
                      settings=[dict(key='cri.default_runtime_name', value='kata-qemu')], runtimes=RUNTIMES[:1])
    assert_containerd_accepts(path, binary)
    assert made['changed'] and made['default_runtime_name'] == 'kata-qemu'
    assert "default_runtime_name = 'kata-qemu'" in read(path).replace('"', "'")
    gone = run_module('containerd_config', path=path, owner='coco', containerd_bin=binary, state='absent',
                      settings=[dict(key='cri.default_runtime_name')], runtimes=[dict(name='kata-qemu')])
    assert gone['changed'] and gone['default_runtime_name'] == 'runc'
    assert read(path) == before
