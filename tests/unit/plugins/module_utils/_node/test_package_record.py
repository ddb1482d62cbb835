# -*- coding: utf-8 -*-
"""_node/package_record: which packages and repository files an install adds or overwrites, recorded per owner
before it adds them, and the files undone again on uninstall (prior bytes back, created files gone, record last).

The package database is this Debian machine's own dpkg: coreutils is installed, the made-up name is not.
"""

import base64
import hashlib
import json
import os
import stat

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import package_record as pr
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.package_record import RecordError

NOT_INSTALLED = 'nodeguard-test-no-such-package'
SOURCE = 'deb [signed-by=/etc/apt/keyrings/nvidia-container-toolkit.asc] https://nvidia.example/deb /\n'
OPERATOR_SOURCE = b'# the operator\'s own mirror\ndeb [trusted=yes] http://mirror.example/nvidia ./\n'


@pytest.fixture
def node(tmp_path):
    """A state folder (not created yet), a repository folder and the record path under tmp_path."""
    repo = tmp_path / 'sources.list.d'
    repo.mkdir()
    return {'state': str(tmp_path / 'state'), 'repo': str(repo),
            'record': str(tmp_path / 'state' / 'gpu_toolkit-gpu_toolkit.json')}


def params(node, packages=(), files=(), keep_changed=False):
    return {'record': node['record'], 'packages': list(packages), 'files': list(files),
            'keep_changed': keep_changed}


def source(node, content=SOURCE, manager='apt'):
    return {'path': os.path.join(node['repo'], 'nvidia.list'), 'content': content, 'package_manager': manager}


def write(path, data, mode=0o644):
    with open(path, 'wb') as f:
        f.write(data)
    os.chmod(path, mode)
    return path


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def record_of(node):
    with open(node['record']) as f:
        return json.load(f)


# ------------------------------------------------------------------ the package database
def test_dpkg_tells_installed_from_not_installed_packages_by_name_without_the_pin():
    assert pr.detect_package_manager() == ('apt', 'dpkg')
    assert pr.installed_packages(['coreutils', NOT_INSTALLED], 'dpkg') == ['coreutils']
    assert pr.package_name('nvidia-container-toolkit=1.17.8-1') == 'nvidia-container-toolkit'
    assert pr.package_name('coreutils >= 9') == 'coreutils'


def test_a_node_with_rpm_and_dnf_is_a_yum_node_and_one_with_neither_database_is_refused():
    have = {'rpm', 'dnf'}
    assert pr.detect_package_manager(lambda name: name in have and name) == ('yum', 'rpm')
    have = {'rpm'}
    assert pr.detect_package_manager(lambda name: name in have and name) == ('other', 'rpm')
    with pytest.raises(RecordError, match=r'neither dpkg-query nor rpm.*Nothing was recorded.*Fix:'):
        pr.detect_package_manager(lambda name: None)


# ------------------------------------------------------------------ present
def test_the_install_records_what_is_not_there_and_the_prior_bytes_of_a_file_it_overwrites(node):
    """The made-up package and the missing key are recorded as added, coreutils (installed) is not; the operator's
    apt source at the path the install writes is recorded with its bytes, mode and owner."""
    src = write(os.path.join(node['repo'], 'nvidia.list'), OPERATOR_SOURCE, 0o640)
    key = os.path.join(node['repo'], 'nvidia.asc')
    res = pr.record_present(params(node, ['coreutils', NOT_INSTALLED + '=1.0-1'],
                                   [{'path': key, 'package_manager': 'apt'}, source(node)]), False)
    assert res['changed'] and res['added'] == {'packages': [NOT_INSTALLED], 'files': [key], 'replaced': [src]}
    assert (res['packages'], res['files'], res['replaced']) == ([NOT_INSTALLED], [key], [src])
    data = record_of(node)
    assert sorted(data) == ['files', 'packages', 'replaced']
    (entry,) = data['replaced']
    assert base64.b64decode(entry['prior']) == OPERATOR_SOURCE and entry['mode'] == '0640'
    assert entry['written_sha256'] == hashlib.sha256(SOURCE.encode()).hexdigest()
    assert (entry['uid'], entry['gid']) == (os.getuid(), os.getgid())
    assert stat.S_IMODE(os.stat(node['record']).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(node['state']).st_mode) == 0o700
    assert read(src) == OPERATOR_SOURCE  # recording changes no repository file


