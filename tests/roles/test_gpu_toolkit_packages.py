# -*- coding: utf-8 -*-
"""gpu_toolkit's packages and repository files: the install records, per owner, only what was not there
before it (a package or file found there is not recorded); the uninstall removes only what that record names,
says which listed packages it keeps, deletes the record after, and removes nothing where no record exists.
With gpu_toolkit_flush off the role leaves the removal to the playbook, which runs it after its restart and
checks (playbooks/site.yml).

The host's package manager is only asked read-only questions or run in check mode: a real removal here is
given only packages that are not installed (molecule/gpu_toolkit installs and removes stand-in packages on its
nodes). dpkg stands for a package that was on the node before nodeguard.
"""

import json
import os
import re
import stat

import yaml

from conftest import REPO, read
from role_play import gpu_toolkit_head, run_playbook, stand_in

NOT_INSTALLED = 'nodeguard-test-no-such-package'
APT_SOURCE = '/etc/apt/sources.list.d/nvidia-container-toolkit.list'
INSTALL_SOURCE = 'deb [trusted=yes] file:/opt/ng-apt ./'
# an operator's own source at the path the install writes: not text the role would write, mode 0640
OPERATOR_SOURCE = b'# our mirror\r\ndeb [signed-by=/etc/apt/keyrings/mirror.gpg] http://mirror.example/nvidia ./\r\n'
RECORD_TASK = 'Record the packages and repository files this owner adds or overwrites'
UNDO_TASK = 'Put back the repository files this owner overwrote, remove those it wrote, then the record'

PLAY = gpu_toolkit_head('gpu_toolkit packages, local') + '''    gpu_toolkit_manage_packages: true
    gpu_toolkit_remove_packages: true
    gpu_toolkit_flush: false
    node_readiness_service: nodeguard-test-no-such-unit
  tasks:
    - name: Run gpu_toolkit
      ansible.builtin.include_role:
        name: nodeguard.containerd.gpu_toolkit
        tasks_from: {entry}
      vars: {role_vars}
'''


def record_path(workdir, owner='gpu_toolkit'):
    return os.path.join(workdir, 'state', 'gpu_toolkit-%s.json' % owner)


def write_record(workdir, packages=(), files=()):
    os.makedirs(os.path.join(workdir, 'state'), exist_ok=True)
    with open(record_path(workdir), 'w') as f:
        json.dump({'packages': list(packages), 'files': list(files)}, f)


def touch(workdir, name):
    path = os.path.join(workdir, name)
    with open(path, 'w') as f:
        f.write('kept\n')
    return path


def run(workdir, path, role_vars, entry='main', check=False, extra_vars=None, fails=False):
    """ansible-playbook with the role (entry: its tasks_from); (stdout, number of changed tasks)."""
    binary = stand_in(workdir)
    text = PLAY.format(path=path, state=os.path.join(workdir, 'state'), store=os.path.join(workdir, 'baselines'),
                       binary=binary, entry=entry, role_vars=json.dumps(role_vars))
    args = (['--check', '--diff'] if check else []) + (['-e', json.dumps(extra_vars)] if extra_vars else [])
    proc = run_playbook(workdir, text, extra_args=args)
    out = proc.stdout
    assert (proc.returncode != 0) == fails, out[-4000:] + proc.stderr[-2000:]
    return out, int(re.search(r'localhost\s+: ok=\d+\s+(?:changed=(\d+))', out).group(1))


def install_repository(workdir, path, source, packages=(NOT_INSTALLED,)):
    """A real run of the install's repository steps (packages.yml) with the apt source at source: the record, then
    the source written. No NVIDIA repository is reachable here, so the package manager is not asked to install
    (the step check mode takes for a repository it cannot see yet)."""
    return run(workdir, path, dict(gpu_toolkit_packages=list(packages), gpu_toolkit_apt_key_url='',
                                   gpu_toolkit_apt_source=INSTALL_SOURCE), entry='packages',
               extra_vars={'__gpu_toolkit_apt_source_path': source, '__gpu_toolkit_repository_pending': True})


