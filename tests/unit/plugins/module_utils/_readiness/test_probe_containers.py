# -*- coding: utf-8 -*-
"""Probe containers run side by side: their start-up times do not add up,
each result stays with its handler, and every container is cleaned up.

A stand-in ctr (a shell script) records each call and sleeps in `run`; the
probes through real containerd and runc are in tests/module and Molecule's
readiness scenario."""

import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe as _readiness_probe
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.probe import run_probes

FAKE_CTR = '''#!/bin/sh
log=%s
echo "start $* $(date +%%s.%%N)" >> "$log"
case "$*" in
  *" run "*) sleep %s;;
esac
echo "end $*" >> "$log"
case "$*" in
  *" run "*probe-bad*) echo "bad handler" >&2; exit 3;;
esac
exit 0
'''


def fake_ctr(tmp_path, sleep):
    log = tmp_path / 'calls'
    ctr = tmp_path / 'ctr'
    ctr.write_text(FAKE_CTR % (log, sleep))
    ctr.chmod(0o755)
    return str(ctr), log


def probe(ctr, name):
    pid = 'probe-%s' % name
    return name, [ctr, '--address', '/run/x.sock', '-n', 'k8s.io', 'run', '--rm', 'img', pid, 'true'], pid


def test_probes_run_side_by_side_and_keep_their_results(tmp_path):
    ctr, log = fake_ctr(tmp_path, 1.0)
    names = ['runc', 'nvidia', 'bad', 'kata-qemu']
    start = time.monotonic()
    res = run_probes([probe(ctr, n) for n in names], timeout=30)
    wall = time.monotonic() - start
    assert sorted(res) == sorted(names)
    assert [res[n]['ok'] for n in names] == [True, True, False, True]
    assert res['bad']['rc'] == 3 and 'bad handler' in res['bad']['stderr']
    assert all(r['seconds'] >= 1.0 for r in res.values())
    # four one-second probes one after the other take four seconds
    assert wall < 3.0, wall
    calls = log.read_text().splitlines()
    # each container deleted afterwards, whatever happened
    for n in names:
        assert any(c.startswith('start ') and 'containers delete probe-%s' % n in c for c in calls), calls
        assert any(c.startswith('start ') and 'tasks delete -f probe-%s' % n in c for c in calls), calls


def most_at_once(log):
    """The largest number of probe containers running at one time, from the stand-in ctr's log."""
    running, most = 0, 0
    for line in log.read_text().splitlines():
        if ' run ' in line:
            running += 1 if line.startswith('start ') else -1
            most = max(most, running)
    return most


def test_at_most_four_at_once(tmp_path):
    # the limit itself: six handlers start four at once
    ctr, log = fake_ctr(tmp_path, 0.6)
    names = ['h%d' % i for i in range(6)]
    res = run_probes([probe(ctr, n) for n in names], timeout=30)
    assert sorted(res) == sorted(names) and all(r['ok'] for r in res.values())
    assert most_at_once(log) == 4


def test_the_limit_is_read_when_the_probes_start(tmp_path, monkeypatch):
    ctr, log = fake_ctr(tmp_path, 0.4)
    monkeypatch.setattr(_readiness_probe, 'MAX_PARALLEL_PROBES', 2)
    res = run_probes([probe(ctr, 'h%d' % i) for i in range(5)], timeout=30)
    assert len(res) == 5 and most_at_once(log) == 2


def test_no_probes_no_threads():
    assert run_probes([], timeout=1) == {}


# ------------------------------------------------------------------ one probe's clean-up and result
# A stand-in ctr with the behaviours run_probe and probe_image meet: a probe that
# hangs past its timeout, one killed by a signal, a long output, the image list
# (a file beside it) and an import that adds to it or fails.
STATEFUL_CTR = '''#!/bin/sh
dir=%s
echo "$*" >> "$dir/calls"
case "$*" in
  *" images ls -q") [ -f "$dir/ls-fails" ] && { cat "$dir/images"; echo "ctr: socket gone" >&2; exit 1; }
                    cat "$dir/images" 2>/dev/null; exit 0;;
  *" images import "*) [ -f "$dir/import-fails" ] && { echo "ctr: unpack failed" >&2; exit 1; }
                       [ -f "$dir/import-killed" ] && { echo "ctr: killed" >&2; kill -9 $$; }
                       echo localhost/ng-probe:latest >> "$dir/images"; exit 0;;
  *" run "*probe-hang*) exec sleep 30;;
  *" run "*probe-signal*) kill -9 $$;;
  *" run "*probe-exit137*) exit 137;;
  *" run "*probe-loud*) printf 'o%%.0s' $(seq 1 2500); printf 'E%%.0s' $(seq 1 2400) >&2; echo END; exit 0;;
  *" run "*) sleep 0.3; exit 0;;
esac
exit 0
'''

