# -*- coding: utf-8 -*-
"""The set-up helpers of issue #17: network steps retry with a bounded
backoff and name what failed (.ci/retry.sh); a failed stage prints its log's
tail and the command that re-runs it (.ci/stage, .ci/stage-summary)."""

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RETRY = os.path.join(REPO, '.ci', 'retry.sh')
STAGE = os.path.join(REPO, '.ci', 'stage')
SUMMARY = os.path.join(REPO, '.ci', 'stage-summary')


def _run(args, **env):
    full_env = dict(os.environ, NG_RETRY_DELAY='0')
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
