# -*- coding: utf-8 -*-
"""The set-up helpers: network steps retry with a bounded
backoff and name what failed (.ci/retry.sh); a failed stage prints its log's
tail and the command that re-runs it (.ci/stage, .ci/stage-summary)."""

import os
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RETRY = os.path.join(REPO, '.ci', 'retry.sh')
STAGE = os.path.join(REPO, '.ci', 'stage')
SUMMARY = os.path.join(REPO, '.ci', 'stage-summary')


def _run(args, **env):
    # not the NG_STAGE_* of a make test that runs this suite in a lane
    full_env = {k: v for k, v in os.environ.items() if not k.startswith('NG_STAGE_')}
    full_env['NG_RETRY_DELAY'] = '0'
    full_env.update(env)
    return subprocess.run(args, capture_output=True, text=True, env=full_env, check=False, timeout=120)


def test_retry_succeeds_on_a_later_try(tmp_path):
    tries = tmp_path / 'tries'
    # Fails twice (a bad minute of network), then works.
    flaky = 'echo x >> %s; [ "$(wc -l < %s)" -ge 3 ]' % (tries, tries)
    run = _run([RETRY, '--what', 'flaky step', 'bash', '-c', flaky])
    assert run.returncode == 0, run.stderr
    assert tries.read_text().count('x') == 3
    assert 'flaky step failed (rc=1, try 1 of 4)' in run.stderr
    assert 'try 2 of 4' in run.stderr and 'giving up' not in run.stderr


def test_retry_gives_up_after_its_tries_and_names_the_mirror(tmp_path):
    tries = tmp_path / 'tries'
    failing = ('echo x >> %s; echo "Get:1 http://mirror.invalid/debian trixie InRelease"; '
               'echo "E: Failed to fetch http://mirror.invalid/debian/dists/trixie/InRelease" >&2; exit 100' % tries)
    run = _run([RETRY, '--what', 'apt-get update of trixie', 'bash', '-c', failing], NG_RETRY_TRIES='3')
    assert run.returncode == 100
    assert tries.read_text().count('x') == 3
    assert 'giving up on apt-get update of trixie after 3 tries (last rc=100)' in run.stderr
    named = run.stderr.split('What failed:', 1)[1]
    assert 'E: Failed to fetch http://mirror.invalid/debian/dists/trixie/InRelease' in named
    assert 'Get:1' not in named  # only the lines that say what failed


def test_retry_backoff_doubles_and_is_bounded():
    run = _run([RETRY, 'false'], NG_RETRY_DELAY='1', NG_RETRY_TRIES='3')
    assert run.returncode == 1
    assert 'next try in 1 s' in run.stderr and 'next try in 2 s' in run.stderr
    assert 'next try in 4 s' not in run.stderr  # the third try is the last


def test_retry_as_a_function_stops_a_set_e_script():
    script = 'set -euo pipefail; source %s; NG_RETRY_TRIES=2 retry false; echo not reached' % RETRY
    run = _run(['bash', '-c', script])
    assert run.returncode == 1
    assert 'not reached' not in run.stdout


def test_a_failed_stage_prints_its_tail_and_the_rerun_command(tmp_path):
    times = tmp_path / 'times.tsv'
    env = {'NG_STAGE_TIMES': str(times), 'NG_STAGE_TAIL': '5'}
    noisy = 'for i in $(seq 1 50); do echo line$i; done; echo boom >&2; exit 3'
    run = _run([STAGE, 'molecule-x', 'bash', '-c', noisy],
               NG_STAGE_RERUN='make test-molecule MOLECULE_SCENARIOS=x', **env)
    assert run.returncode == 3
    tail = run.stdout.split('stage molecule-x failed; the last 5 lines of ', 1)[1]
    assert '  | boom' in tail and '  | line47' in tail and 'line46' not in tail
    assert '===== re-run just this stage: make test-molecule MOLECULE_SCENARIOS=x' in run.stdout
    assert (tmp_path / 'logs' / 'molecule-x.log').read_text().endswith('line50\nboom\n')

    assert _run([STAGE, 'lint', 'true'], **env).returncode == 0
    summary = _run([SUMMARY], **env)
    assert summary.returncode == 0
    assert 're-run molecule-x: make test-molecule MOLECULE_SCENARIOS=x' in summary.stdout
    assert 're-run lint' not in summary.stdout  # only failed stages


