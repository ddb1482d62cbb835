# -*- coding: utf-8 -*-
"""The engine's refusals that no module test reaches: an empty
config, edit_in naming config.toml or a file that is not imported, an edit
that keeps pointing at another file, validate: load on a node without
containerd, create: true without a usable "containerd config default", a
temporary file that cannot be written.

Each refusal writes nothing and says what to fix.  The module runs in this
process (ansible's patch_module_args), validated by the real containerd 1.6
where a binary is wanted.
"""

import json
import os
import stat
import threading
import time
from types import SimpleNamespace

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_1, fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import EditElsewhere
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_setting

KEY = 'images.snapshotter'


@pytest.fixture
def node(tmp_path):
    etc = tmp_path / 'etc'
    etc.mkdir()
    path = etc / 'config.toml'
    path.write_text(fixture_text('v2_kubeadm.toml'))
    return dict(path=str(path), etc=str(etc), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def _params(node, args):
    params = dict(path=node['path'], state_dir=node['state'], owner='coco', _ansible_tmpdir=node['tmp'],
                  _ansible_remote_tmp=node['tmp'])
    params.update(args)
    return params


def _result(capsys):
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()
    result = json.loads(capsys.readouterr().out)
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return result


def setting(node, capsys, **args):
    """containerd_setting's result, run in this process."""
    args.setdefault('key', KEY)
    args.setdefault('containerd_bin', CONTAINERD_1)
    with patch_module_args(_params(node, args)):
        with pytest.raises(SystemExit):
            containerd_setting.main()
    return _result(capsys)


def engine(node, capsys, edit, **args):
    """run_transaction with an edit callback of the test's own, in this process."""
    args.setdefault('containerd_bin', CONTAINERD_1)
    spec = dict(_engine.COMMON_ARGUMENT_SPEC, state=dict(type='str', default='present'))
    with patch_module_args(_params(node, args)):
        module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
        with pytest.raises(SystemExit):
            _engine.run_transaction(module, edit)
    return _result(capsys)


def nothing_written(node, before):
    assert read(node['path']) == before
    assert not os.path.exists(os.path.join(node['state'], 'ledger'))


# ------------------------------------------------------------------ an empty config.toml
def test_an_empty_config_is_refused_not_filled_with_the_change(node, capsys):
    # containerd would start on built-in defaults: writing one key into it would hide that
    with open(node['path'], 'w') as f:
        f.write('\n')
    res = setting(node, capsys, value='native')
    assert res['failed'] and res['key'] == 'path'
    assert res['msg'].startswith('%s is empty: containerd would start with built-in defaults only' % node['path'])
    assert 'set create: true to start from the node\'s "containerd config default"' in res['msg']
    nothing_written(node, '\n')


# ------------------------------------------------------------------ edit_in naming one file
def test_edit_in_naming_config_toml_itself_edits_config_toml(node, capsys):
    res = setting(node, capsys, value='native', edit_in=node['path'])
    assert res['changed'] and res['file'] == node['path'] and 'failed' not in res
    assert 'snapshotter = "native"' in read(node['path'])
    # and nothing else: no backup (backup: false), no diff (not asked for), no word of another file
    assert sorted(f for f in os.listdir(node['etc']) if not f.startswith('.')) == ['config.toml']
    assert 'diff' not in res and res.get('warnings', []) == []


def test_edit_in_naming_a_file_that_is_not_imported_is_refused_listing_the_imports(node, capsys):
    before = read(node['path'])
    stray = os.path.join(node['etc'], 'stray.toml')
    res = setting(node, capsys, value='native', edit_in=stray)
    assert res['failed'] and res['key'] == 'edit_in'
    assert res['msg'] == ('edit_in: %s is not a file %s imports (its imports: none). Nothing was written. Fix: '
                          'name one of those files, or edit_in: auto.' % (stray, node['path']))
    nothing_written(node, before)
    # with imports, the message lists them
    dropin = os.path.join(node['etc'], '10-a.toml')
    with open(dropin, 'w') as f:
        f.write('version = 2\n')
    with open(node['path'], 'w') as f:
        f.write('imports = ["%s"]\n' % dropin + before)
    res = setting(node, capsys, value='native', edit_in=stray)
    assert '(its imports: %s)' % dropin in res['msg']


# ------------------------------------------------------------------ an edit that never settles on a file
def test_an_edit_that_points_elsewhere_from_the_drop_in_too_is_refused(node, capsys):
    # the engine moves an edit once, to the drop-in it names; a second move would be a loop
    dropin = os.path.join(node['etc'], '10-a.toml')
    with open(dropin, 'w') as f:
        f.write('version = 2\n')
    text = 'imports = ["%s"]\n' % dropin + read(node['path'])
    with open(node['path'], 'w') as f:
        f.write(text)
    tried = []

    def edit(doc, ledger, ctx):
        tried.append(doc.path)
        raise EditElsewhere('the runtime gpu is defined in %s' % dropin, dropin)

    res = engine(node, capsys, edit)
    assert tried == [node['path'], dropin]
    assert res['failed'] and res['key'] == 'edit_in'
    assert res['msg'] == 'the runtime gpu is defined in %s Nothing was written.' % dropin
    assert read(node['path']) == text and read(dropin) == 'version = 2\n'


# ------------------------------------------------------------------ validate: load on a node without containerd
def test_validate_load_without_a_containerd_binary_is_refused_naming_containerd_bin(node, capsys, monkeypatch,
                                                                                    tmp_path):
    empty = tmp_path / 'empty-path'
    empty.mkdir()
    monkeypatch.setenv('PATH', str(empty))
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [])
    before = read(node['path'])
    res = setting(node, capsys, value='native', validate='load', containerd_bin=None)
    assert res['failed'] and res['key'] == 'validate'
    assert res['msg'].startswith('refusing to write %s: validate: load starts the node\'s containerd on the '
                                 'candidate, but no containerd binary was found in PATH or ' % node['path'])
    assert res['msg'].endswith('. Nothing was written. Fix: set containerd_bin.')
    nothing_written(node, before)
    assert [f for f in os.listdir(node['etc']) if 'tmp' in f] == []  # the candidate is gone too


