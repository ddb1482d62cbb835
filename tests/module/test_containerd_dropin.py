# -*- coding: utf-8 -*-
"""containerd_dropin: a whole drop-in written for an owner (validated, atomic, in the ledger), removed only when
it is that owner's and nothing imports it; its folder removed when the owner created it.

Ported from the coco role's node-side script (files/coco_node.py write-file, mkdir-dropin and remove-dropins),
judged by the real containerd binaries.
"""

import json
import os
import re
import subprocess
import sys

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_1, REPO, assert_containerd_accepts, read
import pytest
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import _make_folder, _mode_of, importers
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger

NYDUS = '''version = 2

[proxy_plugins]
  [proxy_plugins.nydus]
    type = "snapshot"
    address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''


def _tree(workdir, fixture='v2_debian_stock.toml'):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    main = os.path.join(etc, 'config.toml')
    with open(main, 'w') as f:
        f.write(read(os.path.join(REPO, 'tests', 'fixtures', fixture)))
    return main, os.path.join(etc, 'config.toml.d', 'nydus.toml')


def _ledgers(workdir):
    folder = os.path.join(workdir, 'state', 'ledger')
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def test_write_validated_atomic_recorded_and_idempotent(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    assert res['changed'] and res['folder_created'] and res['validated'].startswith('containerd config dump')
    assert read(dropin) == NYDUS and os.stat(dropin).st_mode & 0o777 == 0o644
    assert_containerd_accepts(dropin)
    assert len(_ledgers(workdir)) == 2  # the drop-in's and the folder's
    again = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    assert not again['changed'] and again['owned']
    # a mode change alone is a change
    os.chmod(dropin, 0o600)
    assert run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')['changed']
    assert os.stat(dropin).st_mode & 0o777 == 0o644
    info = run_module('containerd_info', path=main, owner='coco', files=[dropin, os.path.dirname(dropin)], dump=False)
    assert info['files'][dropin]['owners'] == ['coco'] and not info['files'][dropin]['imported']
    assert info['owned']['files'] == sorted([dropin, os.path.dirname(dropin)])


def test_check_mode_and_diff_write_nothing(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_dropin', check=True, diff=True, path=main, dropin=dropin, content=NYDUS, owner='coco')
    assert res['changed'] and res['diff']['after'] == NYDUS
    assert not os.path.exists(os.path.dirname(dropin)) and _ledgers(workdir) == []
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    changed = NYDUS.replace('grpc.sock', 'other.sock')
    res = run_module('containerd_dropin', check=True, diff=True, path=main, dropin=dropin, content=changed,
                     owner='coco')
    assert res['changed'] and 'grpc.sock' in res['diff']['before'] and 'other.sock' in res['diff']['after']
    assert read(dropin) == NYDUS
    res = run_module('containerd_dropin', check=True, path=main, dropin=dropin, state='absent', owner='coco')
    assert res['changed'] and res['removed'] and res['folder_removed'] and os.path.exists(dropin)


def test_invalid_candidate_refused_nothing_written(run_module, workdir):
    main, dropin = _tree(workdir)
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    # the node's containerd refuses what it cannot parse
    res = run_module('containerd_dropin', path=main, dropin=dropin, content='version = 2\n[oops\n', owner='coco',
                     containerd_bin=CONTAINERD_1, expect_fail=True)
    assert 'validation' in res['msg'] and 'Nothing was written' in res['msg']
    # without containerd's check, nodeguard's own parse still refuses it
    res = run_module('containerd_dropin', path=main, dropin=dropin, content='version = 2\n[oops\n', owner='coco',
                     validate='none', expect_fail=True)
    assert 'Nothing was written' in res['msg']
    assert read(dropin) == NYDUS
    assert [n for n in os.listdir(os.path.dirname(dropin)) if n != 'nydus.toml'] == []  # no temporary file left


def test_candidate_checked_in_the_tree_once_imported(run_module, workdir):
    """Imported: the tree with the candidate must still load (1.6: a CRI table in a drop-in replaces the main one)."""
    main, dropin = _tree(workdir)
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    run_module('containerd_imports', path=main, imports=[dropin], owner='coco')
    bad = NYDUS + '\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nope"\n'
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=bad, owner='coco', expect_fail=True)
    assert 'would not load' in res['msg'] and 'nope' in res['msg']
    assert read(dropin) == NYDUS
    assert_containerd_accepts(main)


def test_absent_removes_only_the_owners_file_and_never_an_imported_one(run_module, workdir):
    main, dropin = _tree(workdir)
    folder = os.path.dirname(dropin)
    other = os.path.join(folder, 'operator.toml')
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    with open(other, 'w') as f:
        f.write('version = 2\n')
    # a file the owner did not write is left alone
    res = run_module('containerd_dropin', path=main, dropin=other, state='absent', owner='coco')
    assert not res['changed'] and 'left alone' in res['msg'] and os.path.exists(other)
    # still imported (by another owner): kept
    run_module('containerd_imports', path=main, imports=[dropin], owner='gpu')
    res = run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco')
    assert res['kept'] and res['imported_by'] == [main] and os.path.exists(dropin)
    run_module('containerd_imports', path=main, imports=[dropin], owner='gpu', state='absent')
    # not imported any more: removed; the folder holds another file: kept
    res = run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco')
    assert res['removed'] and not res['folder_removed'] and not os.path.exists(dropin) and os.path.isdir(folder)
    assert_containerd_accepts(main)
    os.unlink(other)
    # the folder goes with the owner's last call once it is empty
    res = run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco')
    assert res['folder_removed'] and not os.path.exists(folder)
    assert _ledgers(workdir) == [n for n in _ledgers(workdir) if 'config.toml.d' not in n]


def test_folder_that_existed_is_never_removed(run_module, workdir):
    main, dropin = _tree(workdir)
    os.makedirs(os.path.dirname(dropin))
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    assert not res['folder_created']
    res = run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco')
    assert res['removed'] and not res['folder_removed'] and os.path.isdir(os.path.dirname(dropin))


def test_killed_write_leaves_a_temp_the_next_run_removes(run_module, workdir):
    main, dropin = _tree(workdir)
    os.makedirs(os.path.dirname(dropin))
    stale = os.path.join(os.path.dirname(dropin), '.nydus.toml.x1y2z3.nodeguard-tmp')
    with open(stale, 'w') as f:
        f.write('half')
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    assert os.listdir(os.path.dirname(dropin)) == ['nydus.toml']


def test_link_refused(run_module, workdir):
    main, dropin = _tree(workdir)
    os.makedirs(os.path.dirname(dropin))
    os.symlink(main, dropin)
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco', expect_fail=True)
    assert 'symbolic link' in res['msg']


INCLUDED = '''
- name: Drop-in through the group defaults
  nodeguard.containerd.containerd_dropin:
    dropin: {dropin}
    content: "{{{{ nydus }}}}"
    owner: coco
