# -*- coding: utf-8 -*-
"""Hostile and broken input: a clear error naming the file (and the key where
there is one) and a byte-identical file - or, for layouts the engine handles
(CRLF, tabs, dotted keys, no final newline, unicode), the correct edit and an
exact round trip, judged by the real containerd."""

import contextlib
import os
import resource
import subprocess
import time

import pytest
import tomlkit

from conftest import assert_containerd_accepts, fixture_text, read
from ng_reliability import Runner, module_exists, temp_files

V2 = 'io.containerd.grpc.v1.cri'
RUNC = 'plugins."%s".containerd.runtimes.runc' % V2
NV = '/usr/bin/nvidia-container-runtime'
KUBEADM = fixture_text('v2_kubeadm.toml')
FLAT = fixture_text('v2_flat.toml')


@pytest.fixture
def env(workdir):
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    return dict(workdir=workdir, etc=etc, path=os.path.join(etc, 'config.toml'),
                runner=Runner(os.path.join(workdir, 'tmp'), os.path.join(workdir, 'state')))


def write(path, content):
    with open(path, 'wb') as f:
        f.write(content if isinstance(content, bytes) else content.encode('utf-8'))


def refused(env, module, args, names=(), key=None, content=None, max_seconds=60, where=None):
    """Run a task that must fail; the file must be untouched and nothing left behind.

    The message must name the file (or `where`: the lock file, the option at fault)."""
    path = env['path']
    if content is not None:
        write(path, content)
    before = read(path, 'rb') if os.path.lexists(path) and os.path.isfile(path) else None
    args = dict(args)
    args.setdefault('path', path)
    args.setdefault('owner', 'gpu')
    res, took = env['runner'].run(module, args)
    assert res.get('failed'), res
    msg = res['msg']
    assert (where or args['path']) in msg or os.path.realpath(args['path']) in msg, msg
    for word in names:
        assert word in msg, (word, msg)
    if key is not None:
        assert key in msg or res.get('key') == key, (key, msg, res.get('key'))
    if before is not None:
        assert read(path, 'rb') == before
    assert 'Traceback' not in msg, msg
    if 'Is a directory' not in msg:
        assert 'nodeguard failed on' not in msg, msg  # handled, not an unexpected exception
    if os.path.isdir(env['etc']):
        assert temp_files(env['etc']) == []
    assert took < max_seconds, took
    return res


def rt(name='nvidia', **kw):
    args = dict(name=name)
    args.update(kw)
    return 'containerd_runtime', args


ADD = rt(options={'BinaryName': NV})
ADD_BARE = rt(inherit='none', options={'BinaryName': NV})


