# -*- coding: utf-8 -*-
"""tests/mutation/run.py: which tests judge a mutant when --max-tests caps them, the operator sets, the fork
server."""

import importlib.util
import json
import re
import time
from pathlib import Path

RUN = Path(__file__).resolve().parents[1] / 'mutation' / 'run.py'


def _runner():
    spec = importlib.util.spec_from_file_location('nodeguard_mutation_run', str(RUN))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tests_written_for_the_file_go_first_then_kill_history_then_fastest():
    run = _runner()
    fastest_first = [
        'tests/module/test_containerd_setting.py::test_fast',
        'tests/unit/test_engine_durability.py::test_killer',
        'tests/unit/test_atomic_lock.py::test_slow_lock',
        'tests/unit/test_atomic_files.py::test_stream',
        'tests/unit/test_ledger.py::test_other_file',
    ]
    run._killers.clear()
    run._killers['_core/atomic.py'] = {'tests/unit/test_engine_durability.py::test_killer': 3}
    try:
        ordered = run.by_kill_history('_core/atomic.py', fastest_first)
    finally:
        run._killers.clear()
    # a cap of 2 keeps both tests aimed at _core/atomic.py, though 2 others are faster
    assert ordered == [
        'tests/unit/test_atomic_lock.py::test_slow_lock',
        'tests/unit/test_atomic_files.py::test_stream',
        'tests/unit/test_engine_durability.py::test_killer',
        'tests/module/test_containerd_setting.py::test_fast',
        'tests/unit/test_ledger.py::test_other_file',
    ]
    assert run._written_for('_core/ledger.py', 'tests/unit/test_ledger.py::test_x')
    assert not run._written_for('_core/ledger.py', 'tests/unit/test_engine_durability.py::test_x')


def test_the_kill_history_starts_with_the_last_reports_killers(tmp_path):
    """A full run judges a capped line's mutants first with the tests that killed that file's mutants in the
    last report, its rechecks too: among the file's own tests, those go before the faster ones."""
    run = _runner()
    report = tmp_path / 'report.json'
    report.write_text(json.dumps(dict(mutants=[
        dict(file='_baseline/states.py', outcome='killed', killed_by='FAILED tests/unit/test_states_run.py::test_k'),
        dict(file='_baseline/states.py', outcome='killed', killed_by='FAILED tests/unit/test_states_run.py::test_k'),
        dict(file='_baseline/states.py', outcome='killed', killed_by='timeout'),
        dict(file='_baseline/states.py', outcome='survived', killed_by='FAILED tests/unit/test_states_run.py::test_s'),
        dict(file='_core/atomic.py', outcome='killed', killed_by='ERROR tests/unit/test_atomic_lock.py::test_e'),
    ])))
    run._killers.clear()
    try:
        assert run.seed_kill_history(report) == 3
        assert run._killers == {'_baseline/states.py': {'tests/unit/test_states_run.py::test_k': 2},
                                '_core/atomic.py': {'tests/unit/test_atomic_lock.py::test_e': 1}}
        fastest_first = ['tests/unit/test_states_run.py::test_fast', 'tests/unit/test_states_run.py::test_k']
        assert run.by_kill_history('_baseline/states.py', fastest_first) == fastest_first[::-1]
    finally:
        run._killers.clear()
    assert run.seed_kill_history(tmp_path / 'none.json') == 0
    (tmp_path / 'bad.json').write_text('{')
    assert run.seed_kill_history(tmp_path / 'bad.json') == 0


def test_a_mutant_cosmic_ray_cannot_make_is_skipped_and_said(tmp_path, capsys):
    """cosmic-ray 8.7's ExceptionReplacer raises on a dotted name in an except tuple (_node/kata_payload.py's
    tarfile.TarError); the file's other mutants are still made, and the run says which one was not."""
    run = _runner()
    source = tmp_path / 'plugins' / 'module_utils'
    source.mkdir(parents=True)
    (source / '_x.py').write_text('import tarfile\n\n\ndef f(x):\n    try:\n        return x + 1\n'
                                  '    except (IOError, tarfile.TarError):\n        return 0\n')
    _code, mutants = run.make_mutants(tmp_path, {'source': 'plugins/module_utils'}, '_x.py')
    operators = set(m['operator'] for m in mutants)
    assert 'core/ReplaceBinaryOperator_Add_Sub' in operators
    said = capsys.readouterr()
    assert '_x.py:7 core/ExceptionReplacer: cosmic-ray could not make this mutant' in said.out + said.err