PREFIX = ['--address', '/run/x.sock', '-n', 'k8s.io']


def stateful_ctr(tmp_path):
    ctr = tmp_path / 'ctr'
    ctr.write_text(STATEFUL_CTR % tmp_path)
    ctr.chmod(0o755)
    return str(ctr)


def calls(tmp_path):
    path = tmp_path / 'calls'
    return path.read_text().splitlines() if path.exists() else []


def one_probe(ctr, pid, timeout=30):
    return _readiness_probe.run_probe([ctr] + PREFIX + ['run', '--rm', 'img', pid, 'true'], pid, timeout)


def test_a_probe_that_hangs_is_killed_then_deleted(tmp_path):
    ctr = stateful_ctr(tmp_path)
    res = one_probe(ctr, 'probe-hang', timeout=1)
    assert res['ok'] is False and res['rc'] == 124
    assert 1.0 <= res['seconds'] < 10, res
    assert calls(tmp_path)[1:] == [' '.join(PREFIX + ['tasks', 'kill', '-s', 'SIGKILL', 'probe-hang']),
                                   ' '.join(PREFIX + ['tasks', 'delete', '-f', 'probe-hang']),
                                   ' '.join(PREFIX + ['containers', 'delete', 'probe-hang'])]


def test_a_probe_that_ends_is_deleted_without_a_kill(tmp_path):
    ctr = stateful_ctr(tmp_path)
    res = one_probe(ctr, 'probe-ok')
    assert res['ok'] is True and res['rc'] == 0
    # the time the container ran, not a clock reading
    assert 0.25 <= res['seconds'] < 5, res
    assert calls(tmp_path)[1:] == [' '.join(PREFIX + ['tasks', 'delete', '-f', 'probe-ok']),
                                   ' '.join(PREFIX + ['containers', 'delete', 'probe-ok'])]


def test_only_a_timeout_kills_the_task(tmp_path):
    # 137 (a container killed inside) or 127 (no runtime binary) is a failed probe, not a hung one
    res = one_probe(stateful_ctr(tmp_path), 'probe-exit137')
    assert res['rc'] == 137 and res['ok'] is False
    assert [c.split()[4:6] for c in calls(tmp_path)[1:]] == [['tasks', 'delete'], ['containers', 'delete']]


def test_a_probe_killed_by_a_signal_failed(tmp_path):
    res = one_probe(stateful_ctr(tmp_path), 'probe-signal')
    assert res['rc'] < 0 and res['ok'] is False


def test_a_probe_keeps_the_last_2000_characters_of_its_output(tmp_path):
    res = one_probe(stateful_ctr(tmp_path), 'probe-loud')
    assert res['stdout'] == ('o' * 2500 + 'END\n')[-2000:]
    assert res['stderr'] == 'E' * 2000


# ------------------------------------------------------------------ the probe image
def image_opts(ctr):
    return dict(ctr=ctr, address='/run/x.sock', namespace='k8s.io', probe_image='localhost/ng-probe:latest')


def probe_image_with_archive(tmp_path, *flags, images='', may_import=True):
    """probe_image through the stand-in ctr, with an archive at hand; flags name its behaviours (import-fails)."""
    ctr = stateful_ctr(tmp_path)
    for flag in flags:
        (tmp_path / flag).write_text('')
    (tmp_path / 'images').write_text(images)
    archive = tmp_path / 'probe.tar'
    archive.write_text('x')
    given = {} if may_import else dict(may_import=False)  # the default imports
    return _readiness_probe.probe_image(image_opts(ctr), str(archive), **given), str(archive)


def test_a_present_image_is_not_imported(tmp_path):
    res = probe_image_with_archive(tmp_path, images='docker.io/library/pause:3\nlocalhost/ng-probe:latest\n')[0]
    assert res == dict(probe_image='localhost/ng-probe:latest', probe_image_present=True)
    assert not any('import' in c for c in calls(tmp_path))