def test_a_file_with_the_bytes_the_install_writes_or_one_it_only_creates_is_not_recorded(node):
    """Same bytes: nothing to put back. No content (get_url fetches only a missing key): the install keeps it."""
    write(os.path.join(node['repo'], 'nvidia.list'), SOURCE.encode())
    key = write(os.path.join(node['repo'], 'nvidia.asc'), b'operator key\n')
    res = pr.record_present(params(node, ['coreutils'], [{'path': key}, source(node)]), False)
    assert not res['changed'] and not res['recorded'] and not os.path.exists(node['state'])
    assert res['unrecorded'] == {'packages': ['coreutils'], 'files': sorted([key, source(node)['path']])}


def test_files_of_another_package_manager_are_ignored(node):
    res = pr.record_present(params(node, [], [source(node, manager='yum')]), False)
    assert not res['changed'] and res['files_listed'] == [] and res['package_manager'] == 'apt'


def test_a_record_of_release_1_2_0_is_read_and_extended_in_its_own_format(node):
    """1.2.0 wrote {"packages", "files"} with to_nice_json: a run that adds nothing new leaves its bytes; one that
    adds a package keeps its entries and writes no replaced key while nothing was overwritten."""
    os.makedirs(node['state'])
    old = json.dumps({'files': ['/etc/apt/sources.list.d/nvidia-container-toolkit.list'],
                      'packages': ['nvidia-container-toolkit']}, indent=4, sort_keys=True) + '\n'
    write(node['record'], old.encode(), 0o600)
    res = pr.record_present(params(node, ['coreutils']), False)
    assert not res['changed'] and read(node['record']) == old.encode()
    assert res['packages'] == ['nvidia-container-toolkit']
    res = pr.record_present(params(node, [NOT_INSTALLED]), False)
    assert res['changed'] and res['added']['packages'] == [NOT_INSTALLED]
    assert record_of(node) == {'files': ['/etc/apt/sources.list.d/nvidia-container-toolkit.list'],
                               'packages': [NOT_INSTALLED, 'nvidia-container-toolkit']}


def test_a_second_install_keeps_the_first_prior_bytes_and_notes_new_content_it_writes(node):
    """After the install wrote its source, a second run must not take the install's own bytes for prior ones;
    new content (gpu_toolkit_apt_source changed) only changes the hash of what it writes."""
    src = write(os.path.join(node['repo'], 'nvidia.list'), OPERATOR_SOURCE)
    pr.record_present(params(node, [], [source(node)]), False)
    write(src, SOURCE.encode())
    assert not pr.record_present(params(node, [], [source(node)]), False)['changed']
    res = pr.record_present(params(node, [], [source(node, content='deb http://other.example ./\n')]), False)
    assert res['changed'] and res['added']['replaced'] == [src]
    (entry,) = record_of(node)['replaced']
    assert base64.b64decode(entry['prior']) == OPERATOR_SOURCE
    assert entry['written_sha256'] == hashlib.sha256(b'deb http://other.example ./\n').hexdigest()


def test_check_mode_writes_no_record_and_no_folder(node):
    res = pr.record_present(params(node, [NOT_INSTALLED]), True)
    assert res['changed'] and res['recorded'] and res['packages'] == [NOT_INSTALLED]
    assert not os.path.exists(node['state'])


def test_a_damaged_record_is_refused_naming_it(node):
    os.makedirs(node['state'])
    write(node['record'], b'{"packages": "nvidia"}')
    with pytest.raises(RecordError, match=r'record %s is damaged: "packages" is not a list' % node['record']):
        pr.record_present(params(node), False)


# ------------------------------------------------------------------ absent
def installed(node, operator=OPERATOR_SOURCE, mode=0o640):
    """The record of an install over the operator's source (mode mode) that also created a key; the install's
    bytes written, as the role writes them."""
    src = write(os.path.join(node['repo'], 'nvidia.list'), operator, mode)
    key = os.path.join(node['repo'], 'nvidia.asc')
    pr.record_present(params(node, [NOT_INSTALLED], [{'path': key}, source(node)]), False)
    write(src, SOURCE.encode(), 0o644)
    write(key, b'nvidia key\n')
    return src, key