# ------------------------------------------------------------------ the operator sets
def _mutants(tmp_path, source, operators):
    run = _runner()
    folder = tmp_path / 'plugins' / 'module_utils'
    folder.mkdir(parents=True, exist_ok=True)
    (folder / '_x.py').write_text(source)
    return run.make_mutants(tmp_path, {'source': 'plugins/module_utils'}, '_x.py', operators=operators)[1]


def _by_operator(mutants, prefix):
    found = {}
    for m in mutants:
        if m['operator'].startswith(prefix):
            found.setdefault(m['operator'].split('_', 1)[1], []).append(m['new'])
    return found


OPERATORS_SOURCE = '''def f(a, b, c):
    x = a + b
    x = a - b
    x = a * b
    x = a / b
    x = a // b
    x = a % b
    x = a ** b
    x = a << b
    x = a >> b
    x = a & b
    x = a | b
    x = a ^ b
    y = a < b
    y = a <= b
    y = a > b
    y = a >= b
    y = a == b
    y = a != b
    y = a is b
    y = a is not b
    y = a in b
    y = a not in b
    z = -a
    z = +a
    z = ~a
    z = not a
    return x, y, z, 5
'''


def test_the_mutmut_set_makes_mutmuts_one_replacement_at_each_operator(tmp_path):
    mutants = _mutants(tmp_path, OPERATORS_SOURCE, 'mutmut')
    assert _by_operator(mutants, 'core/ReplaceBinaryOperator_') == {
        'Add_Sub': ['x = a - b'], 'Sub_Add': ['x = a + b'], 'Mul_Div': ['x = a / b'], 'Div_Mul': ['x = a * b'],
        'FloorDiv_Div': ['x = a / b'], 'Mod_Div': ['x = a / b'], 'Pow_Mul': ['x = a * b'],
        'LShift_RShift': ['x = a >> b'], 'RShift_LShift': ['x = a << b'], 'BitAnd_BitOr': ['x = a | b'],
        'BitOr_BitAnd': ['x = a & b'], 'BitXor_BitAnd': ['x = a & b']}
    comparisons = _by_operator(mutants, 'core/ReplaceComparisonOperator_')
    comparisons.update(_by_operator(mutants, 'nodeguard/ReplaceComparisonOperator_'))
    assert comparisons == {
        'Lt_LtE': ['y = a <= b'], 'LtE_Lt': ['y = a < b'], 'Gt_GtE': ['y = a >= b'], 'GtE_Gt': ['y = a > b'],
        'Eq_NotEq': ['y = a != b'], 'NotEq_Eq': ['y = a == b'], 'Is_IsNot': ['y = a is not b'],
        'IsNot_Is': ['y = a is b'], 'In_NotIn': ['y = a not in b'], 'NotIn_In': ['y = a in b']}
    unary = _by_operator(mutants, 'core/ReplaceUnaryOperator_')
    assert sorted(unary) == ['Delete_Invert', 'Delete_Not', 'UAdd_USub', 'USub_UAdd']
    assert unary['UAdd_USub'] == ['z = -a'] and unary['USub_UAdd'] == ['z = +a']
    assert [m['new'] for m in mutants if m['operator'] == 'core/NumberReplacer'] == ['return x, y, z, 6']


