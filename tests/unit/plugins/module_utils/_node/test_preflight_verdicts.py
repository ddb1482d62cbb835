# -*- coding: utf-8 -*-
"""load_test's verdicts with a stand-in containerd and ctr (fast, exact).

The stand-in runs in the real sandbox (unshare, tmpfs, overlays, bind
mounts): it writes the log lines a test gives it, opens its --address
socket (or exits), and is killed like the real daemon.  What the real
daemon says about real configs is in test_preflight.py; here each branch of
the verdict is pinned with the daemon's answer chosen by the test.
"""

import os
import time

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import containerd_log, process, sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    load_test,
)

from helpers.preflight import BOOTED, V2_OK, Node, ctr_table, failed, loading


# ---------------------------------------------------------------- verdicts from the log

def test_all_required_plugins_loaded_is_a_pass(node):
    node.daemon(log=V2_OK + [BOOTED])
    res = node.test()
    assert res.status == 'ok' and res.ok, res.errors
    assert res.method == 'log'
    assert res.required == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'ok', CRI_V3_IMAGES: 'ok'}
    assert res.containerd_version == '2.1.9'
    assert res.errors == [] and res.warnings == []
    assert 0 < res.seconds < 15
    assert node.leftovers() == []
    assert node.base_mode() == 0o700   # the private folder (socket, copies, log) is root's only
    # /run is covered once; /var/run too when it is a folder of its own, not a link to /run
    distinct = os.path.isdir('/var/run') and os.path.realpath('/var/run') != os.path.realpath('/run')
    assert node.covered() == (['/run', '/var/run'] if distinct else ['/run'])


def test_a_required_plugin_that_failed_is_named_with_containerds_words(node):
    node.daemon(log=[loading(CRI_V2), failed(CRI_V3_RUNTIME, 'no runc: invalid'), loading(CRI_V3_IMAGES), BOOTED])
    res = node.test()
    assert res.status == 'failed' and not res.ok
    assert res.required[CRI_V3_RUNTIME] == 'error'
    assert res.errors == ['%s: containerd 2.1.9 starts, but its plugin %s failed to load (error): no runc: invalid'
                          % (node.config, CRI_V3_RUNTIME)]


def test_a_required_plugin_not_loaded_at_all_is_missing(node):
    node.daemon(log=[loading(CRI_V2), loading(CRI_V3_IMAGES), BOOTED])
    res = node.test()
    assert res.required == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'missing', CRI_V3_IMAGES: 'ok'}
    assert res.errors == ['%s: containerd 2.1.9 starts, but its plugin %s is missing (missing): not loaded: no '
                          'such plugin, or disabled by disabled_plugins' % (node.config, CRI_V3_RUNTIME)]


def test_a_skipped_required_plugin_is_a_failure(node):
    node.daemon(log=V2_OK[:2] + ['time="t" level=info msg="skip loading plugin" error="no images" id=%s'
                                 % CRI_V3_IMAGES, BOOTED])
    res = node.test()
    assert res.status == 'failed'
    assert res.errors[0].endswith('its plugin %s was skipped (skip): no images' % CRI_V3_IMAGES)


def test_other_plugins_that_failed_are_warnings_not_failures(node):
    node.daemon(log=V2_OK + [failed('io.containerd.snapshotter.v1.zfs', 'no zfs pool'),
                             'time="t" level=info msg="skip loading plugin" id=io.containerd.tracing.processor.v1.otlp',
                             BOOTED])
    res = node.test()
    assert res.status == 'ok', res.errors
    assert res.warnings == ['plugin io.containerd.snapshotter.v1.zfs: no zfs pool']


def test_required_overrides_the_versions_default(node):
    node.daemon(log=[loading(CRI_V2), BOOTED])
    res = node.test(required=[CRI_V2])
    assert res.status == 'ok' and res.required == {CRI_V2: 'ok'}, res.errors


def test_a_1x_daemon_needs_only_the_one_cri_plugin(short_tmp):
    node = Node(short_tmp, version='containerd github.com/containerd/containerd 1.7.22 abc')
    node.daemon(log=[loading(CRI_V2), BOOTED])
    res = node.test()
    assert res.status == 'ok', res.errors
    assert res.required == {CRI_V2: 'ok'} and res.containerd_version == '1.7.22'


# ---------------------------------------------------------------- verdicts from ctr