# ------------------------------------------------------------------ refusals
BROKEN = [
    # the CoCo seed: what a sed-based uninstall left behind
    ('seed_imports_lone_comma', KUBEADM.replace('version = 2\n', 'version = 2\nimports = [ , ]\n'),
     ADD, ['not valid TOML', 'line 4'], None),
    ('seed_imports_leading_comma', KUBEADM.replace(
        'version = 2\n', 'version = 2\nimports = [ , "/etc/containerd/config.toml.d/nydus-snapshotter.toml"]\n'),
     ADD, ['not valid TOML'], None),
    ('seed_dangling_import', KUBEADM.replace(
        'version = 2\n', 'version = 2\nimports = ["/nonexistent/config.toml.d/nydus-snapshotter.toml"]\n'),
     ADD, ['/nonexistent/config.toml.d/nydus-snapshotter.toml', 'refuse to start'], None),
    # the GPU seed's end state: the toolkit's revert deleted runc, another runtime is left, the default
    # is still runc: containerd 1.6 drops its built-in runc then, and the CRI plugin fails to load
    ('seed_default_without_table', 'version = 2\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n'
     '[plugins."%s".containerd.runtimes.nvidia-cdi]\n  runtime_type = "io.containerd.runc.v2"\n' % (V2, V2),
     ADD_BARE, ['default_runtime_name', "'runc'", 'nvidia-cdi'], None),
    ('v1_no_version', fixture_text('v1_legacy.toml'), ADD, ['version 1', 'plugins.cri'], 'version'),
    ('v1_explicit', 'version = 1\n[plugins.cri.containerd]\n  snapshotter = "overlayfs"\n', ADD, ['version = 1'],
     'version'),
    ('version_99', KUBEADM.replace('version = 2', 'version = 99'), ADD, ['version = 99', 'supported'], 'version'),
    ('version_string', KUBEADM.replace('version = 2', 'version = "2"'), ADD, ['must be an integer'], 'version'),
    ('version_float', KUBEADM.replace('version = 2', 'version = 2.0'), ADD, ['must be an integer'], 'version'),
    ('version_bool', KUBEADM.replace('version = 2', 'version = true'), ADD, ['must be an integer'], 'version'),
    ('binary_garbage', b'\x7fELF\x02\x01\x01\x00' + bytes(range(256)) * 8, ADD, ['not UTF-8'], None),
    ('utf8_garbage', '}{ ][ === ,, "\' \n' * 20, ADD, ['not valid TOML'], None),
    ('nul_bytes', 'version = 2\n\x00\x00\x00\n', ADD, ['not valid TOML'], None),
    ('empty_file', '', ADD, ['empty'], None),
    ('whitespace_only', '\n   \n\t\n', ADD, ['empty'], None),
    ('duplicate_table', KUBEADM + '\n[metrics]\n  address = "0.0.0.0:1338"\n', ADD, ['not valid TOML', 'metrics'],
     None),
    ('key_twice', KUBEADM.replace('snapshotter = "overlayfs"', 'snapshotter = "overlayfs"\n      snapshotter = "x"'),
     ADD, ['not valid TOML', 'snapshotter'], None),
    ('runtime_table_twice', FLAT + '\n[%s]\nruntime_type = "io.containerd.runc.v2"\n' % RUNC.replace(
        '"%s"' % V2, '"%s"' % V2), ADD, ['not valid TOML'], None),
    # a UTF-8 byte order mark is no longer refused on containerd 1.x, which loads it: tests/module/test_byte_order_mark.py
    ('truncated_header', KUBEADM[:KUBEADM.index('.containerd.runtimes.runc]') + 5], ADD, ['not valid TOML'], None),
    ('unterminated_multiline_string', FLAT + 'x = """\nnever closed\n', ADD, ['not valid TOML'], None),
    ('inline_runtimes_table', 'version = 2\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n'
     '  runtimes = { runc = { runtime_type = "io.containerd.runc.v2", options = { SystemdCgroup = true } } }\n' % V2,
     ADD_BARE, ['runtimes'], None),
    ('inline_runc_options', FLAT.replace('[%s.options]\nSystemdCgroup = true\n' % RUNC, '')
     .replace('runtime_type = "io.containerd.runc.v2"\n', 'runtime_type = "io.containerd.runc.v2"\n'
              'options = { SystemdCgroup = true }\n'),
     rt('runc', options={'BinaryName': NV}), ['inline'], None),
    ('array_of_tables_runtimes', 'version = 2\n[[plugins."%s".containerd.runtimes]]\n  name = "runc"\n' % V2, ADD_BARE,
     [], None),
    ('import_newer_version', None, ADD, ['version = 3', 'higher'], None),
    ('import_not_toml', None, ADD, ['not valid TOML', 'imported by'], None),
]


@pytest.mark.parametrize('case,content,task,words,key', BROKEN, ids=[c[0] for c in BROKEN])
def test_broken_config_is_refused_untouched(env, case, content, task, words, key):
    if content is None:  # cases with a drop-in
        dropin = os.path.join(env['etc'], 'conf.d', 'x.toml')
        os.makedirs(os.path.dirname(dropin))
        write(dropin, 'version = 3\n' if case == 'import_newer_version' else 'version = 2\n[proxy_plugins\n')
        content = KUBEADM.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % dropin)
        words = words + [dropin]
    module, args = task
    refused(env, module, args, names=words, key=key, content=content)


