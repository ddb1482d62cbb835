# -*- coding: utf-8 -*-
"""No pipeline that can die of SIGPIPE under pipefail, and
shellcheck on the shell scripts that run under it (`make lint-pipelines`)."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECKER = os.path.join(HERE, 'pipeline_check.py')
_SPEC = importlib.util.spec_from_file_location('pipeline_check', CHECKER)
pipeline_check = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(pipeline_check)

REPO = pipeline_check.REPO
# The line that failed, as it stood in the Makefile's venv recipe.
BROKEN_LINE = '\t$(VENV)/bin/ansible --version | head -n1'


def _relative(paths):
    return sorted(os.path.relpath(p, REPO) for p in paths)


def test_the_tree_has_no_pipeline_that_stops_early():
    problems = pipeline_check.check_files(pipeline_check.scanned_files())
    assert problems == [], '\n'.join(problems)


def test_the_scan_covers_every_place_that_runs_under_pipefail():
    scanned = _relative(pipeline_check.scanned_files())
    for path in ('Makefile', '.ci/run', '.ci/stage', '.ci/retry.sh', 'tests/images/build.sh', 'tests/demo/demo.sh'):
        assert path in scanned
    for folder in ('roles/', 'playbooks/', 'molecule/'):
        assert any(p.startswith(folder) and p.endswith('.yml') for p in scanned), folder


def _makefile_with_the_old_line():
    """The real Makefile with its venv recipe's version line put back as it was."""
    with open(os.path.join(REPO, 'Makefile')) as f:
        lines = f.read().splitlines()
    at = next(i for i, line in enumerate(lines) if 'bin/ansible --version' in line)
    lines[at] = BROKEN_LINE
    return '\n'.join(lines) + '\n', at + 1


def test_catches_ansible_version_head_in_the_makefile():
    text, number = _makefile_with_the_old_line()
    problems = pipeline_check.check_text(text, 'Makefile')
    assert len(problems) == 1, problems
    assert problems[0].startswith('Makefile:%d: ' % number)
    assert '(head)' in problems[0] and 'ansible --version | head -n1' in problems[0]


def test_the_command_line_names_file_and_line_and_fails(tmp_path):
    text, number = _makefile_with_the_old_line()
    makefile = tmp_path / 'Makefile'
    makefile.write_text(text)
    run = subprocess.run([sys.executable, CHECKER, str(makefile)], capture_output=True, text=True, check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert ':%d: pipeline ends in a reader that stops early (head)' % number in run.stdout
    assert 'Makefile' in run.stdout

    makefile.write_text(text.replace(BROKEN_LINE, '\t@v=$$($(VENV)/bin/ansible --version) && echo "$${v%%$$\'\\n\'*}"'))
    run = subprocess.run([sys.executable, CHECKER, str(makefile)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr


@pytest.mark.parametrize('text, reader', [
    ('ansible --version | head -n1', 'head'),
    ('cmd|head -1', 'head'),
    ('cmd |& head', 'head'),
    ('cmd | grep -q x', 'grep -q'),
    ('cmd | grep -qx "$IMAGE"', 'grep -qx'),
    ('cmd | grep -Eq "a|b"', 'grep -Eq'),
    ('cmd | grep -m1 x', 'grep -m1'),
    ('cmd | grep --max-count=1 x', 'grep --max-count=1'),
    ('cmd | grep --quiet x', 'grep --quiet'),
    ('cmd | grep -l x', 'grep -l'),
    ('cmd | LC_ALL=C grep -q x', 'grep -q'),
    ('cmd | sed q', 'sed q'),
    ('cmd | sed 1q', 'sed q'),
    ("cmd | sed -n '1{p;q}'", 'sed q'),
    ("cmd | awk '{ print; exit }'", 'awk exit'),
    ("cmd | awk 'NR == 2 { exit } { print }'", 'awk exit'),
    ('cmd | { read -r first; }', 'read'),
    ('x=$(cmd | head -n1)', 'head'),
    ('if cmd | grep -q x; then :; fi', 'grep -q'),
])
def test_early_readers_are_found(text, reader):
    problems = pipeline_check.check_text(text, 'f.sh')
    assert len(problems) == 1, problems
    assert problems[0].startswith('f.sh:1: ') and '(%s)' % reader in problems[0]


@pytest.mark.parametrize('text, line', [
    ('cmd \\\n    | head -n 5\n', 2),
    ('cmd |\n    head -n 5\n', 2),
    ('- name: Is CRI up\n  ansible.builtin.shell:\n    cmd: |\n      set -o pipefail\n'
     '      ctr plugins ls | grep -q cri\n', 5),
    ('probe:\n\t@ls | wc -l\n\t@ls | head -n1\n', 3),
])
def test_the_line_of_the_reader_is_named(text, line):
    problems = pipeline_check.check_text(text, 'f')
    assert [p.split(': ', 1)[0] for p in problems] == ['f:%d' % line], problems


@pytest.mark.parametrize('text', [
    'cmd | tail -n1',
    'echo "a | head -n1 in a string"',
    'cmd | grep -c x',
    'cmd | grep -x "$IMAGE" >/dev/null',
    'cmd | grep -v x | sort -V',
    "cmd | sed -n '1,60p'",
    "cmd | sed 's/q/x/'",
    "cmd | sed 's/^/  | /'",
    "cmd | awk '{ print $1 }'",
    'cmd | while read -r line; do :; done',
    'a || head -n1 file',
    'head -n1 file',
    'grep -q x file',
    'v=$(ansible --version) && echo "${v%%$\'\\n\'*}"',
    '# cmd | head -n1 (a comment)',
    '\t@# cmd | head -n1 (a Makefile recipe comment)',
    'when: "{{ items | first }}"',
    "msg: \"{{ checks | selectattr('status', 'equalto', 'pass') | map(attribute='name') | list }}\"",
    'cmd: |\n  head -n1 /etc/os-release\n',
    '- |\n  grep -q x /etc/hosts\n',
])
def test_readers_that_read_everything_pass(text):
    assert pipeline_check.check_text(text, 'f') == []


@pytest.mark.parametrize('text, problems', [
    ('cmd | head -n1  # early-exit-ok: printf writes one line before head can stop', 0),
    ('# early-exit-ok: cmd ignores SIGPIPE\ncmd | head -n1', 0),
    ('cmd | head -n1  # early-exit-ok:', 1),
    ('# early-exit-ok: too far away\n\ncmd | head -n1', 1),
])
def test_a_reason_in_a_comment_allows_an_early_reader(text, problems):
    assert len(pipeline_check.check_text(text, 'f')) == problems


def _shell_scripts():
    return [p for p in pipeline_check.scanned_files()
            if not p.endswith(pipeline_check.SCAN_SUFFIXES[2:]) and os.path.basename(p) != 'Makefile']


def test_shell_scripts_pass_shellcheck():
    # shellcheck is one of the Makefile's APT_PACKAGES: missing is a failure.
    assert shutil.which('shellcheck'), 'shellcheck not found: run `make deps`'
    scripts = _shell_scripts()
    assert os.path.join(REPO, 'tests', 'images', 'build.sh') in scripts
    run = subprocess.run(['shellcheck', '-x'] + scripts, cwd=REPO, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