# ------------------------------------------------------------------ create: true and "containerd config default"
def test_create_without_a_containerd_binary_says_how_to_get_a_default_config():
    ctx = SimpleNamespace(containerd_bin=None)
    with pytest.raises(ConfigError) as err:
        _engine._default_config(ctx, '/etc/containerd/config.toml')
    assert str(err.value) == (
        '/etc/containerd/config.toml does not exist and create: true needs the node\'s containerd binary to write '
        'its default config ("containerd config default"), but none was found in PATH or %s. Fix: install '
        'containerd first, or set containerd_bin.' % ', '.join(_engine.CONTAINERD_DIRS))
    assert err.value.given_details() == dict(key='path')


@pytest.mark.parametrize('answer', [(1, 'version = 2\n', 'unknown command "default"\n'), (0, '  \n', '')])
def test_a_config_default_that_fails_or_prints_nothing_is_refused(answer):
    ctx = SimpleNamespace(containerd_bin='/usr/bin/containerd', run_command=lambda cmd: answer)
    with pytest.raises(ConfigError) as err:
        _engine._default_config(ctx, '/etc/containerd/config.toml')
    assert str(err.value) == '"containerd config default" failed (rc=%s): %s' % (answer[0], answer[2].strip())


# ------------------------------------------------------------------ a temporary file that cannot be written
def test_a_temporary_file_that_cannot_be_written_is_refused_naming_the_folder(tmp_path):
    txn = _engine.Transaction(SimpleNamespace(params={}), SimpleNamespace(path=str(tmp_path / 'config.toml')))
    gone = tmp_path / 'gone' / 'config.toml'
    with pytest.raises(ConfigError) as err:
        txn.temp(str(gone), b'version = 2\n')
    assert str(err.value) == ('cannot write a temporary file beside %s (No such file or directory). Nothing was '
                              'written; the file is as it was. Fix: free space on that filesystem or make %s '
                              'writable.' % (gone, gone.parent))
    assert txn.temps == []


# ------------------------------------------------------------------ missing, empty and oversized files
def test_a_missing_config_is_refused_unless_create_is_set(node, capsys):
    os.remove(node['path'])
    res = setting(node, capsys, value='native')
    assert res['failed'] and res['key'] == 'path'
    assert res['msg'].startswith('%s does not exist. Nothing was written. Fix: set create: true' % node['path'])
    assert not os.path.exists(node['path'])
    # create: true starts from the node's default config; the diff shows the file as absent before
    res = setting(node, capsys, value='native', create=True, _ansible_diff=True)
    assert res['changed'] and 'snapshotter = "native"' in read(node['path'])
    assert res['diff']['before'] == '' and res['diff']['before_header'] == '%s (absent)' % node['path']
    assert not read(node['path'], 'rb').startswith(b'\xef\xbb\xbf')  # containerd 2.x cannot parse a BOM
    # the records of the new file are read back as they are (the ledger's state before is "no file")
    assert [r['owner'] for r in _engine.tree_records(node['state'], node['path'], (1, 6))] == ['coco']


def test_create_makes_a_missing_folder_readable_as_containerds_own_is(node, capsys):
    path = os.path.join(node['tmp'], 'new', 'config.toml')
    res = setting(node, capsys, value='native', path=path)
    assert res['failed'] and res['msg'] == ('folder %s does not exist (no containerd here?). Fix: install '
                                            'containerd, or set create: true.' % os.path.dirname(path))
    old_mask = os.umask(0o022)
    try:
        res = setting(node, capsys, value='native', path=path, create=True)
    finally:
        os.umask(old_mask)
    assert res['changed'] and stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o755


