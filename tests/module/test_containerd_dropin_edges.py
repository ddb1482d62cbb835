# -*- coding: utf-8 -*-
"""containerd_dropin at its edges: the validate command as given, its output in the message, the folder
messages, the diff header of a new file, backup only when asked, a folder two owners created, an import
listed twice. Each case was a surviving mutant of _edits/dropin.py."""

import json
import os

import pytest

from conftest import read
from test_containerd_dropin import NYDUS, _tree

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import _make_folder, _mode_of, importers
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger


def test_a_validate_command_is_run_as_given_and_its_last_three_lines_are_named(run_module, workdir):
    """A command whose name sorts after "load" is still the command (not replaced by auto); the message
    quotes the last three lines of its output and writes nothing."""
    main, dropin = _tree(workdir)
    script = "printf 'one\\ntwo\\nthree\\nfour\\n' >&2; exit 3"
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco',
                     validate="sh -c \"%s\" %%s" % script, expect_fail=True)
    assert res['msg'].split('failed (rc=3): ')[1] == 'two | three | four. Nothing was written.', res['msg']
    assert not os.path.exists(dropin)


def test_a_missing_folder_without_create_folder_is_named(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco',
                     create_folder=False, expect_fail=True)
    assert 'folder %s does not exist' % os.path.dirname(dropin) in res['msg'] and 'create_folder' in res['msg']
    assert not os.path.exists(os.path.dirname(dropin))


def test_the_check_mode_diff_of_a_new_folder_says_the_file_is_absent(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_dropin', check=True, diff=True, path=main, dropin=dropin, content=NYDUS,
                     owner='coco')
    assert res['diff']['before_header'] == '%s (absent)' % dropin and res['diff']['after'] == NYDUS


def test_no_backup_unless_asked(run_module, workdir):
    main, dropin = _tree(workdir)
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS.replace('nydus', 'nydus2'),
                     owner='coco')
    assert res['changed'] and 'backup_file' not in res
    assert sorted(os.listdir(os.path.dirname(dropin))) == ['nydus.toml']
    asked = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco', backup=True)
    assert os.path.isfile(asked['backup_file']) and 'nydus2' in read(asked['backup_file'])


def test_a_folder_another_owner_created_too_stays(run_module, workdir):
    """Both owners hold a record of creating the folder: the first to leave does not remove it."""
    main, dropin = _tree(workdir)
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    state = os.path.join(workdir, 'state')
    folder = os.path.dirname(dropin)
    ledger = Ledger.load(state, folder)
    record = dict([r for r in ledger.records if r['owner'] == 'coco'][0], owner='other')
    ledger.add(record)
    ledger.save(None)
    res = run_module('containerd_dropin', path=main, dropin=dropin, owner='coco', state='absent')
    assert res['removed'] and not res['folder_removed'] and os.path.isdir(folder)
    with open(Ledger.load(state, folder).path) as f:
        assert sorted(r['owner'] for r in json.load(f)['records']) == ['coco', 'other']


def test_an_import_listed_twice_names_its_file_once(workdir):
    main, dropin = _tree(workdir)
    os.makedirs(os.path.dirname(dropin))
    with open(dropin, 'w') as f:
        f.write(NYDUS)
    text = read(main)
    with open(main, 'w') as f:
        f.write('imports = ["%s", "%s"]\n' % (dropin, dropin) + text)
    assert importers(main, dropin, (1, 6, 20)) == [main]


@pytest.mark.parametrize('raw', ['u+rw', '0o644', 6.44, ['0644']])
def test_a_mode_that_is_not_octal_digits_is_named(raw):
    with pytest.raises(ConfigError) as exc:
        _mode_of({'mode': raw})
    assert exc.value.details['key'] == 'mode' and 'octal digits' in str(exc.value)


def test_a_folder_whose_parent_is_missing_is_named(tmp_path):
    folder = str(tmp_path / 'no-such-etc' / 'config.toml.d')
    with pytest.raises(ConfigError) as exc:
        _make_folder(Ledger.load(str(tmp_path / 'state'), folder), 'coco', folder, False)
    assert 'folder %s does not exist' % os.path.dirname(folder) in str(exc.value)
    assert not os.path.exists(os.path.dirname(folder))