- name: Facts through the group defaults
  nodeguard.containerd.containerd_info:
    owner: coco
    dump: false
    files: [{dropin}]
  register: info
- name: The defaults reached both
  ansible.builtin.assert:
    that:
      - info.config.path == "{path}"
      - info.files["{dropin}"].owners == ["coco"]
'''

PLAY = '''
- name: module_defaults of a block reach an included task file
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    nydus: {nydus}
  tasks:
    - name: The shared options once
      module_defaults:
        group/nodeguard.containerd.containerd:
          path: {path}
          state_dir: {state}
          lock_timeout: 10
          validate: auto
          backup: false
      block:
        - name: Include
          ansible.builtin.include_tasks: {included}
'''


def test_module_defaults_reach_included_task_files(workdir):
    """The coco role sets the group's options once in tasks/main.yml around its include_tasks."""
    main, dropin = _tree(workdir)
    state = os.path.join(workdir, 'state')
    included = os.path.join(workdir, 'included.yml')
    with open(included, 'w') as f:
        f.write(INCLUDED.format(dropin=dropin, path=main))
    play = os.path.join(workdir, 'play.yml')
    with open(play, 'w') as f:
        f.write(PLAY.format(nydus=json.dumps(NYDUS), path=main, state=state, included=included))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS_ROOT, ANSIBLE_CONFIG=os.path.join(REPO, 'ansible.cfg'),
               ANSIBLE_NOCOLOR='1')
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), 'ansible-playbook'), '-i', 'localhost,',
                           '-e', 'ansible_python_interpreter=' + sys.executable, play],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r'localhost\s*:\s*ok=\d+\s+changed=1\s', proc.stdout), proc.stdout[-1500:]
    assert read(dropin) == NYDUS
    assert os.path.isdir(os.path.join(state, 'ledger'))  # state_dir came from the defaults


def test_dropins_removes_several_in_one_call_as_one_call_each_would(run_module, workdir):
    """Two of coco's drop-ins and one it did not write: one call removes coco's, keeps the other, then the folder."""
    main, dropin = _tree(workdir)
    folder = os.path.dirname(dropin)
    runtimes = os.path.join(folder, 'runtimes.toml')
    other = os.path.join(folder, 'operator.toml')
    run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco')
    run_module('containerd_dropin', path=main, dropin=runtimes, content='version = 2\n', owner='coco')
    with open(other, 'w') as f:
        f.write('version = 2\n')
    run_module('containerd_imports', path=main, imports=[runtimes], owner='gpu')
    # check mode and diff: nothing goes
    res = run_module('containerd_dropin', check=True, diff=True, path=main, dropins=[dropin, runtimes, other],
                     state='absent', owner='coco')
    assert res['changed'] and [d['removed'] for d in res['dropins']] == [True, False, False]
    assert res['diff'][0]['before'] == NYDUS and os.path.exists(dropin)
    res = run_module('containerd_dropin', path=main, dropins=[dropin, runtimes, other], state='absent', owner='coco')
    assert res['changed'] and res['removed'] and res['kept'] and not res['folder_removed']
    assert [(d['dropin'], d['removed'], d['kept']) for d in res['dropins']] == [
        (dropin, True, False), (runtimes, False, True), (other, False, False)]
    assert res['imported_by'] == [main] and 'left alone' in res['dropins'][2]['msg']
    assert not os.path.exists(dropin) and os.path.exists(runtimes) and os.path.exists(other)
    assert_containerd_accepts(main)
    # nothing imports it any more and the foreign file is gone: the last of coco's files, then the folder
    run_module('containerd_imports', path=main, imports=[runtimes], owner='gpu', state='absent')
    os.unlink(other)
    res = run_module('containerd_dropin', path=main, dropins=[dropin, runtimes], state='absent', owner='coco')
    assert res['removed'] and res['folder_removed'] and not os.path.exists(folder)
    assert [d['removed'] for d in res['dropins']] == [False, True]
    res = run_module('containerd_dropin', path=main, dropins=[dropin, runtimes], state='absent', owner='coco')
    assert not res['changed']


def test_dropins_only_removes(run_module, workdir):
    main, dropin = _tree(workdir)
    res = run_module('containerd_dropin', path=main, dropins=[dropin], content=NYDUS, owner='coco', expect_fail=True)
    assert 'dropin' in res['msg']
    assert not os.path.exists(dropin)


# ------------------------------------------------------------------ the validate command, folder messages, the diff of a new file, backup, a shared folder
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