def test_create_on_an_existing_config_keeps_it(node, capsys):
    res = setting(node, capsys, value='native', create=True)
    assert res['changed'] and read(node['path']).startswith('# containerd config for a kubeadm node')


def test_create_fills_an_empty_config_from_the_default_and_the_diff_shows_what_was_there(node, capsys):
    with open(node['path'], 'w') as f:
        f.write('\n')
    res = setting(node, capsys, value='native', create=True, _ansible_diff=True)
    assert res['changed'] and 'failed' not in res
    text = read(node['path'])
    assert 'snapshotter = "native"' in text and '[plugins."io.containerd.grpc.v1.cri"' in text
    assert res['diff']['before_header'] == '%s (before)' % node['path']


def test_a_config_over_4_mib_is_refused_before_it_is_parsed(tmp_path):
    # exactly 4 MiB is read on (here: on to the UTF-8 check, which refuses quickly); one byte more is not
    ctx = SimpleNamespace(warn=lambda msg: None)
    module = SimpleNamespace(params=dict(create=False, state_dir=str(tmp_path / 'state')))
    path = tmp_path / 'config.toml'
    path.write_bytes(b'\xff' * (4 * 1024 * 1024))
    with pytest.raises(ConfigError) as err:
        _engine._read_config(module, ctx, str(path))
    assert 'is not UTF-8 text' in str(err.value)
    for size, shown in ((4 * 1024 * 1024 + 1, '4.0'), (4666164, '4.5')):
        path.write_bytes(b'\xff' * size)
        with pytest.raises(ConfigError) as err:
            _engine._read_config(module, ctx, str(path))
        assert str(err.value).startswith('%s is %s MB; nodeguard edits configs of up to 4 MB' % (path, shown))


def test_an_empty_file_is_awaited_for_about_a_second_and_read_often(tmp_path):
    # long enough for a writer that truncated the file to finish, short enough for a file that is empty
    path = tmp_path / 'config.toml'
    path.write_text('')
    start = time.monotonic()
    assert _engine._read_settled(str(path)) == b''
    assert 1.0 <= time.monotonic() - start < 1.9
    later = threading.Timer(0.2, lambda: path.write_text('version = 2\n'))
    start = time.monotonic()
    later.start()
    try:
        assert _engine._read_settled(str(path)) == b'version = 2\n'
        assert time.monotonic() - start < 0.9  # seen within a few polls, not at the end of the wait
    finally:
        later.cancel()


def test_a_file_with_content_or_no_file_is_read_at_once(tmp_path):
    # only an empty read is read again (a writer truncating it): anything else must not wait
    path = tmp_path / 'config.toml'
    path.write_text('version = 2\n')
    start = time.monotonic()
    assert _engine._read_settled(str(path), wait=5.0) == b'version = 2\n'
    assert _engine._read_settled(str(tmp_path / 'missing.toml'), wait=5.0) is None
    assert time.monotonic() - start < 2.5


# ------------------------------------------------------------------ an edit whose text does not say what it meant
def test_an_edit_whose_text_does_not_parse_to_what_it_meant_is_refused(node, capsys):
    # the engine's safety net for the text layer: the written text must be exactly the data the edit promised
    before = read(node['path'])

    def edit(doc, ledger, ctx):
        doc.toml.set_value(('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter'), 'native')
        doc.data['root'] = '/srv/containerd'  # in the model only, not in the text
        return {}

    res = engine(node, capsys, edit)
    assert res['failed']
    assert res['msg'].startswith('%s: nodeguard could not make this edit without touching other content'
                                 % node['path'])
    assert read(node['path']) == before


def test_an_install_is_one_write_even_with_the_owners_records_in_the_file(node, capsys):
    # only an uninstall goes on to the next file of the tree; an install's edit runs once
    runs = []

    def edit(doc, ledger, ctx):
        runs.append(doc.path)
        doc.toml.set_value(('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter'), 'native')
        ledger.add({'owner': 'coco', 'resource': 'setting:x', 'kind': 'key', 'path': ['x'], 'prior': None,
                    'value': '1'})
        return {}

    res = engine(node, capsys, edit)
    assert res['changed'] and runs == [node['path']]


# ------------------------------------------------------------------ the ledger of a run that changes no byte
def test_a_run_that_changes_nothing_writes_no_ledger(node, capsys):
    before = read(node['path'])
    res = setting(node, capsys, state='absent')
    assert not res['changed'] and 'failed' not in res
    nothing_written(node, before)


