# -*- coding: utf-8 -*-
"""containerd_info's gather (_info) in process, with a stand-in AnsibleModule and the real containerd 1.6.

tests/module/test_containerd_info.py runs the module itself; these take the
options one at a time to pin what each adds to the facts, and which
config dump outcome confirms the merged view: not asked, no config, agreeing,
failing, no binary.
"""

import os
import subprocess

import pytest

from helpers.common import CONTAINERD_1
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import InfoError, gather
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

KATA = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "kata"\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\nruntime_type = "io.containerd.kata.v2"\n')


class Module(object):
    """What gather asks of AnsibleModule: params, the binaries, commands (run for real, each one counted)."""

    def __init__(self, **params):
        self.params = dict(path=None, state_dir=None, containerd_bin=CONTAINERD_1, containerd_version=None,
                           dump=True, baseline=None, baseline_store=None, protect=None, owner=None, files=[],
                           commands=[], starts_since=None, service='containerd')
        self.params.update(params)
        self.commands = []

    def get_bin_path(self, name):
        return None

    def run_command(self, cmd, environ_update=None):
        self.commands.append(list(cmd))
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def tree(tmp_path):
    """(module maker, config.toml's path): the module reads tmp_path/etc/config.toml, ledgers in tmp_path/state."""
    path = str(tmp_path / 'etc' / 'config.toml')
    os.makedirs(os.path.dirname(path))

    def module(text=KATA, **params):
        if text is not None:
            with open(path, 'w') as f:
                f.write(text)
        return Module(path=path, state_dir=str(tmp_path / 'state'), **params)
    return module, path


def dumps(module):
    return [c for c in module.commands if c[-2:] == ['config', 'dump']]


def test_a_config_dump_that_agrees_confirms_the_view(tree):
    make, path = tree
    module = make()
    facts = gather(module)
    assert facts['dump_confirmed'] is True and facts['dump_disagreements'] == [] and facts['dump_error'] is None
    assert facts['changed'] is False and facts['node_name'] == os.uname()[1]
    assert facts['default_runtime'] == dict(name='kata', file=path, default=False, exists=True)
    assert sorted(facts['runtimes']) == ['kata'] and facts['imports']['files'] == [path]
    # each command ran once: --version is recorded and reused
    assert [c[1:] for c in module.commands] == [['--version'], ['--config', path, 'config', 'dump']]
    assert 'owned' not in facts and 'drift' not in facts and 'service_starts' not in facts
    assert facts['files'] == {} and facts['commands'] == {} and facts['problems'] == []


def test_dump_false_runs_no_config_dump(tree):
    make, _path = tree
    module = make(dump=False)
    facts = gather(module)
    assert facts['dump_error'] == 'not run (dump: false)' and facts['dump_confirmed'] is None
    assert dumps(module) == [] and facts['default_runtime']['name'] == 'kata'


def test_a_missing_config_is_not_dumped_and_has_no_files_or_ledgers(tree, tmp_path):
    make, path = tree
    module = make(text=None)
    # a ledger left for the missing file is not read as one of the tree's
    os.makedirs(os.path.dirname(ledger_path_for(str(tmp_path / 'state'), path)))
    with open(ledger_path_for(str(tmp_path / 'state'), path), 'w') as f:
        f.write('{"format": 1, "records": []}')
    facts = gather(module)
    assert facts['dump_error'] == '%s does not exist' % path and facts['dump_confirmed'] is None
    assert dumps(module) == [] and facts['imports']['files'] == [] and facts['ledgers'] == []
    assert facts['config']['exists'] is False and facts['runtimes']['runc']['builtin']


def test_a_tree_containerd_refuses_is_not_confirmed(tree, tmp_path):
    make, path = tree
    gone = str(tmp_path / 'etc' / 'gone.toml')
    facts = gather(make('version = 2\nimports = ["%s"]\n' % gone))
    assert facts['dump_confirmed'] is False and 'config dump failed' in facts['dump_error']
    assert facts['dump_disagreements'] == [] and any(gone in p for p in facts['problems'])


