# -*- coding: utf-8 -*-
"""The imports walk of the built-in checks: where each
containerd looks for an entry, and that a bad file of the tree (an entry
that is not a string, a file already loaded, an unreadable match, a byte
order mark, a parse error, a higher version) is reported while the files
after it are still read and checked, so one run names every problem.
"""

import os

import pytest

from helpers.common import CONTAINERD_2, config_dump
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    check_tree,
    import_pattern,
    load_tree,
    resolve_import,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective

CRI = 'io.containerd.grpc.v1.cri'


def test_an_imports_entry_that_is_not_a_string_is_named_and_the_next_entries_still_load(tmp_path):
    good = tmp_path / 'good.toml'
    good.write_text('version = 2\n')
    main = str(tmp_path / 'config.toml')
    files, problems = load_tree(main, {'version': 2, 'imports': [5, str(good)]}, (1, 6))
    assert [p for p, _d in files] == [main, str(good)]
    assert [(p.entry, p.message) for p in problems] == [(5, '%s: imports entry 5 is not a string' % main)]


def test_a_drop_in_of_a_higher_version_is_refused_and_the_later_drop_ins_are_still_checked(tmp_path):
    newer = tmp_path / '10-newer.toml'
    newer.write_text('version = 3\n')
    later = tmp_path / '20-later.toml'
    later.write_text('version = 2\n[plugins."%s".containerd]\n  default_runtime_name = "gpu"\n' % CRI)
    main = str(tmp_path / 'config.toml')
    data = {'version': 2, 'imports': [str(newer), str(later)]}
    fates = {(1, 7): 'containerd 1.7 refuses it', None: 'containerd 1.7 refuses it and 1.6 does not read it',
             (1, 6): 'containerd 1.6 does not read it (it knows no version 3 plugin ids), so nothing in it takes effect'}
    for ver, fate in fates.items():
        errors = check_tree(main, data, ver)
        # 1.x cannot read a version 3 main file: raising config.toml is no fix there
        assert errors[0] == ('%s has version = 3, higher than the main config %s (version = 2): %s. Fix: write the '
                             'drop-in with version = 2 (the main config\'s version and its plugin ids).'
                             % (newer, main, fate))
        assert len(errors) == 2 and errors[1].startswith("%s: default_runtime_name is 'gpu' but no runtime table"
                                                         % main)
    # containerd 2.1 reads it (measured), but the config.toml man page forbids it and 2.3 does not start on it;
    # 2.3 refuses it in its own words
    raise_fix = ('Fix: write the drop-in with version = 2 (the main config\'s version and its plugin ids), or raise '
                 '%s to version = 3 (containerd config migrate writes it in that version).' % main)
    errors = check_tree(main, data, (2, 1))
    assert errors[0] == ('%s has version = 3, higher than the main config %s (version = 2): the containerd '
                         'config.toml man page forbids it: containerd 2.1 runs it today, but containerd 2.3 and later '
                         'do not start on it, so the node breaks at its next containerd upgrade. %s'
                         % (newer, main, raise_fix))
    errors = check_tree(main, data, (2, 3))
    assert errors[0] == ('%s has version = 3, higher than the main config %s (version = 2): containerd 2.3 does not '
                         'start ("drop-in config version 3 higher than root config version 2"). %s'
                         % (newer, main, raise_fix))


@pytest.mark.parametrize('containerd, main_version, dropin_version, raise_offered', [
    ((2, 0), 2, 3, True),  # 2.0 is the first to read version 3
    ((2, 1), 3, 4, False),
    ((2, 2), 3, 4, False),
    ((2, 3), 3, 4, True),  # 2.3 is the first to read version 4
    ((2, 3), 2, 4, True),
])
def test_raising_the_main_file_is_offered_only_where_the_node_reads_the_drop_ins_version(
        tmp_path, containerd, main_version, dropin_version, raise_offered):
    newer = tmp_path / '10-newer.toml'
    newer.write_text('version = %d\n' % dropin_version)
    main = str(tmp_path / 'config.toml')
    (error,) = check_tree(main, {'version': main_version, 'imports': [str(newer)]}, containerd)
    fix = ('Fix: write the drop-in with version = %d (the main config\'s version and its plugin ids)' % main_version
           + (', or raise %s to version = %d (containerd config migrate writes it in that version)'
              % (main, dropin_version) if raise_offered else '') + '.')
    assert error.startswith('%s has version = %d, higher than the main config' % (newer, dropin_version))
    assert error.endswith(fix)


