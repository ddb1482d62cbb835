# -*- coding: utf-8 -*-
"""_edit_set (containerd_config's one-call edit): its input checks, its order and how it merges split steps.

The module tests (tests/module/test_containerd_config.py) run the whole call on
real files and containerd; these pin what they cannot see from the outside: the
option each refusal names (the ``key`` a failed module returns), the kinds'
order in one edit and in the parts of a split one, and which step's view a
merged result keeps.
"""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import (
    KIND_ORDER,
    EditSet,
    dropins_of,
)

CONF_D = '/etc/containerd/conf.d'


def params(dropins, state='present'):
    return dict(path='/etc/containerd/config.toml', owner='coco', state_dir='/var/lib/nodeguard', validate='auto',
                backup=False, lock_timeout=30, state=state, dropins=dropins)


def refusal(dropins, state='present'):
    with pytest.raises(ConfigError) as err:
        dropins_of(params(dropins, state))
    return str(err.value), err.value.given_details()


def test_each_drop_in_becomes_containerd_dropin_params():
    out = dropins_of(params([
        dict(path=CONF_D + '/../conf.d/nydus.toml', content='a = 1\n'),
        dict(path=CONF_D + '/kata.toml', content='', mode='0600', create_folder=False),
    ]))
    common = dict(path='/etc/containerd/config.toml', owner='coco', state_dir='/var/lib/nodeguard', validate='auto',
                  backup=False, lock_timeout=30)
    assert out == [dict(common, dropin=CONF_D + '/nydus.toml', content='a = 1\n', mode=None, create_folder=True),
                   dict(common, dropin=CONF_D + '/kata.toml', content='', mode='0600', create_folder=False)]


def test_no_drop_ins_is_an_empty_list():
    assert dropins_of(params(None)) == [] and dropins_of(params([])) == []


def test_a_relative_path_is_refused_naming_its_entry():
    msg, details = refusal([dict(path=CONF_D + '/a.toml', content=''), dict(path='conf.d/b.toml', content='')])
    assert msg == ('dropins[1].path conf.d/b.toml is not absolute. Nothing was written. Fix: give the full path of '
                   'the drop-in.')
    assert details == dict(key='dropins[1].path')


def test_a_drop_in_listed_twice_is_refused_naming_the_second_entry():
    msg, details = refusal([dict(path=CONF_D + '/a.toml', content=''), dict(path=CONF_D + '/b.toml', content=''),
                            dict(path=CONF_D + '/./a.toml', content='')])
    assert msg == ('dropins[2]: %s/a.toml is listed twice. Nothing was written. Fix: list each drop-in once.'
                   % CONF_D)
    assert details == dict(key='dropins[2].path')


def test_install_needs_each_drop_ins_content_uninstall_does_not():
    msg, details = refusal([dict(path=CONF_D + '/a.toml', content='x = 1\n'), dict(path=CONF_D + '/b.toml')])
    assert msg == ('dropins[1] (%s/b.toml): state=present needs its content. Nothing was written. Fix: give '
                   'content.' % CONF_D)
    assert details == dict(key='dropins[1].content')
    out = dropins_of(params([dict(path=CONF_D + '/a.toml'), dict(path=CONF_D + '/b.toml')], state='absent'))
    assert [(d['dropin'], d['content']) for d in out] == [(CONF_D + '/a.toml', None), (CONF_D + '/b.toml', None)]


def kinds(edit):
    """Each part's one kind, in the parts' order."""
    return [next(k for k in ('imports', 'settings', 'runtimes') if getattr(part, k)) for part in edit.parts]


SETTINGS = [dict(key='cri.enable_cdi'), dict(key='cri.default_runtime_name')]
RUNTIMES = [dict(name='kata-qemu'), dict(name='kata-clh')]


