# -*- coding: utf-8 -*-
"""containerd_info's facts, one part at a time (_info), on trees written for the case.

tests/module/test_containerd_info.py runs the module against the real
binaries; these pin what it reaches rarely: the main file's version, byte
order mark and generator, imports that are no strings or load nothing,
files containerd ignores, the built-in runc of each major version, the
ledgers in and out of sync, each kind of named file, commands on PATH and
the journal's count of starts.
"""

import hashlib
import tracemalloc
import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import MAX_CONFIG_BYTES
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import (
    InfoError,
    OPTION_KEYS,
    UNIT_STARTED,
    command_facts,
    containerd_facts,
    cri_plugins,
    dump_disagreements,
    file_facts,
    imports_facts,
    ledger_facts,
    owned_facts,
    read_main,
    run_dump,
    runtime_facts,
    service_start_facts,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger, ledger_path_for
from helpers.context import FakeContext

V16, V21 = (1, 6), (2, 1)  # as the engine's Context gives it: (major, minor)
RUNTIMES = ('plugins', CRI_V2, 'containerd', 'runtimes')
BOM = b'\xef\xbb\xbf'


def write(path, text):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), 'wb' if isinstance(text, bytes) else 'w') as f:
        f.write(text)
    return str(path)


def view_of(path, ver):
    """The merged view of the tree at path, as containerd_info builds it."""
    _facts, data, _problems = read_main(path, ver)
    return load_effective(path, data, ver)


# ------------------------------------------------------------------ containerd
def test_the_binarys_version_counts_only_when_it_answers():
    """A --version that fails is not read: containerd_version (or major.minor) stands in."""
    out = 'containerd github.com/containerd/containerd 1.6.20~ds1 abc'
    assert containerd_facts(FakeContext(containerd_bin='/bin/c', containerd_version=(1, 6), answer={'--version': (0, out, '')}))['version'] == '1.6.20~ds1'
    facts = containerd_facts(FakeContext(containerd_bin='/bin/c', containerd_version=(1, 6), answer={'--version': (1, out, '')}))
    assert (facts['version'], facts['known_from']) == ('1.6', 'containerd_version')
    # a version that names the release exactly (no patch level) is the binary's
    facts = containerd_facts(FakeContext(containerd_bin='/bin/c', containerd_version=(2, 1), answer={'--version': (0, 'containerd x v2.1 abc', '')}))
    assert (facts['version'], facts['known_from']) == ('2.1', 'binary')


def test_no_version_at_all_gives_no_facts():
    assert containerd_facts(FakeContext(containerd_bin=None, containerd_version=None, answer={})) == dict(
        bin=None, version=None, major_minor=None, known_from=None)


# ------------------------------------------------------------------ the main file
def test_a_config_of_the_largest_size_read_is_read_and_a_larger_one_is_named_to_a_tenth_of_a_mb(tmp_path):
    path = write(tmp_path / 'config.toml', b'#' * MAX_CONFIG_BYTES)
    assert read_main(path, V16)[0]['size'] == MAX_CONFIG_BYTES
    path = write(tmp_path / 'big.toml', b'#' * 4561306)   # 4.35 MB and a little: 4.4, not 4.3
    with pytest.raises(InfoError) as exc:
        read_main(path, V16)
    assert '%s is 4.4 MB; nodeguard reads configs of up to 4 MB' % path in str(exc.value)
    assert exc.value.facts['config']['size'] == 4561306


def test_a_config_that_is_not_toml_fails_with_the_place_of_the_error(tmp_path):
    path = write(tmp_path / 'config.toml', 'version = 2\n[plugins\n')
    with pytest.raises(InfoError) as exc:
        read_main(path, V16)
    assert str(exc.value).startswith(path) and 'is not valid TOML' in str(exc.value)
    assert str(exc.value).endswith('. Fix the file by hand, or put back a known-good copy with '
                                   'nodeguard.containerd.containerd_baseline (state: restore).')
    assert exc.value.facts['line'] == 2 and exc.value.facts['config']['exists']


