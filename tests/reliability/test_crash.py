# -*- coding: utf-8 -*-
"""Crash consistency: SIGKILL module writes at every step and at random instants.

After every kill: the config exists, parses and is byte-for-byte either the
old or the new content; stale temporary files do not block the next run
(which removes them); the lock never blocks the next run; and the ledger,
after the recover() the next run does, describes the file - proven by
uninstalls that give back the original bytes exactly.

Knobs: NODEGUARD_CRASH_KILLS (default 100; the long run uses 500),
NODEGUARD_CRASH_SEED (default: random, printed).
"""

import os
import random
import signal
import time

import pytest
import tomlkit

from conftest import assert_containerd_accepts, fixture_text, read
from ng_reliability import (Runner, finish, knob, ledger_problems, ledger_records, module_exists, read_points,
                            temp_files)

NV = '/usr/bin/nvidia-container-runtime'
NV2 = '/usr/local/nvidia/toolkit/nvidia-container-runtime'
POINTS = ['temp_start', 'temp_written', 'validated', 'compare', 'ledger_temp', 'ledger_saved', 'renamed',
          'committed']
RENAMED = ('renamed', 'committed')


def _setup(workdir, fixture='v2_kubeadm.toml'):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    path = os.path.join(etc, 'config.toml')
    with open(path, 'w') as f:
        f.write(fixture_text(fixture))
    runner = Runner(os.path.join(workdir, 'tmp'), os.path.join(workdir, 'state'))
    return path, runner


def _ok(runner, module, args, **kw):
    res, _unused = runner.run(module, args, **kw)
    assert not res.get('failed'), res
    return res


def _nothing_to_undo(res):
    """containerd_runtime state=absent on a runtime the owner did not create and has no record for
    fails (by design: it will not delete another owner's runtime without force)."""
    return res.get('failed') and 'was not added by owner' in res.get('msg', '')


def _remove(runner, module, args):
    res, _unused = runner.run(module, args)
    assert not res.get('failed') or _nothing_to_undo(res), res
    return res


def _no_takeover_warnings(res):
    bad = [w for w in res['warnings'] if 'someone else changed it' in w or 'changed while' in w]
    assert not bad, bad


# --------------------------------------------------------- deterministic
@pytest.mark.parametrize('point', POINTS)
def test_kill_at_each_step_then_uninstall_gives_back_original(workdir, point):
    """A first change (fresh ledger: a new runtime made the default) killed at each step; the uninstall
    after it restores the original without warnings."""
    path, runner = _setup(workdir)
    original = read(path, 'rb')
    add = dict(path=path, name='nvidia', owner='gpu', options={'BinaryName': NV}, default=True, lock_timeout=5)
    predicted = _ok(runner, 'containerd_runtime', add, check=True, diff=True)['diff']['after'].encode()

    proc = runner.spawn('containerd_runtime', add, crash_at=point)
    assert finish(proc) == -signal.SIGKILL
    after = read(path, 'rb')
    assert after == (predicted if point in RENAMED else original)
    tomlkit.parse(after.decode())
    assert ledger_problems(path, runner.state_dir) == []

    res = _ok(runner, 'containerd_runtime', dict(add, state='absent'))
    _no_takeover_warnings(res)
    assert read(path, 'rb') == original
    assert ledger_records(runner.state_dir, path) == []
    assert temp_files(os.path.dirname(path)) == []


@pytest.mark.parametrize('point', ['ledger_temp', 'ledger_saved', 'renamed'])
def test_kill_while_changing_own_key_again_then_uninstall(workdir, point):
    """The owner changes a key it set before (the ledger has a record) and is killed;
    uninstall must still put back the value from before the owner's first change."""
    path, runner = _setup(workdir)
    original = read(path, 'rb')
    args = dict(path=path, name='runc', owner='gpu', lock_timeout=5)
    _ok(runner, 'containerd_runtime', dict(args, options={'BinaryName': NV}))
    proc = runner.spawn('containerd_runtime', dict(args, options={'BinaryName': NV2}), crash_at=point)
    assert finish(proc) == -signal.SIGKILL
    assert ledger_problems(path, runner.state_dir) == []
    res = _ok(runner, 'containerd_runtime', dict(args, state='absent'))
    _no_takeover_warnings(res)
    assert read(path, 'rb') == original
    assert ledger_records(runner.state_dir, path) == []