def test_ctr_plugin_list_is_the_verdict_when_ctr_answers(node):
    """The daemon need not say it booted: ctr's answer on the socket is the list."""
    node.daemon(log=[failed(CRI_V3_RUNTIME, 'from the log')])
    ctr = node.ctr(ctr_table([(CRI_V2, 'ok'), (CRI_V3_RUNTIME, 'ok'), (CRI_V3_IMAGES, 'ok')]))
    res = node.test(ctr=ctr)
    assert res.method == 'ctr'
    assert res.status == 'ok', res.errors
    assert res.plugins == {CRI_V2: 'ok', CRI_V3_RUNTIME: 'ok', CRI_V3_IMAGES: 'ok'}


def test_a_status_ctr_shows_that_is_not_ok_is_named(node):
    node.daemon(log=[])
    ctr = node.ctr(ctr_table([(CRI_V2, 'ok'), (CRI_V3_RUNTIME, 'ok'), (CRI_V3_IMAGES, 'weird')]))
    res = node.test(ctr=ctr)
    assert res.status == 'failed'
    assert res.errors == ['%s: containerd 2.1.9 starts, but its plugin %s has status weird (weird): status weird'
                          % (node.config, CRI_V3_IMAGES)]


def test_ctr_failing_falls_back_to_the_log_with_a_warning(node):
    node.daemon(log=V2_OK + [BOOTED])
    ctr = node.ctr('', rc=1, err='ctr: connection refused')
    res = node.test(ctr=ctr)
    assert res.method == 'log'
    assert res.status == 'ok', res.errors
    assert res.warnings == ['%s plugins ls failed (ctr: connection refused); the plugin list was read from the log'
                            % ctr]


def test_an_unexpected_error_mid_run_still_ends_the_daemon(node, monkeypatch):
    """Whatever goes wrong after the start, the daemon (and its namespace) does not outlive the call."""
    def broken(out):
        raise RuntimeError('unexpected ctr output')
    monkeypatch.setattr(containerd_log, 'parse_ctr_plugins', broken)
    node.daemon(log=[])
    with pytest.raises(RuntimeError):
        node.test(ctr=node.ctr(ctr_table([(CRI_V2, 'ok')])))
    alive = []
    for pid in os.listdir('/proc'):
        try:
            with open('/proc/%s/cmdline' % pid, 'rb') as f:
                if node.binary.encode() in f.read():
                    alive.append(pid)
        except (IOError, OSError):
            pass
    assert alive == [] and node.leftovers() == []


def test_an_empty_ctr_list_falls_back_to_the_log(node):
    node.daemon(log=V2_OK + [BOOTED])
    res = node.test(ctr=node.ctr(''))
    assert res.method == 'ctr'
    assert res.status == 'ok' and res.plugins == {p: 'ok' for p in (CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES)}


def test_the_ctr_beside_the_binary_is_used_by_default(node):
    node.daemon(log=[])
    node.ctr(ctr_table([(CRI_V2, 'ok'), (CRI_V3_RUNTIME, 'ok'), (CRI_V3_IMAGES, 'ok')]))
    res = node.test(ctr=None)
    assert res.method == 'ctr' and res.status == 'ok', res.errors


# ---------------------------------------------------------------- the daemon refuses

def test_the_daemon_keeps_none_of_the_callers_descriptors(node):
    """An inheritable pipe of the caller (Ansible's, say) is not held open by the daemon."""
    r, w = os.pipe()
    os.set_inheritable(r, True)
    os.set_inheritable(w, True)
    try:
        node.daemon(log=V2_OK + [BOOTED])
        assert node.test().status == 'ok'
    finally:
        os.close(r)
        os.close(w)
    assert [f for f in node.open_files() if f.startswith('pipe:')] == []


def test_a_daemon_that_exits_is_refused_with_config_dumps_words(node):
    node.daemon(log=['time="t" level=fatal msg="bad" error="x"'], exit=1)
    node.dump = (1, '', 'containerd: failed to load TOML from %s: (3, 3): bad value\n' % node.config)
    t0 = time.time()
    res = node.test()
    assert time.time() - t0 < 10    # judged when it exits, not when the 15 s timeout runs out
    assert res.status == 'failed'
    assert res.errors == ['%s: containerd 2.1.9 refuses to start on it: containerd: failed to load TOML from %s: '
                          '(3, 3): bad value' % (node.config, node.config)]
    assert node.calls[-1] == [node.binary, '--config', node.config, 'config', 'dump']


def test_a_daemon_that_exits_on_a_file_config_dump_accepts_is_quoted(node):
    node.daemon(log=['containerd: one', 'containerd: two', 'time="t" level=fatal msg="three" error="3"',
                     'containerd: four'], exit=1)
    res = node.test()
    assert res.status == 'failed'
    assert res.errors[0].endswith('refuses to start on it: containerd: two; three: 3; containerd: four')


