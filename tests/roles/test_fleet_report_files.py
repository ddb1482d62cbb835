# -*- coding: utf-8 -*-
"""fleet_report_files, the action that writes the fleet report on the
controller (no module run): the folder made when its parent exists, each
file atomic, a file with the same bytes and mode left alone, a bad name
refused before any write, a folder it cannot write refused with its path
and what to do."""

import json
import os
import subprocess
import sys

from conftest import COLLECTIONS_ROOT

PLAY = '''
- name: Write report files
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Write
      nodeguard.containerd.fleet_report_files:
        dir: "{{ out }}"
        files: "{{ files }}"
        mode: "{{ mode | default('0644') }}"
      register: written

    - name: Show
      ansible.builtin.debug:
        msg: "RESULT {{ written | to_json }}"
'''


def play(tmp_path, out, files, check=False, **extra):
    book = tmp_path / 'play.yml'
    book.write_text(PLAY)
    extra = dict(extra, out=str(out), files=files)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_NOCOLOR='1',
               ANSIBLE_LOCALHOST_WARNING='0', ANSIBLE_INVENTORY_UNPARSED_WARNING='0',
               ANSIBLE_PYTHON_INTERPRETER=sys.executable)
    cmd = [os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), str(book), '-e', json.dumps(extra)]
    proc = subprocess.run(cmd + (['--check'] if check else []), capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    result = None
    for line in proc.stdout.splitlines():
        if '"msg": "RESULT ' in line:
            result = json.loads(json.loads('{%s}' % line.strip())['msg'][len('RESULT '):])
    return proc, result


def test_writes_each_file_into_a_new_folder_and_reports_no_change(tmp_path):
    out = tmp_path / 'job-1'
    proc, res = play(tmp_path, out, {'r.json': '{"rows": []}\n', 'r.html': '<p>caf\u00e9</p>'})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / 'r.json').read_text() == '{"rows": []}\n'
    assert (out / 'r.html').read_bytes() == '<p>caf\u00e9</p>'.encode('utf-8')
    assert oct((out / 'r.json').stat().st_mode & 0o7777) == '0o644'
    assert res['changed'] is False and sorted(res['written']) == [str(out / 'r.html'), str(out / 'r.json')]
    assert 'changed=0' in proc.stdout
    # no temporary file left beside them
    assert sorted(os.listdir(str(out))) == ['r.html', 'r.json']


def test_same_bytes_and_mode_are_left_alone_and_a_new_mode_rewrites(tmp_path):
    out = tmp_path / 'a'
    play(tmp_path, out, {'r.json': 'one\n'})
    inode = (out / 'r.json').stat().st_ino
    proc, res = play(tmp_path, out, {'r.json': 'one\n'})
    assert res['unchanged'] == [str(out / 'r.json')] and res['written'] == []
    assert (out / 'r.json').stat().st_ino == inode
    proc, res = play(tmp_path, out, {'r.json': 'one\n'}, mode='0600')
    assert res['written'] == [str(out / 'r.json')]
    assert oct((out / 'r.json').stat().st_mode & 0o7777) == '0o600'
    proc, res = play(tmp_path, out, {'r.json': 'two\n'}, mode='0600')
    assert res['written'] == [str(out / 'r.json')] and (out / 'r.json').read_text() == 'two\n'


def test_written_in_check_mode_too(tmp_path):
    """The report describes the run and changes no host."""
    out = tmp_path / 'c'
    proc, res = play(tmp_path, out, {'r.json': 'x\n'}, check=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (out / 'r.json').read_text() == 'x\n'


def test_a_name_with_a_folder_is_refused_before_any_write(tmp_path):
    out = tmp_path / 'd'
    proc, _res = play(tmp_path, out, {'ok.json': 'x', '../escape.json': 'y'})
    assert proc.returncode == 2
    assert "files: '../escape.json' is not a file name (no folder part)" in proc.stdout
    assert not out.exists() and not (tmp_path / 'escape.json').exists()


def test_a_bad_mode_is_refused(tmp_path):
    proc, _res = play(tmp_path, tmp_path / 'e', {'r.json': 'x'}, mode='rw-r--r--')
    assert proc.returncode == 2 and "mode must be an octal number such as 0644, not 'rw-r--r--'" in proc.stdout


def test_a_folder_whose_parent_is_missing_is_refused_with_the_fix(tmp_path):
    """Most often a volume that is not mounted: the report would be written into the job's container and lost."""
    out = tmp_path / 'reports' / 'nodeguard'
    proc, _res = play(tmp_path, out, {'r.json': 'x'})
    assert proc.returncode == 2
    assert 'cannot write the fleet report into %s on the controller: %s does not exist' % (out, out.parent) \
        in proc.stdout, proc.stdout
    assert 'mount a persistent volume there' in proc.stdout
    assert not (tmp_path / 'reports').exists()


def test_a_file_in_place_of_the_folder_is_refused(tmp_path):
    (tmp_path / 'out').write_text('x')
    proc, _res = play(tmp_path, tmp_path / 'out', {'r.json': 'x'})
    assert proc.returncode == 2
    assert 'cannot write the fleet report into %s on the controller: it is not a folder' % (tmp_path / 'out') \
        in proc.stdout, proc.stdout


def test_a_folder_that_cannot_be_written_is_refused_with_the_fix(tmp_path):
    """/sys/kernel: a folder no user, root included, can create a file in."""
    proc, _res = play(tmp_path, '/sys/kernel', {'nodeguard-fleet-report.json': 'x'})
    assert proc.returncode == 2
    assert 'cannot write the fleet report into /sys/kernel on the controller: ' in proc.stdout, proc.stdout
    assert 'writable by the job' in proc.stdout
    assert not os.path.exists('/sys/kernel/nodeguard-fleet-report.json')