def test_a_ledger_only_change_is_saved_for_the_file_as_it_is(node, capsys):
    # owner b changed the key after owner a: a's uninstall hands its prior on and leaves the file as it
    # is; that ledger must describe the file on disk, or the next run takes it for one a crash left
    # behind, rolls it back and b's uninstall puts back a's value instead of the original
    setting(node, capsys, value='native', owner='a')
    setting(node, capsys, value='zfs', owner='b')
    before = read(node['path'])
    res = setting(node, capsys, state='absent', owner='a')
    assert not res['changed'] and read(node['path']) == before
    res = setting(node, capsys, state='absent', owner='b')
    assert res['changed'] and [w for w in res.get('warnings', []) if 'rolled the ledger back' in w] == []
    assert 'snapshotter = "overlayfs"' in read(node['path'])


# ------------------------------------------------------------------ a writer that does not take nodeguard's lock
def foreign_writer(node, times):
    """A validate command that passes and appends to config.toml behind nodeguard's back the first `times` calls
    (nvidia-ctk or kata-deploy landing between open and commit); its calls are counted."""
    count = os.path.join(node['tmp'], 'writes')
    script = os.path.join(node['tmp'], 'foreign-writer.sh')
    with open(script, 'w') as f:
        f.write('#!/bin/sh\nn=$(cat %s 2>/dev/null || echo 0)\necho $((n + 1)) > %s\nif [ "$n" -lt %d ]; then\n'
                '  echo "# foreign write $n" >> %s\nfi\n' % (count, count, times, node['path']))
    os.chmod(script, 0o755)
    return script + ' %s', lambda: int(read(count))


def test_a_foreign_write_during_the_edit_is_kept_and_the_edit_applied_again_on_it(node, capsys):
    validate, calls = foreign_writer(node, 1)
    res = setting(node, capsys, value='native', validate=validate)
    assert res['changed'] and calls() == 2
    text = read(node['path'])
    assert '# foreign write 0' in text and 'snapshotter = "native"' in text
    assert res['warnings'] == ['%s changed while nodeguard was editing it; the edit was applied again on the new '
                               'content' % node['path']]


def test_a_file_rewritten_at_every_try_is_refused_after_three_and_the_ledger_is_as_it_was(node, capsys):
    setting(node, capsys, key='images.disable_snapshot_annotations', value=False)  # a ledger from an earlier run
    (ledger,) = [os.path.join(node['state'], 'ledger', f) for f in os.listdir(os.path.join(node['state'], 'ledger'))]
    ledger_before = read(ledger)
    validate, calls = foreign_writer(node, 99)
    res = setting(node, capsys, value='native', validate=validate)
    assert res['failed'] and calls() == 3
    assert res['msg'].startswith('%s was changed by another program 3 times while nodeguard was editing it'
                                 % node['path'])
    assert 'snapshotter = "native"' not in read(node['path'])
    assert read(ledger) == ledger_before and stat.S_IMODE(os.stat(ledger).st_mode) == 0o600


def test_check_mode_asks_containerd_but_not_the_users_validate_command(node, capsys):
    # a preview: nothing is written, no temporary copy is left, and the user's command (which may do more than
    # judge) is not run; the node's config dump judges the candidate instead
    before = read(node['path'])
    validate, _calls = foreign_writer(node, 0)
    res = setting(node, capsys, value='native', validate=validate, _ansible_check_mode=True)
    assert res['changed'] and not os.path.exists(os.path.join(node['tmp'], 'writes'))
    assert res['validated'] == 'config dump'
    nothing_written(node, before)
    assert sorted(f for f in os.listdir(node['etc']) if 'tmp' in f) == []


def test_an_edit_on_a_1x_tree_whose_drop_in_replaces_a_plugin_table_is_refused(node, capsys):
    # containerd 1.6 takes the drop-in's plugins."io.containerd.gc.v1.scheduler" whole: the main file's
    # pause_threshold is lost; only containerd_imports may say that is intended (allow_plugin_override)
    dropin = os.path.join(node['etc'], '10-gc.toml')
    with open(dropin, 'w') as f:
        f.write('version = 2\n[plugins."io.containerd.gc.v1.scheduler"]\n  deletion_threshold = 1\n')
    text = ('imports = ["%s"]\n' % dropin) + read(node['path']) + (
        '\n  [plugins."io.containerd.gc.v1.scheduler"]\n    pause_threshold = 0.02\n')
    with open(node['path'], 'w') as f:
        f.write(text)
    res = setting(node, capsys, value='native')
    assert res['failed']
    assert res['msg'].startswith('refusing to write %s: the new config would not load.' % node['path'])
    assert 'replaces the whole table of the main config %s: pause_threshold would be lost' % node['path'] in res['msg']
    assert read(node['path']) == text
