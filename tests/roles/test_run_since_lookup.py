# -*- coding: utf-8 -*-
"""The lookup nodeguard.containerd.run_since: when this run began, one stable number for node_readiness's count
of containerd starts and the fleet report's. Real processes named like ansible-playbook (from /proc and from
ps), real job_events folders as ansible-runner writes them, and the lookup through a real ansible-playbook."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from conftest import COLLECTIONS_ROOT

from ansible.errors import AnsibleLookupError
from ansible_collections.nodeguard.containerd.plugins.lookup import run_since as lookup

PRINT = ('import sys, json; sys.path.insert(0, %r); '
         'from ansible_collections.nodeguard.containerd.plugins.lookup import run_since as l; '
         'print(json.dumps([l.run_since(), l.run_since(), l.playbook_start_from_ps(l.os.getpid())]))'
         % COLLECTIONS_ROOT)


def under_playbook(tmp_path, wait, prefix=()):
    """Python run in a process named ansible-playbook (as a forked worker is) that starts `wait` s after the
    topmost one, named ansible-playbook too: (what it printed, the time just before the topmost one started).
    "; true" keeps bash from exec-ing its last command in its own place."""
    probe = tmp_path / 'probe.py'
    probe.write_text(PRINT + '\n')
    worker = tmp_path / 'worker.sh'
    worker.write_text('exec -a ansible-playbook bash -c "%s %s; true"\n' % (sys.executable, probe))
    top = tmp_path / 'top.sh'
    top.write_text('sleep %s; bash %s; true\n' % (wait, worker))
    before = time.time()
    out = subprocess.run(list(prefix) + ['bash', '-c', 'exec -a /venv/bin/ansible-playbook bash %s' % top],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return json.loads(out), before


def test_the_start_of_the_topmost_playbook_process_never_before_it_began(tmp_path):
    (first, second, from_ps), before = under_playbook(tmp_path, 3)
    # the topmost process (not the worker that started 3 s later), rounded up: never before it started, at most
    # a second (and the spawn) after; the same number on every call
    assert before <= first <= before + 1.5, (first, before)
    assert first == second
    # ps gives whole seconds too (and Linux's ps its own boot time cut to the second): rounded up by two, never
    # before the start, at most two seconds (and the spawn) after it
    assert before < from_ps <= before + 3.1 and abs(from_ps - first) <= 2.01, (from_ps, first, before)


def test_ansible_playbook_as_pid_1_is_found_by_its_workers(tmp_path):
    """A container whose command is ansible-playbook: the topmost process is PID 1 (a new PID namespace here)."""
    (first, second, from_ps), before = under_playbook(tmp_path, 2, ['unshare', '--pid', '--fork', '--mount-proc'])
    assert before <= first <= before + 1.5 and first == second, (first, before)
    assert before < from_ps <= before + 3.1, (from_ps, before)


def test_stable_across_processes_of_one_run(tmp_path):
    """Forked workers of one run (each a lookup call of its own) get the same number; the interpreter's script
    (python .../ansible-playbook) counts as the program."""
    probe = tmp_path / 'probe.py'
    probe.write_text(PRINT + '\n')
    top = tmp_path / 'ansible-playbook'    # run as "python3 <folder>/ansible-playbook", as its shebang does
    call = '%s %s' % (sys.executable, probe)
    top.write_text('%s; sleep 1.2; %s; true\n' % (call, call))
    out = subprocess.run(['bash', '-c', 'exec -a python3 bash %s' % top],
                         capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    first, second = json.loads(out[0])[0], json.loads(out[1])[0]
    assert first is not None and first == second


def test_only_a_process_named_ansible_playbook_counts(tmp_path):
    """Not a folder or a session whose name holds the word (a wrapper in /srv/ansible-playbooks/, tmux -s ...),
    nor a process of another name: without ansible-playbook above, no moment (the lookup then warns)."""
    probe = tmp_path / 'probe.py'
    probe.write_text(PRINT + '\n')
    for name in ('/srv/ansible-playbooks/run.sh', 'ansible-playbook-wrapper', 'tmux'):
        got = subprocess.run(['bash', '-c', 'exec -a %s bash -c "%s %s; true" ansible-playbook'
                              % (name, sys.executable, probe)],
                             capture_output=True, text=True, check=True, timeout=60).stdout
        assert json.loads(got) == [None, None, None], (name, got)


def write_event(folder, name, created=None, **extra):
    event = dict(extra)
    if created is not None:
        event['created'] = created
    (folder / name).write_text(json.dumps(event))


UUID = '%08d-1111-2222-3333-444455556666'


def test_the_jobs_first_event_by_counter(tmp_path):
    events = tmp_path / 'job_events'
    events.mkdir()
    # the runner's files: <counter>-<uuid>.json, and <uuid>-partial.json while an event is written (a uuid may
    # start with eight digits: not a counter); a later event's time earlier than the first's (written out of
    # order): the counter decides, not the time
    write_event(events, (UUID % 31415926) + '-partial.json', '2026-12-05T16:20:00.0', event='runner_on_ok')
    write_event(events, '1-%s.json' % (UUID % 1), '2026-12-05T16:19:23.123456', event='playbook_on_start')
    write_event(events, '2-%s.json' % (UUID % 2), '2026-12-05T16:19:20.000000')
    write_event(events, '10-%s.json' % (UUID % 10), '2026-12-05T16:19:21.5')
    write_event(events, 'stray.json', '2020-01-01T00:00:00')
    assert lookup.run_since(events_dir=str(tmp_path)) == 1796487563.123456
    # no fraction, or an offset after it
    write_event(events, '1-%s.json' % (UUID % 1), '2026-12-05T16:19:23+00:00')
    assert lookup.run_since(events_dir=str(tmp_path)) == 1796487563.0
    # only partial files (AWX writes no others): no event time
    for path in events.iterdir():
        path.unlink()
    write_event(events, (UUID % 1) + '-partial.json', '2026-12-05T16:19:23')
    assert lookup.first_event_time(str(tmp_path)) is None


def test_no_event_with_a_time_falls_back_to_the_process(tmp_path, monkeypatch):
    monkeypatch.setattr(lookup, 'playbook_start_from_proc', lambda pid: 1796487000.5)
    assert lookup.run_since(events_dir=str(tmp_path)) == 1796487000.5    # no job_events folder
    events = tmp_path / 'job_events'
    events.mkdir()
    write_event(events, '1-%s.json' % (UUID % 1), event='playbook_on_start')
    assert lookup.run_since(events_dir=str(tmp_path)) == 1796487000.5    # the first event has no time
    for bad in ('{not json', '"a string"', json.dumps({'created': '2026-13-45T99:99:99'})):
        (events / ('1-%s.json' % (UUID % 1))).write_text(bad)
        write_event(events, '3-%s.json' % (UUID % 3), '2026-12-05T16:19:23')
        assert lookup.run_since(events_dir=str(tmp_path)) == 1796487000.5, bad    # only the lowest counter counts
    # without /proc, ps; without either, nothing

    def no_proc(pid):
        raise IOError('no /proc')
    monkeypatch.setattr(lookup, 'playbook_start_from_proc', no_proc)
    monkeypatch.setattr(lookup, 'playbook_start_from_ps', lambda pid: 1796487001.0)
    assert lookup.run_since() == 1796487001.0
    monkeypatch.setattr(lookup, 'playbook_start_from_ps', lambda pid: None)
    assert lookup.run_since() is None


def test_an_empty_events_dir_is_none_not_the_working_folder(tmp_path, monkeypatch):
    """An old runner artifacts folder in the working folder must not give the run's start."""
    (tmp_path / 'job_events').mkdir()
    write_event(tmp_path / 'job_events', '1-%s.json' % (UUID % 1), '2020-01-01T00:00:00')
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lookup, 'playbook_start_from_proc', lambda pid: 1796487000.5)
    assert lookup.run_since(events_dir='') == 1796487000.5


