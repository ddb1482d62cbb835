# -*- coding: utf-8 -*-
"""exclusive's pieces called directly: what exclusive_plan finds unnamed in the ledgers, how a settings entry
names a recorded key, the release edit (OwnedRelease) on a real document and ledger, and how its result joins
the install's.

tests/module/test_containerd_config_exclusive.py runs whole calls against real
containerd; here the ledger records and the named entries meet one by one.
"""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import (
    EditSet,
    OwnedRelease,
    entries_of,
    exclusive_plan,
    join_release,
    refuse_exclusive_uninstall,
    setting_paths,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import runtime_present
from helpers.context import CRI_V2_PATH, GPU_NVIDIA_V2_RECORDS, RUNTIMES_V2_PATH, FakeContext, doc_and_ledger, saved_ledger

CRI = list(CRI_V2_PATH)
RT = list(RUNTIMES_V2_PATH)
ENABLE_CDI = 'plugins."io.containerd.grpc.v1.cri".enable_cdi'
CDI_DIRS = 'plugins."io.containerd.grpc.v1.cri".cdi_spec_dirs'
GPU_TOML = '/etc/containerd/conf.d/gpu.toml'

RECORDS = GPU_NVIDIA_V2_RECORDS + [
    {'owner': 'gpu', 'resource': 'runtime:nvidia-cdi', 'kind': 'table', 'path': RT + ['nvidia-cdi']},
    {'owner': 'gpu', 'resource': 'setting:' + ENABLE_CDI, 'kind': 'key', 'path': CRI + ['enable_cdi'],
     'prior': None, 'value': 'true'},
    {'owner': 'gpu', 'resource': 'setting:' + CDI_DIRS, 'kind': 'key', 'path': CRI + ['cdi_spec_dirs'],
     'prior': None, 'value': '["/etc/cdi"]'},
    {'owner': 'gpu', 'resource': 'import:' + GPU_TOML, 'kind': 'import', 'entry': GPU_TOML, 'added': True,
     'created_key': True},
    {'owner': 'ops', 'resource': 'runtime:crun', 'kind': 'table', 'path': RT + ['crun']},
]


def node(tmp_path, records=None, **call):
    """config.toml in tmp_path and a saved ledger holding records (default RECORDS); the params of an exclusive
    install."""
    path, state_dir = saved_ledger(tmp_path, RECORDS if records is None else records)
    params = dict(path=path, state_dir=state_dir, owner='gpu', state='present', exclusive=True, runtimes=[],
                  settings=[], imports=[])
    params.update(call)
    return params


def plan_of(tmp_path, **call):
    return exclusive_plan(FakeContext(containerd_version=(1, 7)), node(tmp_path, **call))


def test_nothing_named_releases_every_record_of_the_owner_default_first(tmp_path):
    plan = plan_of(tmp_path)
    assert plan['released'] == dict(runtimes=['runc', 'nvidia', 'nvidia-cdi'], tables=['nvidia', 'nvidia-cdi'],
                                    settings=[ENABLE_CDI, CDI_DIRS], imports=[GPU_TOML])
    assert plan['runtimes'] == ['nvidia', 'runc', 'nvidia-cdi'] and plan['defaults'] == []


def test_named_entries_are_kept_in_any_spelling(tmp_path):
    """A logical key, a raw key in other quotes and an import in another spelling name the recorded entries."""
    plan = plan_of(tmp_path, runtimes=[dict(name='runc'), dict(name='nvidia', default=True)],
                   settings=[dict(key='cri.enable_cdi', value=True),
                             dict(key="plugins.'io.containerd.grpc.v1.cri'.cdi_spec_dirs", value=[], raw=True)],
                   imports=['/etc/containerd/../containerd/conf.d/./gpu.toml'])
    assert plan['released'] == dict(runtimes=['nvidia-cdi'], tables=['nvidia-cdi'], settings=[], imports=[])
    assert plan['runtimes'] == ['nvidia-cdi'] and plan['defaults'] == []


@pytest.mark.parametrize('default', [None, False])
def test_a_named_runtime_without_default_true_gets_its_default_change_undone(tmp_path, default):
    plan = plan_of(tmp_path, runtimes=[dict(name='runc'), dict(name='nvidia', default=default),
                                       dict(name='nvidia-cdi')], settings=[dict(key='cri.enable_cdi', value=True),
                                                                           dict(key='cri.cdi_spec_dirs', value=[])],
                   imports=[GPU_TOML])
    assert plan['released'] == dict(runtimes=['nvidia'], tables=[], settings=[], imports=[])
    assert plan['runtimes'] == [] and plan['defaults'] == [dict(name='nvidia', default=default)]


def test_another_owner_s_records_and_a_released_mark_are_not_the_owner_s(tmp_path):
    released_mark = {'owner': 'gpu', 'resource': 'runtime:runc', 'kind': 'released', 'path': RT + ['runc']}
    plan = plan_of(tmp_path, records=[RECORDS[-1], released_mark], runtimes=[])
    assert plan['released'] == dict(runtimes=[], tables=[], settings=[], imports=[]) and plan['runtimes'] == []


def test_setting_paths_name_the_key_in_each_config_version():
    assert setting_paths(dict(key='cri.enable_cdi')) == set([
        ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi'), ('plugins', 'io.containerd.cri.v1.runtime', 'enable_cdi')])
    assert setting_paths(dict(key='a."b.c".d', raw=True)) == set([('a', 'b.c', 'd')])
    assert setting_paths(dict(key='a."b', raw=True)) == set()
    assert setting_paths(dict(key='no.such.logical')) == set()


def test_exclusive_with_state_absent_is_refused_naming_the_option():
    refuse_exclusive_uninstall(dict(exclusive=True, state='present', owner='gpu'))
    refuse_exclusive_uninstall(dict(exclusive=False, state='absent', owner='gpu'))
    with pytest.raises(ConfigError) as err:
        refuse_exclusive_uninstall(dict(exclusive=True, state='absent', owner='gpu'))
    assert str(err.value) == ('exclusive: true releases what owner gpu recorded and an install no longer names, so '
                              'it needs state: present. Nothing was written. Fix: leave exclusive out (release_all: true '
                              'with state: absent undoes everything the owner recorded).')
    assert err.value.given_details() == dict(key='exclusive')


TEXT = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')
NVIDIA = dict(name='nvidia', owner='gpu', options={'BinaryName': '/usr/bin/nvidia-container-runtime'})


def installed(tmp_path, default=True):
    """gpu's nvidia (the default when default) and nvidia-cdi, as runtime_present records them."""
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    runtime_present(doc, ledger, FakeContext(), dict(NVIDIA, default=default))
    runtime_present(doc, ledger, FakeContext(), dict(NVIDIA, name='nvidia-cdi'))
    return doc, ledger


def undo_of(names):
    settings, runtimes = entries_of(dict(state='absent', owner='gpu', settings=[],
                                         runtimes=[dict(name=n, force=False) for n in names]))
    return EditSet([], settings, runtimes, 'gpu', 'absent')


def test_the_release_puts_the_default_back_first_then_removes_what_is_not_named(tmp_path):
    doc, ledger = installed(tmp_path)
    ctx = FakeContext(containerd_version=(1, 7))
    out = OwnedRelease([dict(name='nvidia', default=None)], undo_of(['nvidia-cdi']), 'gpu')(doc, ledger, ctx)
    assert out['defaults_undone'] == ['nvidia'] and out['default_runtime_name'] == 'runc'
    assert [r['name'] for r in out['runtimes']] == ['nvidia-cdi'] and out['runtimes'][0]['removed']
    assert set(doc.runtimes()) == set(['runc', 'nvidia']) and ctx.warnings == []
    # what is left: the table of nvidia (the call names it), no record of the default
    assert [(r['resource'], r['kind']) for r in ledger.records] == [('runtime:nvidia', 'table')]


def test_a_default_the_call_s_own_default_false_puts_back_is_left_to_it(tmp_path):
    """check mode previews the install and the release on the same file: the default is undone once."""
    doc, ledger = installed(tmp_path)
    out = OwnedRelease([dict(name='nvidia', default=False)], None, 'gpu')(doc, ledger, FakeContext())
    assert out == dict(defaults_undone=[], default_runtime_name='nvidia') and doc.text != TEXT


def test_entries_without_records_in_this_file_are_left_to_their_file(tmp_path):
    """Recorded in another file of the tree (or undone already by an earlier step): no edit, no warning."""
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    ctx = FakeContext()
    settings, runtimes = entries_of(dict(state='absent', owner='gpu', settings=[dict(key=ENABLE_CDI, raw=True)],
                                         runtimes=[dict(name='runc', force=False)]))
    undo = EditSet([GPU_TOML], settings, runtimes, 'gpu', 'absent', dict(position='append'))
    out = OwnedRelease([dict(name='runc', default=None)], undo, 'gpu')(doc, ledger, ctx)
    assert out == dict(defaults_undone=[], default_runtime_name='runc')
    assert doc.text == TEXT and ctx.warnings == []


def test_the_release_splits_into_the_default_part_and_the_undo_s_parts():
    undo = undo_of(['a', 'b'])
    edit = OwnedRelease([dict(name='nvidia', default=None)], undo, 'gpu')
    assert len(edit.parts) == 3 and edit.parts[0].defaults and edit.parts[0].undo is None
    assert edit.parts[1:] == undo.parts
    assert OwnedRelease([], undo_of(['a']), 'gpu').parts is None
    assert OwnedRelease([dict(name='nvidia', default=None)], None, 'gpu').parts is None
    combined = edit.combine({}, [dict(defaults_undone=['nvidia'], default_runtime_name='runc'),
                                 dict(runtimes=[dict(name='a', removed=True)], default_runtime_name='runc')])
    assert combined['defaults_undone'] == ['nvidia'] and [r['name'] for r in combined['runtimes']] == ['a']


def test_the_release_joins_the_install_s_result():
    install = dict(changed=True, file='/etc/containerd/config.toml', validated='config dump', effects=[1],
                   default_runtime_name='nvidia', imports=dict(imports=['a', 'b'], missing=[], removed=['x']))
    release = dict(changed=True, file='/etc/containerd/conf.d/cdi.toml', validated='load test', effects=[2],
                   default_runtime_name='runc', imports=dict(imports=['a'], missing=[], removed=['b']))
    join_release(install, release)
    assert install['file'] == '/etc/containerd/config.toml' and install['validated'] == 'config dump'
    assert install['files'] == ['/etc/containerd/config.toml', '/etc/containerd/conf.d/cdi.toml']
    assert install['effects'] == [1, 2] and install['default_runtime_name'] == 'runc'
    assert install['imports'] == dict(imports=['a'], missing=[], removed=['x', 'b'])
    # an install that changed nothing: the file and the validation are the release's
    quiet = dict(changed=False, file='/etc/containerd/config.toml', effects=[])
    join_release(quiet, dict(release, imports=None))
    assert quiet['file'] == release['file'] and quiet['validated'] == 'load test' and 'files' not in quiet
    unchanged = dict(changed=False, file='x')
    join_release(unchanged, dict(changed=False, file='y', default_runtime_name='runc'))
    assert unchanged == dict(changed=False, file='x')


@pytest.mark.parametrize('version, released', [((1, 6), True), ((1, 7), False)])
def test_a_relative_glob_names_the_recorded_absolute_one_only_where_containerd_reads_them_alike(
        tmp_path, version, released):
    # containerd 1.6 expands a relative glob against /, 1.7 and later against the config's folder
    glob = str(tmp_path / 'conf.d' / '*.toml')
    records = [{'owner': 'gpu', 'resource': 'import:' + glob, 'kind': 'import', 'entry': glob, 'added': True,
                'created_key': True}]
    plan = exclusive_plan(FakeContext(containerd_version=version), node(tmp_path, records, imports=['conf.d/*.toml']))
    assert plan['released']['imports'] == ([glob] if released else [])