def test_a_stage_rerun_defaults_to_make_name(tmp_path):
    run = _run([STAGE, 'test-unit', 'false'], NG_STAGE_TIMES=str(tmp_path / 't.tsv'))
    assert run.returncode == 1
    assert '===== re-run just this stage: make test-unit' in run.stdout


def test_the_summary_ends_with_the_failing_tests_and_tasks(tmp_path):
    # A CI page keeps the run's last lines: they must name what failed, not
    # only the stage (a verify stage of 35 tests said "Verifier tests failed").
    times = tmp_path / 'times.tsv'
    env = {'NG_STAGE_TIMES': str(times), 'NG_STAGE_QUIET': '1'}
    lines = ['tests/x.py::test_ok PASSED',
             'fatal: [ng-trixie]: FAILED! => {"msg": "no"}',
             # the reason comes after a long command line: kept, the command line not
             'fatal: [ng-ctd21]: FAILED! => {"cmd": "%s", "msg": "non-zero return code", "rc": 1, '
             '"stderr": "containerd is \\"activating\\""}' % ('x' * 600),
             'E       AssertionError: start-limit-hit',
             # ansible-test sanity
             'ERROR: Found 1 pep8 issue(s) which need to be resolved:',
             'ERROR: tests/x.py:88:1: E303: too many blank lines (3)']
    lines += ['noise%d' % i for i in range(200)]
    lines += ['FAILED tests/x.py::test_limit[podman://ng-trixie] - AssertionError: start-limit-hit']
    (tmp_path / 'out.txt').write_text('\n'.join(lines) + '\n')
    output = 'cat %s; exit 1' % (tmp_path / 'out.txt')
    assert _run([STAGE, 'molecule-x', 'bash', '-c', output], **env).returncode == 1
    assert _run([STAGE, 'lint', 'bash', '-c', 'echo "FAILED a.py::b - old"; true'], **env).returncode == 0
    summary = _run([SUMMARY], **env).stdout
    listing = summary.split('failed in molecule-x:\n', 1)[1].splitlines()
    assert listing == ['    fatal: [ng-trixie] "msg": "no"',
                       '    fatal: [ng-ctd21] "msg": "non-zero return code" "stderr": "containerd is \\"activating\\""',
                       '    E       AssertionError: start-limit-hit',
                       '    ERROR: tests/x.py:88:1: E303: too many blank lines (3)',
                       '    FAILED tests/x.py::test_limit[podman://ng-trixie] - AssertionError: start-limit-hit']
    assert 'failed in lint' not in summary and 'PASSED' not in summary


LANES = os.path.join(REPO, '.ci', 'lanes')