@pytest.mark.parametrize('state', ['present', 'absent'])
def test_the_parts_of_a_split_edit_follow_the_kind_order(state):
    edit = EditSet([CONF_D + '/a.toml'], SETTINGS, RUNTIMES, 'coco', state, dict(position='end'))
    expected = dict(present=['imports', 'settings', 'settings', 'runtimes', 'runtimes'],
                    absent=['settings', 'settings', 'runtimes', 'runtimes', 'imports'])[state]
    assert kinds(edit) == expected
    assert list(KIND_ORDER[state]) == [k for i, k in enumerate(expected) if expected.index(k) == i]
    for part in edit.parts:
        assert part.parts is None and part.owner == 'coco' and part.state == state
    imports = [p for p in edit.parts if p.imports][0]
    assert imports.imports_params == dict(position='end', imports=[CONF_D + '/a.toml'], owner='coco', state=state)
    assert [p.settings[0]['key'] for p in edit.parts if p.settings] == ['cri.enable_cdi', 'cri.default_runtime_name']
    assert [p.runtimes[0]['name'] for p in edit.parts if p.runtimes] == ['kata-qemu', 'kata-clh']


def test_one_piece_is_not_split_and_no_imports_make_no_imports_part():
    assert EditSet([], SETTINGS[:1], [], 'coco', 'present').parts is None
    assert EditSet([], [], RUNTIMES[:1], 'coco', 'absent').parts is None
    assert kinds(EditSet([], SETTINGS[:1], RUNTIMES[:1], 'coco', 'present')) == ['settings', 'runtimes']
    assert EditSet([CONF_D + '/a.toml'], SETTINGS, RUNTIMES, 'coco', 'present', piece=True).parts is None
    bare = EditSet([], [], [], 'coco', 'present', None)
    assert bare.imports_params == dict(imports=[], owner='coco', state='present')


@pytest.mark.parametrize('state', ['present', 'absent'])
def test_one_edit_applies_its_kinds_in_the_kind_order(state):
    edit = EditSet([CONF_D + '/a.toml'], SETTINGS, RUNTIMES, 'coco', state, piece=True)
    ran = []
    for kind in ('imports', 'settings', 'runtimes'):
        setattr(edit, '_' + kind, lambda doc, ledger, ctx, kind=kind: ran.append(kind) or {kind: [kind]})
    assert edit(None, None, None) == dict(imports=['imports'], settings=['settings'], runtimes=['runtimes'])
    assert ran == list(KIND_ORDER[state])
    ran[:] = []
    edit.settings = []
    edit(None, None, None)
    assert ran == [k for k in KIND_ORDER[state] if k != 'settings']


def test_a_merged_result_keeps_the_last_imports_view_and_every_step_s_entries():
    edit = EditSet([CONF_D + '/a.toml', CONF_D + '/b.toml'], [], [], 'coco', 'present', piece=True)
    steps = [
        dict(imports=dict(imports=['x'], missing=[], added=[CONF_D + '/a.toml'], removed=[], pruned=['p'], kept=[],
                          duplicates_removed=[])),
        dict(other=True),
        dict(imports=dict(imports=['x', 'y'], missing=['m'], added=[CONF_D + '/b.toml', CONF_D + '/a.toml'],
                          removed=['r'], pruned=['p'], kept=['k'], duplicates_removed=['d'])),
    ]
    merged = edit.combine({}, steps)['imports']
    assert merged == dict(imports=['x', 'y'], missing=['m'], added=[CONF_D + '/a.toml', CONF_D + '/b.toml'],
                          removed=['r'], pruned=['p'], kept=['k'], duplicates_removed=['d'])
    assert edit.combine({}, steps[:1])['imports']['imports'] == ['x']


def test_a_merged_result_takes_the_default_runtime_from_the_last_step_that_says_it():
    edit = EditSet([], [], [dict(name='kata-qemu')], 'coco', 'present', piece=True)
    steps = [dict(runtimes=[dict(name='kata-qemu', created=True)], default_runtime_name='runc'),
             dict(runtimes=[dict(name='kata-qemu', created=False)], default_runtime_name='kata-qemu'),
             dict(runtimes=[])]
    result = edit.combine({}, steps)
    assert result['default_runtime_name'] == 'kata-qemu'
    assert [r['name'] for r in result['runtimes']] == ['kata-qemu'] and result['runtimes'][0]['created'] is True
    assert 'imports' not in result and 'settings' not in result