def test_without_a_binary_the_dump_is_not_run_and_not_judged(tree, monkeypatch):
    make, _path = tree
    monkeypatch.setattr(_engine, 'CONTAINERD_DIRS', [])
    module = make(containerd_bin=None, containerd_version='1.6')
    facts = gather(module)
    assert module.commands == [] and facts['dump_confirmed'] is None
    assert facts['dump_error'].startswith('no containerd binary')
    assert facts['containerd']['known_from'] == 'containerd_version'


def test_a_key_containerd_drops_is_a_disagreement(tree):
    make, _path = tree
    facts = gather(make(KATA + 'no_such_key = "x"\n'))
    assert facts['dump_confirmed'] is False
    assert [d['key'].rsplit('.', 1)[1] for d in facts['dump_disagreements']] == ['no_such_key']


def test_a_drop_in_that_is_not_toml_fails_with_the_facts_so_far(tree, tmp_path):
    make, path = tree
    bad = str(tmp_path / 'etc' / 'bad.toml')
    with open(bad, 'w') as f:
        f.write('version = 2\n[oops\n')
    with pytest.raises(InfoError) as exc:
        gather(make('version = 2\nimports = ["%s"]\n' % bad))
    assert str(exc.value).startswith(bad) and 'is not valid TOML' in str(exc.value)
    assert str(exc.value).endswith('. Fix the file by hand, or put back a known-good copy with '
                                   'nodeguard.containerd.containerd_baseline (state: restore).')
    assert exc.value.facts['config']['path'] == path and exc.value.facts['imports']['files'][0] == path


def test_the_named_files_and_commands_are_in_the_facts(tree, tmp_path):
    make, path = tree
    facts = gather(make(files=[path], commands=['/no/such/tool']))
    assert facts['files'][path]['loaded'] and facts['commands'] == {'/no/such/tool': None}


def test_an_owner_gets_its_facts_and_a_damaged_ledger_is_one_problem(tree, tmp_path):
    make, path = tree
    facts = gather(make(owner='coco'))
    assert facts['owned']['error'] is None and facts['problems'] == []
    lpath = ledger_path_for(str(tmp_path / 'state'), path)
    os.makedirs(os.path.dirname(lpath))
    with open(lpath, 'w') as f:
        f.write('{not json')
    facts = gather(make(owner='coco'))
    damaged = [p for p in facts['problems'] if 'is damaged' in p]
    assert len(damaged) == 1 and facts['owned']['error'] == damaged[0]
    assert [(i['file'], i['error']) for i in facts['ledgers']] == [(path, damaged[0])]
    # config.toml gone: no ledger facts of the tree, but the owner's records are still read (and fail)
    os.unlink(path)
    facts = gather(make(text=None, owner='coco'))
    assert facts['ledgers'] == [] and facts['owned']['error'] in facts['problems']


def test_starts_are_asked_of_the_journal_only_when_a_time_is_given(tree):
    make, _path = tree
    module = make(starts_since=0.0)
    module.get_bin_path = lambda name: None
    facts = gather(module)
    assert facts['service_starts']['unit'] == 'containerd' and facts['service_starts']['count'] is None


def test_settings_are_reported_as_containerd_runs_them(tree, tmp_path):
    """A value another tool wrote (here a drop-in's, which on containerd 1.x replaces config.toml's CRI table) is
    reported as containerd runs it, as its config dump shows it; a key no file sets is null (the built-in default)."""
    make, path = tree
    dropin = str(tmp_path / 'etc' / 'snapshots.toml')
    with open(dropin, 'w') as f:
        f.write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndisable_snapshot_annotations = false\n'
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\nruntime_type = "io.containerd.runc.v2"\n')
    main = KATA.replace('default_runtime_name = "kata"\n', 'disable_snapshot_annotations = true\n')
    text = 'imports = ["%s"]\n%s' % (dropin, main)
    keys = ['images.disable_snapshot_annotations', 'cri.enable_cdi',
            'plugins."io.containerd.grpc.v1.cri".containerd.disable_snapshot_annotations']
    facts = gather(make(text=text, settings=keys))
    assert facts['settings'] == {keys[0]: False, keys[1]: None, keys[2]: False}
    dumped = subprocess.run([CONTAINERD_1, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                            timeout=60, check=True).stdout
    assert '\n      disable_snapshot_annotations = false\n' in dumped
    assert 'settings' not in gather(make(text=text))
