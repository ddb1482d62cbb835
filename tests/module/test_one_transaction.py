# -*- coding: utf-8 -*-
"""Restore and repair go through the engine's transaction steps, as every edit does.

A foreign writer during a restore is caught at commit and the restore is
started over, or refused after three tries, as for an edit; the `%s` rule
and the "validation failed" message are the same for both; check mode of a
restore writes nothing; repair's candidate is checked by the engine's check
step (the validate command). The real containerd 1.6 judges every tree.
"""

import glob
import os
import stat

from helpers.common import CONTAINERD_1, assert_containerd_accepts, read

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.restore import RestoreTransaction
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import EditTransaction, Transaction

MOD = 'containerd_baseline'
KEY = 'images.snapshotter'


def writer(workdir, target, times):
    """A validate command that passes, and rewrites target behind nodeguard's back the first `times` calls.

    It runs in the check step, between open and commit: a writer that does
    not take nodeguard's lock (nvidia-ctk, kata-deploy) landing there.
    """
    count = os.path.join(workdir, 'writes')
    script = os.path.join(workdir, 'foreign-writer.sh')
    with open(script, 'w') as f:
        f.write('#!/bin/sh\nn=$(cat %s 2>/dev/null || echo 0)\nif [ "$n" -lt %d ]; then\n'
                '  echo "# foreign write $n" >> %s\n  echo $((n + 1)) > %s\nfi\nexec %s --config "$1" config dump '
                '>/dev/null\n' % (count, times, target, count, CONTAINERD_1))
    os.chmod(script, stat.S_IRWXU)
    return script + ' %s', count


def common(workdir, path):
    return dict(path=path, store=os.path.join(workdir, 'baselines'), containerd_bin=CONTAINERD_1, load_test=False)


def snapshot_then_drift(run_module, workdir, config):
    """A baseline of a good file, then the file changed through nodeguard (so the ledger changed too)."""
    path = config('v2_kubeadm.toml')
    args = common(workdir, path)
    run_module(MOD, **args)
    args['original'] = read(path, 'rb')
    run_module('containerd_setting', path=path, key=KEY, value='native', owner='ops', containerd_bin=CONTAINERD_1)
    return path, args


def test_the_steps_are_the_engines():
    # one run(): open, build, check, commit, for an edit and a restore alike
    assert issubclass(RestoreTransaction, Transaction) and issubclass(EditTransaction, Transaction)
    for kind in (RestoreTransaction, EditTransaction):
        assert kind.run is Transaction.run and kind.commit_files is Transaction.commit_files
        for step in ('open', 'build', 'check', 'commit'):
            assert getattr(kind, step) is not getattr(Transaction, step), (kind, step)


def test_a_foreign_writer_during_a_restore_is_caught_and_the_restore_starts_over(run_module, workdir, config):
    path, args = snapshot_then_drift(run_module, workdir, config)
    original = args.pop('original')
    validate, count = writer(workdir, path, 1)
    done = run_module(MOD, state='restore', validate=validate, **args)
    assert read(count).strip() == '1'                      # the writer did land, once
    assert any('changed while nodeguard was editing it; the restore was applied again' in w
               for w in done['warnings']), done['warnings']
    assert done['changed'] and done['restored'] == [path]
    assert '# foreign write' not in read(path) and 'native' not in read(path)
    assert read(path, 'rb') == original
    assert_containerd_accepts(path, CONTAINERD_1)
    assert not glob.glob(os.path.join(os.path.dirname(path), '.*nodeguard-tmp'))


def test_a_writer_that_does_not_stop_fails_the_restore_as_it_fails_an_edit(run_module, workdir, config):
    path, args = snapshot_then_drift(run_module, workdir, config)
    args.pop('original')
    ledger = glob.glob(os.path.join(run_module.state_dir, 'ledger', '*'))
    ledger_bytes = [read(p, 'rb') for p in ledger]
    validate, _count = writer(workdir, path, 100)
    refused = run_module(MOD, state='restore', validate=validate, expect_fail=True, **args)
    assert 'was changed by another program 3 times while nodeguard was editing it' in refused['msg']
    # nothing of the restore landed: the file holds the drift and the three foreign writes, the ledger as it was
    text = read(path)
    assert 'native' in text and text.count('# foreign write') == 3
    assert [read(p, 'rb') for p in ledger] == ledger_bytes
    assert not glob.glob(os.path.join(os.path.dirname(path), '.*nodeguard-tmp'))
    # the same writer during an edit: the same failure
    edit = run_module('containerd_setting', path=path, key=KEY, value='overlayfs', owner='ops',
                      containerd_bin=CONTAINERD_1, validate=writer(workdir, path, 200)[0], expect_fail=True)
    assert 'was changed by another program 3 times while nodeguard was editing it' in edit['msg']


def test_the_percent_s_rule_and_the_validation_message_are_one(run_module, workdir, config):
    path, args = snapshot_then_drift(run_module, workdir, config)
    args.pop('original')
    drifted = read(path, 'rb')
    edit_args = dict(path=path, key=KEY, value='overlayfs', owner='ops', containerd_bin=CONTAINERD_1)
    results = []
    for validate in ('/bin/true', '/bin/false %s'):
        restore = run_module(MOD, state='restore', validate=validate, expect_fail=True, **args)
        repair = run_module(MOD, state='repair', validate=validate, expect_fail=True,
                            **dict(args, protect=[KEY]))
        edit = run_module('containerd_setting', validate=validate, expect_fail=True, **edit_args)
        results.append((restore['msg'], repair['msg'], edit['msg']))
        assert read(path, 'rb') == drifted
    for msg in results[0]:
        assert "validate must contain %s (replaced by the candidate file), got '/bin/true'" in msg, msg
    for msg in results[1]:
        assert 'validation "/bin/false %s" failed (rc=1): no output' in msg, msg
    assert results[1][0].startswith('refusing to restore %s' % path)
    assert results[1][1].startswith('refusing to write %s' % path) and results[1][2].startswith('refusing to write')


def test_check_mode_of_a_restore_writes_nothing(run_module, workdir, config):
    path, args = snapshot_then_drift(run_module, workdir, config)
    args.pop('original')
    folder = os.path.dirname(path)
    os.remove(path)
    state = run_module.state_dir

    def listing():
        out = {}
        for root in (folder, state):
            for dirpath, _dirs, files in os.walk(root):
                for name in files:
                    full = os.path.join(dirpath, name)
                    out[full] = read(full, 'rb')
        return out

    before = listing()
    dry = run_module(MOD, state='restore', check=True, diff=True, **args)
    assert dry['changed'] and dry['restored'] == [path] and dry['created_files'] == [path]
    assert dry['ledger'] == 'removed'          # the baseline was taken before any nodeguard edit
    # the candidate was checked (a broken baseline is refused in check mode too), and nothing was written
    assert dry['validated']['checked'] == ['built-in checks', 'config dump']
    assert listing() == before and not os.path.exists(path)
    done = run_module(MOD, state='restore', **args)
    assert done['changed'] and os.path.exists(path) and listing() != before
