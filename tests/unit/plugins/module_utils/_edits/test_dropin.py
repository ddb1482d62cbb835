# -*- coding: utf-8 -*-
"""containerd_dropin's write and remove called directly (_dropin), with a stand-in module and context.

tests/module/test_containerd_dropin*.py run the module on real trees with
the common arguments; these pin the branches those reach rarely or never:
the mode given as an int or left out, validation switched off, the
validator's output when it fails, a file another owner already wrote, a
ledger rolled back after a killed run, removal in check mode, a drop-in
another drop-in imports, and the folder's clean-up in each state.
"""

import os
import stat

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import lock_path_for, sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import (
    _make_folder,
    importers,
    remove,
    remove_all,
    write,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, file_identity
from helpers.context import FakeContext
from helpers.trees import DropinModule as Module, dropin_call

V16 = (1, 6, 20)
NYDUS = 'version = 2\n[proxy_plugins.nydus]\ntype = "snapshot"\naddress = "/run/nydus.sock"\n'
OTHER = NYDUS.replace('nydus.sock', 'nydus2.sock')


@pytest.fixture
def etc(tmp_path):
    """An etc folder with a config.toml that imports nothing, and the drop-in's folder; (params maker, paths)."""
    folder = tmp_path / 'etc'
    folder.mkdir()
    (folder / 'config.toml').write_text('version = 2\n')
    (folder / 'conf.d').mkdir()
    paths = dict(main=str(folder / 'config.toml'), dropin=str(folder / 'conf.d' / 'nydus.toml'),
                 folder=str(folder / 'conf.d'), state=str(tmp_path / 'state'))
    return dropin_call(paths, NYDUS), paths


def owners_of(paths, name='dropin'):
    return sorted(r['owner'] for r in Ledger.load(paths['state'], paths[name]).records)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


# ------------------------------------------------------------------ state=present
@pytest.mark.parametrize('mode,want', [(None, 0o644), (0o600, 0o600), ('0640', 0o640)])
def test_the_drop_in_gets_the_mode_asked_for_or_0644(etc, mode, want):
    """The module passes octal digits; called without a mode, or with an int (a task's `mode: 0600`), it is
    still the permission bits asked for."""
    params, paths = etc
    p = params()
    if mode is None:
        del p['mode']
    else:
        p['mode'] = mode
    assert write(Module(), FakeContext(containerd_version=V16), p)['changed']
    assert mode_of(paths['dropin']) == want


def test_validate_none_writes_without_running_containerd_and_says_so(etc):
    params, paths = etc
    ctx = FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16)
    res = write(Module(), ctx, params(validate='none'))
    assert res['validated'] == 'not validated by containerd (validate: none, or no containerd binary)'
    assert ctx.commands == [] and ctx.written == [paths['dropin']]
    assert res['folder_created'] is False  # the folder was there


@pytest.mark.parametrize('validate', ['auto', 'load'])
def test_auto_and_load_run_the_binarys_config_dump_on_the_candidate_beside_the_drop_in(etc, validate):
    params, paths = etc
    ctx = FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16)
    res = write(Module(), ctx, params(validate=validate))
    [cmd] = ctx.commands
    assert cmd[:2] == ['/usr/bin/containerd', '--config'] and cmd[3:] == ['config', 'dump']
    assert os.path.dirname(cmd[2]) == paths['folder'] and cmd[2] != paths['dropin']
    # config.toml imports nothing: only the drop-in itself was checked
    assert res['validated'] == 'containerd config dump'


def test_a_drop_in_the_tree_loads_is_validated_with_the_tree_too(etc):
    params, paths = etc
    with open(paths['main'], 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % paths['dropin'])
    write(Module(), FakeContext(containerd_version=V16), params())
    res = write(Module(), FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16), params(validate='auto', content=OTHER))
    assert res['validated'] == 'containerd config dump and the tree of %s' % paths['main']


