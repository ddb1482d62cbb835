# -*- coding: utf-8 -*-
"""tests/mutation/run.py on the package layout of plugins/module_utils: every file of every package, the
canaries' tests picked by what they import and run, and a recheck that refuses tests failing on clean code."""

import importlib.util
import json
import subprocess
from pathlib import Path

MUTATION = Path(__file__).resolve().parents[1] / 'mutation'
REPO = MUTATION.parents[1]


def _runner():
    spec = importlib.util.spec_from_file_location('nodeguard_mutation_run', str(MUTATION / 'run.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_every_python_file_below_the_source_folder_is_mutated_in_package_order(tmp_path):
    run = _runner()
    _write(tmp_path / 'plugins' / 'module_utils', {
        '_core/__init__.py': '', '_core/b.py': 'X = 1\n', '_core/a.py': 'X = 1\n', '_edits/__init__.py': '',
        '_edits/engine.py': 'X = 1\n', '_node/deep/__init__.py': 'Y = 2\n', '_node/deep/x.py': 'X = 1\n',
        'top.py': 'X = 1\n'})
    cfg = {'source': 'plugins/module_utils', 'order': ['_edits/engine.py', '_gone/x.py'],
           'packages': ['_core', '_node', '_edits']}
    # an empty __init__.py has nothing to mutate; one with code is mutated like any file
    assert run.source_files(cfg, tmp_path) == ['_edits/engine.py', '_core/a.py', '_core/b.py',
                                               '_node/deep/__init__.py', '_node/deep/x.py', 'top.py']


def test_the_projects_config_names_files_that_exist():
    run = _runner()
    cfg, _entries = run.load_config()
    files = run.source_files(cfg)
    assert [n for n in cfg['order'] if n not in files] == []
    assert cfg['canary_in_process'] in files and cfg['canary_subprocess'] in files
    assert set(f.split('/', 1)[0] for f in files) == set(cfg['packages'])


def test_changed_lines_are_named_by_their_path_below_the_source_folder():
    run = _runner()
    assert run._relative_to_source('plugins/module_utils/_core/atomic.py', 'plugins/module_utils') == '_core/atomic.py'


def test_the_canaries_tests_are_picked_by_what_they_import_and_run(tmp_path):
    run = _runner()
    collection = 'from ansible_collections.nodeguard.containerd.plugins.module_utils'
    _write(tmp_path, {
        'plugins/modules/containerd_setting.py': collection + '._edits.engine import run_transaction\n',
        'plugins/modules/containerd_info.py': collection + '._readiness.info import gather\n',
        # imports the ledger, but is the biggest
        'tests/unit/a/test_big.py': collection + '._core.ledger import Ledger\n' + '# padding\n' * 50,
        'tests/unit/b/test_records.py': collection + '._core import (\n    atomic,\n    ledger,\n)\n',
        'tests/unit/test_other.py': collection + '._core import atomic\n',
        'tests/module/test_info.py': 'def test_x(run_module):\n    run_module("containerd_info")\n',
        'tests/module/test_setting_inproc.py': collection + '._edits import engine\n# containerd_setting\n',
        'tests/module/test_setting.py': 'def test_x(run_module):\n    run_module("containerd_setting")  # long\n',
    })
    cfg = {'suites': ['tests/unit', 'tests/module'], 'source': 'plugins/module_utils'}
    assert run.canary_tests(tmp_path, cfg) == {'_core/ledger.py': 'tests/unit/b/test_records.py',
                                               '_edits/engine.py': 'tests/module/test_setting.py'}
    # a file with a test that failed on the unmutated copy is not picked
    picked = run.canary_tests(tmp_path, cfg, {'tests/unit/b/test_records.py::test_x': 'failed'})
    assert picked['_core/ledger.py'] == 'tests/unit/a/test_big.py'


def test_the_projects_suites_have_both_canaries():
    run = _runner()
    cfg, _entries = run.load_config()
    picked = run.canary_tests(REPO, cfg)
    assert sorted(picked) == sorted([cfg['canary_in_process'], cfg['canary_subprocess']])
    for test in picked.values():
        assert (REPO / test).is_file()
    assert 'module_utils' not in (REPO / picked[cfg['canary_subprocess']]).read_text()


TREE = {
    'pytest.ini': '[pytest]\naddopts = -p no:randomly\n',
    'plugins/module_utils/_core/__init__.py': '',
    'plugins/module_utils/_core/calc.py': 'def add(a, b):\n    return a + b\n',
    'tests/mutation/equivalents.toml': '',
    'tests/test_passes.py': 'def test_ok():\n    assert True\n',
    'tests/test_fails.py': 'def test_ok():\n    assert True\n\n\ndef test_broken():\n    assert 1 == 2\n',
}


def _repo(tmp_path):
    repo = tmp_path / 'repo'
    _write(repo, TREE)
    (repo / 'tests' / 'mutation' / 'config.toml').write_text(
        (MUTATION / 'config.toml').read_text())
    subprocess.run(['git', 'init', '-q', str(repo)], check=True)
    report = {'meta': {'operators': 'mutmut'}, 'files': [{'file': '_core/calc.py'}], 'mutants': [
        {'file': '_core/calc.py', 'operator': 'core/ReplaceBinaryOperator_Add_Sub', 'old': 'return a + b',
         'new': 'return a - b', 'start': [2, 13], 'outcome': 'survived', 'scope': 'add'}]}
    (repo / 'report.json').write_text(json.dumps(report))
    return repo


def test_a_recheck_refuses_tests_that_fail_on_the_unmutated_copy(tmp_path, monkeypatch, capsys):
    run = _runner()
    repo = _repo(tmp_path)
    monkeypatch.setattr(run, 'REPO', repo)
    monkeypatch.setattr(run, 'HERE', repo / 'tests' / 'mutation')
    rc = run.main(['--recheck', str(repo / 'report.json'), '--no-fork-server', '--workers', '1',
                   '--with-tests', 'tests/test_passes.py', 'tests/test_fails.py'])
    said = capsys.readouterr().out
    assert rc == 2
    assert 'recheck refused: tests/test_passes.py tests/test_fails.py do not pass on the unmutated copy' in said
    assert 'FAILED tests/test_fails.py::test_broken' in said
    # nothing was judged, the report is as it was, and the copy is gone
    assert json.loads((repo / 'report.json').read_text())['mutants'][0]['outcome'] == 'survived'
    assert 'canaries' not in said
    assert not list((repo / 'build' / 'mutation').glob('recheck-*/w0'))


def test_the_clean_run_passes_tests_that_pass(tmp_path):
    run = _runner()
    repo = _repo(tmp_path)
    assert run.clean_run(repo, ['tests/test_passes.py']) is None
    # a node id that names no test is refused too
    assert run.clean_run(repo, ['tests/test_passes.py::test_missing']).startswith('rc=4 ')
