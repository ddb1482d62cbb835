# -*- coding: utf-8 -*-
"""An edit the engine moves to the drop-in that decides it:
the drop-in is locked while it is checked, its candidate (not the file on
disk) is what the built-in checks judge, the install says where it wrote
and the uninstall does not, and an uninstall over two files reports both.

containerd 2.1 deep-merges drop-ins (version 3), so a key set in a drop-in
shadows config.toml's without replacing its plugin tables.  The module runs
in this process (ansible's patch_module_args), validated by the real 2.1.
"""

import fcntl
import json
import os
import stat
import sys

import pytest

from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_2, fixture_text, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import tree_records
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_runtime
from helpers.engine import IMAGES, RUNTIME, import_later_dropin, make_node, setting


@pytest.fixture
def node(tmp_path):
    return make_node(tmp_path)


def test_the_install_says_it_wrote_to_the_drop_in_and_the_uninstall_does_not(node, capsys):
    res = setting(node, capsys, key='images.snapshotter', value='native')
    assert res['changed'] and res['file'] == node['dropin']
    assert "snapshotter = 'native'" in read(node['dropin'])
    said = [w for w in res['warnings'] if 'where containerd reads it' in w]
    assert said == ['%s: the change is written to %s, where containerd reads it (nodeguard records it there and '
                    'undoes it there on state: absent)' % (node['path'], node['dropin'])]
    res = setting(node, capsys, key='images.snapshotter', state='absent')
    assert res['changed'] and res['file'] == node['dropin'] and "snapshotter = 'overlayfs'" in read(node['dropin'])
    assert [w for w in res['warnings'] if 'where containerd reads it' in w] == []


def test_the_drop_in_candidate_is_what_the_built_in_checks_judge(node, capsys):
    # containerd's config dump accepts a default runtime that is not defined; the built-in check must see
    # the drop-in as it would be written, not as it is on disk (where 'runc' is fine)
    before, dropin_before = read(node['path']), read(node['dropin'])
    res = setting(node, capsys, key='cri.default_runtime_name', value='gpu')
    assert res['failed']
    assert res['msg'].startswith('refusing to write %s: the new config would not load.' % node['dropin'])
    assert "default_runtime_name is 'gpu' but no runtime table of that name is defined" in res['msg']
    assert read(node['path']) == before and read(node['dropin']) == dropin_before


def test_the_drop_in_is_locked_while_its_candidate_is_checked(node, capsys, tmp_path):
    # another nodeguard run (or a tool taking nodeguard's lock) on the drop-in waits until this write is done
    lock = os.path.join(os.path.dirname(node['dropin']), '.10-site.toml.nodeguard.lock')
    main_lock = os.path.join(os.path.dirname(node['path']), '.config.toml.nodeguard.lock')
    probe = tmp_path / 'probe.py'
    probe.write_text('import fcntl, sys\nfor lock in %r:\n    f = open(lock, "a")\n    try:\n'
                     '        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\n    except OSError:\n        continue\n'
                     '    sys.exit("%%s is not locked" %% lock)\n' % ([lock, main_lock],))
    probe.chmod(probe.stat().st_mode | stat.S_IXUSR)
    res = setting(node, capsys, key='images.snapshotter', value='native',
                  validate='%s %s %%s' % (sys.executable, probe))
    assert 'failed' not in res, res['msg']
    assert res['changed'] and res['file'] == node['dropin']
    # and released at the end
    for path in (lock, main_lock):
        with open(path) as f:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_an_uninstall_over_the_drop_in_and_config_toml_reports_both_files(node, capsys):
    setting(node, capsys, key='images.snapshotter', value='native')  # goes to the drop-in
    setting(node, capsys, key='cri.enable_cdi', value=False)  # stays in config.toml
    res = setting(node, capsys, settings=[dict(key='images.snapshotter'), dict(key='cri.enable_cdi')],
                  state='absent')
    assert res['changed'] and res['files'] == [node['dropin'], node['path']]
    assert res['file'] == node['path']  # the last file written
    assert "snapshotter = 'overlayfs'" in read(node['dropin']) and 'enable_cdi = true' in read(node['path'])


