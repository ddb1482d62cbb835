# -*- coding: utf-8 -*-
"""The load test's process handling, without containerd: the version it
reads, the tools it finds, the namespace script, the kill that waits for
the whole group, the private folders it removes (its own and stale ones)."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from helpers.preflight import executable, folder
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import process, sandbox


# ---------------------------------------------------------------- the version

def answers(rc, out, err=''):
    calls = []

    def run_command(cmd):
        calls.append(cmd)
        return rc, out, err
    run_command.calls = calls
    return run_command


@pytest.mark.parametrize('out,version,word', [
    ('containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1\n', (1, 6), '1.6.20'),
    ('containerd github.com/containerd/containerd/v2 v2.1.9 abc123\n', (2, 1), '2.1.9'),
    ('containerd containerd.io 1.7\n', (1, 7), '1.7'),
    # a build without its package path set: the version is the second word
    ('containerd  v2.0.0 abc\n', (2, 0), '2.0.0'),
])
def test_the_version_is_read_from_containerds_answer(out, version, word):
    assert process.read_version(answers(0, out), '/bin/c') == (version, word, None)


def test_the_program_name_is_not_taken_for_the_version():
    """The first word names the program (a wrapper may be called v2 or 1.7): never the version."""
    assert process.read_version(answers(0, 'v2 github.com/containerd/containerd 1.6.20\n'), '/c') == \
        ((1, 6), '1.6.20', None)


def test_a_failed_version_call_says_why():
    assert process.read_version(answers(1, 'usage: ...\n', 'exec format error\n'), '/c') == \
        (None, None, 'exec format error')
    assert process.read_version(answers(126, 'permission denied\n', ''), '/c') == \
        (None, None, 'permission denied')
    assert process.read_version(answers(0, 'containerd dev-build\n'), '/c') == \
        (None, None, "cannot read a version from 'containerd dev-build'")


def test_the_version_is_asked_once_per_binary_file(tmp_path, monkeypatch):
    """Asked once per file (path, size, mtime); a failure or a binary that is not there is asked again."""
    monkeypatch.setattr(process, '_VERSIONS', {})
    b = tmp_path / 'containerd'
    b.write_text('#!/bin/sh\n')
    good = answers(0, 'containerd x 1.7.2\n')
    assert process.binary_version(good, str(b)) == ((1, 7), '1.7.2', None)
    assert process.binary_version(good, str(b)) == ((1, 7), '1.7.2', None)
    assert len(good.calls) == 1
    # the file replaced by another build: asked again
    b.write_text('#!/bin/sh\n# 2.1\n')
    newer = answers(0, 'containerd x 2.1.0\n')
    assert process.binary_version(newer, str(b)) == ((2, 1), '2.1.0', None)
    bad = answers(1, '', 'broken')
    other = tmp_path / 'other'
    other.write_text('x')
    assert process.binary_version(bad, str(other))[0] is None
    assert process.binary_version(bad, str(other))[0] is None
    assert len(bad.calls) == 2
    # no such file: not cached under "no key" for the next missing binary
    assert process.binary_version(answers(0, 'containerd x 1.6.1\n'), str(tmp_path / 'gone'))[1] == '1.6.1'
    assert process.binary_version(answers(0, 'containerd x 2.2.0\n'), str(tmp_path / 'gone2'))[1] == '2.2.0'


# ---------------------------------------------------------------- tools

def test_which_finds_only_executable_files_in_path(tmp_path, monkeypatch):
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    (a / 'ng-tool').mkdir()                     # a folder of that name
    (a / 'ng-tool2').write_text('')             # not executable
    want = executable(str(b / 'ng-tool'))
    executable(str(b / 'ng-tool2'))
    monkeypatch.setenv('PATH', os.pathsep.join([str(a), str(b)]))
    assert process.which('ng-tool') == want
    assert process.which('ng-tool2') == str(b / 'ng-tool2')
    assert process.which('ng-no-such-tool') is None


def test_which_searches_a_given_path_and_may_return_a_file_that_is_not_executable(tmp_path, monkeypatch):
    """path= stands for another process's PATH (containerd's); executable=False returns the first regular file
    of that name, so the caller can say why it will not run."""
    a, b = tmp_path / 'a', tmp_path / 'b'
    a.mkdir()
    b.mkdir()
    (a / 'ng-tool').mkdir()                     # a folder of that name is never it
    (a / 'ng-plain').write_text('')             # not executable
    want = executable(str(b / 'ng-plain'))
    monkeypatch.setenv('PATH', str(b))          # the process's own PATH is not looked at
    given = os.pathsep.join(['', str(a)])
    assert process.which('ng-plain', extra=(), path=given) is None
    assert process.which('ng-plain', extra=(str(b),), path=given) == want
    assert process.which('ng-plain', extra=(str(b),), path=given, executable=False) == str(a / 'ng-plain')
    assert process.which('ng-tool', extra=(), path=given, executable=False) is None


def test_which_ignores_empty_path_entries(tmp_path, monkeypatch):
    """An empty PATH entry is not the working folder."""
    executable(str(tmp_path / 'ng-here'))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv('PATH', '')
    assert process.which('ng-here', extra=()) is None


def test_which_looks_in_the_system_folders_too(monkeypatch):
    monkeypatch.setenv('PATH', '')
    assert process.which('sh') in ('/usr/sbin/sh', '/usr/bin/sh', '/sbin/sh', '/bin/sh')


def test_ctr_beside_the_binary_wins_unless_it_cannot_run(tmp_path, monkeypatch):
    node = tmp_path / 'node'
    path = tmp_path / 'path'
    node.mkdir()
    path.mkdir()
    in_path = executable(str(path / 'ctr'))
    monkeypatch.setenv('PATH', str(path))
    (node / 'ctr').write_text('#!/bin/sh\n')     # not executable
    assert process.sibling_ctr(str(node / 'containerd')) == in_path
    executable(str(node / 'ctr'))
    assert process.sibling_ctr(str(node / 'containerd')) == str(node / 'ctr')


def test_unshare_flags_follow_what_unshare_can_do(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, 'UNSHARE_FLAGS', {})
    base = ['--mount', '--net', '--propagation', 'private']
    old = executable(str(tmp_path / 'old'), '#!/bin/sh\necho " -m, --mount"\n')
    new_out = executable(str(tmp_path / 'new'), '#!/bin/sh\necho " --kill-child[=<signame>]"\n')
    new_err = executable(str(tmp_path / 'new-err'), '#!/bin/sh\necho " --kill-child[=<signame>]" >&2\nexit 1\n')
    assert sandbox.unshare_flags(old) == base
    assert sandbox.unshare_flags(new_out) == base + ['--pid', '--fork', '--kill-child']
    assert sandbox.unshare_flags(new_err) == base + ['--pid', '--fork', '--kill-child']
    assert sandbox.unshare_flags(str(tmp_path / 'none')) == base
    # asked once per unshare
    os.remove(new_out)
    assert sandbox.unshare_flags(new_out) == base + ['--pid', '--fork', '--kill-child']


def test_a_command_that_hangs_is_killed_after_its_timeout():
    t0 = time.time()
    rc, out, err = process.run_command(['sh', '-c', 'echo started; exec sleep 30'], timeout=0.5)
    assert time.time() - t0 < 10
    assert (rc, out) == (124, 'started\n')
    assert err == '\n(killed after 0.5s)'
    assert process.run_command(['sh', '-c', 'echo o; echo e >&2; exit 3']) == (3, 'o\n', 'e\n')


def test_ctr_that_cannot_be_started_is_an_answer_not_a_crash(tmp_path):
    rc, out, err = process.run_bounded([str(tmp_path / 'no-ctr'), 'plugins', 'ls'], 5)
    assert rc != 0 and out == '' and 'no-ctr' in err


# ---------------------------------------------------------------- the namespace script

def script_of(tmp_path, binds, run_dirs=('/run',)):
    sb = sandbox.Sandbox(str(tmp_path / 'nodeguard-preflight-x'))
    sb.binds = list(binds)
    tools = {'mount': '/usr/bin/mount', 'mkdir': '/usr/bin/mkdir'}
    return sb, sandbox.setup_script(sb, '/usr/bin/containerd', "/etc/it's/config.toml", list(run_dirs), tools)


def test_script_is_valid_sh_and_execs_containerd_on_the_private_paths(tmp_path):
    sb, script = script_of(tmp_path, [('/x/files/0.toml', "/etc/it's/config.toml")], ['/run', '/var/run'])
    subprocess.run(['sh', '-n', '-c', script], check=True)
    lines = script.splitlines()
    assert lines[-2] == 'echo nodeguard-preflight-exec >&2'
    assert lines[-1] == ("exec '/usr/bin/containerd' --config '/etc/it'\"'\"'s/config.toml' --address '%s' "
                         "--root '%s' --state '%s' --log-level info" % (sb.socket, sb.p('root'), sb.p('state')))
    # each run folder gets its overlay, with a tmpfs if overlayfs is missing
    for i, d in enumerate(['/run', '/var/run']):
        assert ("/usr/bin/mount' -n -t overlay nodeguard-preflight -o lowerdir='%s',upperdir='%s',workdir='%s' '%s'"
                % (d, sb.p('ovl-%d' % i, 'upper'), sb.p('ovl-%d' % i, 'work'), d)) in script
        assert 'no overlayfs: %s was replaced by an empty tmpfs' % d in script
    assert ("'/usr/bin/mount' -n --bind '/x/files/0.toml' '/etc/it'\"'\"'s/config.toml' || fail \"cannot bind the "
            "private copy over /etc/it's/config.toml\"") in script


def test_a_file_below_run_gets_a_place_in_the_overlay_first(tmp_path):
    _sb, script = script_of(tmp_path, [('/c/0.toml', '/run/k3s/containerd/config.toml'),
                                       ('/c/1.toml', '/etc/containerd/conf.d/1.toml'),
                                       ('/c/2.toml', '/runtime/2.toml')])
    places = [line for line in script.splitlines() if line.startswith('[ -e ')]
    assert places == ["[ -e '/run/k3s/containerd/config.toml' ] || { '/usr/bin/mkdir' -p '/run/k3s/containerd' && "
                      ": > '/run/k3s/containerd/config.toml'; } || fail \"cannot place the private copy at "
                      "/run/k3s/containerd/config.toml\""]


def test_shell_quote_keeps_any_path_one_word():
    for s in ("plain", "it's", "a b", '$(x) "q" \\ `y`', "''"):
        out = subprocess.run(['sh', '-c', 'printf %s ' + sandbox.shell_quote(s)], capture_output=True,
                             text=True, check=True).stdout
        assert out == s


# ---------------------------------------------------------------- the kill

def group_of_sleepers():
    return subprocess.Popen(['sh', '-c', 'sleep 60 & sleep 60 & wait'], start_new_session=True)


def test_kill_ends_the_whole_group_and_returns_when_it_is_gone():
    proc = group_of_sleepers()
    deadline = time.time() + 5
    while len(process.group_alive(proc.pid)) < 3 and time.time() < deadline:
        time.sleep(0.02)
    members = process.group_alive(proc.pid)
    assert proc.pid in members and len(members) == 3
    t0 = time.time()
    process.kill_group(proc)
    assert time.time() - t0 < 3
    assert proc.poll() is not None
    assert process.group_alive(proc.pid) == []


def test_group_members_are_found_whatever_their_name_and_a_vanished_one_is_skipped(tmp_path, monkeypatch):
    """/proc/PID/stat names the command in parentheses, which may hold ')' itself; a process
    listed in /proc may be gone when its stat is read."""
    odd = tmp_path / 'ng)sleep (x'
    odd.symlink_to('/bin/sleep')
    proc = subprocess.Popen([str(odd), '60'], start_new_session=True)
    real = os.listdir
    monkeypatch.setattr(_preflight.os, 'listdir', lambda p: ['999999999'] + real(p) if p == '/proc' else real(p))
    try:
        deadline = time.time() + 5
        while process.group_alive(proc.pid) != [proc.pid] and time.time() < deadline:
            time.sleep(0.02)
        assert process.group_alive(proc.pid) == [proc.pid]
    finally:
        proc.kill()
        proc.wait()
    assert process.group_alive(proc.pid) == []


def test_zombies_and_processes_of_other_groups_are_not_waited_for():
    """Only live members of the group count: a zombie is dead already, and a job that moved
    to its own process group (same session) is not reached by the group's SIGKILL."""
    zombie_maker = subprocess.Popen(['sh', '-c', 'sleep 0 & exec sleep 60'], start_new_session=True)
    own_group = 'import os, time; os.setpgid(0, 0); print(os.getpid(), flush=True); time.sleep(60)'
    job_control = subprocess.Popen(['sh', '-c', '"$0" -c "$1" & wait', sys.executable, own_group],
                                   start_new_session=True, stdout=subprocess.PIPE, universal_newlines=True)
    job = int(job_control.stdout.readline())
    try:
        time.sleep(0.3)
        assert process.group_alive(zombie_maker.pid) == [zombie_maker.pid]
        assert process.group_alive(job_control.pid) == [job_control.pid]
    finally:
        for p in (zombie_maker, job_control):
            p.kill()
            p.wait()
        os.kill(job, signal.SIGKILL)


