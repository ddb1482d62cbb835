# -*- coding: utf-8 -*-
"""fleet_report's process_age.sh.j2: the seconds since the topmost ansible-playbook process above the shell
started (the fleet report counts containerd starts since then), from /proc on Linux, from ps elsewhere."""

import os
import subprocess
import time

import jinja2

TEMPLATE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                        'roles', 'fleet_report', 'templates', 'process_age.sh.j2')


def script(tmp_path, linux=True):
    with open(TEMPLATE) as f:
        text = jinja2.Template(f.read()).render()
    if not linux:   # the ps branch, as on a controller without /proc
        text = text.replace('if [ -r "/proc/$PPID/stat" ]; then', 'if false; then', 1)
    path = tmp_path / 'age.sh'
    path.write_text(text)
    return str(path)


def under_playbook(path, wait):
    """Run the script (with /bin/sh, as the pipe lookup does) in a process named like an ansible-playbook
    worker that started `wait` seconds earlier, the child of one named like ansible-playbook that started 1 s
    before it: the topmost one counts. "; true" keeps bash from exec-ing its last command in its own place."""
    folder = os.path.dirname(path)
    worker = os.path.join(folder, 'worker.sh')
    with open(worker, 'w') as f:
        f.write('exec -a ansible-playbook-worker bash -c "sleep %s; sh %s; true"\n' % (wait, path))
    top = os.path.join(folder, 'top.sh')
    with open(top, 'w') as f:
        f.write('sleep 1; bash %s; true\n' % worker)
    start = time.monotonic()
    out = subprocess.run(['bash', '-c', 'exec -a /venv/bin/ansible-playbook bash %s' % top],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return int(out), time.monotonic() - start


def test_the_age_of_the_topmost_playbook_process_from_proc(tmp_path):
    age, took = under_playbook(script(tmp_path), 2)
    # the topmost process is 3 s old (1 s before the worker, 2 s in it), not the worker's 2 s
    assert 3 <= age <= int(took) + 1, (age, took)


def test_the_ps_fallback_gives_the_same_age(tmp_path):
    age, took = under_playbook(script(tmp_path, linux=False), 2)
    assert 3 <= age <= int(took) + 1, (age, took)


def test_no_playbook_above_gives_zero(tmp_path):
    for linux in (True, False):
        out = subprocess.run(['sh', script(tmp_path, linux)], capture_output=True, text=True, check=True).stdout
        assert out == '0\n', (linux, out)