def test_check_mode_says_the_change_would_go_to_the_drop_in_and_writes_nothing(node, capsys):
    before, dropin_before = read(node['path']), read(node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', value='native', _ansible_check_mode=True)
    assert res['changed'] and res['file'] == node['dropin']
    assert '%s: the change would be written to %s, where containerd reads it' % (node['path'], node['dropin']) \
        in res['warnings'][0]
    assert read(node['path']) == before and read(node['dropin']) == dropin_before


def test_edit_in_a_drop_in_that_a_later_one_overrides_is_refused_even_in_check_mode(node, capsys):
    later = import_later_dropin(node, "version = 3\n%s  snapshotter = 'zfs'\n" % IMAGES)
    text = read(node['path'])
    dropin_before = read(node['dropin'])
    for check in (True, False):
        res = setting(node, capsys, key='images.snapshotter', value='native', edit_in=node['dropin'],
                      _ansible_check_mode=check)
        assert res['failed'], res
        assert res['msg'].startswith('refusing to write %s: plugins."io.containerd.cri.v1.images".snapshotter = '
                                     "'native' in %s has no effect: %s sets" % (node['dropin'], node['dropin'], later))
        assert res['msg'].endswith('Fix: change or remove that drop-in (%s) and run again.' % later)
        assert 'edit_in: auto' not in res['msg']  # edit_in named the file: auto is no fix here
        assert read(node['dropin']) == dropin_before and read(node['path']) == text


def test_a_batch_that_changes_one_file_reports_that_file_alone(node, capsys):
    # split into its parts (one goes to the drop-in), only one of which changes anything
    res = setting(node, capsys, diff=True, settings=[dict(key='images.snapshotter', value='native'),
                                                     dict(key='cri.enable_cdi', value=True)])
    assert res['changed'] and res['file'] == node['dropin'] and 'files' not in res
    assert res['diff']['before_header'] == '%s (before)' % node['dropin']
    assert res['diff']['after_header'] == '%s (after)' % node['dropin']
    # its check mode says so too, though the last part alone changes nothing
    setting(node, capsys, key='images.snapshotter', state='absent')
    res = setting(node, capsys, settings=[dict(key='images.snapshotter', value='native'),
                                          dict(key='cri.enable_cdi', value=True)], _ansible_check_mode=True)
    assert res['changed'] is True and "snapshotter = 'overlayfs'" in read(node['dropin'])


# ------------------------------------------------------------------ an uninstall over three drop-ins
KEYS = dict(snapshotter=('images.snapshotter', 'native', IMAGES + "  snapshotter = 'overlayfs'\n"),
            cdi=('cri.enable_cdi', False, "[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = true\n"),
            annotations=('images.disable_snapshot_annotations', False,
                         IMAGES + '  disable_snapshot_annotations = true\n'))


@pytest.fixture
def three(tmp_path):
    """config.toml importing 10-a, 20-b and 30-c, each deciding one key; cdi_spec_dirs lives in config.toml."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    dropins = []
    for name, what in (('10-a', 'snapshotter'), ('20-b', 'cdi'), ('30-c', 'annotations')):
        dropin = etc / 'conf.d' / (name + '.toml')
        dropin.write_text('version = 3\n' + KEYS[what][2])
        dropins.append(str(dropin))
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml').replace('imports = []', 'imports = %s' % json.dumps(dropins), 1))
    return dict(path=str(path), dropins=dropins, state=str(tmp_path / 'state'), tmp=str(tmp_path))


ALL = [dict(key=KEYS[k][0], value=KEYS[k][1]) for k in ('snapshotter', 'cdi', 'annotations')] + [
    dict(key='cri.cdi_spec_dirs', value=['/etc/cdi'])]


def test_a_batch_whose_keys_different_drop_ins_decide_writes_each_where_it_is_decided(three, capsys):
    # as separate calls would (such a batch was refused as "has no effect" before)
    res = setting(three, capsys, settings=ALL[:2])  # two drop-ins
    assert res.get('changed'), res.get('msg')
    assert res['files'] == three['dropins'][:2]
    res = setting(three, capsys, settings=ALL)  # the third drop-in and config.toml: the first two are done
    assert res.get('changed'), res.get('msg')
    assert res['files'] == [three['dropins'][2], three['path']]
    res = setting(three, capsys, settings=ALL)
    assert not res['changed']
    assert 'native' in read(three['dropins'][0])
    assert 'enable_cdi = false' in read(three['dropins'][1])
    assert 'disable_snapshot_annotations = false' in read(three['dropins'][2])


def test_an_uninstall_undoes_each_drop_in_then_config_toml_and_names_the_last_file_written(three, capsys):
    setting(three, capsys, settings=ALL)
    res = setting(three, capsys, settings=[dict(key=s['key']) for s in ALL], state='absent')
    assert res['changed'] and res['file'] == three['path']
    assert res['files'] == sorted(three['dropins'] + [three['path']])
    # again, leaving config.toml's key: the last file written is the first drop-in (undone last)
    setting(three, capsys, settings=ALL)
    res = setting(three, capsys, settings=[dict(key=s['key']) for s in ALL[:3]], state='absent')
    assert res['changed'] and res['file'] == three['dropins'][0]
    assert res['files'] == sorted(three['dropins'])
    assert "'/etc/cdi'" in read(three['path']) or '"/etc/cdi"' in read(three['path'])


def test_check_mode_of_a_split_batch_reports_every_part_it_would_change(three, capsys):
    # the parts' previews: two of three change (in two files), the last one does not
    before = [read(p) for p in three['dropins'] + [three['path']]]
    settings = [dict(key='images.snapshotter', value='native'), dict(key='cri.cdi_spec_dirs', value=['/etc/cdi']),
                dict(key='cri.enable_cdi', value=True)]
    res = setting(three, capsys, settings=settings, _ansible_check_mode=True)
    assert res['changed'] is True and res['files'] == sorted([three['path'], three['dropins'][0]])
    assert sorted(e['key'].rsplit('.', 1)[1] for e in res['effects']) == ['cdi_spec_dirs', 'snapshotter']
    assert [read(p) for p in three['dropins'] + [three['path']]] == before


def test_an_uninstall_of_one_key_goes_where_its_record_is_and_leaves_the_owners_other_keys(three, capsys):
    setting(three, capsys, settings=ALL)
    res = setting(three, capsys, key='images.snapshotter', state='absent')
    assert res['changed'] is True and res['file'] == three['dropins'][0]
    assert "snapshotter = 'overlayfs'" in read(three['dropins'][0])
    assert 'disable_snapshot_annotations = false' in read(three['dropins'][2])


def test_one_key_recorded_in_config_toml_and_then_in_a_drop_in_is_undone_in_both(tmp_path, capsys):
    # installed while config.toml decided it, then again after a drop-in (another tool's) took the key over
    etc = tmp_path / 'etc'
    (etc / 'snap.d').mkdir(parents=True)
    dropin = etc / 'snap.d' / '10-site.toml'
    path = etc / 'config.toml'
    default = fixture_text('v3_default.toml')
    path.write_text(default)
    node = dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))
    assert setting(node, capsys, key='images.snapshotter', value='native')['file'] == str(path)
    dropin.write_text("version = 3\n%s  snapshotter = 'overlayfs'\n" % IMAGES)
    path.write_text(read(str(path)).replace('imports = []', 'imports = ["%s"]' % dropin, 1))
    assert setting(node, capsys, key='images.snapshotter', value='zfs')['file'] == str(dropin)
    res = setting(node, capsys, diff=True, key='images.snapshotter', state='absent')
    assert res['changed'] and res['files'] == [str(dropin), str(path)] and res['file'] == str(path)
    assert res['restored'] == ['plugins."io.containerd.cri.v1.images".snapshotter']
    assert [d['after_header'] for d in res['diff']] == ['%s (after)' % dropin, '%s (after)' % path]
    assert "snapshotter = 'overlayfs'" in read(str(dropin)) and "snapshotter = 'overlayfs'" in read(str(path))


def test_an_uninstall_with_nothing_left_to_undo_in_the_drop_in_still_clears_its_records(node, capsys):
    # another tool removed the key from the drop-in: nothing to put back, but the records there must go
    setting(node, capsys, key='images.snapshotter', value='native')
    with open(node['dropin'], 'w') as f:
        f.write("version = 3\n%s  default_runtime_name = 'runc'\n" % RUNTIME)
    dropin_before = read(node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', state='absent')
    assert res['file'] == node['dropin'] and read(node['dropin']) == dropin_before
    assert [r for r in tree_records(node['state'], node['path'], (2, 1)) if r['owner'] == 'coco'] == []


def test_a_drop_in_that_is_a_link_is_written_in_its_target_with_follow_and_the_link_stays(node, capsys, tmp_path):
    vendor = tmp_path / 'vendor'
    vendor.mkdir()
    target = vendor / 'site.toml'
    os.rename(node['dropin'], str(target))
    os.symlink(str(target), node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', value='native')
    assert res['failed'] and res['msg'].startswith('%s is a symbolic link to %s.' % (node['dropin'], target))
    res = setting(node, capsys, key='images.snapshotter', value='native', follow=True)
    assert res['changed'] and res['file'] == node['dropin']
    assert os.readlink(node['dropin']) == str(target) and "snapshotter = 'native'" in read(str(target))


def test_edit_in_config_with_a_batch_that_drop_ins_decide_is_refused_naming_every_key(three, capsys):
    before = [read(p) for p in three['dropins'] + [three['path']]]
    res = setting(three, capsys, settings=ALL[:2], edit_in='config')
    assert res['failed']
    assert 'snapshotter' in res['msg'] and 'enable_cdi' in res['msg']
    assert 'edit_in: auto writes the change' in res['msg']
    assert [read(p) for p in three['dropins'] + [three['path']]] == before


def test_edit_in_config_names_only_the_keys_that_would_have_no_effect(three, capsys):
    # the first drop-in already says what the batch wants: only enable_cdi is lost
    with open(three['dropins'][0], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    res = setting(three, capsys, settings=ALL[:2], edit_in='config')
    assert res['failed'] and 'enable_cdi = False in %s has no effect' % three['path'] in res['msg']
    assert 'snapshotter' not in res['msg'].split('Fix:')[0] and three['dropins'][1] in res['msg']


def test_edit_in_config_writes_config_toml_when_the_drop_in_already_agrees(node, capsys):
    with open(node['dropin'], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    res = setting(node, capsys, key='images.snapshotter', value='native', edit_in='config')
    assert res['changed'] and res['file'] == node['path'] and "snapshotter = 'native'" in read(node['path'])


def test_one_edit_whose_keys_two_drop_ins_decide_is_refused_naming_both(three, capsys):
    # not a batch: it cannot be split, and moving it whole to one drop-in would put the other's key there
    from ansible.module_utils.basic import AnsibleModule
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
    before = [read(p) for p in three['dropins'] + [three['path']]]

    def edit(doc, ledger, ctx):
        doc.toml.set_value(('plugins', 'io.containerd.cri.v1.images', 'snapshotter'), 'native')
        doc.toml.set_value(('plugins', 'io.containerd.cri.v1.runtime', 'enable_cdi'), False)
        return {}

    params = dict(path=three['path'], state_dir=three['state'], owner='coco', containerd_bin=CONTAINERD_2,
                  _ansible_tmpdir=three['tmp'], _ansible_remote_tmp=three['tmp'])
    with patch_module_args(params):
        module = AnsibleModule(argument_spec=dict(_engine.COMMON_ARGUMENT_SPEC, state=dict(type='str')))
        with pytest.raises(SystemExit):
            _engine.run_transaction(module, edit)
    res = json.loads(capsys.readouterr().out)
    assert res['failed'] and res['msg'].endswith('change or remove that drop-in (%s, %s) and run again.'
                                                 % tuple(three['dropins'][:2]))
    assert [read(p) for p in three['dropins'] + [three['path']]] == before


def test_a_batch_entry_that_is_not_valid_fails_before_anything_is_read(node, capsys):
    before = read(node['dropin'])
    res = setting(node, capsys, settings=[dict(key='images.snapshotter')])
    assert res['failed'] and res['key'] == 'settings[0].value'
    assert res['msg'] == ('settings[0] (images.snapshotter): state=present needs a value. Nothing was written. '
                          'Fix: give value.')
    assert read(node['dropin']) == before
    # a batch of one entry is one call
    res = setting(node, capsys, settings=[dict(key='images.snapshotter', value='native')])
    assert res['changed'] and res['file'] == node['dropin']


def test_an_uninstall_over_two_files_reports_what_each_gave_back(node, capsys):
    # the single-file results merge: lists are united, a flag is true when any file's is
    from ansible.module_utils.basic import AnsibleModule
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
    for path in (node['dropin'], node['path']):
        ledger = Ledger(node['state'], path)
        ledger.add({'owner': 'coco', 'resource': 'setting:x', 'kind': 'key', 'path': ['x'], 'prior': None,
                    'value': '1'})
        ledger.save(sha256_bytes(read(path, 'rb')))

    def edit(doc, ledger, ctx):
        for record in ledger.select(owner='coco'):
            ledger.remove(record)
        main = doc.path == node['path']
        key = ('plugins', 'io.containerd.cri.v1.runtime', 'cdi_spec_dirs') if main else \
            ('plugins', 'io.containerd.cri.v1.images', 'snapshotter')
        doc.toml.set_value(key, ['/etc/cdi'] if main else 'native')
        return dict(removed=[os.path.basename(doc.path)], restored=main, kept=[] if main else ['k'])

    params = dict(path=node['path'], state_dir=node['state'], owner='coco', containerd_bin=CONTAINERD_2,
                  state='absent', _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])
    with patch_module_args(params):
        module = AnsibleModule(argument_spec=dict(_engine.COMMON_ARGUMENT_SPEC, state=dict(type='str')))
        with pytest.raises(SystemExit):
            _engine.run_transaction(module, edit)
    res = json.loads(capsys.readouterr().out)
    assert res['changed'] and res['files'] == [node['dropin'], node['path']]
    assert res['removed'] == ['10-site.toml', 'config.toml'] and res['restored'] is True and res['kept'] == ['k']


def _dropin_says_native(node):
    with open(node['dropin'], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)


def test_a_value_config_toml_already_holds_but_a_drop_in_overrides_is_written_to_the_drop_in(node, capsys):
    # config.toml says overlayfs already, so the edit changes no byte there; the drop-in decides native
    _dropin_says_native(node)
    before = read(node['path'])
    res = setting(node, capsys, key='images.snapshotter', value='overlayfs')
    assert res.get('changed') and res['file'] == node['dropin'], res
    assert "snapshotter = 'overlayfs'" in read(node['dropin']) and read(node['path']) == before
    again = setting(node, capsys, key='images.snapshotter', value='overlayfs')
    assert not again['changed'] and again['file'] == node['path'], again


def test_a_value_config_toml_already_holds_is_refused_with_edit_in_config_when_a_drop_in_overrides(node, capsys):
    _dropin_says_native(node)
    before, dropin = read(node['path']), read(node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', value='overlayfs', edit_in='config')
    assert res['failed'] and 'has no effect' in res['msg'] and node['dropin'] in res['msg'], res
    assert read(node['path']) == before and read(node['dropin']) == dropin


def test_check_mode_says_a_value_config_toml_already_holds_would_go_to_the_overriding_drop_in(node, capsys):
    _dropin_says_native(node)
    dropin = read(node['dropin'])
    res = setting(node, capsys, key='images.snapshotter', value='overlayfs', _ansible_check_mode=True)
    assert res['changed'] and res['file'] == node['dropin'] and read(node['dropin']) == dropin, res


def test_a_default_runtime_config_toml_already_names_but_a_drop_in_overrides_is_written_to_the_drop_in(node, capsys):
    # config.toml defines nvidia and names it the default; the drop-in names runc, so runc is what runs
    text = read(node['path']).replace("default_runtime_name = 'runc'", "default_runtime_name = 'nvidia'")
    text += ("\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
             "  runtime_type = 'io.containerd.runc.v2'\n")
    with open(node['path'], 'w') as f:
        f.write(text)
    res = setting(node, capsys, module=containerd_runtime, name='nvidia', runtime_type='io.containerd.runc.v2',
                  default=True, owner='gpu')
    assert res.get('changed') and res['file'] == node['dropin'], res
    assert "default_runtime_name = 'nvidia'" in read(node['dropin']) and read(node['path']) == text


def test_a_runtime_change_config_toml_defines_but_a_drop_in_decides_the_default_is_refused_naming_both(node, capsys):
    # the runtime's table is in config.toml, the default in the drop-in: one call cannot write both
    text = read(node['path']) + ("\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
                                 "  runtime_type = 'io.containerd.runc.v2'\n")
    with open(node['path'], 'w') as f:
        f.write(text)
    dropin = read(node['dropin'])
    res = setting(node, capsys, module=containerd_runtime, name='nvidia', options={'BinaryName': '/usr/bin/nv'},
                  default=True, owner='gpu')
    assert res['failed'] and res['msg'].startswith(
        '%s: runtime nvidia is defined in %s, another file of the config tree containerd reads.'
        % (node['dropin'], node['path'])), res['msg']
    assert 'Fix: make the change in two calls' in res['msg']
    assert read(node['path']) == text and read(node['dropin']) == dropin
    # the fix works: the settings go to config.toml, then the default to the drop-in
    first = setting(node, capsys, module=containerd_runtime, name='nvidia', options={'BinaryName': '/usr/bin/nv'},
                    owner='gpu')
    assert first['changed'] and first['file'] == node['path'] and "BinaryName = '/usr/bin/nv'" in read(node['path'])
    second = setting(node, capsys, module=containerd_runtime, name='nvidia', default=True, owner='gpu')
    assert second['changed'] and second['file'] == node['dropin'], second
    assert "default_runtime_name = 'nvidia'" in read(node['dropin'])
    # and both undo where they were written: the original bytes come back
    gone = setting(node, capsys, module=containerd_runtime, name='nvidia', state='absent', owner='gpu')
    assert gone['changed'], gone
    assert read(node['dropin']) == dropin and read(node['path']) == text


# ------------------------------------------------------------------ the file options are config.toml's, and edit_in: config
@pytest.fixture
def node_0644(tmp_path):
    """make_node's tree (config.toml importing conf.d/10-site.toml), both files mode 0644."""
    made = make_node(tmp_path)
    for path in (made['path'], made['dropin']):
        os.chmod(path, 0o644)
    return made


def test_the_file_options_are_config_tomls_not_the_drop_ins_the_edit_goes_to(node_0644, capsys):
    res = setting(node_0644, capsys, key='images.snapshotter', value='native', mode='0600')
    assert res['changed'] and res['file'] == node_0644['dropin']
    assert "snapshotter = 'native'" in read(node_0644['dropin'])
    assert stat.S_IMODE(os.stat(node_0644['dropin']).st_mode) == 0o644


def test_edit_in_config_refuses_a_batch_whose_unchanged_key_a_drop_in_overrides(node_0644, capsys):
    # config.toml already says overlayfs (no byte to change there) while the drop-in decides native; the other
    # key of the batch would change config.toml: the batch is refused whole, naming the key without effect
    with open(node_0644['dropin'], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    before = [read(node_0644['path']), read(node_0644['dropin'])]
    res = setting(node_0644, capsys, settings=[dict(key='images.snapshotter', value='overlayfs'),
                                               dict(key='cri.cdi_spec_dirs', value=['/etc/cdi'])], edit_in='config')
    assert res['failed']
    assert "snapshotter = 'overlayfs' in %s has no effect" % node_0644['path'] in res['msg']
    assert [read(node_0644['path']), read(node_0644['dropin'])] == before


def test_edit_in_config_writes_config_toml_when_two_drop_ins_already_agree(three, capsys):
    # each key is decided by its own drop-in, which says what the batch wants: in effect, so no refusal
    # (it was refused as "has no effect: None"); as with one drop-in that agrees, config.toml is written
    with open(three['dropins'][0], 'w') as f:
        f.write("version = 3\n%s  snapshotter = 'native'\n" % IMAGES)
    with open(three['dropins'][1], 'w') as f:
        f.write("version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n")
    dropins = [read(p) for p in three['dropins']]
    res = setting(three, capsys, settings=[dict(key='images.snapshotter', value='native'),
                                           dict(key='cri.enable_cdi', value=False)], edit_in='config')
    assert res.get('changed'), res.get('msg')
    assert "snapshotter = 'native'" in read(three['path']) and 'enable_cdi = false' in read(three['path'])
    assert [e['in_effect'] for e in res['effects']] == [True, True]
    assert [read(p) for p in three['dropins']] == dropins