def test_a_given_moment_wins_and_a_bad_one_is_refused(tmp_path):
    events = tmp_path / 'job_events'
    events.mkdir()
    write_event(events, '1-%s.json' % (UUID % 1), '2026-12-05T16:19:23')
    assert lookup.run_since(since='1796480000.25', events_dir=str(tmp_path)) == 1796480000.25
    assert lookup.run_since(since=12) == 12.0
    with pytest.raises(AnsibleLookupError, match=r"since must be seconds since the epoch, not 'yesterday'"):
        lookup.run_since(since='yesterday')


def play_debug(tmp_path, expression, extra=(), env_update=None, program=None):
    """Run a one-task play that prints `expression` through a real ansible-playbook (`program`: a copy of its
    script under another name); (the printed value, the run's stdout and stderr)."""
    play = tmp_path / 'play.yml'
    play.write_text('- hosts: localhost\n  gather_facts: false\n  tasks:\n    - ansible.builtin.debug:\n'
                    '        msg: "%s"\n' % expression)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_NOCOLOR='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.builtin.json', ANSIBLE_LOCALHOST_WARNING='0')
    env.pop('AWX_ISOLATED_DATA_DIR', None)
    env.update(env_update or {})
    program = program or os.path.join(os.path.dirname(sys.executable), 'ansible-playbook')
    proc = subprocess.run([sys.executable, program, str(play)] + list(extra), capture_output=True, text=True,
                          env=env, check=True, timeout=300)
    msg = json.loads(proc.stdout)['plays'][0]['tasks'][0]['hosts']['localhost']['msg']
    return msg, proc.stdout + proc.stderr


