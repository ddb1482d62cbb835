# -*- coding: utf-8 -*-
"""The stamps of passing probes (probe_reuse_seconds): what a probe's fingerprint covers, when a stamp stands in
for the probe, and how the stamps file is written.

Files are real files under tmp_path, systemctl is a stand-in script first in PATH; the module against a real
containerd, runc and probe containers is in tests/module/test_containerd_readiness_probe_reuse.py."""

import json
import os
import shutil
import stat
import subprocess
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe, stamps
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.service import main_process

OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10',
            probe_command=[], pass_config_path=True)


def executable(path, text='#!/bin/sh\nexit 0\n'):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def handler(name, table, spec=None):
    return probe.handlers([spec or name], {name: table}, OPTS, True)[0]


def common(tmp_path, search_path):
    return dict(config='c' * 64, containerd=dict(pid=42, started=1000, boot='b'), path=search_path,
                beside=str(tmp_path / 'containerd-dir'))


# ------------------------------------------------------------------ the files a probe goes through
def test_the_shim_is_named_as_containerd_names_it():
    assert stamps.shim_binary_name('io.containerd.runc.v2') == 'containerd-shim-runc-v2'
    assert stamps.shim_binary_name('io.containerd.kata-qemu-tdx.v2') == 'containerd-shim-kata-qemu-tdx-v2'
    assert stamps.shim_binary_name('/opt/kata/bin/containerd-shim-kata-v2') == '/opt/kata/bin/containerd-shim-kata-v2'


def test_a_program_is_found_in_path_order_then_beside_containerd(tmp_path):
    first, second, beside = tmp_path / 'a', tmp_path / 'b', tmp_path / 'containerd-dir'
    executable(second / 'containerd-shim-runc-v2')
    executable(beside / 'containerd-shim-runc-v2')
    (first / 'containerd-shim-runc-v2').parent.mkdir()
    (first / 'containerd-shim-runc-v2').write_text('not executable')
    search = '%s:%s' % (first, second)
    assert stamps.find_program('containerd-shim-runc-v2', search, str(beside)) == str(second / 'containerd-shim-runc-v2')
    assert stamps.find_program('containerd-shim-runc-v2', str(first), str(beside)) == str(
        beside / 'containerd-shim-runc-v2')
    assert stamps.find_program('containerd-shim-kata-v2', search, str(beside)) == 'containerd-shim-kata-v2'
    assert stamps.find_program('/opt/x', search) == '/opt/x'


def test_a_file_s_state_changes_when_it_is_touched_or_replaced(tmp_path):
    path = tmp_path / 'runc'
    executable(path)
    before = stamps.file_state(str(path))
    assert before[0] == str(path) and len(before) == 5
    assert stamps.file_state(str(path)) == before
    later = time.time() + 5
    os.utime(str(path), (later, later))
    touched = stamps.file_state(str(path))
    assert touched != before and touched[:4] == before[:4]  # the same inode and size, another mtime
    shutil.copy2(str(path), str(path) + '.new')
    os.rename(str(path) + '.new', str(path))
    replaced = stamps.file_state(str(path))
    assert replaced[2] != touched[2] and replaced[4] == touched[4]  # a new inode, the same mtime
    assert stamps.file_state(str(tmp_path / 'gone')) == [str(tmp_path / 'gone'), 'missing']