# (case, task, key, what the message must name when it is about the input rather than the file)
INJECTION_REFUSED = [
    ('name_quote_bracket', rt('evil"]\n[plugins.x]', inherit='none'), 'name'),
    ('name_dot_only', rt('..', inherit='none'), 'name'),
    ('name_too_long', rt('a' * 64, inherit='none'), 'name'),
    ('name_unicode', rt('nvіdia', inherit='none'), 'name'),   # a Cyrillic i
    ('option_key_bracket', rt(inherit='none', options={'a]\n[b': 1}), 'options.a]\n[b'),
    ('option_key_equals', rt(inherit='none', options={'x = 1 #': 1}), 'options.x = 1 #'),
    ('settings_key_quote', rt(inherit='none', settings={'x"': 1}), 'settings.x"'),
    ('settings_reserved', rt(inherit='none', settings={'options': {'a': 1}}), 'settings.options'),
    ('option_null', rt(inherit='none', options={'BinaryName': None}), 'options.BinaryName'),
    ('inherit_unknown', rt(inherit='nope'), 'inherit'),
    ('setting_raw_key_injection', ('containerd_setting', dict(key='plugins."x"]\n[y', raw=True, value=1)), None),
    ('setting_unknown_logical', ('containerd_setting', dict(key='cri.nope', value=1)), None),
    ('setting_on_a_table', ('containerd_setting', dict(key=RUNC, raw=True, value=1)), RUNC),
    ('setting_version', ('containerd_setting', dict(key='version', raw=True, value=3)), 'version'),
    ('validate_without_placeholder', rt(inherit='none', validate='/bin/true'), 'validate'),
    ('validate_fails', rt(inherit='none', validate='/bin/false %s'), None),
]
if module_exists('containerd_imports'):
    INJECTION_REFUSED += [
        ('import_newline', ('containerd_imports', dict(imports=['/tmp/x.toml"]\n[plugins.x]'])), 'imports'),
        ('import_missing_file', ('containerd_imports', dict(imports=['/nonexistent/nydus.toml'])), 'imports'),
    ]


@pytest.mark.parametrize('case,task,key', INJECTION_REFUSED, ids=[c[0] for c in INJECTION_REFUSED])
def test_bad_input_is_refused_untouched(env, case, task, key):
    module, args = task
    where = {'setting_unknown_logical': "'cri.nope'", 'validate_without_placeholder': "'/bin/true'"}.get(case)
    refused(env, module, args, key=key, content=KUBEADM, where=where)


# ---------------------------------------------------------- paths and disks
def test_symlink_into_another_folder_is_not_written_through(env, workdir):
    real_dir = os.path.join(workdir, 'elsewhere')
    os.makedirs(real_dir)
    target = os.path.join(real_dir, 'config.toml')
    write(target, KUBEADM)
    os.symlink(target, env['path'])
    res = refused(env, *ADD, names=['symbolic link', target, 'follow'], key='path')
    assert os.path.islink(env['path']) and os.readlink(env['path']) == target
    assert read(target) == KUBEADM
    assert os.listdir(real_dir) == ['config.toml']     # not even a lock file there
    assert res['msg'].count('Nothing was written') == 1


def test_symlink_with_follow_replaces_the_target_in_its_own_folder(env, workdir):
    real_dir = os.path.join(workdir, 'elsewhere')
    os.makedirs(real_dir)
    target = os.path.join(real_dir, 'config.toml')
    write(target, KUBEADM)
    os.chmod(target, 0o640)
    os.symlink(target, env['path'])
    module, args = ADD
    res, _unused = env['runner'].run(module, dict(args, path=env['path'], owner='gpu', follow=True))
    assert res['changed'], res
    assert os.path.islink(env['path']) and os.readlink(env['path']) == target
    assert 'nvidia' in tomlkit.parse(read(target)).unwrap()['plugins'][V2]['containerd']['runtimes']
    assert oct(os.stat(target).st_mode & 0o777) == oct(0o640)
    assert temp_files(real_dir) == [] and temp_files(env['etc']) == []
    assert_containerd_accepts(target)
    env['runner'].run(module, dict(name='nvidia', path=env['path'], owner='gpu', follow=True, state='absent'))
    assert read(target) == KUBEADM