def test_through_ansible_playbook_with_its_options(tmp_path):
    """Through a real ansible-playbook: the process's start (twice the same), events_dir from the
    AWX_ISOLATED_DATA_DIR environment variable, and since given."""
    events = tmp_path / 'runner' / 'job_events'
    events.mkdir(parents=True)
    write_event(events, '1-%s.json' % (UUID % 1), '2026-12-05T16:19:23.5')
    expression = ("{{ [lookup('nodeguard.containerd.run_since'), lookup('nodeguard.containerd.run_since'), "
                  "lookup('nodeguard.containerd.run_since', events_dir=dir), "
                  "lookup('nodeguard.containerd.run_since', since='7.5')] | to_json }}")
    before = time.time()
    msg, dummy = play_debug(tmp_path, expression, ['-e', 'dir=' + str(tmp_path / 'runner')])
    msg = json.loads(msg)
    assert before <= msg[0] <= before + 1.5 and msg[0] == msg[1], (msg, before)
    assert msg[2:] == [1796487563.5, 7.5]
    # under ansible-runner: the folder from the environment; given empty, none (the process's start)
    before = time.time()
    msg, dummy = play_debug(tmp_path, expression, ['-e', 'dir='],
                            env_update={'AWX_ISOLATED_DATA_DIR': str(tmp_path / 'runner')})
    msg = json.loads(msg)
    assert msg[:2] == [1796487563.5, 1796487563.5] and msg[3] == 7.5
    assert before <= msg[2] <= before + 1.5, (msg, before)


def test_without_a_playbook_process_the_lookup_warns_and_gives_the_time(tmp_path):
    """ansible-playbook started under another name (a copy of its script): nothing fixes the moment, so the lookup
    gives the time of the call and says that counts would not agree."""
    script = tmp_path / 'run-playbook'
    shutil.copy(os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(script))
    msg, output = play_debug(tmp_path, "{{ lookup('nodeguard.containerd.run_since') }}", program=str(script))
    assert abs(float(msg) - time.time()) < 30
    assert 'run_since: no ansible-playbook process above this one and no job events' in output
