# -*- coding: utf-8 -*-
"""The engine's write order, in process, with spies on os.fsync and os.rename.

5. Durability of the rename: the temporary file is flushed before it is
   renamed over the config, and the folder is flushed after the rename (or
   a power cut can lose the rename itself).  The same for the ledger.
6. Ledger before config: the ledger describing the new config is in place
   before the config is renamed, so a crash between the two is rolled back by
   the next run; a crash at the ledger write leaves the config untouched.

The module runs in this process (ansible's patch_module_args) on a real file,
validated by the real containerd 1.6, so the spies see every call.
"""

import glob
import hashlib
import json
import os

import pytest

from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_1, assert_containerd_accepts, read
from helpers.engine import node_from_fixture
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_setting

KEY = 'images.snapshotter'
LINE = 'snapshotter = "%s"'


class Crash(BaseException):
    """A kill -9 stand-in: not an Exception, so no handler of the engine sees it."""


@pytest.fixture
def node(tmp_path):
    assert CONTAINERD_1, 'containerd 1.6 is needed (make deps)'
    return node_from_fixture(tmp_path, 'v2_kubeadm.toml')


def run(node, capsys, **args):
    params = dict(path=node['path'], state_dir=node['state'], key=KEY, owner='coco', validate='auto',
                  _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])
    params.update(args)
    _forget_warnings()   # ansible keeps module warnings process-wide: each run reports only its own
    with patch_module_args(params):
        with pytest.raises(SystemExit):
            containerd_setting.main()
    result = json.loads(capsys.readouterr().out)
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return result


def _forget_warnings():
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()


def spy(monkeypatch, crash_on=None):
    """Record fsync (by the path the descriptor names) and rename calls, in order."""
    events = []
    real_fsync, real_rename, real_replace = os.fsync, os.rename, os.replace

    def fsync(fd):
        events.append(('fsync', os.readlink('/proc/self/fd/%d' % fd)))
        return real_fsync(fd)

    def renamer(real):
        def rename(src, dst, *a, **kw):
            if crash_on is not None and os.path.abspath(dst) == crash_on:
                events.append(('crash', str(src), str(dst)))
                raise Crash()
            result = real(src, dst, *a, **kw)
            events.append(('rename', str(src), str(dst)))
            return result
        return rename
    monkeypatch.setattr(os, 'fsync', fsync)
    monkeypatch.setattr(os, 'rename', renamer(real_rename))
    monkeypatch.setattr(os, 'replace', renamer(real_replace))
    return events


def ledger_file(node):
    (path,) = glob.glob(os.path.join(node['state'], 'ledger', '*.json'))
    return path


def renames_to(events, dst):
    return [i for i, e in enumerate(events) if e[0] == 'rename' and e[2] == dst]


def assert_durable_rename(events, dst):
    """fsync(temp) -> rename(temp, dst) -> fsync(folder of dst), each exactly where it must be."""
    (i,) = renames_to(events, dst)
    tmp = events[i][1]
    assert os.path.dirname(tmp) == os.path.dirname(dst) and tmp.endswith('.nodeguard-tmp'), tmp
    flushed_tmp = [j for j, e in enumerate(events) if e == ('fsync', tmp)]
    assert flushed_tmp and flushed_tmp[-1] < i, ('the temporary file is not flushed before the rename', events)
    flushed_dir = [j for j, e in enumerate(events) if e == ('fsync', os.path.dirname(dst))]
    assert [j for j in flushed_dir if j > i], ('the folder is not flushed after the rename', events)
    return i


# ------------------------------------------------------------------ each rename is flushed: temporary file, rename, folder
def test_config_and_ledger_renames_are_flushed_in_order(node, capsys, monkeypatch):
    events = spy(monkeypatch)
    res = run(node, capsys, value='nydus')
    assert res['changed']
    monkeypatch.undo()
    assert LINE % 'nydus' in read(node['path'])
    assert_containerd_accepts(node['path'])
    assert_durable_rename(events, node['path'])
    assert_durable_rename(events, ledger_file(node))
    # and the folder flush follows the config's rename before anything else renames
    i = renames_to(events, node['path'])[0]
    assert events[i + 1] == ('fsync', os.path.dirname(node['path'])), events[i:]