def test_kill_of_a_daemon_that_already_exited_returns():
    proc = subprocess.Popen(['true'], start_new_session=True)
    proc.wait()
    t0 = time.time()
    process.kill_group(proc)
    process.kill_group(None)
    assert time.time() - t0 < 3


def test_kill_waits_for_a_process_that_outlives_the_signal():
    """Until the daemon is gone (here: killed by someone else a moment later), but no longer than `wait`."""
    proc = subprocess.Popen(['sleep', '60'])  # not a group leader: the group signal misses it
    timer = threading.Timer(0.4, proc.kill)
    timer.start()
    try:
        process.kill_group(proc, wait=5.0)
        assert proc.poll() is not None
    finally:
        timer.cancel()
        proc.kill()
        proc.wait()
    stuck = subprocess.Popen(['sleep', '60'])
    try:
        t0 = time.time()
        process.kill_group(stuck, wait=0.3)
        assert 0.3 <= time.time() - t0 < 3
    finally:
        stuck.kill()
        stuck.wait()


def test_the_daemon_gets_sigkill_when_its_starter_dies():
    """The preexec function sets PR_SET_PDEATHSIG to SIGKILL in the child (kept across exec)."""
    code = ('import ctypes; s = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(s), 0, 0, 0); '
            'print(s.value)')
    preexec = process.die_with_parent_fn()
    assert preexec is not None
    out = subprocess.run([sys.executable, '-c', code], preexec_fn=preexec, capture_output=True, text=True,
                         check=True).stdout
    assert int(out) == int(signal.SIGKILL)


