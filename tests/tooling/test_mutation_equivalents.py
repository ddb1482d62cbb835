# -*- coding: utf-8 -*-
"""tests/mutation/equivalents.toml: an entry names one mutant (file, operator, source line, mutated text, and
the scope of a line the file has more than once), never its twin on another line; stale entries are listed."""

import importlib.util
import tomllib
from pathlib import Path

import pytest

MUTATION = Path(__file__).resolve().parents[1] / 'mutation'

TWINS = '''def first(path):
    for cut in range(len(path) - 1, 0, -1):
        pass


def second(path):
    for cut in range(len(path) - 1, 0, -1):
        pass
    for cut in range(len(path) - 1, 0, -1):
        pass
'''


def _runner():
    spec = importlib.util.spec_from_file_location('nodeguard_mutation_run', str(MUTATION / 'run.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _tree(tmp_path, files):
    for name, text in files.items():
        path = tmp_path / 'plugins' / 'module_utils' / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


CFG = {'source': 'plugins/module_utils', 'packages': ['_core', '_edits'], 'order': [], 'operators': 'mutmut'}


def _twins(run, tmp_path):
    _tree(tmp_path, {'_core/paths.py': TWINS})
    mutants = run.make_mutants(tmp_path, CFG, '_core/paths.py')[1]
    return [m for m in mutants if m['operator'] == 'core/ReplaceBinaryOperator_Sub_Add']


def _entry(**extra):
    entry = {'file': '_core/paths.py', 'operator': 'core/ReplaceBinaryOperator_Sub_Add',
             'line': 'for cut in range(len(path) - 1, 0, -1):',
             'mutated': 'for cut in range(len(path) + 1, 0, -1):', 'reason': 'a reason'}
    entry.update(extra)
    return entry


def test_an_entry_for_one_line_does_not_silence_the_same_mutant_on_an_identical_line(tmp_path):
    run = _runner()
    mutants = _twins(run, tmp_path)
    assert [(m['start'][0], m['new'], m['scope']) for m in mutants] == [
        (2, 'for cut in range(len(path) + 1, 0, -1):', 'first'),
        (7, 'for cut in range(len(path) + 1, 0, -1):', 'second'),
        (9, 'for cut in range(len(path) + 1, 0, -1):', 'second')]
    entries = run.check_equivalents([_entry(scope='first')])
    assert [run.equivalent_reason(m, entries) for m in mutants] == ['a reason', None, None]
    # the second of the two identical lines of second(), and only it
    entries = run.check_equivalents([_entry(scope='second', twin=2)])
    assert [run.equivalent_reason(m, entries) for m in mutants] == [None, None, 'a reason']
    # without a scope the entry cannot say which of the three it means: it silences none
    assert [run.equivalent_reason(m, [_entry()]) for m in mutants] == [None, None, None]
    # a scope with the line twice needs the twin
    assert [run.equivalent_reason(m, [_entry(scope='second')]) for m in mutants] == [None, None, None]


def test_an_entry_without_the_exact_mutated_text_silences_nothing(tmp_path):
    run = _runner()
    mutants = _twins(run, tmp_path)
    entry = _entry(scope='first', mutated='for cut in range(len(path) - 2, 0, -1):')
    assert [run.equivalent_reason(m, [entry]) for m in mutants] == [None, None, None]


@pytest.mark.parametrize('entry, said', [
    ({'mutated': None}, "lacks 'mutated'"),
    ({'reason': ' '}, "lacks 'reason'"),
    ({'operator': 'core/ReplaceBinaryOperator_Sub_*'}, 'is a pattern'),
    ({'twin': 2}, 'twin needs a scope'),
    ({'mutant': 'x'}, 'unknown field mutant'),
])
def test_an_entry_that_could_silence_more_than_one_mutant_is_refused(entry, said):
    run = _runner()
    with pytest.raises(SystemExit) as exc:
        run.check_equivalents([dict((k, v) for k, v in _entry(**entry).items() if v is not None)])
    assert said in str(exc.value)


def test_stale_and_ambiguous_entries_are_listed_and_a_moved_line_is_found(tmp_path):
    run = _runner()
    _tree(tmp_path, {'_core/paths.py': TWINS, '_edits/other.py': 'def f(x):\n    return x - 1\n'})
    entries = run.check_equivalents([
        _entry(scope='first'),
        _entry(),
        _entry(line='return x - 1', mutated='return x + 1', scope='f'),   # the line is in _edits/other.py
        _entry(file='_edits/gone.py'),
    ])
    found, stale = run.equivalents_status(tmp_path, CFG, entries, run.source_files(CFG, tmp_path))
    assert sorted(found) == [0]
    why = [w for _e, w in stale]
    assert why[0].startswith('ambiguous: the line is in 3 places: give its scope')
    assert why[1] == 'no such mutant (the line is now at _edits/other.py:2)'
    assert why[2].startswith('no file _edits/gone.py (the line is now at _core/paths.py:2')


def test_the_projects_entries_are_exact_and_grouped_by_file_in_package_order():
    run = _runner()
    cfg, entries = run.load_config()   # refuses an entry without its exact mutant
    files = [e['file'] for e in entries]
    groups = [f for i, f in enumerate(files) if i == 0 or files[i - 1] != f]
    assert len(groups) == len(set(groups)), 'entries of one file must stand together'
    assert groups == sorted(groups, key=lambda f: run._package_rank(cfg, f))
    text = (MUTATION / 'equivalents.toml').read_text()
    for name in groups:
        assert text.count('\n# %s\n' % name) == 1, 'one heading per file: # %s' % name
    with open(MUTATION / 'equivalents.toml', 'rb') as f:
        assert len(tomllib.load(f)['mutant']) == len(entries)


def test_a_full_runs_report_lists_the_stale_entries_of_its_files(tmp_path):
    run = _runner()
    _tree(tmp_path, {'_core/paths.py': TWINS})
    files = run.source_files(CFG, tmp_path)
    stale = [dict(e, why=why) for e, why in
             run.equivalents_status(tmp_path, CFG, [_entry(scope='first'), _entry(scope='third')], files)[1]]
    meta = dict(started='s', finished='f', elapsed='1 min', tree='worktree', head='abc', mode='all lines', workers=1,
                cosmic_ray='8.7.0', command='run.py', stale_equivalents=stale)
    text = run.write_report(tmp_path, meta, [], [], tmp_path)
    assert '## Stale entries of equivalents.toml (1)' in text
    assert ('- `_core/paths.py` core/ReplaceBinaryOperator_Sub_Add `for cut in range(len(path) - 1, 0, -1):` -> '
            '`for cut in range(len(path) + 1, 0, -1):`: no such mutant') in text