def test_the_files_of_a_runc_handler_and_of_a_kata_handler(tmp_path):
    bindir = tmp_path / 'bin'
    shim_runc = executable(bindir / 'containerd-shim-runc-v2')
    runc = executable(bindir / 'runc')
    nvidia = executable(tmp_path / 'usr' / 'nvidia-container-runtime')
    kata_shim = executable(tmp_path / 'kata' / 'containerd-shim-kata-v2')
    kata_config = tmp_path / 'kata' / 'configuration-qemu.toml'
    kata_config.write_text('[hypervisor.qemu]\n')
    files = stamps.handler_files(handler('runc', dict(runtime_type='io.containerd.runc.v2')), str(bindir), None)
    assert [f[0] for f in files] == [shim_runc, runc]
    table = dict(runtime_type='io.containerd.runc.v2', options=dict(BinaryName=nvidia))
    assert [f[0] for f in stamps.handler_files(handler('nvidia', table), str(bindir), None)] == [shim_runc, nvidia]
    table = dict(runtime_type='io.containerd.kata-qemu.v2', runtime_path=kata_shim,
                 options=dict(ConfigPath=str(kata_config)))
    files = stamps.handler_files(handler('kata-qemu', table), str(bindir), None)
    assert [f[0] for f in files] == [kata_shim, kata_shim, str(kata_config)]
    # by type: the shim containerd would look for, missing here
    table = dict(runtime_type='io.containerd.kata-clh.v2')
    assert stamps.handler_files(handler('kata-clh', table), str(bindir), None) == [
        ['containerd-shim-kata-clh-v2', 'missing']]


def test_the_fingerprint_leaves_out_the_probe_id_and_sees_each_part(tmp_path):
    bindir = tmp_path / 'bin'
    executable(bindir / 'containerd-shim-runc-v2')
    executable(bindir / 'runc')
    table = dict(runtime_type='io.containerd.runc.v2')
    shared = common(tmp_path, str(bindir))
    one = stamps.probe_fingerprint(handler('runc', table), table, shared)
    time.sleep(0.002)  # another probe id
    other = handler('runc', table)
    assert other['probe_id'] not in json.dumps(one)
    assert stamps.probe_fingerprint(other, table, shared) == one
    assert sorted(one) == sorted(key for key, _what in stamps.PARTS)

    def differs(fingerprint):
        return sorted(key for key in one if one[key] != fingerprint[key])
    assert differs(stamps.probe_fingerprint(other, table, dict(shared, config='d' * 64))) == ['config']
    restarted = dict(shared, containerd=dict(shared['containerd'], started=2000))
    assert differs(stamps.probe_fingerprint(other, table, restarted)) == ['containerd']
    root = dict(table, options=dict(Root='/run/other'))
    assert differs(stamps.probe_fingerprint(handler('runc', root), root, shared)) == ['probe', 'table']
    with_env = handler('runc', table, dict(name='runc', env=dict(NVIDIA_VISIBLE_DEVICES='all')))
    assert differs(stamps.probe_fingerprint(with_env, table, shared)) == ['probe']
    os.utime(str(bindir / 'runc'), (time.time() + 5, time.time() + 5))
    assert differs(stamps.probe_fingerprint(other, table, shared)) == ['files']


# ------------------------------------------------------------------ when a stamp stands in for the probe
FP = dict((key, key * 3) for key, _what in stamps.PARTS)


def test_a_stamp_stands_in_only_when_all_is_the_same_and_young_enough():
    now = 10000.0
    stamp = dict(time=now - 30, fingerprint=dict(FP))
    assert stamps.reuse_verdict(stamp, FP, now, 60) == (30.0, None)
    assert stamps.reuse_verdict(stamp, FP, now, 0) == (None, 'probe_reuse_seconds is 0')
    assert stamps.reuse_verdict(stamp, None, now, 60) == (None, 'what the probe depends on could not all be read')
    assert stamps.reuse_verdict(None, FP, now, 60) == (None, 'no stamp of an earlier passing probe')
    assert stamps.reuse_verdict(stamp, FP, now, 29) == (
        None, 'the probe passed 30 s ago, more than probe_reuse_seconds=29')
    assert stamps.reuse_verdict(dict(stamp, time=now + 5), FP, now, 60)[1] == (
        'the stamp is from the future (the clock was set back)')
    assert stamps.reuse_verdict(dict(stamp, time='x'), FP, now, 60)[1] == 'the stamp cannot be read'
    assert stamps.reuse_verdict(dict(stamp, fingerprint='x'), FP, now, 60)[1] == 'the stamp cannot be read'
    changed = dict(FP, config='other', files='other')
    assert stamps.reuse_verdict(stamp, changed, now, 60) == (
        None, 'changed since the probe passed: the effective config, the shim, runtime or configuration files of '
        'the handler or a file its configuration names')
    # a stamp without a part the fingerprint has (an older format) does not stand in
    older = dict(stamp, fingerprint=dict((k, v) for k, v in FP.items() if k != 'probe'))
    assert stamps.reuse_verdict(older, FP, now, 60)[1] == 'changed since the probe passed: the probe command line'


