# -*- coding: utf-8 -*-
"""tests/mutation/run.py: which tests judge a mutant when --max-tests caps them."""

import importlib.util
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
    run._killers['_atomic.py'] = {'tests/unit/test_engine_durability.py::test_killer': 3}
    try:
        ordered = run.by_kill_history('_atomic.py', fastest_first)
    finally:
        run._killers.clear()
    # a cap of 2 keeps both tests aimed at _atomic.py, though 2 others are faster
    assert ordered == [
        'tests/unit/test_atomic_lock.py::test_slow_lock',
        'tests/unit/test_atomic_files.py::test_stream',
        'tests/unit/test_engine_durability.py::test_killer',
        'tests/module/test_containerd_setting.py::test_fast',
        'tests/unit/test_ledger.py::test_other_file',
    ]
    assert run._written_for('_ledger.py', 'tests/unit/test_ledger.py::test_x')
    assert not run._written_for('_ledger.py', 'tests/unit/test_engine_durability.py::test_x')


def test_a_mutant_cosmic_ray_cannot_make_is_skipped_and_said(tmp_path, capsys):
    """cosmic-ray 8.7's ExceptionReplacer raises on a dotted name in an except tuple (_payload.py's
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