@pytest.mark.parametrize('out,err,said', [
    ('one\ntwo\nthree\nfour\n', '', 'two | three | four'),   # stdout when stderr is empty
    ('ignored\n', 'bad key\n', 'bad key'),                    # stderr first
    ('', '', 'no output'),
])
def test_a_refusing_validator_is_quoted_and_nothing_is_left_behind(etc, out, err, said):
    params, paths = etc
    ctx = FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16, answer=(1, out, err))
    with pytest.raises(ConfigError) as exc:
        write(Module(), ctx, params(validate='auto'))
    assert str(exc.value).endswith('failed (rc=1): %s. Nothing was written.' % said), str(exc.value)
    assert 'containerd --config %s config dump' in str(exc.value)
    assert os.listdir(paths['folder']) == [] and ctx.written == []
    assert not os.path.exists(Ledger.load(paths['state'], paths['dropin']).path)


def test_a_candidate_that_is_not_toml_is_refused_by_nodeguards_own_parse(etc):
    params, paths = etc
    with pytest.raises(ConfigError) as exc:
        write(Module(), FakeContext(containerd_version=V16), params(content='version = 2\n[oops\n'))
    assert exc.value.details['key'] == 'content' and 'refusing to write %s' % paths['dropin'] in str(exc.value)
    assert os.listdir(paths['folder']) == []


def test_a_candidate_that_breaks_the_tree_that_loads_it_is_refused_with_the_trees_errors(etc):
    """On 1.x a drop-in's CRI table replaces config.toml's: a default runtime it does not define breaks the tree."""
    params, paths = etc
    with open(paths['main'], 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % paths['dropin'])
    write(Module(), FakeContext(containerd_version=V16), params())
    bad = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "nope"\n'
    with pytest.raises(ConfigError) as exc:
        write(Module(), FakeContext(containerd_version=V16), params(content=bad))
    assert '%s would not load with it' % paths['main'] in str(exc.value) and exc.value.details['check_errors']
    assert os.listdir(paths['folder']) == ['nydus.toml']
    # the same file where nothing loads it: only its own checks count
    other = os.path.join(paths['folder'], 'unloaded.toml')
    assert write(Module(), FakeContext(containerd_version=V16), params(content=bad, dropin=other))['changed']


def test_a_folder_in_the_drop_ins_place_is_refused(etc):
    params, paths = etc
    os.mkdir(paths['dropin'])
    with pytest.raises(ConfigError) as exc:
        write(Module(), FakeContext(containerd_version=V16), params())
    assert str(exc.value) == '%s exists and is not a regular file. Nothing was written.' % paths['dropin']


def test_a_link_in_the_drop_ins_place_is_refused_and_its_target_left_alone(etc, tmp_path):
    params, paths = etc
    target = str(tmp_path / 'target.toml')
    with open(target, 'w') as f:
        f.write(OTHER)
    os.symlink(target, paths['dropin'])
    with pytest.raises(ConfigError) as exc:
        write(Module(), FakeContext(containerd_version=V16), params())
    assert str(exc.value) == ('%s is a symbolic link; nodeguard does not write drop-ins through links. Nothing was '
                              'written.' % paths['dropin'])
    with open(target) as f:
        assert f.read() == OTHER


def test_a_file_another_owner_wrote_with_the_same_content_becomes_this_owners_too(etc):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params(owner='gpu'))
    # check mode claims nothing
    res = write(Module(check=True), FakeContext(containerd_version=V16), params())
    assert not res['changed'] and res['owned'] and owners_of(paths) == ['gpu']
    res = write(Module(), FakeContext(containerd_version=V16), params())
    assert not res['changed'] and res['owned'] and owners_of(paths) == ['coco', 'gpu']
    ledger = Ledger.load(paths['state'], paths['dropin'])
    assert ledger.config_sha256 == sha256_bytes(NYDUS.encode())
    # asked again: one record, not two
    write(Module(), FakeContext(containerd_version=V16), params())
    assert owners_of(paths) == ['coco', 'gpu']


def test_rewriting_the_owners_file_keeps_one_record(etc):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    res = write(Module(), FakeContext(containerd_version=V16), params(content=OTHER))
    assert res['changed'] and owners_of(paths) == ['coco']
    with open(paths['dropin']) as f:
        assert f.read() == OTHER