def test_all_is_every_cosmic_ray_replacement_and_the_mutmut_set_is_part_of_it(tmp_path):
    every = _mutants(tmp_path, OPERATORS_SOURCE, 'all')
    assert len(_by_operator(every, 'core/ReplaceBinaryOperator_')) == 12 * 11
    assert len([m for m in every if m['operator'].startswith('core/ReplaceBinaryOperator_Add_')]) == 11
    assert len([m for m in every if m['operator'].startswith('core/ReplaceComparisonOperator_Lt_')]) == 7
    assert sorted(m['new'] for m in every if m['operator'] == 'core/NumberReplacer') == [
        'return x, y, z, 4', 'return x, y, z, 6']
    mutmut = _mutants(tmp_path, OPERATORS_SOURCE, 'mutmut')
    assert set((m['operator'], m['occurrence'], m['code']) for m in mutmut) \
        < set((m['operator'], m['occurrence'], m['code']) for m in every)


def test_mutants_keep_cosmic_rays_occurrence_so_a_session_remakes_them(tmp_path):
    """The mutmut set leaves positions out, but each mutant keeps cosmic-ray's occurrence number."""
    run = _runner()
    from cosmic_ray.mutating import mutate_code
    source = 'X = 5\nY = 7\n'
    mutants = _mutants(tmp_path, source, 'mutmut')
    numbers = [m for m in mutants if m['operator'] == 'core/NumberReplacer']
    assert [(m['occurrence'], m['new']) for m in numbers] == [(0, 'X = 6'), (2, 'Y = 8')]
    for m in mutants:
        assert mutate_code(source, run._operator(m['operator']), m['occurrence']) == m['code']


def test_addnot_is_left_out_where_the_set_has_the_same_negation(tmp_path):
    source = ('def f(a, b):\n'
              '    if not a:\n        return 1\n'
              '    if a == b:\n        return 2\n'
              '    if a is None:\n        return 3\n'
              '    if a not in b:\n        return 4\n'
              '    if a < b:\n        return 5\n'
              '    if a:\n        return 6\n'
              '    if a == None:\n        return 7\n'
              '    return 8 if a != b else 9\n')
    mutmut = _mutants(tmp_path, source, 'mutmut')
    # `a < b` -> `a <= b` is no negation; `== None` has no `!=` mutant (cosmic-ray makes `is not` there only)
    assert [m['new'] for m in mutmut if m['operator'] == 'core/AddNot'] == [
        'if not a < b:', 'if not a:', 'if not a == None:']
    every = _mutants(tmp_path, source, 'all')
    assert len([m for m in every if m['operator'] == 'core/AddNot']) == 8


def test_one_run_decides_a_format_with_either_set(tmp_path):
    source = "def f(a, b):\n    return '%s-%s' % (a, b)\n"
    for operators, count in (('mutmut', 1), ('all', 11)):
        mods = [m for m in _mutants(tmp_path, source, operators)
                if m['operator'].startswith('core/ReplaceBinaryOperator_Mod_')]
        assert len(mods) == count
        groups = set(m['group'] for m in mods)
        assert len(groups) == 1 and groups.pop().startswith('str%tuple@2:')


def test_the_mutmut_table_names_operators_cosmic_ray_has():
    run = _runner()
    names = [n for n, _op, _keep in run.operator_table('mutmut')]
    assert sorted(names) == sorted(run.MUTMUT_OPERATORS)
    assert set(run.NEGATIONS.values()) <= set(names)
    excluded = run.operator_table('mutmut', ['core/ReplaceComparisonOperator_Eq_NotEq'])
    assert dict((n, keep) for n, _op, keep in excluded)['core/AddNot'] is None


# ------------------------------------------------------------------ the fork server
def _tree(tmp_path):
    tree = tmp_path / 'tree'
    (tree / 'pkg').mkdir(parents=True)
    (tree / 'tests').mkdir()
    (tree / 'pytest.ini').write_text('[pytest]\naddopts = -p no:randomly\n')
    (tree / 'pkg' / '__init__.py').write_text('')
    (tree / 'pkg' / 'mod.py').write_text('VALUE = 1\n')
    (tree / 'tests' / 'test_value.py').write_text(
        'import sys\n\n\ndef test_value():\n'
        '    assert not [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]\n'
        '    from pkg import mod\n    assert mod.VALUE == 1\n')
    (tree / 'tests' / 'test_slow.py').write_text(
        'import subprocess\nimport time\n\n\ndef test_slow():\n'
        '    proc = subprocess.Popen(["sleep", "300"])\n'
        '    with open("sleeper.pid", "w") as f:\n        f.write(str(proc.pid))\n'
        '    time.sleep(300)\n')
    return tree