def test_dangling_symlink(env):
    os.symlink('/nonexistent/config.toml', env['path'])
    refused(env, *ADD, names=['symbolic link'], key='path')
    assert os.path.islink(env['path'])


def test_config_is_a_directory(env):
    os.makedirs(env['path'])
    res = refused(env, *ADD)
    assert os.path.isdir(env['path'])


def test_missing_config_and_missing_folder(env, workdir):
    refused(env, *ADD, names=['does not exist', 'create'], key='path')
    assert not os.path.exists(env['path'])
    module, args = ADD
    res, _unused = env['runner'].run(module, dict(args, owner='gpu', path=os.path.join(workdir, 'nope', 'config.toml')))
    assert res['failed'] and os.path.join(workdir, 'nope') in res['msg'], res
    assert not os.path.exists(os.path.join(workdir, 'nope'))


@contextlib.contextmanager
def mounted(*cmds):
    done = []
    try:
        for cmd in cmds:
            proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if proc.returncode:
                pytest.skip('cannot mount here (%s): %s' % (' '.join(cmd), proc.stderr.strip()))
            done.append(cmd)
        yield
    finally:
        target = done[0][-1] if done else None
        if target:
            subprocess.run(['umount', target], capture_output=True, check=False)


def test_read_only_folder(env):
    write(env['path'], KUBEADM)
    with mounted(['mount', '--bind', env['etc'], env['etc']], ['mount', '-o', 'remount,ro,bind', env['etc']]):
        with pytest.raises(OSError):
            open(os.path.join(env['etc'], 'probe'), 'w')      # root, and still read-only
        refused(env, *ADD, names=['Read-only file system', env['etc']])
        assert read(env['path']) == KUBEADM