def test_a_daemon_that_exits_silently_is_quoted_by_its_log_tail(node):
    node.daemon(log=['time="t" level=info msg="a"', 'time="t" level=info msg="b"'], exit=0)
    res = node.test()
    assert res.status == 'failed'
    assert res.errors[0].endswith('refuses to start on it: time="t" level=info msg="a" | time="t" level=info msg="b"')
    assert res.log_tail.endswith('time="t" level=info msg="a" | time="t" level=info msg="b"')


def test_the_message_quotes_the_last_lines_of_a_long_log(node):
    """The newest lines say why it stopped: with a long log they are the ones quoted (5 of them),
    and log_tail keeps the last 10."""
    lines = ['time="t" level=info msg="line %02d %s"' % (i, 'x' * 80) for i in range(1, 31)]
    lines[-1] += ' ' + 'y' * 500                 # each line of the tail is cut at 300 characters
    node.daemon(log=lines, exit=0)
    res = node.test()
    assert res.errors[0].endswith('refuses to start on it: ' + ' | '.join(lines[-5:-1] + [lines[-1][:400]]))
    assert res.log_tail == ' | '.join(lines[-10:-1] + [lines[-1][:300]])
    assert 0 <= res.seconds < 15


def test_no_answer_in_time_is_a_timeout(node):
    lines = ['time="t" level=info msg="waiting %d"' % i for i in range(7)]
    node.daemon(log=lines, listen=False)
    t0 = time.time()
    res = node.test(timeout=1.0)
    assert res.status == 'timeout' and not res.ok
    # the last 5 lines; the sandbox's own marker lines are not containerd's
    assert res.errors == ['%s: containerd 2.1.9 did not answer within 1.0s; last log lines: %s'
                          % (node.config, ' | '.join(lines[-5:]))]
    assert time.time() - t0 < 8 and 1.0 <= res.seconds < 8
    assert node.leftovers() == []


# ---------------------------------------------------------------- what the daemon is given

def test_the_daemon_reads_a_private_copy_at_the_configs_path(node):
    """The copy (with its byte order mark) is bind-mounted over the original path; the original is untouched."""
    text = u'\ufeffversion = 3\n[cgroup]\n  path = "/ng-test"\n'
    path = node.write('bom.toml', text)
    node.daemon(log=V2_OK + [BOOTED])
    res = node.test(config=path)
    assert res.status == 'ok', res.errors
    given, seen = node.seen_by_daemon()
    assert given == path
    assert seen.startswith(u'\ufeffversion = 3\n') and 'path = ""' in seen
    # the main file's copy (a 2.x daemon's): device snapshotters disabled, NRI in the private folder
    assert 'io.containerd.snapshotter.v1.devmapper' in seen and 'io.containerd.nri.v1.nri' in seen
    with open(path, 'rb') as f:
        assert f.read().decode('utf-8') == text
    assert any('[cgroup] path' in s for s in res.skipped)


def test_as_path_gives_the_candidate_at_the_real_path(node):
    real = node.write('real.toml', 'version = 3\noom_score = 1\n')
    cand = node.write('cand.toml', 'version = 3\noom_score = -999\n')
    node.daemon(log=V2_OK + [BOOTED])
    res = node.test(config=cand, as_path=real)
    assert res.status == 'ok', res.errors
    assert res.config_path == cand
    given, seen = node.seen_by_daemon()
    assert given == real and 'oom_score = -999' in seen
    res = node.test(config=cand, as_path=real + '.none')
    assert res.skipped[0] == 'as_path %s.none does not exist: the candidate was tested at its own path %s' % (real, cand)


def test_a_workdir_under_run_is_not_used(node, monkeypatch):
    """/run is covered by an overlay in the namespace: the private folder must not be there."""
    made = []
    real = _preflight.tempfile.mkdtemp

    def mkdtemp(*a, **kw):
        made.append(kw.get('dir'))
        return real(*a, **kw)
    monkeypatch.setattr(_preflight.tempfile, 'mkdtemp', mkdtemp)
    node.daemon(log=V2_OK + [BOOTED])
    assert node.test(workdir='/run').status == 'ok'
    assert node.test(workdir='/run/ng-sub').status == 'ok'
    assert node.test().status == 'ok'                       # a workdir given is used
    assert made == ['/tmp', '/tmp', node.folder]


# ---------------------------------------------------------------- files it cannot copy