def test_a_stamps_file_that_cannot_be_read_holds_no_stamp(tmp_path):
    state = str(tmp_path)
    assert stamps.load_stamps(state) == {}
    os.makedirs(os.path.dirname(stamps.stamps_path(state)))
    for text in ('{"format": 1, "handlers": ', '[]', '{"format": 99, "handlers": {"runc": {}}}',
                 '{"format": 1, "handlers": []}'):
        with open(stamps.stamps_path(state), 'w') as f:
            f.write(text)
        assert stamps.load_stamps(state) == {}, text
    with open(stamps.stamps_path(state), 'w') as f:
        f.write('{"format": 1, "handlers": {"runc": {"time": 1}, "bad": 3}}')
    assert stamps.load_stamps(state) == {'runc': {'time': 1}}


# ------------------------------------------------------------------ writing the stamps
def passed(name):
    return {name: dict(kind='start', ok=True, rc=0, seconds=0.4)}


def stamps_with(state_dir, max_age, fingerprints):
    recorder = stamps.ProbeStamps(state_dir, max_age)
    recorder.fingerprints = dict(fingerprints)
    return recorder


def test_a_pass_is_stamped_privately_and_a_failure_removes_only_its_stamp(tmp_path):
    state = str(tmp_path / 'state')
    warnings = []
    recorder = stamps_with(state, 60, dict(runc=FP, nvidia=FP))
    results = dict(passed('runc'), **passed('nvidia'))
    recorder.note(results)
    assert results['runc']['reused'] is False and 'not_reused' in results['runc']
    assert recorder.save(False, warnings.append) == stamps.stamps_path(state)
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(os.path.dirname(stamps.stamps_path(state))).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(stamps.stamps_path(state)).st_mode) == 0o600
    saved = stamps.load_stamps(state)
    assert sorted(saved) == ['nvidia', 'runc'] and saved['runc']['fingerprint'] == FP
    assert saved['runc']['kind'] == 'start' and abs(saved['runc']['time'] - time.time()) < 60
    recorder = stamps_with(state, 60, dict(nvidia=FP))
    recorder.note(dict(nvidia=dict(kind='start', ok=False, rc=1, seconds=0.1)))
    recorder.save(False, warnings.append)
    assert sorted(stamps.load_stamps(state)) == ['runc'] and warnings == []


def test_check_mode_and_the_default_without_a_file_write_nothing(tmp_path):
    state = str(tmp_path / 'state')
    recorder = stamps_with(state, 60, dict(runc=FP))
    recorder.note(passed('runc'))
    assert recorder.save(True, None) is None and not os.path.exists(state)
    recorder = stamps_with(state, 0, dict(runc=FP))
    assert not recorder.active
    results = passed('runc')
    recorder.note(results)
    assert 'not_reused' not in results['runc'] and results['runc']['reused'] is False
    assert recorder.save(False, None) is None and not os.path.exists(state)
    # once the file exists, probe_reuse_seconds 0 keeps it true
    recorder = stamps_with(state, 60, dict(runc=FP))
    recorder.note(passed('runc'))
    recorder.save(False, None)
    recorder = stamps_with(state, 0, {})
    assert recorder.active
    recorder.note(dict(runc=dict(kind='start', ok=False, rc=1, seconds=0.1)))
    recorder.save(False, None)
    assert stamps.load_stamps(state) == {}


def test_a_pass_whose_fingerprint_is_unknown_removes_the_stamp(tmp_path):
    """containerd's identity could not be read: the stamp cannot say what the probe depended on."""
    state = str(tmp_path / 'state')
    recorder = stamps_with(state, 60, dict(runc=FP))
    recorder.note(passed('runc'))
    recorder.save(False, None)
    recorder = stamps_with(state, 60, {})
    recorder.note(passed('runc'))
    recorder.save(False, None)
    assert stamps.load_stamps(state) == {}