def test_a_mode_change_alone_rewrites_the_file(etc):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    res = write(Module(), FakeContext(containerd_version=V16), params(mode='0600'))
    assert res['changed'] and mode_of(paths['dropin']) == 0o600


def test_the_diff_shows_the_file_before_or_absent(etc):
    params, paths = etc
    res = write(Module(diff=True), FakeContext(containerd_version=V16), params())
    assert res['diff'] == dict(before='', after=NYDUS, before_header='%s (absent)' % paths['dropin'],
                               after_header='%s (after)' % paths['dropin'])
    res = write(Module(diff=True), FakeContext(containerd_version=V16), params(content=OTHER))
    assert res['diff']['before'] == NYDUS and res['diff']['before_header'] == '%s (before)' % paths['dropin']
    assert 'diff' not in write(Module(), FakeContext(containerd_version=V16), params())


def test_check_mode_writes_nothing_and_takes_no_lock_file(etc):
    params, paths = etc
    stale = os.path.join(paths['folder'], '.nydus.toml.killed.nodeguard-tmp')
    open(stale, 'w').close()
    res = write(Module(check=True), FakeContext(containerd_version=V16), params())
    assert res['changed'] and res['owned'] and res['validated'] is None
    # not even a killed run's temp is cleaned
    assert os.listdir(paths['folder']) == ['.nydus.toml.killed.nodeguard-tmp']
    assert not os.path.exists(lock_path_for(paths['main'])) and not os.path.exists(paths['state'])
    write(Module(), FakeContext(containerd_version=V16), params())
    assert sorted(os.listdir(paths['folder'])) == ['nydus.toml'] and os.path.exists(lock_path_for(paths['main']))


def test_a_backup_is_made_only_of_a_file_that_was_there(etc):
    params, paths = etc
    module = Module()
    res = write(module, FakeContext(containerd_version=V16), params(backup=True))
    assert res['changed'] and 'backup_file' not in res and module.backups == []
    res = write(module, FakeContext(containerd_version=V16), params(backup=True, content=OTHER))
    assert res['backup_file'] == paths['dropin'] + '.bak' and module.backups == [paths['dropin']]


def test_a_ledger_saved_by_a_run_killed_before_its_rename_is_rolled_back_and_said(etc):
    """The ledger is saved before the rename: a run killed in between left a record for bytes that never arrived;
    the run again says it rolled back, once, and then writes them."""
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    ledger = Ledger.load(paths['state'], paths['dropin'])
    ledger.recover(sha256_bytes(NYDUS.encode()), file_identity(paths['dropin']))
    ledger.add({'owner': 'gpu', 'resource': 'file:' + paths['dropin'], 'kind': 'file'})
    ledger.save(sha256_bytes(OTHER.encode()))  # ... and killed here
    ctx = FakeContext(containerd_version=V16)
    res = write(Module(), ctx, params(owner='gpu', content=OTHER))
    assert res['changed'] and owners_of(paths) == ['coco', 'gpu']
    assert ctx.warnings == ['%s: rolled the ledger back: the previous run stopped before its config write'
                            % paths['dropin']]
    ctx = FakeContext(containerd_version=V16)
    assert not write(Module(), ctx, params(owner='gpu', content=OTHER))['changed'] and ctx.warnings == []