def test_a_config_without_a_version_line_is_version_1(tmp_path):
    facts, data, problems = read_main(write(tmp_path / 'config.toml', 'oom_score = 0\n'), V16)
    assert facts['version'] == 1 and data == {'oom_score': 0} and facts['exists']
    assert len(problems) == 1 and 'version 1' in problems[0]
    # an empty file has no version line either: it is only empty
    path = write(tmp_path / 'empty.toml', '\n')
    assert read_main(path, V16)[2] == ['%s is empty: containerd runs on its built-in defaults only.' % path]
    assert facts['size'] == len('oom_score = 0\n')
    assert facts['sha256'] == hashlib.sha256(b'oom_score = 0\n').hexdigest()


@pytest.mark.parametrize('line', ['version = true', 'version = "2"'])
def test_a_version_that_is_no_integer_is_no_version(tmp_path, line):
    facts, _data, _problems = read_main(write(tmp_path / 'config.toml', line + '\n'), V16)
    assert facts['version'] is None


def test_a_version_the_nodes_containerd_cannot_read_is_a_problem(tmp_path):
    path = write(tmp_path / 'config.toml', 'version = 3\n')
    facts, _data, problems = read_main(path, V16)
    assert facts['version'] == 3
    [problem] = [p for p in problems if 'declares version = 3' in p]
    assert 'containerd is 1.6' in problem and 'Nothing was written' not in problem
    assert not [p for p in read_main(path, V21)[2] if 'declares version' in p]


def test_a_byte_order_mark_is_a_problem_only_for_containerd_2(tmp_path):
    path = write(tmp_path / 'config.toml', BOM + b'version = 2\n')
    facts, data, problems = read_main(path, V21)
    assert facts['byte_order_mark'] is True and data == {'version': 2}
    assert any('byte order mark' in p and 'containerd 2.1 cannot parse' in p for p in problems), problems
    facts, _data, problems = read_main(path, V16)
    assert facts['byte_order_mark'] is True and problems == []
    facts, _data, _problems = read_main(write(tmp_path / 'plain.toml', 'version = 2\n'), V21)
    assert 'byte_order_mark' not in facts


def test_a_config_k3s_generates_names_its_generator(tmp_path):
    path = write(tmp_path / 'config.toml', '# File generated by k3s. DO NOT EDIT.\nversion = 2\n')
    assert read_main(path, V16)[0]['generated_by'] == 'k3s'
    assert read_main(write(tmp_path / 'other.toml', 'version = 2\n'), V16)[0]['generated_by'] is None


# ------------------------------------------------------------------ imports
def test_entries_that_are_no_strings_are_skipped_and_later_files_still_count(tmp_path):
    """Breadth first: a drop-in without imports comes before the one whose entries count."""
    a = write(tmp_path / 'a.toml', 'version = 2\n')
    c = write(tmp_path / 'c.toml', 'version = 2\n')
    b = write(tmp_path / 'b.toml', 'version = 2\nimports = [1, "%s", "%s"]\n' % (c, tmp_path / 'gone.toml'))
    path = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s", "%s"]\n' % (a, b))
    out = imports_facts(view_of(path, V16), V16)
    assert out['files'] == [path, a, b, c]
    assert [(e['imported_by'], e['entry']) for e in out['entries']] == [
        (path, a), (path, b), (b, c), (b, str(tmp_path / 'gone.toml'))]
    plain = out['entries'][2]
    assert plain['files'] == [c] and not plain['glob'] and not plain['missing'] and not plain['duplicate']
    assert out['entries'][3]['problems'] and str(tmp_path / 'gone.toml') in out['entries'][3]['problems'][0]
    assert out['entries'][3]['files'] == [] and out['missing'] == [
        dict(entry=str(tmp_path / 'gone.toml'), path=str(tmp_path / 'gone.toml'), imported_by=b)]
    assert out['duplicates'] == []