def task_result(out, name):
    """What the role's task named name (its beginning) reported: 'ok', 'changed', 'skipping', or None."""
    m = re.search(r'TASK \[nodeguard\.containerd\.gpu_toolkit : %s[^\n]*\][^\n]*\n(?:.*\n)*?(ok|changed|skipping|fatal):'
                  % re.escape(name), out)
    return m.group(1) if m else None


def test_the_install_records_only_the_packages_and_repository_files_not_there_before(workdir, config):
    """Check mode with --diff: the record it would write names the package (by name, its version pin dropped)
    and the apt source that are not on the node, not dpkg (installed); nothing is written."""
    path = config('v2_kubeadm.toml')
    assert not os.path.exists(APT_SOURCE)
    out, _changed = run(workdir, path, dict(gpu_toolkit_packages=['dpkg', NOT_INSTALLED + '=1.0-1'],
                                            gpu_toolkit_apt_key_url=''), check=True)
    assert task_result(out, RECORD_TASK) == 'changed', out[-4000:]
    diff = out.split('+++ after: %s' % record_path(workdir), 1)[1].split('\n\n', 1)[0]
    after = json.loads(''.join(line[1:] for line in diff.splitlines() if line.startswith('+')))
    assert after == {'packages': [NOT_INSTALLED], 'files': [APT_SOURCE]}, diff
    assert not os.path.exists(record_path(workdir)) and not os.path.exists(APT_SOURCE)


def test_a_second_install_keeps_the_record_of_the_first(workdir, config):
    """The record is a union: what an earlier run added stays recorded although it is installed now, and a
    run that adds nothing new does not write it."""
    path = config('v2_kubeadm.toml')
    write_record(workdir, ['nodeguard-test-added-earlier', NOT_INSTALLED], [APT_SOURCE])
    before = read(record_path(workdir))
    out, _changed = run(workdir, path, dict(gpu_toolkit_packages=['dpkg', NOT_INSTALLED], gpu_toolkit_apt_key_url=''),
                        check=True)
    assert task_result(out, RECORD_TASK) == 'ok', out[-4000:]
    assert read(record_path(workdir)) == before


def test_the_uninstall_removes_only_what_the_record_names_then_the_record(workdir, config):
    """A real removal: the recorded repository files go, the signing key that was there before stays, the
    recorded package (not installed here) is asked to go, the record is deleted; a second run changes nothing
    and says there is no record."""
    path = config('v2_kubeadm.toml')
    created = [touch(workdir, 'nvidia.list'), touch(workdir, 'nvidia.asc')]
    key = touch(workdir, 'key-there-before.asc')
    write_record(workdir, [NOT_INSTALLED], created)
    role = dict(gpu_toolkit_packages=[NOT_INSTALLED], gpu_toolkit_apt_key_path=key)
    out, changed = run(workdir, path, role, entry='packages_absent')
    assert task_result(out, 'Remove the packages this owner installed') == 'ok', out[-4000:]
    assert [os.path.exists(p) for p in created] == [False, False] and os.path.exists(key)
    assert not os.path.exists(record_path(workdir))
    assert changed == 1, out[-4000:]  # the files and the record, in one module call

    out, changed = run(workdir, path, role, entry='packages_absent')
    assert changed == 0, out[-4000:]
    assert task_result(out, 'Remove the packages this owner installed') == 'skipping', out[-4000:]
    assert 'No record of what owner gpu_toolkit installed (%s): nothing removed.' % record_path(workdir) in out
    assert os.path.exists(key)


def test_the_uninstall_keeps_a_listed_package_that_was_there_before(workdir, config):
    """Check mode: dpkg is listed but not recorded - kept, and said so; only the recorded package is given to
    the package manager (dpkg given would be a reported removal)."""
    path = config('v2_kubeadm.toml')
    write_record(workdir, [NOT_INSTALLED])
    out, _changed = run(workdir, path, dict(gpu_toolkit_packages=['dpkg', NOT_INSTALLED]), entry='packages_absent',
                        check=True)
    assert 'Kept dpkg: installed before owner gpu_toolkit installed the toolkit' in out, out[-4000:]
    assert task_result(out, 'Remove the packages this owner installed') == 'ok', out[-4000:]
    assert task_result(out, UNDO_TASK) == 'changed', out[-4000:]
    assert os.path.exists(record_path(workdir))