def test_a_missing_image_is_imported_from_the_archive(tmp_path):
    res, archive = probe_image_with_archive(tmp_path)
    assert res == dict(probe_image='localhost/ng-probe:latest', probe_image_present=True,
                       probe_image_imported=True, probe_image_import_error='')
    assert ' '.join(PREFIX + ['images', 'import', archive]) in calls(tmp_path)


def test_a_failed_import_says_why(tmp_path):
    res = probe_image_with_archive(tmp_path, 'import-fails')[0]
    assert res == dict(probe_image='localhost/ng-probe:latest', probe_image_present=False,
                       probe_image_imported=False, probe_image_import_error='ctr: unpack failed')


def test_an_import_killed_by_a_signal_failed(tmp_path):
    res = probe_image_with_archive(tmp_path, 'import-killed')[0]
    assert res['probe_image_imported'] is False and res['probe_image_import_error'] == 'ctr: killed'


def test_check_mode_does_not_import(tmp_path):
    res = probe_image_with_archive(tmp_path, may_import=False)[0]
    assert res == dict(probe_image='localhost/ng-probe:latest', probe_image_present=False,
                       probe_image_import_skipped=True)
    assert not any('import' in c for c in calls(tmp_path))


def test_no_archive_or_a_missing_one_imports_nothing(tmp_path):
    ctr = stateful_ctr(tmp_path)
    for archive in ('', str(tmp_path / 'gone.tar')):
        res = _readiness_probe.probe_image(image_opts(ctr), archive)
        assert res == dict(probe_image='localhost/ng-probe:latest', probe_image_present=False)
    assert not any('import' in c for c in calls(tmp_path))


def test_an_image_list_that_fails_is_no_image(tmp_path):
    # even when it printed names before it failed
    ctr = stateful_ctr(tmp_path)
    (tmp_path / 'images').write_text('localhost/ng-probe:latest\n')
    (tmp_path / 'ls-fails').write_text('')
    res = _readiness_probe.probe_image(image_opts(ctr), '')
    assert res['probe_image_present'] is False


# ------------------------------------------------------------------ the probe command line
ARGV_OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='img',
                 probe_command=['/bin/true'], pass_config_path=False)


def test_a_probe_id_names_the_handler_the_process_and_the_time(monkeypatch):
    monkeypatch.setattr(_readiness_probe.time, 'time', lambda: 1764810000.123456)
    monkeypatch.setattr(_readiness_probe.os, 'getpid', lambda: 4242)
    probe_id = _readiness_probe.probe_argv('kata qemu/tdx', {'runtime_type': 'x'}, {}, ARGV_OPTS)[0]
    # milliseconds modulo 10^8: unique enough per process, short enough for a cgroup name
    assert probe_id == 'nodeguard-probe-kata-qemu-tdx-4242-%d' % (1764810000123 % 100000000)


def test_the_notes_name_what_the_probe_leaves_out():
    table = {'runtime_type': 'io.containerd.runc.v2', 'runtime_path': '/usr/bin/ignored', 'snapshotter': 'nydus'}
    notes = _readiness_probe.probe_argv('r', table, {}, ARGV_OPTS)[2]
    assert notes == ['runtime_path /usr/bin/ignored not used by ctr for a runc-type runtime',
                     'handler snapshotter nydus not used: the probe runs on the default snapshotter']
    table = {'runtime_type': 'io.containerd.kata.v2', 'options': {'ConfigPath': '/opt/kata/c.toml'}}
    notes = _readiness_probe.probe_argv('k', table, {}, ARGV_OPTS)[2]
    assert notes == ['options.ConfigPath /opt/kata/c.toml not passed (pass_config_path is false)']


def test_a_table_with_only_type_is_read_like_runtime_type():
    table = {'type': 'io.containerd.runc.v2', 'options': {'BinaryName': '/usr/bin/nvidia-container-runtime'}}
    argv = _readiness_probe.probe_argv('nvidia', table, {}, ARGV_OPTS)[1]
    assert argv[argv.index('--runtime') + 1] == 'io.containerd.runc.v2'
    assert argv[argv.index('--runc-binary') + 1] == '/usr/bin/nvidia-container-runtime'