def test_containerd_2_1_reads_a_version_3_main_file_and_refuses_a_version_4_one(tmp_path):
    """What the offer above rests on, measured: raising config.toml to version 4 is no fix on 2.1."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    for version, accepted in ((3, True), (4, False)):
        path = tmp_path / ('v%d.toml' % version)
        path.write_text('version = %d\n' % version)
        rc, _out, err = config_dump(str(path), CONTAINERD_2)
        assert (rc == 0) == accepted, err
    assert 'expected containerd config version equal to or less than `3`, got `4`' in err


# ------------------------------------------------------------------ where an entry points
def test_a_relative_entry_is_relative_to_the_importing_file_and_an_absolute_one_is_kept(tmp_path):
    main = str(tmp_path / 'etc' / 'config.toml')
    assert resolve_import('conf.d/../conf.d/a.toml', main) == str(tmp_path / 'etc' / 'conf.d' / 'a.toml')
    assert resolve_import('/etc/containerd//conf.d/a.toml', main) == '/etc/containerd/conf.d/a.toml'


@pytest.mark.parametrize('entry, version, where', [
    ('conf.d/*.toml', (1, 6), '/conf.d/*.toml'),  # 1.6 expands a relative glob in its working folder
    ('conf.d/*.toml', (1, 7), '{etc}/conf.d/*.toml'),
    ('conf.d/*.toml', (2, 1), '{etc}/conf.d/*.toml'),
    ('conf.d/*.toml', None, '{etc}/conf.d/*.toml'),  # unknown containerd: as the newer ones do
    ('conf.d/a.toml', (1, 6), '{etc}/conf.d/a.toml'),  # a plain file, even on 1.6
    ('/opt/conf.d/*.toml', (1, 6), '/opt/conf.d/*.toml'),
])
def test_where_each_containerd_looks_for_an_imports_entry(tmp_path, entry, version, where):
    etc = str(tmp_path / 'etc')
    assert import_pattern(entry, os.path.join(etc, 'config.toml'), version) == where.format(etc=etc)


# ------------------------------------------------------------------ the walk goes on past a bad file
def glob_tree(tmp_path, **files):
    """tmp_path/d/<name>: text (bytes) or None for a folder; the main file imports d/*.toml."""
    d = tmp_path / 'd'
    d.mkdir()
    for name, content in sorted(files.items()):
        if content is None:
            (d / name).mkdir()
        else:
            (d / name).write_bytes(content)
    main = str(tmp_path / 'config.toml')
    return main, {'version': 2, 'imports': [str(d / '*.toml')]}, str(d)


def test_a_glob_that_matches_a_file_already_loaded_still_loads_the_rest(tmp_path):
    main, data, d = glob_tree(tmp_path, **{'a.toml': b'version = 2\n', 'b.toml': b'version = 2\n'})
    data['imports'] = [os.path.join(d, 'a.toml')] + data['imports']
    files, problems = load_tree(main, data, (2, 1))
    assert [p for p, _d in files] == [main, os.path.join(d, 'a.toml'), os.path.join(d, 'b.toml')]
    assert problems == []


def test_a_candidate_drop_in_is_used_instead_of_the_file_and_the_glob_goes_on(tmp_path):
    main, data, d = glob_tree(tmp_path, **{'a.toml': b'version = 2\n', 'b.toml': b'version = 2\nroot = "/b"\n'})
    candidate = {'version': 2, 'root': '/candidate'}
    files, _problems = load_tree(main, data, (2, 1), overrides={os.path.join(d, 'a.toml'): candidate})
    assert files == [(main, data), (os.path.join(d, 'a.toml'), candidate),
                     (os.path.join(d, 'b.toml'), {'version': 2, 'root': '/b'})]


def test_an_unreadable_match_of_a_glob_is_named_and_the_next_match_still_loads(tmp_path):
    main, data, d = glob_tree(tmp_path, **{'a.toml': None, 'b.toml': b'version = 2\n'})
    files, problems = load_tree(main, data, (2, 1))
    assert [p for p, _d in files] == [main, os.path.join(d, 'b.toml')]
    assert [p.message for p in problems] == [
        '%s imports %s, which cannot be read (Is a directory): containerd would refuse to start. Fix: create the '
        'file, or remove the entry with nodeguard.containerd.containerd_imports (state: absent, or prune_missing: '
        'true).' % (main, os.path.join(d, 'a.toml'))]


def test_a_drop_in_with_a_byte_order_mark_is_refused_for_2x_and_the_next_still_loads(tmp_path):
    main, data, d = glob_tree(tmp_path, **{'a.toml': b'\xef\xbb\xbfversion = 2\n', 'b.toml': b'version = 2\n'})
    files, problems = load_tree(main, data, (2, 1))
    assert [p for p, _d in files] == [main, os.path.join(d, 'b.toml')]
    (problem,) = problems
    assert problem.message.startswith('%s starts with a UTF-8 byte order mark' % os.path.join(d, 'a.toml'))
    assert problem.message.endswith(' (imported by %s)' % main)
    # containerd 1.x reads it
    files, problems = load_tree(main, data, (1, 6))
    assert len(files) == 3 and problems == []


def test_a_drop_in_that_is_not_toml_is_named_with_its_importer_and_the_next_still_loads(tmp_path):
    main, data, d = glob_tree(tmp_path, **{'a.toml': b'version = 2\n[plugins\n', 'b.toml': b'version = 2\n'})
    files, problems = load_tree(main, data, (2, 1))
    assert [p for p, _d in files] == [main, os.path.join(d, 'b.toml')]
    (problem,) = problems
    assert os.path.join(d, 'a.toml') in problem.message and problem.message.endswith(' (imported by %s)' % main)
    assert problem.entry == data['imports'][0] and problem.importing_file == main


@pytest.mark.parametrize('value', ['conf.d/*.toml', 7])
def test_imports_that_is_not_a_list_is_one_problem_naming_the_file_and_the_fix(tmp_path, value):
    """containerd refuses such a config whole: the walk reports it as it is (a string is not walked letter
    by letter, its '*' taken for a glob; a number is no Python error) and reads nothing more."""
    (tmp_path / 'conf.d').mkdir()
    (tmp_path / 'conf.d' / 'a.toml').write_text('version = 2\n')
    main = str(tmp_path / 'config.toml')
    files, problems = load_tree(main, {'version': 2, 'imports': value})
    assert [f for f, _d in files] == [main]
    assert [(p.entry, p.importing_file) for p in problems] == [(value, main)]
    assert problems[0].message.startswith('%s: "imports" must be an array of file paths, found %r' % (main, value))
    assert problems[0].message.endswith('Fix: write it as a list, imports = ["%s"].'
                                        % (value if isinstance(value, str) else '/etc/containerd/conf.d/*.toml'))


# ------------------------------------------------------------------ a missing import or an imports that is no list stops only its own walk
def test_a_missing_import_is_the_entrys_problem_not_the_whole_configs(tmp_path):
    missing = str(tmp_path / 'missing.toml')
    path = str(tmp_path / 'config.toml')
    data = parse_toml('version = 2\nimports = ["%s"]\n' % missing)
    files, problems = load_tree(path, data, (1, 6))
    assert [p for p, _d in files] == [path]
    assert [(p.entry, p.whole) for p in problems] == [(missing, False)]
    view = load_effective(path, data, (1, 6))  # the merged view is still made
    assert view.imported() == [] and len(view.problems) == 1


def test_an_imports_that_is_not_a_list_stops_only_that_files_walk(tmp_path):
    a, b, c = (str(tmp_path / ('%s.toml' % n)) for n in 'abc')
    with open(a, 'w') as f:
        f.write('version = 2\nimports = "%s"\n' % c)
    with open(b, 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % c)
    with open(c, 'w') as f:
        f.write('version = 2\n')
    path = str(tmp_path / 'config.toml')
    files, problems = load_tree(path, parse_toml('version = 2\nimports = ["%s", "%s"]\n' % (a, b)), (1, 6))
    assert [p for p, _d in files] == [path, a, b, c]
    assert [(p.importing_file, p.whole) for p in problems] == [(a, True)]


def test_a_missing_import_names_the_containerd_imports_call_that_reaches_the_file_holding_it(tmp_path):
    gone = str(tmp_path / 'gone.toml')
    dropin = tmp_path / 'nydus.toml'
    dropin.write_text('version = 2\nimports = ["%s"]\n' % (tmp_path / 'gone-too.toml'))
    main = str(tmp_path / 'config.toml')
    _files, problems = load_tree(main, {'version': 2, 'imports': [str(dropin), gone]}, (1, 6))
    by_file = dict((p.importing_file, p.message) for p in problems)
    # an entry of config.toml: containerd_imports on config.toml removes it
    assert 'edit_in' not in by_file[main]
    assert by_file[main].endswith('containerd_imports (state: absent, or prune_missing: true).')
    # an entry of a drop-in: the call names config.toml and the drop-in
    assert by_file[str(dropin)].endswith('containerd_imports (path: %s, edit_in: %s, state: absent, or '
                                         'prune_missing: true).' % (main, dropin))
