# -*- coding: utf-8 -*-
"""containerd_info's parts at their edges (_info): each case was a surviving mutant.

The module tests run containerd_info on real trees; these pin what they
reach only with common inputs: which `--version` word is taken as the
binary's, the main file's problems (too big, not UTF-8, empty), the built-in
runc, where the merged view and a config dump disagree, a damaged ledger
among others, and which named files an import names.
"""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import MAX_CONFIG_BYTES
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import (
    OPTION_KEYS,
    InfoError,
    containerd_facts,
    dump_disagreements,
    file_facts,
    ledger_facts,
    read_main,
    run_dump,
    runtime_facts,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import ledger_path_for

V16, V21 = (1, 6), (2, 1)


class Ctx(object):
    """What the facts read of the engine's context: the binary, its version and one command's output."""

    def __init__(self, binary, ver, out='', rc=0, params=None):
        self.containerd_bin = binary
        self.containerd_version = ver
        self.module = type('Module', (), {'params': params or {}})()
        self._answer = (rc, out, '')

    def run_command(self, cmd):
        return self._answer


@pytest.mark.parametrize('out,version,known', [
    ('containerd github.com/containerd/containerd 1.6.20~ds1 abc', '1.6.20~ds1', 'binary'),
    # 1.60 is not 1.6: the option (or major.minor) stands in
    ('containerd github.com/containerd/containerd 1.60.1 abc', '1.6', 'containerd_version'),
])
def test_the_binarys_version_word_counts_only_for_its_own_release(out, version, known):
    facts = containerd_facts(Ctx('/usr/bin/containerd', V16, out))
    assert (facts['version'], facts['known_from'], facts['major_minor']) == (version, known, '1.6')


def test_without_a_binary_the_option_or_major_minor_stands_in():
    assert containerd_facts(Ctx(None, V21))['version'] == '2.1'
    assert containerd_facts(Ctx(None, V21, params={'containerd_version': '2.1.9'}))['version'] == '2.1.9'


def test_a_config_beyond_the_limit_is_named_with_its_size(tmp_path):
    path = str(tmp_path / 'config.toml')
    with open(path, 'wb') as f:
        f.write(b'#' * (MAX_CONFIG_BYTES + 1024 * 1024))
    with pytest.raises(InfoError) as exc:
        read_main(path, V16)
    assert '%s is 5.0 MB; nodeguard reads configs of up to 4 MB' % path in str(exc.value)


def test_a_config_that_is_not_utf_8_names_the_byte(tmp_path):
    path = str(tmp_path / 'config.toml')
    with open(path, 'wb') as f:
        f.write(b'version = 2\n# \xff\n')
    with pytest.raises(InfoError) as exc:
        read_main(path, V16)
    assert '%s is not UTF-8 text (byte 14)' % path in str(exc.value)


def test_an_empty_config_is_a_problem_not_an_error(tmp_path):
    path = str(tmp_path / 'config.toml')
    open(path, 'w').close()
    facts, data, problems = read_main(path, V16)
    assert facts['exists'] and data == {}
    assert '%s is empty: containerd runs on its built-in defaults only.' % path in problems


def test_the_built_in_runc_has_every_handler_setting_unset(tmp_path):
    path = str(tmp_path / 'config.toml')
    with open(path, 'w') as f:
        f.write('version = 3\n')
    runtimes, default, _records = runtime_facts(load_effective(path, {'version': 3}, V21 + (0,)))
    assert runtimes['runc']['builtin'] and default['name'] == 'runc' and default['exists']
    assert all(runtimes['runc'][k] is None for k in OPTION_KEYS) and set(OPTION_KEYS) <= set(runtimes['runc'])


def test_a_dump_that_cannot_be_parsed_says_so():
    dump, why = run_dump(Ctx('/usr/bin/containerd', V16, out='version = = 2\n'), '/etc/containerd/config.toml')
    assert dump is None and why.startswith('the config dump could not be read (')


def _records(dumped_runtimes, dumped_default, path='plugins."io.containerd.grpc.v1.cri".containerd.runtimes'):
    return {'cri.runtimes': {'path': path, 'dumped': dumped_runtimes},
            'cri.default_runtime_name': {'path': 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name',
                                         'dumped': dumped_default}}


def _runtime(table):
    return {'table': table}


def test_every_disagreement_of_the_view_and_the_dump_is_named():
    runtimes = {'only-model': _runtime({'runtime_type': 'x'}),
                'both': _runtime({'runtime_type': 'io.containerd.runc.v2', 'options': {},
                                  'runtime_path': '/usr/bin/shim'})}
    dumped = {'only-dump': {'runtime_type': 'y'},
              'both': {'runtime_type': 'io.containerd.kata.v2', 'runtime_path': '/usr/bin/shim'}}
    out = dump_disagreements(_records(dumped, 'runc'), runtimes, {'name': 'both'})
    by_key = dict((d['key'].rsplit('runtimes.', 1)[1], d) for d in out if 'runtimes.' in d['key'])
    assert sorted(by_key) == ['both.runtime_type', 'only-dump', 'only-model']
    assert by_key['both.runtime_type']['why'] == ("containerd config dump runs 'io.containerd.kata.v2', "
                                                  "nodeguard's merged view says 'io.containerd.runc.v2'")
    # the empty options table the dump leaves out is no disagreement; the default runtime is one
    (default,) = [d for d in out if d['key'].endswith('default_runtime_name')]
    assert (default['model'], default['dump']) == ('both', 'runc')


def test_the_same_default_in_the_dump_is_no_disagreement():
    name = ''.join(['ru', 'nc'])  # equal, not the same object
    assert dump_disagreements(_records({}, 'runc'), {}, {'name': name}) == []


def test_a_damaged_ledger_does_not_hide_the_others(tmp_path):
    state = str(tmp_path / 'state')
    files = [str(tmp_path / 'a.toml'), str(tmp_path / 'b.toml')]
    for path, text in zip(files, ('{not json', json.dumps({'format': 1, 'records': [{'owner': 'gpu'}]}))):
        lpath = ledger_path_for(state, path)
        os.makedirs(os.path.dirname(lpath), exist_ok=True)
        with open(lpath, 'w') as f:
            f.write(text)
    out, problems = ledger_facts(state, files)
    assert [i['file'] for i in out] == files and out[0]['error'] and problems == [out[0]['error']]
    assert out[1]['owners'] == ['gpu']


def test_a_glob_import_names_no_file(tmp_path):
    folder = tmp_path / 'conf.d'
    folder.mkdir()
    (folder / 'a.toml').write_text('version = 2\n')
    path = str(tmp_path / 'config.toml')
    data = {'version': 2, 'imports': [str(folder / '*.toml'), str(folder / 'a.toml')]}
    view = load_effective(path, data, V16 + (20,))
    out, _problems = file_facts(str(tmp_path / 'state'), [str(folder / '*.toml'), str(folder / 'a.toml')], view,
                                V16 + (20,))
    assert not out[str(folder / '*.toml')]['imported']
    assert out[str(folder / 'a.toml')]['imported'] and out[str(folder / 'a.toml')]['imported_by'] == [path]