def test_the_uninstall_without_a_record_removes_nothing_and_says_why(workdir, config):
    """A node set up before the role kept records: the listed packages may be the operator's, so none is
    removed (check mode, dpkg listed)."""
    path = config('v2_kubeadm.toml')
    out, changed = run(workdir, path, dict(gpu_toolkit_packages=['dpkg', NOT_INSTALLED]), entry='packages_absent',
                       check=True)
    assert changed == 0, out[-4000:]
    assert task_result(out, 'Remove the packages this owner installed') == 'skipping', out[-4000:]
    assert re.search(r'No record of what owner gpu_toolkit installed \([^)]*\): nothing\s+removed\. Kept: dpkg\.',
                     out), out[-4000:]


def test_with_the_flush_off_the_role_leaves_the_removal_to_the_playbook(workdir, config):
    """gpu_toolkit_flush: false, absent: containerd is restarted later, by the playbook; the role removes no
    package before that, keeps the record and says who removes them."""
    path = config('v2_kubeadm.toml')
    created = touch(workdir, 'nvidia.list')
    write_record(workdir, [NOT_INSTALLED], [created])
    out, _changed = run(workdir, path, dict(gpu_toolkit_state='absent', gpu_toolkit_packages=[NOT_INSTALLED]))
    assert not re.search(r'TASK \[nodeguard\.containerd\.gpu_toolkit : Remove the (NVIDIA container toolkit|packages)'
                         r'[^\n]*\n(ok|changed)', out), out[-4000:]
    assert 'gpu_toolkit_flush is false: the NVIDIA container toolkit packages are not removed yet' in out, out[-4000:]
    assert os.path.exists(record_path(workdir)) and os.path.exists(created)


def test_site_removes_the_packages_after_its_restart_and_checks_only_when_absent():
    """playbooks/site.yml runs the role with its flush off, then the restart and the checks; the packages go
    after those (a refused restart or a failed check leaves them), and only for gpu_toolkit_state=absent."""
    with open(os.path.join(REPO, 'playbooks', 'site.yml')) as f:
        play = yaml.safe_load(f)[0]
    block = next(t for t in play['tasks'] if 'rescue' in t)['block']
    names = [t['name'] for t in block]
    role = next(t for t in block if t.get('ansible.builtin.include_role', {}).get('name') == 'nodeguard.containerd.gpu_toolkit'
                and 'tasks_from' not in t['ansible.builtin.include_role'])
    assert role['vars']['gpu_toolkit_flush'] is False
    removal = [i for i, t in enumerate(block) if t.get('ansible.builtin.include_role', {}).get('tasks_from') == 'packages_absent']
    assert len(removal) == 1, names
    restart = names.index('Restart containerd if it does not run the current config, then check it works with every handler')
    gone = names.index('Check that the handlers of removed roles are gone')
    assert removal[0] > max(restart, gone), names
    assert block[removal[0]]['when'] == ["site_gpu_state == 'absent'",
                                         'gpu_toolkit_manage_packages | default(false) | bool',
                                         'gpu_toolkit_remove_packages | default(false) | bool']


def test_an_apt_source_the_install_overwrote_is_given_back_byte_for_byte_by_the_uninstall(workdir, config):
    """The operator's source at the install's path is recorded with its prior bytes before the install writes its
    own; a second install changes nothing; the uninstall puts the operator's bytes and mode back and deletes the
    record."""
    path = config('v2_kubeadm.toml')
    source = os.path.join(workdir, 'nvidia-container-toolkit.list')
    with open(source, 'wb') as f:
        f.write(OPERATOR_SOURCE)
    os.chmod(source, 0o640)
    out, _changed = install_repository(workdir, path, source)
    assert task_result(out, RECORD_TASK) == 'changed', out[-4000:]
    assert read(source) == INSTALL_SOURCE + '\n'
    record = json.loads(read(record_path(workdir)))
    assert (record['packages'], record['files']) == ([NOT_INSTALLED], [])
    assert [e['path'] for e in record['replaced']] == [source]
    out, _changed = install_repository(workdir, path, source)
    assert task_result(out, RECORD_TASK) == 'ok', out[-4000:]

    out, changed = run(workdir, path, dict(gpu_toolkit_packages=[NOT_INSTALLED]), entry='packages_absent')
    assert task_result(out, UNDO_TASK) == 'changed', out[-4000:]
    assert read(source, 'rb') == OPERATOR_SOURCE and stat.S_IMODE(os.stat(source).st_mode) == 0o640
    assert not os.path.exists(record_path(workdir)) and changed == 1, out[-4000:]