def test_uninstall_puts_back_the_overwritten_file_byte_for_byte_removes_the_created_one_then_the_record(node):
    src, key = installed(node)
    res = pr.undo_files(params(node), False)
    assert res['changed'] and (res['restored'], res['removed']) == ([src], [key])
    assert read(src) == OPERATOR_SOURCE and stat.S_IMODE(os.stat(src).st_mode) == 0o640
    assert not os.path.exists(key) and not os.path.exists(node['record'])
    assert pr.undo_files(params(node), False) == dict(changed=False, recorded=False, removed=[], restored=[],
                                                      kept_changed=[], before=None, after=None)


def test_uninstall_refuses_a_file_changed_since_the_install_and_changes_nothing(node):
    src, key = installed(node)
    write(src, b'deb http://edited.example ./\n')
    with pytest.raises(RecordError) as err:
        pr.undo_files(params(node), False)
    msg = str(err.value)
    assert msg.startswith('%s changed since the install wrote it' % src), msg
    assert 'record %s is kept' % node['record'] in msg and 'keep_changed: true' in msg
    assert read(src) == b'deb http://edited.example ./\n' and os.path.exists(key) and os.path.exists(node['record'])


def test_keep_changed_keeps_the_changed_file_and_finishes(node):
    src, key = installed(node)
    write(src, b'deb http://edited.example ./\n')
    res = pr.undo_files(params(node, keep_changed=True), False)
    assert res['kept_changed'] == [src] and res['restored'] == [] and res['removed'] == [key]
    assert read(src) == b'deb http://edited.example ./\n' and not os.path.exists(node['record'])


def test_an_overwritten_file_that_is_gone_or_already_back_needs_no_refusal(node):
    """Gone: what was there before comes back. Already the prior bytes (put back by hand): left as it is."""
    src, _key = installed(node)
    os.unlink(src)
    assert pr.undo_files(params(node), False)['restored'] == [src]
    assert read(src) == OPERATOR_SOURCE
    installed(node)
    write(src, OPERATOR_SOURCE, 0o600)
    res = pr.undo_files(params(node), False)
    assert res['restored'] == [] and stat.S_IMODE(os.stat(src).st_mode) == 0o600


def test_a_failed_restore_keeps_the_record_and_the_created_files(node):
    src, key = installed(node)
    os.unlink(src)
    os.unlink(key)
    os.rmdir(node['repo'])
    with pytest.raises(RecordError, match=r'cannot put back what was in %s.*record is kept.*create its folder'
                       % src):
        pr.undo_files(params(node), False)
    assert os.path.exists(node['record'])


def test_uninstall_in_check_mode_changes_nothing(node):
    src, key = installed(node)
    res = pr.undo_files(params(node), True)
    assert res['changed'] and (res['restored'], res['removed']) == ([src], [key])
    assert read(src) == SOURCE.encode() and os.path.exists(key) and os.path.exists(node['record'])


def test_query_reads_the_record_and_what_it_does_not_name(node):
    src, key = installed(node)
    res = pr.query(params(node, ['coreutils', NOT_INSTALLED], [{'path': key}, source(node)]))
    assert not res['changed'] and res['recorded']
    assert (res['packages'], res['files'], res['replaced']) == ([NOT_INSTALLED], [key], [src])
    assert res['unrecorded'] == {'packages': ['coreutils'], 'files': []}
    assert res['installed'] == ['coreutils'] and res['existing_files'] == [key, src]


def test_query_names_an_overwritten_file_changed_since_before_anything_is_removed(node):
    src, _key = installed(node)
    assert pr.query(params(node))['changed_since'] == []
    write(src, b'deb http://edited.example ./\n')
    assert pr.query(params(node))['changed_since'] == [src]


def test_an_empty_file_overwritten_then_replaced_by_a_folder_is_refused_not_taken_for_the_prior(node):
    src, _key = installed(node, operator=b'')
    os.unlink(src)
    os.mkdir(src)
    assert pr.query(params(node))['changed_since'] == [src]
    with pytest.raises(RecordError, match='changed since the install wrote it'):
        pr.undo_files(params(node), False)