def test_a_glob_lists_the_files_it_matches(tmp_path):
    folder = tmp_path / 'conf.d'
    one, two = write(folder / '10-a.toml', 'version = 2\n'), write(folder / '20-b.toml', 'version = 2\n')
    path = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s/*.toml"]\n' % folder)
    [entry] = imports_facts(view_of(path, V16), V16)['entries']
    assert entry['glob'] and entry['files'] == [one, two] and not entry['missing']


@pytest.mark.parametrize('ver,said', [(V16, 'containerd 1.6 ignores'), (None, 'containerd ? ignores')])
def test_a_file_containerd_ignores_is_a_problem_of_the_imports(tmp_path, ver, said):
    v3 = write(tmp_path / 'v3.toml', 'version = 3\n')
    path = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s"]\n' % v3)
    problems = imports_facts(load_effective(path, {'version': 2, 'imports': [v3]}, ver), ver)['problems']
    assert problems == ["%s %s: version = 3 is higher than the main file's 2" % (said, v3)]


# ------------------------------------------------------------------ runtimes
RUNTIMES_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "kata"\n'
               '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
               'runtime_type = "io.containerd.kata.v2"\n'
               '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata.options]\n'
               'ConfigPath = "/etc/kata.toml"\n')


def test_containerd_1_runs_only_the_runtimes_the_files_define(tmp_path):
    """1.x drops its built-in runc once a runtimes table exists; 2.x merges the files over it."""
    path = write(tmp_path / 'config.toml', RUNTIMES_V2)
    runtimes, default, _records = runtime_facts(view_of(path, V16))
    assert sorted(runtimes) == ['kata'] and default == dict(name='kata', file=path, default=False, exists=True)
    kata = runtimes['kata']
    assert kata['file'] == path and kata['files'] == [path] and kata['builtin'] is False
    assert kata['runtime_type'] == 'io.containerd.kata.v2' and kata['ConfigPath'] == '/etc/kata.toml'
    assert kata['options'] == {'ConfigPath': '/etc/kata.toml'} and kata['SystemdCgroup'] is None
    runtimes, _default, _records = runtime_facts(view_of(path, V21))
    assert sorted(runtimes) == ['kata', 'runc'] and runtimes['runc']['builtin'] and not runtimes['kata']['builtin']


def test_without_a_runtimes_table_both_majors_run_the_built_in_runc(tmp_path):
    path = write(tmp_path / 'config.toml', 'version = 2\n')
    for ver in (V16, V21):
        runtimes, default, _records = runtime_facts(view_of(path, ver))
        assert list(runtimes) == ['runc'] and runtimes['runc']['runtime_type'] == 'io.containerd.runc.v2'
        assert default == dict(name='runc', file=None, default=True, exists=True)


def test_a_runc_the_files_define_is_theirs_not_the_built_in_one(tmp_path):
    path = write(tmp_path / 'config.toml', RUNTIMES_V2.replace('kata', 'runc'))
    for ver in (V16, V21):
        runtimes, _default, _records = runtime_facts(view_of(path, ver))
        assert runtimes['runc']['builtin'] is False and runtimes['runc']['file'] == path


def test_a_runtime_two_files_build_lists_both(tmp_path):
    """2.x deep-merges a runtime's table across files: the later file is its file, both are its files."""
    d = write(tmp_path / 'd.toml', 'version = 2\n'
              '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata.options]\nSystemdCgroup = true\n')
    path = write(tmp_path / 'config.toml', RUNTIMES_V2.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % d))
    runtimes, _default, _records = runtime_facts(view_of(path, V21))
    kata = runtimes['kata']
    assert kata['file'] == d and kata['files'] == [path, d]
    assert kata['SystemdCgroup'] is True and kata['ConfigPath'] == '/etc/kata.toml'


def test_a_default_runtime_without_a_table_does_not_exist(tmp_path):
    path = write(tmp_path / 'config.toml', RUNTIMES_V2.replace('default_runtime_name = "kata"',
                                                               'default_runtime_name = "crun"'))
    _runtimes, default, _records = runtime_facts(view_of(path, V16))
    assert default['name'] == 'crun' and default['exists'] is False


def test_the_cri_plugins_of_each_major_and_the_files_that_hold_them(tmp_path):
    d = write(tmp_path / 'd.toml', 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')
    path = write(tmp_path / 'config.toml', RUNTIMES_V2.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % d))
    assert cri_plugins(view_of(path, V16)) == ([CRI_V2], {CRI_V2: d})
    # 2.x migrates the merged version 2 table: the file that held it last holds the runtime plugin
    ids, owners = cri_plugins(view_of(path, V21))
    assert ids == [CRI_V3_RUNTIME, CRI_V3_IMAGES, CRI_V2] and owners[CRI_V3_RUNTIME] == d


# ------------------------------------------------------------------ config dump
def test_a_dump_that_fails_names_its_last_lines_or_no_output():
    def ctx(rc, out, err):
        return FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=(1, 6), answer={'dump': (rc, out, err)})
    dump, why = run_dump(ctx(1, '', 'a\n\nb\nc\nd\n'), '/etc/containerd/config.toml')
    assert dump is None
    assert why == 'containerd --config /etc/containerd/config.toml config dump failed (rc=1): b | c | d'
    assert run_dump(ctx(2, 'only out\n', ''), '/c.toml')[1].endswith('(rc=2): only out')
    assert run_dump(ctx(1, '', ''), '/c.toml')[1].endswith('(rc=1): no output')
    assert run_dump(ctx(0, 'version = 2\n', 'warning\n'), '/c.toml') == ({'version': 2}, None)
    assert run_dump(FakeContext(containerd_bin=None, containerd_version=None, answer={}), '/c.toml')[1].startswith('no containerd binary')


# ------------------------------------------------------------------ ledgers
def ledger_with(state, path, records, sha):
    ledger = Ledger.load(state, path)
    for rec in records:
        ledger.add(rec)
    ledger.save(sha)


def test_a_ledger_says_whether_it_describes_the_bytes_on_disk(tmp_path):
    state = str(tmp_path / 'state')
    a = write(tmp_path / 'a.toml', 'version = 2\n')
    b = write(tmp_path / 'b.toml', 'version = 2\n')
    ledger_with(state, a, [{'owner': 'gpu', 'kind': 'key', 'path': ['plugins', CRI_V2, 'enable_cdi']},
                           {'owner': 7, 'kind': 'import'}], hashlib.sha256(b'version = 2\n').hexdigest())
    ledger_with(state, b, [{'owner': 'gpu', 'kind': 'import'}], 'f' * 64)
    out, problems = ledger_facts(state, [str(tmp_path / 'no-ledger.toml'), a, b])
    assert problems == [] and [i['file'] for i in out] == [a, b]
    assert out[0]['in_sync'] is True and out[1]['in_sync'] is False and out[1]['config_sha256'] == 'f' * 64
    assert out[0]['owners'] == ['7', 'gpu'] and out[0]['ledger_path'] == ledger_path_for(state, a)
    [rec] = out[0]['records_by_owner']['gpu']
    assert rec['key'] == 'plugins."io.containerd.grpc.v1.cri".enable_cdi'
    assert 'key' not in out[0]['records_by_owner'][7][0]


def test_owned_names_what_the_owner_added_and_the_files_it_wrote_among_those_asked(tmp_path):
    state = str(tmp_path / 'state')
    path = write(tmp_path / 'config.toml', 'version = 2\n')
    ledger_with(state, path, [{'owner': 'coco', 'kind': 'table', 'resource': 'runtime:kata',
                               'path': list(RUNTIMES) + ['kata']},
                              {'owner': 'coco', 'kind': 'import', 'resource': 'import:/etc/a.toml'},
                              {'owner': 'gpu', 'kind': 'table', 'resource': 'runtime:nvidia'}],
                hashlib.sha256(b'version = 2\n').hexdigest())
    files = {'/etc/a.toml': {'owners': ['coco', 'gpu']}, '/etc/b.toml': {'owners': ['gpu']}}
    out = owned_facts(state, path, 'coco', files, V16)
    assert out == dict(owner='coco', runtimes=['kata'], tables=['kata'], defaults=[], settings=[],
                       imports=['/etc/a.toml'], files=['/etc/a.toml'], error=None)


# ------------------------------------------------------------------ named files
def test_each_kind_of_named_file(tmp_path):
    state = str(tmp_path / 'state')
    path = write(tmp_path / 'config.toml', 'version = 2\n')
    plain = write(tmp_path / 'plain.toml', 'version = 2\n')
    tool = write(tmp_path / 'tool', '#!/bin/sh\n')
    os.chmod(tool, 0o755)
    fifo = str(tmp_path / 'fifo')
    os.mkfifo(fifo)
    dangling = str(tmp_path / 'dangling')
    os.symlink(str(tmp_path / 'nowhere'), dangling)
    linked = str(tmp_path / 'linked')
    os.symlink(tool, linked)
    out, problems = file_facts(state, [plain, tool, fifo, dangling, linked, str(tmp_path),
                                       str(tmp_path / 'absent')], view_of(path, V16), V16)
    assert problems == []
    kinds = dict((p, (i['type'], i['exists'], i['dangling'], i['executable'])) for p, i in out.items())
    assert kinds == {plain: ('file', True, False, False), tool: ('file', True, False, True),
                     fifo: ('other', True, False, False), dangling: ('link', True, True, False),
                     linked: ('link', True, False, True), str(tmp_path): ('directory', True, False, False),
                     str(tmp_path / 'absent'): (None, False, False, False)}
    assert out[plain]['sha256'] == hashlib.sha256(b'version = 2\n').hexdigest()
    assert out[linked]['sha256'] is None and out[fifo]['sha256'] is None


def test_a_large_named_file_is_hashed_without_being_held_in_memory(tmp_path):
    # a cached kata payload archive is hundreds of MB: its hash is read in chunks, not as one bytes object
    size = 48 << 20
    path = write(tmp_path / 'config.toml', 'version = 2\n')
    archive = str(tmp_path / 'kata-static.tar.zst')
    with open(archive, 'wb') as f:
        f.truncate(size)
    want = hashlib.sha256()
    for _i in range(size >> 20):
        want.update(bytes(1 << 20))
    tracemalloc.start()
    try:
        out, problems = file_facts(str(tmp_path / 'state'), [archive], view_of(path, V16), V16)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert problems == [] and out[archive]['sha256'] == want.hexdigest()
    assert peak < 8 << 20, 'hashing a %d MB file held %.1f MB' % (size >> 20, peak / float(1 << 20))


def test_a_named_file_is_imported_loaded_and_owned_as_the_tree_and_its_ledger_say(tmp_path):
    state = str(tmp_path / 'state')
    a = write(tmp_path / 'a.toml', 'version = 2\n')
    path = write(tmp_path / 'config.toml', 'version = 2\nimports = [2, "%s"]\n' % a)
    ledger_with(state, a, [{'owner': 'coco', 'kind': 'file'}, {'owner': 'gpu', 'kind': 'key'}], None)
    out, _problems = file_facts(state, [a, path], view_of(path, V16), V16)
    assert out[a]['imported'] and out[a]['imported_by'] == [path] and out[a]['loaded'] and out[a]['owners'] == ['coco']
    assert not out[path]['imported'] and out[path]['loaded'] and out[path]['owners'] == []
    out, _problems = file_facts(state, [str(tmp_path / 'x.toml')], view_of(path, V16), V16)
    assert not out[str(tmp_path / 'x.toml')]['loaded']


def test_a_damaged_ledger_of_a_named_file_is_a_problem(tmp_path):
    state = str(tmp_path / 'state')
    path = write(tmp_path / 'config.toml', 'version = 2\n')
    write(ledger_path_for(state, path), '{not json')
    out, problems = file_facts(state, [path], view_of(path, V16), V16)
    assert out[path]['owners'] == [] and len(problems) == 1 and 'is damaged' in problems[0]
    assert 'Nothing was written' not in problems[0]


# ------------------------------------------------------------------ commands on PATH
def test_commands_are_found_as_command_v_finds_them(tmp_path, monkeypatch):
    first, second = tmp_path / 'first', tmp_path / 'second'
    plain = write(first / 'kubectl', '')                  # not executable: skipped
    found = write(second / 'kubectl', '#!/bin/sh\n')
    os.chmod(found, 0o755)
    here = write(tmp_path / 'here', '#!/bin/sh\n')
    os.chmod(here, 0o755)
    search = os.pathsep.join([str(first), str(second)])
    assert command_facts(['kubectl', plain, found, 'nope'], search) == {
        'kubectl': found, plain: None, found: found, 'nope': None}
    # an empty PATH entry is the current folder
    monkeypatch.chdir(str(tmp_path))
    assert command_facts(['here'], os.pathsep + str(first)) == {'here': os.path.join('.', 'here')}
    assert command_facts(['here'], None) == {'here': os.path.join('.', 'here')}


# ------------------------------------------------------------------ starts of the service
class Journal(object):
    """A module whose journalctl answers once with (rc, stdout, stderr); the command is kept."""

    def __init__(self, rc=0, out='', err='', binary='/usr/bin/journalctl'):
        self.answer = (rc, out, err)
        self.binary = binary
        self.cmd = None

    def get_bin_path(self, name):
        return self.binary

    def run_command(self, cmd):
        self.cmd = cmd
        return self.answer


def test_starts_are_counted_by_systemds_message_id_only():
    lines = [json.dumps({'MESSAGE_ID': UNIT_STARTED, 'MESSAGE': 'Started containerd.service'}),
             'not json',
             json.dumps({'MESSAGE_ID': 'other', 'MESSAGE': 'Stopping'}),
             json.dumps(['a list']),
             json.dumps({'MESSAGE_ID': UNIT_STARTED})]
    module = Journal(out='\n'.join(lines) + '\n')
    out = service_start_facts(module, 'containerd', 1700000000.5)
    assert out == dict(unit='containerd', since=1700000000.5, count=2, error=None)
    assert module.cmd[-2:] == ['--since', '@1700000000.500000'] and module.cmd[1:3] == ['-u', 'containerd']
    assert service_start_facts(Journal(out=''), 'containerd', 0)['count'] == 0


def test_a_journal_that_cannot_be_read_gives_no_count_and_why():
    out = service_start_facts(Journal(binary=None), 'containerd', 0)
    assert out['count'] is None and out['error'] == "no journalctl on this node (a node without systemd's journal)"
    out = service_start_facts(Journal(rc=1, out='on stdout\n'), 'containerd', 0)
    assert out['count'] is None and out['error'] == '/usr/bin/journalctl -u containerd failed (rc=1): on stdout'
    out = service_start_facts(Journal(rc=1, out='x', err='x' * 500 + 'END'), 'containerd', 0)
    assert out['error'].endswith('): ' + 'x' * 397 + 'END')


def test_a_runtime_on_one_side_only_does_not_end_the_comparison():
    """Names sorted: a runtime the dump lacks, then one the view lacks, then one both have that differs (after an
    empty options table the dump leaves out)."""
    records = {'cri.runtimes': {'path': 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes',
                                'dumped': {'b-dump-only': {}, 'c-both': {'runtime_type': 'y'}}},
               'cri.default_runtime_name': {
                   'path': 'plugins."io.containerd.grpc.v1.cri".containerd.default_runtime_name'}}
    runtimes = {'a-model-only': {'table': {}}, 'c-both': {'table': {'options': {}, 'runtime_type': 'x'}}}
    out = dump_disagreements(records, runtimes, {'name': 'runc'})
    assert [d['key'].rsplit('runtimes.', 1)[1] for d in out] == ['a-model-only', 'b-dump-only', 'c-both.runtime_type']


def test_a_version_3_drop_in_of_a_version_2_main_file_is_no_problem_on_2x(tmp_path):
    v3 = write(tmp_path / 'v3.toml', 'version = 3\n')
    path = write(tmp_path / 'config.toml', 'version = 2\nimports = ["%s"]\n' % v3)
    assert imports_facts(load_effective(path, {'version': 2, 'imports': [v3]}, V21), V21)['problems'] == []


# ------------------------------------------------------------------ version words, odd configs and dumps, disagreements
V16, V21 = (1, 6), (2, 1)


@pytest.mark.parametrize('out,version,known', [
    ('containerd github.com/containerd/containerd 1.6.20~ds1 abc', '1.6.20~ds1', 'binary'),
    # 1.60 is not 1.6: the option (or major.minor) stands in
    ('containerd github.com/containerd/containerd 1.60.1 abc', '1.6', 'containerd_version'),
])
def test_the_binarys_version_word_counts_only_for_its_own_release(out, version, known):
    facts = containerd_facts(FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16, answer=(0, out, '')))
    assert (facts['version'], facts['known_from'], facts['major_minor']) == (version, known, '1.6')


def test_without_a_binary_the_option_or_major_minor_stands_in():
    assert containerd_facts(FakeContext(containerd_version=V21, answer=(0, '', '')))['version'] == '2.1'
    assert containerd_facts(FakeContext(containerd_version=V21, params={'containerd_version': '2.1.9'}))['version'] == '2.1.9'


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
    ctx = FakeContext(containerd_bin='/usr/bin/containerd', containerd_version=V16, answer=(0, 'version = = 2\n', ''))
    dump, why = run_dump(ctx, '/etc/containerd/config.toml')
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