def test_a_file_it_cannot_parse_that_containerd_refuses_is_a_failure(node):
    path = node.write('bad.toml', 'version = = 3\n')
    node.dump = (1, '', 'containerd: failed to load TOML: (1, 11): bad\n')
    res = node.test(config=path)
    assert res.status == 'failed'
    assert res.errors == ['%s: containerd 2.1.9 refuses it: containerd: failed to load TOML: (1, 11): bad' % path]
    assert 0 <= res.seconds < 15
    assert node.calls[-1] == [node.binary, '--config', path, 'config', 'dump']


@pytest.mark.parametrize('raw,why', [(b'version = = 3\n', '%s is not valid TOML: line 1, column'),
                                     (b'version = 3\n# \xff\n', "%s: 'utf-8' codec can't decode")])
def test_a_file_it_cannot_parse_that_containerd_accepts_cannot_be_tested(node, raw, why):
    path = node.write('odd.toml', raw)
    res = node.test(config=path)
    assert res.status == 'cannot_run'
    assert res.errors[0].startswith('%s: the containerd load test cannot run: no private copy could be made of %s ('
                                    % (path, path))
    assert why % path in res.errors[0]
    assert res.errors[0].endswith("; containerd's own config dump accepts it")


# ---------------------------------------------------------------- cannot run

def test_a_config_that_cannot_be_read_cannot_be_tested(node, monkeypatch):
    def unreadable(path, content_from=None):
        raise IOError(5, 'Input/output error')
    monkeypatch.setattr(sandbox, 'read_tree', unreadable)
    res = node.test()
    assert res.status == 'cannot_run'
    assert res.errors == ['%s: the containerd load test cannot run: cannot read it (Input/output error)' % node.config]
    assert node.leftovers() == []


def test_a_binary_whose_version_cannot_be_read_cannot_be_tested(node):
    node.version = None
    res = node.test()
    assert res.status == 'cannot_run'
    assert res.errors == ['%s: the containerd load test cannot run: %s --version failed: exec format error'
                          % (node.config, node.binary)]


def test_a_node_without_unshare_cannot_run_it(node, monkeypatch):
    real = process.which
    monkeypatch.setattr(process, 'which', lambda name, *a, **kw: None if name in ('unshare', 'mount')
                        else real(name, *a, **kw))
    res = node.test()
    assert res.status == 'cannot_run'
    assert res.errors[0].endswith('cannot run: no mount, unshare command on this node (unshare and mount are in '
                                  'util-linux)')


def test_a_failed_namespace_setup_is_cannot_run_with_its_reason(node, monkeypatch, tmp_path):
    """Not a verdict on the config: containerd never ran."""
    bad = tmp_path / 'bin'
    bad.mkdir()
    (bad / 'mkdir').write_text('#!/bin/sh\nexit 1\n')
    (bad / 'mkdir').chmod(0o755)
    real = process.which
    monkeypatch.setattr(process, 'which', lambda name, *a, **kw: str(bad / 'mkdir') if name == 'mkdir'
                        else real(name, *a, **kw))
    res = node.test()
    assert res.status == 'cannot_run'
    assert res.errors == ['%s: the containerd load test cannot run: nodeguard-preflight: mkdir' % node.config]
    assert node.leftovers() == []


@pytest.mark.parametrize('says,why', [
    ('echo one; echo two; echo three; echo "unshare: unshare failed: Operation not permitted"',
     'the private namespace could not be made: two | three | unshare: unshare failed: Operation not permitted'),
    ('', 'the private namespace could not be made: unshare exited with 1'),
])
def test_an_unshare_that_fails_is_cannot_run_in_its_words(node, monkeypatch, tmp_path, says, why):
    """Not a verdict on the config: the namespace (and so containerd) never came up."""
    fake = tmp_path / 'unshare'
    fake.write_text('#!/bin/sh\n[ "$1" = --help ] && exit 0\n%s\nexit 1\n' % says)
    fake.chmod(0o755)
    real = process.which
    monkeypatch.setattr(process, 'which', lambda name, *a, **kw: str(fake) if name == 'unshare'
                        else real(name, *a, **kw))
    res = node.test()
    assert res.status == 'cannot_run'
    assert res.errors == ['%s: the containerd load test cannot run: %s' % (node.config, why)]


def test_a_missing_or_non_executable_binary_cannot_run(node):
    os.chmod(node.binary, 0o644)
    res = node.test()
    assert res.status == 'cannot_run' and 'no containerd binary at %r' % node.binary in res.errors[0]
    assert 0 <= res.seconds < 5
    res = load_test('', node.config)
    assert res.status == 'cannot_run'
    res = load_test(node.folder, node.config)        # a folder is searchable, not a binary
    assert res.status == 'cannot_run' and 'no containerd binary at %r' % node.folder in res.errors[0]