def test_a_new_folder_is_recorded_as_the_owners_and_check_mode_only_says_so(etc, tmp_path):
    params, paths = etc
    dropin = str(tmp_path / 'etc' / 'new.d' / 'nydus.toml')
    res = write(Module(check=True, diff=True), FakeContext(containerd_version=V16), params(dropin=dropin))
    assert res['changed'] and res['folder_created'] and not os.path.exists(os.path.dirname(dropin))
    assert res['diff']['after_header'] == '%s (after)' % dropin
    res = write(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    assert res['changed'] and res['folder_created'] and mode_of(os.path.dirname(dropin)) == 0o755
    assert sorted(r['owner'] for r in Ledger.load(paths['state'], os.path.dirname(dropin)).records) == ['coco']


def test_an_existing_folder_is_neither_made_nor_claimed(etc):
    params, paths = etc
    ledger = Ledger.load(paths['state'], paths['folder'])
    assert _make_folder(ledger, 'coco', paths['folder'], False) is False
    assert ledger.records == [] and not os.path.exists(ledger.path)


def test_a_folder_made_again_after_a_killed_run_is_recorded_once(etc, tmp_path):
    """The record is saved before the mkdir: a run killed in between left the record, and no second one comes."""
    params, paths = etc
    folder = str(tmp_path / 'etc' / 'new.d')
    ledger = Ledger.load(paths['state'], folder)
    ledger.add({'owner': 'coco', 'resource': 'folder:' + folder, 'kind': 'folder'})
    ledger.save(None)
    assert _make_folder(Ledger.load(paths['state'], folder), 'coco', folder, False) is True
    assert os.path.isdir(folder) and len(Ledger.load(paths['state'], folder).records) == 1


# ------------------------------------------------------------------ state=absent
def test_a_file_the_owner_did_not_write_is_left_alone_and_said(etc):
    params, paths = etc
    with open(paths['dropin'], 'w') as f:
        f.write(NYDUS)
    res = remove(Module(), FakeContext(containerd_version=V16), params())
    assert not res['changed'] and not res['removed'] and os.path.exists(paths['dropin'])
    assert res['msg'] == '%s is not a drop-in coco wrote (no ledger record): left alone' % paths['dropin']
    # nothing there and nothing owned: nothing to say
    os.unlink(paths['dropin'])
    assert 'msg' not in remove(Module(), FakeContext(containerd_version=V16), params())


def test_the_owners_file_goes_with_its_ledger(etc):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert res['changed'] and res['removed'] and not res['kept'] and res['imported_by'] == []
    assert not os.path.exists(paths['dropin']) and ctx.written == [paths['dropin']]
    assert not os.path.exists(Ledger.load(paths['state'], paths['dropin']).path)
    # the folder existed before: it stays
    assert not res['folder_removed'] and os.path.isdir(paths['folder'])


def test_removing_keeps_the_records_of_other_owners_in_the_drop_ins_ledger(etc):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    write(Module(), FakeContext(containerd_version=V16), params(owner='gpu'))  # the same content: gpu's too
    res = remove(Module(), FakeContext(containerd_version=V16), params())
    assert res['removed'] and not os.path.exists(paths['dropin'])
    assert owners_of(paths) == ['gpu']


def test_check_mode_removes_nothing_and_takes_no_lock_file(etc, tmp_path):
    params, paths = etc
    dropin = str(tmp_path / 'etc' / 'new.d' / 'nydus.toml')
    write(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    os.unlink(lock_path_for(paths['main']))
    res = remove(Module(check=True, diff=True), FakeContext(containerd_version=V16), params(dropin=dropin))
    assert res['changed'] and res['removed'] and res['folder_removed']
    assert res['diff'] == dict(before=NYDUS, after='', before_header='%s (before)' % dropin,
                               after_header='%s (absent)' % dropin)
    assert os.path.exists(dropin) and owners_of(dict(paths, dropin=dropin)) == ['coco']
    assert owners_of(dict(paths, folder=os.path.dirname(dropin)), 'folder') == ['coco']
    assert not os.path.exists(lock_path_for(paths['main']))


def test_a_drop_in_another_drop_in_imports_is_kept(etc, tmp_path):
    """Imports load breadth first: the importing file comes after one that imports nothing."""
    params, paths = etc
    first, second = (str(tmp_path / 'etc' / n) for n in ('first.toml', 'second.toml'))
    with open(first, 'w') as f:
        f.write('version = 2\n')
    with open(second, 'w') as f:
        f.write('version = 2\nimports = [%s]\n' % ', '.join(['1', '"%s/*.toml"' % paths['folder'],
                                                             '"%s"' % paths['dropin']]))
    with open(paths['main'], 'w') as f:
        f.write('version = 2\nimports = ["%s", "%s"]\n' % (first, second))
    write(Module(), FakeContext(containerd_version=V16), params())
    res = remove(Module(), FakeContext(containerd_version=V16), params())
    assert res['kept'] and not res['changed'] and not res['folder_removed'] and res['imported_by'] == [second]
    assert res['msg'] == '%s is kept: still imported by %s' % (paths['dropin'], second)
    assert os.path.exists(paths['dropin'])
    assert importers(paths['main'], paths['dropin'], V16) == [second]


def test_a_glob_that_matches_the_drop_in_does_not_keep_it(etc):
    params, paths = etc
    with open(paths['main'], 'w') as f:
        f.write('version = 2\nimports = ["%s/*.toml"]\n' % paths['folder'])
    write(Module(), FakeContext(containerd_version=V16), params())
    assert importers(paths['main'], paths['dropin'], V16) == []
    assert remove(Module(), FakeContext(containerd_version=V16), params())['removed']


@pytest.mark.parametrize('main', [None, b'version = 2\nimports = [\n', b'version = 2\n# \xff\n'])
def test_without_a_readable_config_toml_nothing_imports_the_drop_in(etc, main):
    params, paths = etc
    write(Module(), FakeContext(containerd_version=V16), params())
    os.unlink(paths['main'])
    if main is not None:
        with open(paths['main'], 'wb') as f:
            f.write(main)
    assert importers(paths['main'], paths['dropin'], V16) == []
    assert remove(Module(), FakeContext(containerd_version=V16), params())['removed']


def test_the_owners_folder_goes_with_its_last_file(etc, tmp_path):
    params, paths = etc
    folder = str(tmp_path / 'etc' / 'new.d')
    a, b = os.path.join(folder, 'a.toml'), os.path.join(folder, 'b.toml')
    write(Module(), FakeContext(containerd_version=V16), params(dropin=a))
    write(Module(), FakeContext(containerd_version=V16), params(dropin=b))
    res = remove(Module(), FakeContext(containerd_version=V16), params(dropin=a))
    assert res['removed'] and not res['folder_removed'] and os.path.isdir(folder)
    res = remove(Module(), FakeContext(containerd_version=V16), params(dropin=b))
    assert res['removed'] and res['folder_removed'] and not os.path.exists(folder)
    assert not os.path.exists(Ledger.load(paths['state'], folder).path)


def test_a_folder_already_gone_only_loses_its_record(etc, tmp_path):
    params, paths = etc
    folder = str(tmp_path / 'etc' / 'new.d')
    dropin = os.path.join(folder, 'a.toml')
    write(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    os.unlink(dropin)
    os.rmdir(folder)
    res = remove(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    assert not res['changed'] and not res['removed'] and not res['folder_removed']
    assert not os.path.exists(Ledger.load(paths['state'], folder).path)
    assert not os.path.exists(Ledger.load(paths['state'], dropin).path)


def test_an_emptied_folder_of_the_owner_goes_even_when_its_file_was_already_gone(etc, tmp_path):
    params, paths = etc
    folder = str(tmp_path / 'etc' / 'new.d')
    dropin = os.path.join(folder, 'a.toml')
    write(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    os.unlink(dropin)
    res = remove(Module(), FakeContext(containerd_version=V16), params(dropin=dropin))
    assert not res['removed'] and res['folder_removed'] and res['changed'] and not os.path.exists(folder)


def test_removing_several_gives_each_result_and_every_diff(etc):
    params, paths = etc
    a, b = (os.path.join(paths['folder'], n) for n in ('a.toml', 'b.toml'))
    write(Module(), FakeContext(containerd_version=V16), params(dropin=a))
    write(Module(), FakeContext(containerd_version=V16), params(dropin=b, content=OTHER))
    res = remove_all(Module(diff=True), FakeContext(containerd_version=V16), params(dropins=[a, b]))
    assert res['changed'] and res['removed'] and not res['kept'] and not res['folder_removed']
    assert [r['dropin'] for r in res['dropins']] == [a, b] and all('diff' not in r for r in res['dropins'])
    assert [d['before'] for d in res['diff']] == [NYDUS, OTHER]
    res = remove_all(Module(diff=True), FakeContext(containerd_version=V16), params(dropins=[a, b]))
    assert not res['changed'] and not res['removed'] and 'diff' not in res