def test_without_prctl_there_is_no_preexec_function(monkeypatch):
    monkeypatch.setattr(process, 'libc_prctl', lambda: None)
    assert process.die_with_parent_fn() is None


# ---------------------------------------------------------------- the socket

def test_only_a_listening_socket_is_up(tmp_path):
    path = str(tmp_path / 's.sock')
    assert process.connectable(path) is False          # not there yet
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(path)                                         # there, nobody listening
    assert process.connectable(path) is False
    dead.close()
    os.remove(path)
    live = socket.socket(socket.AF_UNIX)
    live.bind(path)
    live.listen(1)
    try:
        assert process.connectable(path) is True
    finally:
        live.close()


# ---------------------------------------------------------------- private folders

def test_stale_folders_are_removed_after_two_minutes(tmp_path):
    fresh = [folder(tmp_path, 1) for _i in range(3)]
    young = folder(tmp_path, 119.5)
    old = [folder(tmp_path, 120.5) for _i in range(3)]
    assert sorted(sandbox.remove_stale(str(tmp_path))) == sorted(old)
    assert sorted(os.path.join(str(tmp_path), n) for n in os.listdir(str(tmp_path))) == sorted(fresh + [young])


def test_what_is_not_a_stale_run_folder_is_left_alone(tmp_path):
    old = [folder(tmp_path, 3600)]                                       # listed before and after the others
    no_lock = [folder(tmp_path, 3600, lock=False) for _i in range(2)]  # not made by a run (a run locks at once)
    target = tmp_path / 'elsewhere'
    target.mkdir()
    os.close(sandbox.lock_folder(str(target)))
    link = tmp_path / 'nodeguard-preflight-link'
    link.symlink_to(target)
    a_file = tmp_path / 'nodeguard-preflight-file'
    a_file.write_text('')
    for p in (str(link), str(a_file)):
        os.utime(p, (time.time() - 3600, time.time() - 3600), follow_symlinks=False)
    old.append(folder(tmp_path, 3600))
    assert sorted(sandbox.remove_stale(str(tmp_path))) == sorted(old)
    assert all(os.path.isdir(d) for d in no_lock)
    assert (target / '.lock').exists() and link.is_symlink() and a_file.exists()