def test_full_disk(env):
    with mounted(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', env['etc']]):
        write(env['path'], KUBEADM)
        filler = os.path.join(env['etc'], 'filler')
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
        try:    # fill what is left (tmpfs counts 4 KiB pages)
            while True:
                os.write(fd, b'\0' * 1024)
        except OSError:
            pass
        finally:
            os.close(fd)
        refused(env, *ADD, names=['No space left on device', 'free space'])
        assert read(env['path']) == KUBEADM
        assert sorted(os.listdir(env['etc'])) == sorted(['.config.toml.nodeguard.lock', 'config.toml', 'filler'])
        os.unlink(filler)   # space again: the same task now goes through
        module, args = ADD
        res, _unused = env['runner'].run(module, dict(args, path=env['path'], owner='gpu'))
        assert res['changed'], res
        assert_containerd_accepts(env['path'])


def test_owned_by_another_user_mode_0600_stays_so(env):
    write(env['path'], KUBEADM)
    os.chown(env['path'], 65534, 65534)
    os.chmod(env['path'], 0o600)
    module, args = ADD
    for state in ('present', 'absent'):
        res, _unused = env['runner'].run(module, dict(args, path=env['path'], owner='gpu', state=state))
        assert res['changed'], res
        st = os.stat(env['path'])
        assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (65534, 65534, 0o600), state
    assert read(env['path']) == KUBEADM


def test_lock_held_by_another_run_times_out_cleanly(env):
    import fcntl
    write(env['path'], KUBEADM)
    lock = os.path.join(env['etc'], '.config.toml.nodeguard.lock')
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        module, args = ADD
        start = time.monotonic()
        refused(env, module, dict(args, lock_timeout=1.5), names=['could not lock', '1.5'], key='lock_timeout',
                where=lock)
        assert 1.4 < time.monotonic() - start < 15
    finally:
        os.close(fd)
    res, _unused = env['runner'].run(module, dict(args, path=env['path'], owner='gpu', lock_timeout=1.5))
    assert res['changed'], res


def test_lock_file_that_cannot_be_opened_is_named_with_the_fix(env):
    """Something made the lock file a folder: the lock cannot be taken, and the message says which file and why."""
    write(env['path'], KUBEADM)
    lock = os.path.join(env['etc'], '.config.toml.nodeguard.lock')
    os.mkdir(lock)
    try:
        module, args = ADD
        refused(env, module, args, names=['cannot lock', 'Is a directory', 'Nothing was written', 'become: true'],
                where=lock)
    finally:
        os.rmdir(lock)


def test_damaged_ledger(env):
    write(env['path'], KUBEADM)
    module, args = ADD
    env['runner'].run(module, dict(args, path=env['path'], owner='gpu'))
    before = read(env['path'], 'rb')
    ledger_dir = os.path.join(env['runner'].state_dir, 'ledger')
    (name,) = os.listdir(ledger_dir)
    write(os.path.join(ledger_dir, name), '{"format": 1, "records": [tru')
    refused(env, module, dict(args, state='absent'), names=['ledger', 'damaged', name])
    assert read(env['path'], 'rb') == before


def test_50_megabytes_fails_fast_in_bounded_memory(env):
    """A 50 MB config is not a containerd config (the default one is 10 KB): tomlkit would need
    minutes and GBs for it. It must be refused quickly, in bounded memory, untouched."""
    block = ('[plugins."%s".containerd.runtimes.r%%d]\n  runtime_type = "io.containerd.runc.v2"\n' % V2)
    with open(env['path'], 'w') as f:     # written piecewise: this process stays small (the child's RSS
        f.write(KUBEADM)                  # counts the pages it shares with us before exec)
        i = 0
        while f.tell() < 50 * 1024 * 1024:
            f.write(''.join(block % n for n in range(i, i + 1000)))
            i += 1000
    module, args = ADD
    argfile = env['runner'].argfile(dict(args, path=env['path'], owner='gpu'))
    start = time.monotonic()
    proc = subprocess.Popen(env['runner'].command(module, argfile, False), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=Runner.env())
    try:
        out, _err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:     # never leave it running (before the size limit it ran for 30+ minutes)
            proc.kill()
            proc.wait()
    took = time.monotonic() - start
    # the child's own peak memory (KiB), from wait4 via resource of children
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    import json
    res = json.loads(out)
    assert res.get('failed') and env['path'] in res['msg'] and 'MB' in res['msg'], res.get('msg')
    print('50 MB config refused in %.2fs, child peak RSS %.0f MB' % (took, rss_mb))
    assert took < 20, took
    assert rss_mb < 400, rss_mb
    assert os.path.getsize(env['path']) >= 50 * 1024 * 1024
    assert temp_files(env['etc']) == []


# ---------------------------------------------- layouts handled, not refused
def _round_trip(env, content, task, check):
    """Add, check the edit, remove: the original bytes must come back."""
    write(env['path'], content)
    module, args = task
    res, _unused = env['runner'].run(module, dict(args, path=env['path'], owner='gpu'))
    assert res['changed'] and not res.get('failed'), res
    edited = read(env['path'], 'rb')
    check(edited, tomlkit.parse(edited.decode('utf-8')).unwrap())
    assert_containerd_accepts(env['path'])
    undo = dict(args, state='absent')
    for k in ('value', 'options', 'settings', 'inherit', 'runtime_type', 'runtime_path', 'default'):
        undo.pop(k, None)
    res, _unused = env['runner'].run(module, dict(undo, path=env['path'], owner='gpu'))
    assert res['changed'] and not res.get('failed'), res
    assert read(env['path'], 'rb') == (content if isinstance(content, bytes) else content.encode('utf-8'))
    return edited


def runtimes_of(data):
    return data['plugins'][V2]['containerd']['runtimes']


def test_crlf_line_endings_are_kept(env):
    crlf = KUBEADM.replace('\n', '\r\n')

    def check(edited, data):
        assert runtimes_of(data)['nvidia']['options'] == {'SystemdCgroup': True, 'BinaryName': NV}
        text = edited.decode()
        assert text.count('\n') == text.count('\r\n'), 'a bare LF in a CRLF file'
    _round_trip(env, crlf, ADD, check)
    _round_trip(env, crlf, rt('runc', options={'BinaryName': NV}),
                lambda e, d: runtimes_of(d)['runc']['options'].get('BinaryName') == NV or pytest.fail('no edit'))


def test_no_final_newline(env):
    for text in (FLAT.rstrip('\n'), KUBEADM.rstrip('\n'), KUBEADM.replace('\n', '\r\n').rstrip('\r\n')):
        def check(edited, data):
            assert runtimes_of(data)['nvidia']['options']['BinaryName'] == NV
        _round_trip(env, text, ADD, check)
        _round_trip(env, text, ('containerd_setting', dict(key='plugins."io.containerd.grpc.v1.cri".enable_unprivileged_ports', raw=True, value=True)),
                    lambda e, d: d['plugins'][V2]['enable_unprivileged_ports'] is True or pytest.fail('no edit'))


def test_tabs_for_indentation(env):
    tabbed = KUBEADM.replace('  ', '\t')

    def check(edited, data):
        assert runtimes_of(data)['runc']['options'] == {'SystemdCgroup': True, 'BinaryName': NV}
        line = [l for l in edited.decode().splitlines() if 'BinaryName' in l][0]
        assert line == '\t' * 6 + 'BinaryName = "%s"' % NV, repr(line)
    _round_trip(env, tabbed, rt('runc', options={'BinaryName': NV}), check)


def test_dotted_key_layouts(env):
    inside = ('version = 2\n[plugins."%s"]\n  containerd.default_runtime_name = "runc"\n'
              '  containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
              '  containerd.runtimes.runc.options.SystemdCgroup = true\n' % V2)
    top = ('version = 2\nplugins."%s".containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
           'plugins."%s".containerd.runtimes.runc.options.SystemdCgroup = true\n' % (V2, V2))
    for text in (inside, top):
        def check(edited, data):
            assert runtimes_of(data)['runc']['options'] == {'SystemdCgroup': True, 'BinaryName': NV}
            assert 'containerd.runtimes.runc.options.BinaryName = "%s"' % NV in edited.decode()
        _round_trip(env, text, rt('runc', options={'BinaryName': NV}), check)
        _round_trip(env, text, ADD_BARE, lambda e, d: runtimes_of(d)['nvidia']['options'] == {'BinaryName': NV}
                    or pytest.fail('no edit'))
        _round_trip(env, text, ('containerd_setting', dict(key='plugins."io.containerd.grpc.v1.cri".enable_unprivileged_ports', raw=True, value=True)),
                    lambda e, d: d['plugins'][V2]['enable_unprivileged_ports'] is True or pytest.fail('no edit'))


def test_dotted_runc_is_inherited_from(env):
    """A runc written with dotted keys is copied as sections of the new runtime's own; undo gives the bytes back."""
    text = ('version = 2\n[plugins."%s"]\n  containerd.runtimes.runc.runtime_type = "io.containerd.runc.v2"\n'
            '  containerd.runtimes.runc.options.SystemdCgroup = true\n' % V2)

    def check(edited, data):
        nvidia = runtimes_of(data)['nvidia']
        assert nvidia['runtime_type'] == 'io.containerd.runc.v2'
        assert nvidia['options'] == {'SystemdCgroup': True, 'BinaryName': NV}
        assert b'[plugins."%s".containerd.runtimes.nvidia.options]' % V2.encode() in edited
    _round_trip(env, text, ADD, check)


def test_no_runtimes_table_keeps_containerds_builtin_runc(env, containerd_daemon):
    """Debian's stock layout: no runtimes table, containerd 1.6 uses its built-in runc. The first
    runtime added must not make 1.6 drop that runc (CRI plugin would fail): judged by a real daemon."""
    text = 'version = 2\n[plugins."%s".containerd]\n  default_runtime_name = "runc"\n' % V2

    def check(edited, data):
        assert set(runtimes_of(data)) >= {'runc', 'nvidia'}
        daemon = containerd_daemon(env['path'])
        assert daemon.up, daemon.log_text()[-2000:]
        assert daemon.plugins().get('io.containerd.grpc.v1.cri') == 'ok', daemon.log_text()[-2000:]
        daemon.stop()
    _round_trip(env, text, ADD_BARE, check)


def test_unicode_everywhere(env):
    text = '# Größe — ünïcödé ✓ 日本語\n' + KUBEADM.replace('bin_dir = "/opt/cni/bin"', 'bin_dir = "/opt/cni/bïn"')
    value = '/opt/ünï/bin/rüntime ✓'

    def check(edited, data):
        assert runtimes_of(data)['nvidia']['options']['BinaryName'] == value
        assert ('BinaryName = "%s"' % value).encode('utf-8') in edited
    _round_trip(env, text, rt(options={'BinaryName': value}), check)


def test_multiline_string_holding_a_fake_header(env):
    text = FLAT.replace('runtime_type = "io.containerd.runc.v2"\n',
                        'runtime_type = "io.containerd.runc.v2"\nbase_runtime_spec = """\n'
                        '[%s.runtimes.nvidia]\nfake = 1\n"""\n' % ('plugins."%s".containerd' % V2))

    def check(edited, data):
        assert runtimes_of(data)['nvidia']['options']['BinaryName'] == NV
        assert runtimes_of(data)['runc']['base_runtime_spec'].startswith('[plugins')
    _round_trip(env, text, ADD, check)


INJECT = 'a"\n[plugins.evil]\nb = "c\'\'\'"""]\\ \x1b\t\u2028'


def test_injection_through_values_stays_a_value(env):
    # runtime_root: a string key containerd 1.6 knows (its per-runtime snapshotter came in 1.7: not in effect)
    settings = {'pod_annotations': ['x"]', "y'''", 'z\n[evil]'], 'runtime_root': INJECT,
                'privileged_without_host_devices': True}

    def check(edited, data):
        nv = runtimes_of(data)['nvidia']
        assert nv['options'] == {'BinaryName': INJECT, 'ConfigPath': ']\n[x]'}
        assert nv['pod_annotations'] == settings['pod_annotations'] and nv['runtime_root'] == INJECT
        assert nv['runtime_path'] == '/opt/x"\n[y]'
        assert set(data) == {'version', 'root', 'state', 'grpc', 'plugins', 'metrics'}
        assert set(data['plugins']) == {V2}
        assert b'[plugins.evil]' not in edited.replace(b'\\n[plugins.evil]', b'')
    _round_trip(env, KUBEADM, rt(inherit='none', options={'BinaryName': INJECT, 'ConfigPath': ']\n[x]'},
                                 settings=settings, runtime_path='/opt/x"\n[y]'), check)
    sandbox = dict(key='plugins."%s".sandbox_image' % V2, raw=True, value=INJECT)
    _round_trip(env, KUBEADM, ('containerd_setting', sandbox),
                lambda e, d: d['plugins'][V2]['sandbox_image'] == INJECT or pytest.fail('no edit'))


def test_seed_duplicate_imports_are_tolerated(env):
    dropin = os.path.join(env['etc'], 'config.toml.d', 'nydus-snapshotter.toml')
    os.makedirs(os.path.dirname(dropin))
    write(dropin, 'version = 2\n[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/nydus.sock"\n')
    text = KUBEADM.replace('version = 2\n', 'version = 2\nimports = ["%s", "%s", "%s"]\n' % ((dropin,) * 3))

    def check(edited, data):
        assert data['imports'] == [dropin] * 3     # the runtime module leaves imports alone
        assert runtimes_of(data)['nvidia']['options']['BinaryName'] == NV
    _round_trip(env, text, ADD, check)
    if module_exists('containerd_imports'):
        write(env['path'], text)
        res, _unused = env['runner'].run('containerd_imports', dict(path=env['path'], owner='coco', imports=[dropin]))
        assert not res.get('failed'), res
        assert tomlkit.parse(read(env['path'])).unwrap()['imports'] == [dropin]
        assert_containerd_accepts(env['path'])