def test_lanes_run_side_by_side_and_show_every_failure(tmp_path):
    # Two lanes of stages: lane 1 fails in its first stage (its second must
    # not run), lane 2 runs both stages to the end, at the same time as lane 1.
    (tmp_path / 'Makefile').write_text(
        'STAGE := %s\n'
        'slow-fail:\n\t@$(STAGE) slow-fail sh -c "date +%%s.%%N > a.start; echo noise-a; sleep 3; echo boom >&2; exit 4"\n'
        'after-fail:\n\t@$(STAGE) after-fail touch after-fail.ran\n'
        'slow-ok:\n\t@$(STAGE) slow-ok sh -c "date +%%s.%%N > b.start; echo noise-b; sleep 3"\n'
        'quick-ok:\n\t@$(STAGE) quick-ok true\n' % STAGE)
    times = tmp_path / 'times.tsv'
    started = time.monotonic()
    run = subprocess.run([LANES, 'slow-fail after-fail', 'slow-ok quick-ok'], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False,
                         env=dict({k: v for k, v in os.environ.items() if not k.startswith(('NG_STAGE_', 'MAKE'))},
                                  NG_STAGE_TIMES=str(times), NG_LANES_HEARTBEAT='1', NG_STAGE_RERUN='leaks'))
    took = time.monotonic() - started
    assert run.returncode != 0, run.stdout
    assert took < 5.5, 'the lanes ran one after the other (%.1f s)' % took
    assert abs(float((tmp_path / 'a.start').read_text()) - float((tmp_path / 'b.start').read_text())) < 1.5
    assert not (tmp_path / 'after-fail.ran').exists()
    assert 'lane 1 stopped: stage slow-fail failed' in run.stdout
    # quiet stages: their output is in their logs, only a failed one's tail is shown
    assert 'noise-b' not in run.stdout and '  | boom' in run.stdout and '  | noise-a' in run.stdout
    assert (tmp_path / 'logs' / 'slow-ok.log').read_text() == 'noise-b\n'
    assert 'running: ' in run.stdout  # the heartbeat
    assert 're-run just this stage: make slow-fail' in run.stdout  # not the lanes' own NG_STAGE_RERUN
    rows = [line.split('\t') for line in times.read_text().splitlines()]
    assert sorted((r[0], r[1], r[4]) for r in rows) == [
        ('quick-ok', 'ok', '2'), ('slow-fail', 'FAILED(rc=4)', '1'), ('slow-ok', 'ok', '2')]

    # the summary counts the lanes once, by the lanes stage's wall time
    with open(times, 'a') as f:
        f.write('deps\tok\t10.0\tmake deps\t\nlanes\tFAILED(rc=2)\t%.1f\tmake test\t\n' % took)
    summary = _run([SUMMARY], NG_STAGE_TIMES=str(times))
    total = [line for line in summary.stdout.splitlines() if line.strip().startswith('total')][0]
    assert float(total.split()[-2]) == round(10.0 + round(took, 1), 1)
    assert 'lane 2  slow-ok' in summary.stdout


FLAKE_HUNT = os.path.join(REPO, '.ci', 'flake-hunt')


def _fake_pytest(tmp_path, fail_when=None):
    """A stand-in for pytest that logs its load (NG_FLAKE_LOAD, and whether a
    spinning shell of .ci/with-busy-cores runs beside it) and its arguments."""
    fake = tmp_path / 'pytest'
    fake.write_text('#!/bin/bash\n'
                    'spinning=$(pgrep -fc "while :; do :; done")\n'
                    'echo "$NG_FLAKE_LOAD $spinning $*" >> %s\n'
                    '%s\n' % (tmp_path / 'calls', 'case "$*" in *%s*) echo "FAILED t.py::x"; exit 1;; esac'
                              % fail_when if fail_when else 'exit 0'))
    fake.chmod(0o755)
    return str(fake)


def test_flake_hunt_alternates_busy_and_quiet_runs(tmp_path):
    """A quiet fast machine finds the tests that count on a slow one; a busy
    one finds those that wait too little: mixed (the default) runs both."""
    run = _run([FLAKE_HUNT, '4'], PYTEST=_fake_pytest(tmp_path), FLAKE_DIR=str(tmp_path / 'out'),
               FLAKE_SUITES='tests/unit', FLAKE_SEEDS='11 12 13 14', NG_BUSY_CORES='1')
    assert run.returncode == 0, run.stdout + run.stderr
    calls = [line.split() for line in (tmp_path / 'calls').read_text().splitlines()]
    expected = [('busy', True), ('quiet', False), ('busy', True), ('quiet', False)]
    assert [(c[0], int(c[1]) > 0) for c in calls] == expected
    assert ['--randomly-seed=%d' % s in c for s, c in zip((11, 12, 13, 14), calls)] == [True] * 4
    summary = (tmp_path / 'out' / 'summary.tsv').read_text().splitlines()
    assert summary[0].split('\t') == ['run', 'seed', 'load', 'suite', 'status', 'seconds']
    assert [row.split('\t')[2] for row in summary[1:]] == ['busy', 'quiet', 'busy', 'quiet']
    assert 'flake-hunt: 4 suite runs, 0 failed' in run.stdout