def test_the_stamps_of_another_check_written_meanwhile_are_kept(tmp_path):
    state = str(tmp_path / 'state')
    mine = stamps_with(state, 60, dict(runc=FP))  # read before the other check wrote
    other = stamps_with(state, 60, dict(nvidia=FP))
    other.note(passed('nvidia'))
    other.save(False, None)
    mine.note(passed('runc'))
    mine.save(False, None)
    assert sorted(stamps.load_stamps(state)) == ['nvidia', 'runc']


def test_a_state_dir_that_cannot_be_written_warns_and_the_check_goes_on(tmp_path):
    blocker = tmp_path / 'file'
    blocker.write_text('')
    warnings = []
    recorder = stamps_with(str(blocker), 60, dict(runc=FP))
    recorder.note(passed('runc'))
    assert recorder.save(False, warnings.append) is None
    assert len(warnings) == 1 and warnings[0].startswith('the probe stamps could not be recorded in %s' % blocker)


def test_without_the_cri_plugin_no_stamp_stands_in(tmp_path):
    state = str(tmp_path / 'state')
    bindir = tmp_path / 'bin'
    executable(bindir / 'containerd-shim-runc-v2')
    table = dict(runtime_type='io.containerd.runc.v2')
    entry = handler('runc', table)
    shared = common(tmp_path, str(bindir))
    first = stamps.ProbeStamps(state, 60)
    first.common = shared
    assert first.reused(entry, table) is None
    first.note(passed('runc'))
    first.save(False, None)
    second = stamps.ProbeStamps(state, 60)
    second.common, second.daemon_answers = shared, True
    res = second.reused(entry, table)
    assert res['reused'] is True and res['kind'] == 'start' and res['seconds'] == 0.4 and res['ok'], res
    third = stamps.ProbeStamps(state, 60)
    third.common = shared
    assert third.reused(entry, table) is None and third.why_not['runc'] == 'the CRI plugin check did not pass'


# ------------------------------------------------------------------ containerd as a process
SYSTEMCTL = '#!/bin/sh\nprintf "%s"\n'


@pytest.mark.parametrize('shown,expected', [
    ('MainPID=4242\\nExecMainStartTimestampMonotonic=123456789\\n', dict(pid=4242, started=123456789)),
    ('MainPID=0\\nExecMainStartTimestampMonotonic=0\\n', None),
    ('MainPID=4242\\nExecMainStartTimestampMonotonic=\\n', None),
    ('', None),
])
def test_containerd_s_identity_is_its_main_pid_its_start_and_the_boot(tmp_path, monkeypatch, shown, expected):
    executable(tmp_path / 'systemctl', SYSTEMCTL % shown)
    monkeypatch.setenv('PATH', '%s:%s' % (tmp_path, os.environ['PATH']))
    found = main_process('containerd')
    if expected is None:
        assert found is None
    else:
        with open('/proc/sys/kernel/random/boot_id') as f:
            assert found == dict(expected, boot=f.read().strip())


def path_of_a_process_run_with(env):
    """process_path of a process started with env, once it runs (its environ is the child's only after exec)."""
    proc = subprocess.Popen(['/bin/sleep', '30'], env=env)
    try:
        for _dummy in range(200):
            with open('/proc/%d/cmdline' % proc.pid, 'rb') as f:
                if f.read().startswith(b'/bin/sleep'):
                    break
            time.sleep(0.01)
        return stamps.process_path(proc.pid)
    finally:
        proc.kill()
        proc.wait()


def test_containerd_s_path_is_read_from_its_process():
    assert path_of_a_process_run_with(dict(PATH='/opt/node/bin:/usr/bin:/bin')) == '/opt/node/bin:/usr/bin:/bin'
    assert path_of_a_process_run_with(dict(LANG='C')) == ''  # no PATH at all
    assert stamps.process_path(2 ** 22 + 1) is None  # no such process
