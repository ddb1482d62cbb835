# -*- coding: utf-8 -*-
"""_validate's rules called directly: the version a containerd binary reports,
which containerd replaces plugin tables, which config versions it reads, what
a replacing import loses, the 2.x merge of runtimes and the walk past an
import that is not UTF-8.

Each rule was measured on the real binaries (docs/containerd-facts in the
README); tests/module checks them end to end on containerd 1.6, 1.7 and 2.1.
"""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    describe_lost,
    check_tree,
    load_tree,
    refuse_unreadable_version,
    replaces_plugin_tables,
    validation_failed,
    version_word,
)

CRI = 'io.containerd.grpc.v1.cri'


@pytest.mark.parametrize('out, word', [
    ('containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1\n', '1.6.20~ds1'),
    ('containerd containerd.io v2.1.9 05044ec0a9a75232cad458027ca83437aae3f4da\n', '2.1.9'),
    ('containerd 1.7.24\n', '1.7.24'),  # the shortest form: the program, then its version
    ('containerd: command not found\n', None),
    ('', None),
])
def test_the_version_word_of_containerd_version(out, word):
    assert version_word(out) == word


@pytest.mark.parametrize('containerd, config_version, replaces', [
    ((1, 6), 2, True), ((1, 7), 2, True), ((2, 1), 2, False), ((2, 1), 3, False),
    ((1, 7), 4, False),  # only 2.x reads version 3 and later (and 1.x is refused on it elsewhere)
    (None, 2, True),  # unknown binary: a version 2 file may be read by 1.x
    (None, 3, False),
])
def test_which_containerd_replaces_plugin_tables(containerd, config_version, replaces):
    assert replaces_plugin_tables(containerd, config_version) is replaces


@pytest.mark.parametrize('containerd, newest', [
    ((1, 6), 2), ((1, 7), 2), ((2, 0), 3), ((2, 2), 3), ((2, 3), 4), ((3, 0), 4)])
def test_the_newest_config_version_each_containerd_reads(containerd, newest):
    refuse_unreadable_version('/etc/containerd/config.toml', newest, containerd)
    with pytest.raises(ConfigError) as err:
        refuse_unreadable_version('/etc/containerd/config.toml', newest + 1, containerd)
    assert 'reads config version %d at most' % newest in str(err.value)


def test_a_replacing_import_names_every_runtime_option_and_cri_key_it_would_drop():
    main = {'containerd': {'snapshotter': 'overlayfs', 'default_runtime_name': 'runc', 'runtimes': {
        'runc': {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True, 'Root': '/r'}},
        'nvidia': {'runtime_type': 'io.containerd.runc.v2'}}},
        'enable_cdi': True, 'sandbox_image': 'pause:3.9'}
    imported = {'containerd': {'runtimes': {'runc': {'runtime_type': 'io.containerd.runc.v2',
                                                     'options': {'Root': '/r'}}}},
                'sandbox_image': 'pause:3.10'}
    assert describe_lost(main, imported, CRI) == [
        'runtimes.runc.options.SystemdCgroup', "runtime 'nvidia'", 'enable_cdi', 'containerd.snapshotter',
        'containerd.default_runtime_name']
    # another plugin's table: its keys, nothing about runtimes
    assert describe_lost({'a': 1, 'b': 2, 'containerd': {'x': 1}}, {'a': 1}, None) == ['b', 'containerd']


def test_an_import_that_is_not_utf8_is_a_problem_and_the_next_file_is_still_read(tmp_path):
    bad = tmp_path / 'a-bad.toml'
    bad.write_bytes(b'# \xff\n')
    good = tmp_path / 'b-good.toml'
    good.write_text('version = 2\n')
    other = tmp_path / 'other.toml'
    other.write_text('version = 2\n')
    main = str(tmp_path / 'config.toml')
    # the next file of the same glob, and the next entry
    files, problems = load_tree(main, {'version': 2, 'imports': [str(tmp_path / '*-*.toml'), str(other)]}, (2, 1))
    assert [p for p, _d in files] == [main, str(good), str(other)]
    assert [p.message for p in problems] == ['%s imports %s, which is not UTF-8 text.' % (main, bad)]


def test_2x_merges_a_drop_in_runtime_into_the_main_files_and_a_non_table_adds_nothing(tmp_path):
    dropin = tmp_path / 'kata.toml'
    dropin.write_text('version = 2\n[plugins."%s".containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata.v2"\n'
                      '[plugins."%s".containerd]\n  default_runtime_name = "kata"\n' % (CRI, CRI))
    main = {'version': 2, 'imports': [str(dropin)],
            'plugins': {CRI: {'containerd': {'runtimes': {'kata': {'options': {'ConfigPath': '/c'}}}}}}}
    assert check_tree(str(tmp_path / 'config.toml'), main, (2, 1)) == []
    # the same drop-in on 1.7 replaces the CRI table: kata's options would be lost
    errors = check_tree(str(tmp_path / 'config.toml'), main, (1, 7))
    assert len(errors) == 1 and 'runtimes.kata.options.ConfigPath' in errors[0]


def test_a_failed_validation_shows_its_last_three_lines():
    msg = validation_failed(['containerd', '--config', '/tmp/c.toml', 'config', 'dump'], 1, '',
                            'one\ntwo\n\nthree\nfour\n', '/tmp/c.toml')
    assert msg == 'validation "containerd --config %s config dump" failed (rc=1): two | three | four'
    assert validation_failed(['x', '/tmp/c.toml'], 2, '', '', '/tmp/c.toml') == (
        'validation "x %s" failed (rc=2): no output')