def test_undo_is_flushed_the_same_way(node, capsys, monkeypatch):
    original = read(node['path'], 'rb')
    run(node, capsys, value='nydus')
    events = spy(monkeypatch)
    res = run(node, capsys, state='absent')
    monkeypatch.undo()
    assert res['changed'] and read(node['path'], 'rb') == original
    assert_durable_rename(events, node['path'])
    assert_durable_rename(events, ledger_file(node))


def test_check_mode_neither_renames_nor_flushes(node, capsys, monkeypatch):
    original = read(node['path'], 'rb')
    events = spy(monkeypatch)
    res = run(node, capsys, value='nydus', _ansible_check_mode=True)
    monkeypatch.undo()
    assert res['changed']
    assert [e for e in events if e[0] == 'rename'] == []
    assert read(node['path'], 'rb') == original
    assert not os.path.exists(os.path.join(node['state'], 'ledger'))


# ------------------------------------------------------------------ the ledger is in place before the config
def test_ledger_is_in_place_before_the_config(node, capsys, monkeypatch):
    events = spy(monkeypatch)
    run(node, capsys, value='nydus')
    monkeypatch.undo()
    ledger = ledger_file(node)
    (li,) = renames_to(events, ledger)
    (ci,) = renames_to(events, node['path'])
    assert li < ci, events
    # what the ledger says is the config that followed it
    with open(ledger) as f:
        data = json.load(f)
    assert data['config_sha256'] == hashlib.sha256(read(node['path'], 'rb')).hexdigest()


def test_crash_at_the_ledger_write_leaves_the_config_untouched(node, capsys, monkeypatch):
    original = read(node['path'], 'rb')
    ledger = os.path.join(node['state'], 'ledger', 'etc-placeholder')
    os.makedirs(os.path.dirname(ledger))
    # the ledger's name is the engine's business: crash on any rename into the ledger folder
    events = []
    real_rename = os.rename

    def rename(src, dst, *a, **kw):
        if os.path.dirname(os.path.abspath(dst)) == os.path.dirname(ledger):
            events.append(('crash', src, dst))
            raise Crash()
        events.append(('rename', src, dst))
        return real_rename(src, dst, *a, **kw)
    monkeypatch.setattr(os, 'rename', rename)
    monkeypatch.setattr(os, 'replace', rename)
    with patch_module_args(dict(path=node['path'], state_dir=node['state'], key=KEY, owner='coco', value='nydus',
                                _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])):
        with pytest.raises(Crash):
            containerd_setting.main()
    monkeypatch.undo()
    capsys.readouterr()
    assert [e for e in events if e[0] == 'crash'], 'the ledger was never written'
    assert [e for e in events if e[0] == 'rename'] == [], events   # no config rename before the ledger's
    assert read(node['path'], 'rb') == original
    # the next run is a clean start: the same edit, then its undo, give back the original
    assert run(node, capsys, value='nydus')['changed']
    assert LINE % 'nydus' in read(node['path'])
    assert run(node, capsys, state='absent')['changed']
    assert read(node['path'], 'rb') == original


def test_crash_between_ledger_and_config_is_rolled_back(node, capsys, monkeypatch):
    original = read(node['path'], 'rb')
    events = spy(monkeypatch, crash_on=node['path'])
    with patch_module_args(dict(path=node['path'], state_dir=node['state'], key=KEY, owner='coco', value='nydus',
                                _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])):
        with pytest.raises(Crash):
            containerd_setting.main()
    monkeypatch.undo()
    capsys.readouterr()
    assert events[-1][0] == 'crash'
    assert read(node['path'], 'rb') == original
    # the ledger was written first and describes the config that never arrived
    with open(ledger_file(node)) as f:
        data = json.load(f)
    assert [r['owner'] for r in data['records']] == ['coco']
    assert data['previous']['config_sha256'] == hashlib.sha256(original).hexdigest()
    assert data['config_sha256'] != data['previous']['config_sha256']
    # the killed run's temporary file is still there; the next run removes it and rolls the ledger back
    assert glob.glob(os.path.join(os.path.dirname(node['path']), '.config.toml.*.nodeguard-tmp'))
    res = run(node, capsys, state='absent')
    assert any('rolled the ledger back' in w for w in res['warnings']), res['warnings']
    assert not res['changed'] and read(node['path'], 'rb') == original
    assert glob.glob(os.path.join(os.path.dirname(node['path']), '.config.toml.*.nodeguard-tmp')) == []
    with open(ledger_file(node)) as f:
        assert json.load(f)['records'] == []