def test_flake_hunt_names_the_failed_test_and_fails(tmp_path):
    run = _run([FLAKE_HUNT, '2'], PYTEST=_fake_pytest(tmp_path, fail_when='seed=22'),
               FLAKE_DIR=str(tmp_path / 'out'), FLAKE_SUITES='tests/unit', FLAKE_SEEDS='21 22', FLAKE_LOAD='quiet')
    assert run.returncode == 1
    assert 'run 2/2 seed 22 (quiet) tests/unit: FAILED(rc=1)' in run.stdout
    assert '    FAILED t.py::x' in run.stdout
    assert 'flake-hunt: 2 suite runs, 1 failed' in run.stdout
    assert [line.split()[0] for line in (tmp_path / 'calls').read_text().splitlines()] == ['quiet', 'quiet']


def test_flake_hunt_refuses_an_unknown_load(tmp_path):
    run = _run([FLAKE_HUNT, '1'], PYTEST=_fake_pytest(tmp_path), FLAKE_DIR=str(tmp_path / 'out'), FLAKE_LOAD='heavy')
    assert run.returncode == 2 and "FLAKE_LOAD must be busy, quiet or mixed, not 'heavy'" in run.stderr


def _make_test(tmp_path, beside_cmd):
    """The project's `make test` on stand-in stages (an extra makefile): first, second (quick stages), beside
    (TEST_BESIDE), lane (one lane stage); each writes when it started and ended."""
    def stage(name, cmd):
        return '%s:\n\t@$(STAGE) %s sh -c "date +%%s.%%N > %s/%s.start; %s; date +%%s.%%N > %s/%s.end"\n' % (
            name, name, tmp_path, name, cmd, tmp_path, name)
    extra = tmp_path / 'stages.mk'
    extra.write_text(stage('s-first', 'true') + stage('s-second', 'sleep 2') + stage('s-beside', beside_cmd)
                     + stage('s-lane', 'true'))
    # MAKEFILES: read by make test's own sub-makes too
    env = dict({k: v for k, v in os.environ.items() if not k.startswith(('NG_STAGE_', 'MAKE'))}, MAKEFILES=str(extra))
    return subprocess.run(['make', '--no-print-directory', 'test',
                           'TEST_STAGES=s-first s-second', 'TEST_BESIDE=s-beside', 'TEST_PARALLEL=0',
                           'TEST_LANE_1=s-lane', 'TEST_LANE_2=', 'NG_STAGE_TIMES=%s' % (tmp_path / 'times.tsv')],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False, env=env)


def _at(tmp_path, name, edge):
    return float((tmp_path / ('%s.%s' % (name, edge))).read_text())


def test_make_test_builds_beside_the_quick_stages_and_waits_for_it(tmp_path):
    run = _make_test(tmp_path, 'sleep 3')
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    # from the end of the first quick stage, beside the second; the lanes after both
    assert _at(tmp_path, 's-first', 'end') <= _at(tmp_path, 's-beside', 'start') < _at(tmp_path, 's-second', 'end')
    assert _at(tmp_path, 's-lane', 'start') >= _at(tmp_path, 's-beside', 'end')
    rows = [line.split('\t')[:2] for line in (tmp_path / 'times.tsv').read_text().splitlines()]
    assert sorted(rows) == [['s-beside', 'ok'], ['s-first', 'ok'], ['s-lane', 'ok'], ['s-second', 'ok']]


def test_make_test_fails_when_a_stage_beside_fails_and_runs_no_lane(tmp_path):
    run = _make_test(tmp_path, 'echo no-mirror >&2; exit 3')
    assert run.returncode != 0, run.stdout[-3000:]
    assert 'make test: stage(s) s-beside failed' in run.stdout
    assert (tmp_path / 's-second.end').exists() and not (tmp_path / 's-lane.start').exists()
    assert '  | no-mirror' in run.stdout  # its log's tail