def test_a_locked_folder_among_stale_ones_is_skipped_not_the_end(tmp_path):
    """A run that has lasted long (or whose clock jumped) still holds its lock: never removed."""
    old = [folder(tmp_path, 3600) for _i in range(2)]                  # listed before and after the live ones
    live = [folder(tmp_path, 3600, lock=False) for _i in range(3)]
    fds = [sandbox.lock_folder(d) for d in live]
    for d in live:
        os.utime(d, (time.time() - 3600, time.time() - 3600))
    try:
        old += [folder(tmp_path, 3600) for _i in range(2)]
        assert sorted(sandbox.remove_stale(str(tmp_path))) == sorted(old)
        assert all(os.path.isdir(d) for d in live)
    finally:
        for fd in fds:
            os.close(fd)


def test_the_lock_file_is_private(tmp_path):
    fd = sandbox.lock_folder(str(tmp_path))
    try:
        assert os.stat(str(tmp_path / '.lock')).st_mode & 0o777 == 0o600
    finally:
        os.close(fd)


def test_removing_a_folder_that_is_already_gone_returns_at_once(tmp_path):
    t0 = time.time()
    sandbox.remove_folder(str(tmp_path / 'gone'))
    assert time.time() - t0 < 1
    d = tmp_path / 'there'
    (d / 'sub').mkdir(parents=True)
    (d / 'sub' / 'f').write_text('x')
    sandbox.remove_folder(str(d))
    assert not d.exists()