# ---------------------------------------------- never a crash after a write
def test_a_failure_after_the_rename_reports_what_was_written(node, capsys, monkeypatch):
    """A failure once the config is renamed into place is not a bare traceback: it names the file written."""
    from ansible.module_utils.basic import AnsibleModule

    def broken(self, file_args, changed, *a, **kw):
        raise OSError(5, 'Input/output error (test)')
    monkeypatch.setattr(AnsibleModule, 'set_fs_attributes_if_different', broken)
    res = run(node, capsys, value='nydus')
    monkeypatch.undo()
    assert res.get('failed') and res['changed'], res
    assert res['written'] == [node['path']], res
    assert 'Already written before this failure' in res['msg'] and node['path'] in res['msg'], res['msg']
    assert 'Input/output error (test)' in res['msg'], res['msg']
    # what it says was written is there, with its ledger: the next run finishes, its undo gives the bytes back
    assert LINE % 'nydus' in read(node['path'])
    assert_containerd_accepts(node['path'])
    again = run(node, capsys, value='nydus')
    assert not again.get('failed') and not again['changed'], again


def test_a_result_holding_tomlkit_objects_is_sent_as_plain_json(node, capsys, monkeypatch):
    """tomlkit items in a result (ansible-core 2.16 - 2.18 could not copy them, after the write) go out plain."""
    import tomlkit
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
    doc = tomlkit.parse('a = "x"\nb = 2\nc = 1.5\nd = true\n[t]\ne = [1, "y"]\nf = 1979-05-27T07:32:00Z\n')
    safe = _engine.json_safe({'doc': doc, 'items': [doc['a'], doc['b'], doc['c'], doc['d']], 't': doc['t']})
    assert safe['items'] == ['x', 2, 1.5, True]
    assert [type(v) for v in safe['items']] == [str, int, float, bool]
    assert [type(safe['doc']), type(safe['t']['e']), type(safe['t']['e'][1])] == [dict, list, str]
    assert safe['t']['f'] == '1979-05-27T07:32:00+00:00'
    json.dumps(safe)
    # and through a module: the engine's exit sends what json_safe makes of the edit's result
    real = _engine._merge_steps
    monkeypatch.setattr(_engine, '_merge_steps', lambda steps: dict(real(steps), leaked=doc['a']))
    res = run(node, capsys, value='nydus')
    monkeypatch.undo()
    assert res['changed'] and res['leaked'] == 'x' and not res.get('failed'), res


def test_an_operator_undoing_the_last_change_by_hand_is_not_a_crash(node, capsys):
    """The file back at the bytes from before the last write, but written since (sed -i, an editor): the
    ledger keeps the owner's record (the crash rollback is only for the very file the run read)."""
    original = read(node['path'], 'rb')
    assert run(node, capsys, value='nydus')['changed']
    tmp = node['path'] + '.edit'
    with open(tmp, 'wb') as f:
        f.write(original)
    os.replace(tmp, node['path'])   # as sed -i does: a new file with the old bytes
    res = run(node, capsys, state='absent')
    assert not [w for w in res['warnings'] if 'rolled the ledger back' in w], res['warnings']
    assert [w for w in res['warnings'] if 'someone else changed it since' in w], res['warnings']
    assert read(node['path'], 'rb') == original
    with open(ledger_file(node)) as f:
        assert json.load(f)['records'] == []
