# -*- coding: utf-8 -*-
"""package_record run as Ansible runs it: the record before an install (check and diff mode), the query, and the
uninstall of the repository files with its refusal of a file changed since. dpkg is this machine's."""

import json
import os

from helpers.common import read

NOT_INSTALLED = 'nodeguard-test-no-such-package'
SOURCE = 'deb [trusted=yes] file:/opt/ng-apt ./\n'
OPERATOR_SOURCE = 'deb http://mirror.example/nvidia ./\n'


def _paths(workdir):
    repo = os.path.join(workdir, 'apt')
    os.makedirs(repo, exist_ok=True)
    return os.path.join(workdir, 'state', 'gpu_toolkit-gpu_toolkit.json'), os.path.join(repo, 'nvidia.list')


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def test_check_and_diff_show_the_record_then_the_install_records_it(run_module, workdir):
    record, src = _paths(workdir)
    _write(src, OPERATOR_SOURCE)
    args = dict(owner='gpu_toolkit', record=record, packages=['coreutils', NOT_INSTALLED],
                files=[dict(path=src, content=SOURCE, package_manager='apt')])
    res = run_module('package_record', check=True, diff=True, **args)
    assert res['changed'] and not os.path.exists(os.path.dirname(record))
    after = json.loads(res['diff']['after'])
    assert res['diff']['before'] == '' and res['diff']['after_header'] == record
    assert after['packages'] == [NOT_INSTALLED] and after['files'] == []
    assert [e['path'] for e in after['replaced']] == [src] and 'prior' not in after['replaced'][0]

    res = run_module('package_record', **args)
    assert res['changed'] and res['added'] == {'packages': [NOT_INSTALLED], 'files': [], 'replaced': [src]}
    assert res['package_manager'] == 'apt' and res['package_db'] == 'dpkg' and res['installed'] == ['coreutils']
    assert not run_module('package_record', **args)['changed']

    res = run_module('package_record', owner='gpu_toolkit', state='query', record=record, packages=['coreutils', NOT_INSTALLED])
    assert res['recorded'] and res['packages'] == [NOT_INSTALLED] and res['replaced'] == [src]
    assert res['unrecorded'] == {'packages': ['coreutils'], 'files': []}


def test_uninstall_restores_the_operators_file_and_refuses_one_changed_since(run_module, workdir):
    record, src = _paths(workdir)
    _write(src, OPERATOR_SOURCE)
    run_module('package_record', owner='gpu_toolkit', record=record, files=[dict(path=src, content=SOURCE)])
    _write(src, 'deb http://edited.example ./\n')
    res = run_module('package_record', owner='gpu_toolkit', state='absent', record=record, expect_fail=True)
    assert res['msg'].startswith('%s changed since the install wrote it' % src), res['msg']
    assert res['record'] == record and os.path.exists(record)

    _write(src, SOURCE)
    res = run_module('package_record', owner='gpu_toolkit', state='absent', record=record, check=True, diff=True)
    assert res['changed'] and res['restored'] == [src] and res['diff']['after'] == ''
    assert read(src) == SOURCE and os.path.exists(record)
    res = run_module('package_record', owner='gpu_toolkit', state='absent', record=record)
    assert res['restored'] == [src] and read(src) == OPERATOR_SOURCE and not os.path.exists(record)
    assert not run_module('package_record', owner='gpu_toolkit', state='absent', record=record)['changed']


def test_the_record_is_named_after_the_owner_and_uninstall_without_it_creates_no_state_folder(run_module, workdir):
    state = os.path.join(workdir, 'nodeguard')
    res = run_module('package_record', owner='gpu_toolkit', state='absent', state_dir=state)
    assert res['record'] == os.path.join(state, 'gpu_toolkit-gpu_toolkit.json')
    assert not res['changed'] and not res['recorded'] and not os.path.exists(state)
    res = run_module('package_record', owner='../x', state_dir=state, expect_fail=True)
    assert res['msg'].startswith("owner '../x' is not a name") and not os.path.exists(state)