def test_two_kills_in_a_row_between_ledger_and_rename(workdir):
    """recover() must also roll back a ledger that an earlier recover() rolled back."""
    path, runner = _setup(workdir)
    original = read(path, 'rb')
    args = dict(path=path, name='runc', owner='gpu', lock_timeout=5)
    _ok(runner, 'containerd_runtime', dict(args, options={'BinaryName': NV}))
    for value in (NV2, NV2 + '-x'):
        proc = runner.spawn('containerd_runtime', dict(args, options={'BinaryName': value}),
                            crash_at='ledger_saved')
        assert finish(proc) == -signal.SIGKILL
        assert ledger_problems(path, runner.state_dir) == []
    res = _ok(runner, 'containerd_runtime', dict(args, state='absent'))
    _no_takeover_warnings(res)
    assert read(path, 'rb') == original


def test_stale_temp_files_are_removed_by_the_next_run(workdir):
    path, runner = _setup(workdir)
    folder = os.path.dirname(path)
    proc = runner.spawn('containerd_runtime', dict(path=path, name='nvidia', owner='gpu'), crash_at='validated')
    assert finish(proc) == -signal.SIGKILL
    stale = temp_files(folder)
    assert len(stale) == 1 and stale[0].startswith('.config.toml.')
    # an old one from an earlier crash, too
    with open(os.path.join(folder, '.config.toml.old123' + '.nodeguard-tmp'), 'w') as f:
        f.write('half a config')
    _ok(runner, 'containerd_runtime', dict(path=path, name='nvidia', owner='gpu', lock_timeout=2))
    assert temp_files(folder) == []
    # a crash while the ledger was written leaves its temp in the ledger folder; the next run removes it
    proc = runner.spawn('containerd_runtime', dict(path=path, name='kata', owner='coco', inherit='none'),
                        crash_at='ledger_temp')
    assert finish(proc) == -signal.SIGKILL
    ledger_dir = os.path.join(runner.state_dir, 'ledger')
    assert len(temp_files(ledger_dir)) == 1
    _ok(runner, 'containerd_runtime', dict(path=path, name='kata', owner='coco', inherit='none'))
    assert temp_files(ledger_dir) == []


# --------------------------------------------------------------- random
def _ops(path):
    rt, st = 'containerd_runtime', 'containerd_setting'
    common = dict(path=path, lock_timeout=5)
    kata = dict(name='kata-qemu', owner='coco', runtime_type='io.containerd.kata-qemu.v2', inherit='none',
                runtime_path='/opt/kata/bin/containerd-shim-kata-v2',
                settings={'privileged_without_host_devices': True, 'pod_annotations': ['io.katacontainers.*']},
                options={'ConfigPath': '/opt/kata/share/defaults/kata-containers/configuration-qemu.toml'})
    installs = [
        (rt, dict(common, name='nvidia', owner='gpu', default=True, options={'BinaryName': NV})),
        (rt, dict(common, name='runc', owner='gpu', options={'BinaryName': NV})),
        (st, dict(common, key='plugins."io.containerd.grpc.v1.cri".enable_unprivileged_ports', raw=True, value=True, owner='gpu')),
        (rt, dict(common, **kata)),
        (rt, dict(common, name='runc', owner='gpu', options={'BinaryName': NV2})),
        (st, dict(common, key='images.disable_snapshot_annotations', value=False, owner='coco')),
    ]
    removals = [
        (rt, dict(common, name='kata-qemu', owner='coco', state='absent')),
        (rt, dict(common, name='runc', owner='gpu', state='absent')),
        (st, dict(common, key='plugins."io.containerd.grpc.v1.cri".enable_unprivileged_ports', raw=True, owner='gpu', state='absent')),
        (rt, dict(common, name='nvidia', owner='gpu', state='absent')),
        (st, dict(common, key='images.disable_snapshot_annotations', owner='coco', state='absent')),
    ]
    if module_exists('containerd_imports'):
        dropin = os.path.join(os.path.dirname(path), 'config.toml.d', 'nydus-snapshotter.toml')
        os.makedirs(os.path.dirname(dropin), exist_ok=True)
        with open(dropin, 'w') as f:
            f.write('version = 2\n[proxy_plugins.nydus]\n  type = "snapshot"\n'
                    '  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"\n')
        installs.insert(3, ('containerd_imports', dict(common, imports=[dropin], owner='coco')))
        removals.insert(1, ('containerd_imports', dict(common, imports=[dropin], owner='coco', state='absent')))
    return installs + removals, removals