def test_the_uninstall_refuses_an_overwritten_apt_source_changed_since_before_removing_anything(workdir, config):
    """Someone edited the source after the install wrote it: neither the install's bytes nor the operator's. The
    uninstall stops before the package removal, names the file and the fix, and keeps the file and the record;
    with gpu_toolkit_keep_changed_files it keeps the file as it is and finishes."""
    path = config('v2_kubeadm.toml')
    source = os.path.join(workdir, 'nvidia-container-toolkit.list')
    with open(source, 'wb') as f:
        f.write(OPERATOR_SOURCE)
    install_repository(workdir, path, source)
    with open(source, 'w') as f:
        f.write('deb http://edited.example ./\n')
    role = dict(gpu_toolkit_packages=[NOT_INSTALLED])
    out, _changed = run(workdir, path, role, entry='packages_absent', fails=True)
    assert re.search(r'Not removing the NVIDIA container toolkit: %s changed since owner\s+gpu_toolkit\'s install'
                     % re.escape(source), out), out[-4000:]
    assert 'gpu_toolkit_keep_changed_files: true' in out
    assert task_result(out, 'Remove the packages this owner installed') is None, out[-4000:]
    assert read(source) == 'deb http://edited.example ./\n' and os.path.exists(record_path(workdir))

    role['gpu_toolkit_keep_changed_files'] = True
    out, _changed = run(workdir, path, role, entry='packages_absent')
    assert read(source) == 'deb http://edited.example ./\n' and not os.path.exists(record_path(workdir))


def test_a_record_of_release_1_2_0_is_extended_and_undone(workdir, config):
    """1.2.0's record ({"packages", "files"}, to_nice_json) of a source it created: the same install again keeps
    the record's bytes; an install that overwrites an operator's file adds "replaced" beside the 1.2.0 keys; the
    uninstall removes the created file and gives back the overwritten one."""
    path = config('v2_kubeadm.toml')
    created = touch(workdir, 'created-by-1.2.0.list')
    os.makedirs(os.path.join(workdir, 'state'))
    old = json.dumps({'packages': [NOT_INSTALLED], 'files': [created]}, indent=4, sort_keys=True) + '\n'
    with open(record_path(workdir), 'w') as f:
        f.write(old)
    out, _changed = install_repository(workdir, path, created)
    assert task_result(out, RECORD_TASK) == 'ok' and read(record_path(workdir)) == old, out[-4000:]

    source = os.path.join(workdir, 'nvidia-container-toolkit.list')
    with open(source, 'wb') as f:
        f.write(OPERATOR_SOURCE)
    install_repository(workdir, path, source)
    record = json.loads(read(record_path(workdir)))
    assert (record['packages'], record['files']) == ([NOT_INSTALLED], [created])
    assert [e['path'] for e in record['replaced']] == [source]

    run(workdir, path, dict(gpu_toolkit_packages=[NOT_INSTALLED]), entry='packages_absent')
    assert not os.path.exists(created) and read(source, 'rb') == OPERATOR_SOURCE
    assert not os.path.exists(record_path(workdir))


def test_after_the_packages_a_missing_binary_is_refused_by_the_edit_naming_the_key(workdir, config):
    """With gpu_toolkit_manage_packages the packages come first; then the config edit checks each BinaryName
    (containerd_config's check_binaries) and refuses, naming the runtime's key, before anything is written."""
    path = config('v2_kubeadm.toml')
    original = read(path)
    missing = os.path.join(workdir, 'bin', 'no-such-runtime')
    out, _changed = run(workdir, path, dict(gpu_toolkit_packages=['dpkg'], gpu_toolkit_manage_repository=False,
                                            gpu_toolkit_runtimes=[dict(name='nvidia', binary=missing)]), fails=True)
    assert 'runtimes[0].options.BinaryName %s does not exist' % missing in out, out[-4000:]
    assert 'set gpu_toolkit_check_binary: false' in out
    assert read(path) == original