def _alive(pid):
    try:
        return Path('/proc/%d/stat' % pid).read_text().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError:
        return False


def _alive_in_group(pgid):
    """The processes of a process group that are not zombies (a container's init may not reap them)."""
    alive = []
    for stat in Path('/proc').glob('[0-9]*/stat'):
        try:
            fields = stat.read_text().rsplit(')', 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != 'Z':
            alive.append(int(stat.parent.name))
    return alive


def test_the_fork_server_gives_a_failing_tests_status_and_output_and_imports_each_mutant_afresh(tmp_path):
    run = _runner()
    tree = _tree(tmp_path)
    server = run.ForkServer(tree, tmp_path / 'scratch')
    try:
        server.start()
        for value, rc in ((2, 1), (1, 0), (3, 1)):
            # written after the server started: each child imports what is on disk now
            (tree / 'pkg' / 'mod.py').write_text('VALUE = %d\n' % value)
            got, out, secs = server.run(['-x', '-q', 'tests/test_value.py'], 60)
            assert got == rc, out
            assert secs < 60
            if rc:
                assert 'assert %d == 1' % value in out
                assert 'FAILED tests/test_value.py::test_value' in out
            else:
                assert '1 passed' in out
        assert not list(tree.rglob('__pycache__/*.pyc'))
        assert not list((tmp_path / 'scratch').glob('job-*.out'))
    finally:
        server.stop()


def test_the_fork_server_matches_a_subprocess(tmp_path):
    run = _runner()
    tree = _tree(tmp_path)
    (tree / 'pkg' / 'mod.py').write_text('VALUE = 4\n')
    args = ['-x', '-q', 'tests/test_value.py']
    server = run.ForkServer(tree, tmp_path / 'scratch')
    try:
        forked = server.run(args, 60)
    finally:
        server.stop()
    alone = run.run_pytest(tree, args, run.test_env(tree), 60)
    assert forked[0] == alone[0] == 1
    assert re.sub(r' in [0-9.]+s', '', forked[1]) == re.sub(r' in [0-9.]+s', '', alone[1])


def test_a_job_past_its_timeout_is_killed_with_its_process_group(tmp_path):
    run = _runner()
    tree = _tree(tmp_path)
    server = run.ForkServer(tree, tmp_path / 'scratch')
    try:
        rc, _out, secs = server.run(['-q', 'tests/test_slow.py'], 4)
        assert rc == 'timeout'
        assert 4 <= secs < 30
        sleeper = int((tree / 'sleeper.pid').read_text())   # a subprocess of the test, in its group
        deadline = time.monotonic() + 10
        while (_alive(sleeper) or _alive_in_group(server.last_pid)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(sleeper)
        assert not _alive_in_group(server.last_pid)
        # the server is still there for the next job
        assert server.run(['-q', 'tests/test_value.py'], 60)[0] == 0
        assert server.starts == 1
    finally:
        server.stop()


def test_when_the_server_dies_the_job_runs_as_a_subprocess_and_the_next_restarts_it(tmp_path, capsys):
    run = _runner()
    tree = _tree(tmp_path)
    server = run.FORK_SERVERS[tree] = run.ForkServer(tree, tmp_path / 'scratch')
    try:
        server.start()
        server.proc.kill()
        server.proc.wait()
        rc, out, _secs = run.run_tests(tree, ['-q', 'tests/test_value.py'], run.test_env(tree), 60)
        assert rc == 0 and '1 passed' in out
        assert not server.last_forked and server.fallbacks == 1
        assert 'this job runs as a subprocess' in capsys.readouterr().out
        assert run.run_tests(tree, ['-q', 'tests/test_value.py'], run.test_env(tree), 60)[0] == 0
        assert server.last_forked and server.starts == 2
    finally:
        run.stop_fork_servers([tree])


def test_a_server_that_imported_the_trees_code_is_not_used(tmp_path, capsys):
    """With the tree first on sys.path, a tree module named like one the server imports would be held by
    every child: the server refuses to start, and the jobs run as subprocesses."""
    run = _runner()
    tree = _tree(tmp_path)
    (tree / 'tomlkit.py').write_text('')
    server = run.FORK_SERVERS[tree] = run.ForkServer(tree, tmp_path / 'scratch')
    try:
        assert run.run_tests(tree, ['-q', 'tests/test_value.py'], run.test_env(tree), 60)[0] == 0
        assert not server.last_forked
        assert 'modules of the tree imported before any test: tomlkit' in capsys.readouterr().out
    finally:
        run.stop_fork_servers([tree])


def test_the_runner_and_the_server_agree_on_a_failed_child():
    spec = importlib.util.spec_from_file_location('nodeguard_forkserver', str(RUN.parent / 'forkserver.py'))
    server = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(server)
    run = _runner()
    assert (server.SETUP_FAILED_RC, server.SETUP_FAILED) == (run.FORK_SETUP_FAILED_RC, run.FORK_SETUP_FAILED)


def test_a_recheck_judges_the_reports_survivors_only_and_marks_those_killed():
    run = _runner()

    def rec(op, old, new, line, outcome):
        return dict(file='_a.py', operator=op, old=old, new=new, start=[line, 4], outcome=outcome)
    report = [
        rec('op/X', 'self.dirty = True', 'self.dirty = False', 123, run.KILLED),
        rec('op/X', 'self.dirty = True', 'self.dirty = False', 164, run.SURVIVED),
        rec('op/X', 'a < b', 'a <= b', 20, run.SURVIVED),
        rec('op/Y', 'x', 'not x', 30, run.KILLED),
        rec('op/Z', 'y', 'not y', 40, run.UNCOVERED),
        dict(rec('op/X', 'c < d', 'c <= d', 50, run.SURVIVED), file='_b.py'),
    ]
    keys = run.survivor_keys(report, ['_a.py'])
    assert keys == {'_a.py': [('op/X', 'self.dirty = True', 'self.dirty = False', 164), ('op/X', 'a < b', 'a <= b', 20),
                              ('op/Z', 'y', 'not y', 40)]}

    def made(op, old, new, line, n):
        return dict(file='_a.py', operator=op, old=old, new=new, start=[line, 4], occurrence=n)
    # made now, after a line was added above line 20: the alike mutant of line 123 (killed in the report) is
    # not judged again; the survivor of line 20 takes its alike mutant on line 21
    now = [made('op/X', 'a < b', 'a <= b', 21, 0), made('op/X', 'self.dirty = True', 'self.dirty = False', 124, 1),
           made('op/X', 'self.dirty = True', 'self.dirty = False', 165, 2), made('op/Y', 'x', 'not x', 31, 0)]
    keys['_a.py'][0] = keys['_a.py'][0][:3] + (165,)   # as the report would say of the moved line
    chosen, unmatched = run.match_survivors(now, keys['_a.py'])
    assert [(m['start'][0], m['occurrence']) for m in chosen] == [(21, 0), (165, 2)]
    # a survivor whose line changed matches nothing and is said
    assert unmatched == [('op/Z', 'y', 'not y', 40)]
    chosen[1]['killed_by'] = 'FAILED tests/unit/test_new.py::test_it'
    run.mark_rechecked(report, [(chosen[1], run.KILLED)], ['tests/unit/test_new.py'])
    assert [r['outcome'] for r in report] == [run.KILLED, run.KILLED, run.SURVIVED, run.KILLED, run.UNCOVERED,
                                              run.SURVIVED]
    assert report[1]['was'] == run.SURVIVED and report[1]['rechecked_with'] == ['tests/unit/test_new.py']
    assert report[1]['killed_by'] == 'FAILED tests/unit/test_new.py::test_it'
    assert 'was' not in report[0] and 'was' not in report[5]