def _one_kill(runner, rng, path, module, args, stats, run_times, tails):
    """Run one task, SIGKILL it at a random instant, check the file, maybe retry."""
    folder = os.path.dirname(path)
    before = read(path, 'rb')
    retry = rng.random() < 0.5  # the next run is a retry of the same task; else the next task
    predicted = None
    if not retry:   # what the task would write, from check mode (a retry tells it otherwise)
        res, _unused = runner.run(module, args, check=True, diff=True)
        if _nothing_to_undo(res):
            return
        assert not res.get('failed'), res
        predicted = res['diff']['after'].encode() if res['changed'] else before

    mode = rng.random()
    start = time.monotonic()
    proc = runner.spawn(module, args)
    if mode < 0.4:      # anywhere in the run
        time.sleep(rng.uniform(0, sorted(run_times)[len(run_times) // 2]))
    elif mode < 0.8:    # in the write phase: temp file, validate, ledger, rename
        if read_points(proc, 'temp_start'):
            time.sleep(rng.uniform(0, 1.2 * max(tails)))
    else:               # around the ledger write and the rename
        if read_points(proc, 'ledger_temp'):
            time.sleep(rng.uniform(0, 0.003))
    try:
        proc.send_signal(signal.SIGKILL)
    except ProcessLookupError:
        pass
    rc = finish(proc)
    took = time.monotonic() - start
    if rc != -signal.SIGKILL:
        stats['completed_before_kill'] += 1
        run_times.append(took)
    else:
        stats['kills'] += 1
        last = proc.points[-1] if proc.points else 'start'
        stats['last_point'][last] = stats['last_point'].get(last, 0) + 1

    after = read(path, 'rb')
    tomlkit.parse(after.decode('utf-8'))
    if predicted is not None:
        assert after in (before, predicted), 'kill after %s left a third content' % proc.points
    if after != before:
        stats['changed_by_killed_run'] += 1
    stats['stale_temps_seen'] += len(temp_files(folder))
    problems = ledger_problems(path, runner.state_dir)
    assert problems == [], (proc.points, problems)

    if retry:
        stats['retries'] += 1
        t0 = time.monotonic()
        res, _unused = runner.run(module, args, wrapped=True)
        if _nothing_to_undo(res):
            # the owner never changed runc (its changes were killed before their rename and not
            # retried): containerd_runtime will not delete a runtime nobody recorded (by design)
            assert not [r for r in ledger_records(runner.state_dir, path) if r['resource'] == 'runtime:runc']
            stats['absent_rerun_refused'] = stats.get('absent_rerun_refused', 0) + 1
            return
        assert not res.get('failed'), (res['msg'], proc.points, after == before)
        new = read(path, 'rb')
        # the killed run left the old content (the retry changes it) or the new one (the retry does not)
        assert after == (new if not res['changed'] else before), 'kill after %s left a third content' % proc.points
        assert temp_files(folder) == []
        if 'rolled the ledger back' in ' '.join(res['warnings']):
            stats['rollbacks'] += 1
        if res['changed']:
            tails.append(max(0.01, (time.monotonic() - t0) * 0.5))


def test_random_sigkill(workdir, capsys):
    kills = knob('NODEGUARD_CRASH_KILLS', 100)
    seed = knob('NODEGUARD_CRASH_SEED', random.randrange(1 << 30))
    rng = random.Random(seed)
    path, runner = _setup(workdir)
    folder = os.path.dirname(path)
    original = read(path, 'rb')
    ops, removals = _ops(path)
    stats = dict(kills=0, completed_before_kill=0, changed_by_killed_run=0, stale_temps_seen=0, retries=0,
                 cycles=0, rollbacks=0, last_point={})
    run_times, tails = [0.15], [0.05]
    step = 0
    while stats['kills'] < kills:
        module, args = ops[step % len(ops)]
        step += 1
        _one_kill(runner, rng, path, module, args, stats, run_times, tails)
        if step % len(ops) == 0:  # end of a cycle: complete every removal
            stats['cycles'] += 1
            for m, a in removals:
                _remove(runner, m, a)
            assert read(path, 'rb') == original, 'cycle %d did not give back the original bytes' % stats['cycles']
            assert ledger_records(runner.state_dir, path) == []
            assert temp_files(folder) == []
            del tails[:-20]
            del run_times[:-20]

    for m, a in removals:
        _remove(runner, m, a)
    assert read(path, 'rb') == original
    assert ledger_records(runner.state_dir, path) == []
    assert temp_files(folder) == []
    assert_containerd_accepts(path)
    with capsys.disabled():
        print('\ncrash: seed=%d %s' % (seed, stats))


def test_rerun_of_absent_for_a_runtime_the_owner_only_changed(workdir):
    """An uninstall that is re-run (a retry after a crash or a timeout, a second converge) must
    succeed with changed=false, as Ansible tasks do."""
    path, runner = _setup(workdir)
    original = read(path, 'rb')
    args = dict(path=path, name='runc', owner='gpu')
    _ok(runner, 'containerd_runtime', dict(args, options={'BinaryName': NV}))
    _ok(runner, 'containerd_runtime', dict(args, state='absent'))
    assert read(path, 'rb') == original
    res = _ok(runner, 'containerd_runtime', dict(args, state='absent'))
    assert not res['changed']
