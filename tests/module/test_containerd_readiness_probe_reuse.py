# -*- coding: utf-8 -*-
"""containerd_readiness probe_reuse_seconds: a probe that passed is reused while nothing it depends on changed.

A real containerd 1.6 runs as a stand-in systemd unit: ``systemctl`` (first
in the module's PATH) starts it on a private socket, root and state,
``restart`` stops it and starts it again, and ``show`` reports its MainPID and
its start on the monotonic clock as systemd does. The probes run the busybox
probe image (tests/images/make_probe_image.py) with ``/bin/true`` through two
handlers: ``runc`` and ``logged``, a runc-type handler whose BinaryName is a
copy of runc behind a wrapper that logs each call (a probe that runs calls it;
a reused one does not). ``ctr events`` runs beside each module call: a probe
that runs makes containerd create a container, a reused one does not. A kata
handler (the stand-in kata shim, which hands the container to the runc shim)
with a kata configuration shows that the files it names count.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_2
from helpers.readiness import StandinUnit, standin_units
from helpers.standins import MAKE_PROBE, PROBE_IMAGE, STANDINS, sh

MODULE = 'containerd_readiness'
CRI = 'plugins."io.containerd.grpc.v1.cri"'
HANDLERS = ['runc', 'logged']

# the logged handler's BinaryName: each call logged, then the copy of runc beside it; a flag file makes create fail
RUNC_WRAPPER = '''#!/bin/sh
echo "$*" >> %(log)s
case " $* " in
  *" create "*) [ -f %(fail)s ] && { echo "logged runtime refuses (test flag)" >&2; exit 1; };;
esac
exec %(runc)s "$@"
'''


class Node(StandinUnit):
    """The stand-in unit, its config, the logged handler's files and the module's arguments."""

    def __init__(self, base, binary, image_tar):
        self.config = os.path.join(base, 'config.toml')
        # this version's shims first, as its package installs them beside containerd
        super().__init__(base, binary, self.config, path=os.path.dirname(binary) + os.pathsep + os.environ['PATH'])
        self.handler_dir = os.path.join(base, 'handler')
        os.makedirs(self.handler_dir)
        self.runc_log = os.path.join(base, 'logged-runc.log')
        self.fail_flag = os.path.join(base, 'logged-fails')
        self.runc_copy = os.path.join(self.handler_dir, 'runc-real')
        shutil.copy2(shutil.which('runc'), self.runc_copy)
        self.wrapper = os.path.join(self.handler_dir, 'runc-logged')
        self.write_wrapper()
        self.write_config()
        self.ctr = [os.path.join(os.path.dirname(binary), 'ctr'), '--address', self.address]
        res = self.ctl('start', 'containerd')
        assert res.returncode == 0, res.stderr + self.daemon_log()
        res = sh(self.ctr + ['-n', 'k8s.io', 'images', 'import', image_tar])
        assert res.returncode == 0, res.stderr

    def write_wrapper(self, extra=''):
        with open(self.wrapper, 'w') as f:
            f.write(RUNC_WRAPPER % dict(log=self.runc_log, fail=self.fail_flag, runc=self.runc_copy) + extra)
        os.chmod(self.wrapper, 0o755)

    def write_config(self, extra=''):
        with open(self.config, 'w') as f:
            f.write('version = 2\nroot = "{b}/root"\nstate = "{b}/state"\n[grpc]\n  address = "{a}"\n'
                    '[plugins."io.containerd.internal.v1.opt"]\n  path = "{b}/opt"\n'
                    '[{cri}]\n  disable_tcp_service = true\n  stream_server_port = "0"\n'
                    '[{cri}.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
                    '[{cri}.containerd.runtimes.logged]\n  runtime_type = "io.containerd.runc.v2"\n'
                    '[{cri}.containerd.runtimes.logged.options]\n  BinaryName = "{w}"\n{x}'
                    .format(b=self.base, a=self.address, cri=CRI, w=self.wrapper, x=extra))

    def runc_calls(self):
        """The logged handler's runc calls so far (create, start, delete ... of each probe through it)."""
        return open(self.runc_log).read().splitlines() if os.path.exists(self.runc_log) else []

    @property
    def stamps_path(self):
        return os.path.join(self.state_dir, 'readiness', 'probes.json')

    def stamps(self):
        with open(self.stamps_path) as f:
            return json.load(f)['handlers']

    def stop(self):
        for task in sh(self.ctr + ['-n', 'k8s.io', 'tasks', 'ls', '-q']).stdout.split():
            sh(self.ctr + ['-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', task])
        super().stop()


@pytest.fixture(scope='module')
def image_tar(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail('these tests start containerd and run containers: they need root', pytrace=False)
    if CONTAINERD_1 is None or not shutil.which('runc'):
        pytest.fail('no containerd or runc: run `make deps`', pytrace=False)
    out = str(tmp_path_factory.mktemp('probe-image') / 'probe.tar')
    res = sh([sys.executable, MAKE_PROBE, '--busybox', '/bin/busybox', '--out', out, '--name', PROBE_IMAGE])
    assert res.returncode == 0, res.stderr
    return out


@pytest.fixture
def make_node(image_tar):
    with standin_units('ng-reuse-', lambda base, binary: Node(base, binary, image_tar)) as make:
        yield make


@pytest.fixture
def node(make_node):
    return make_node()


class Events(object):
    """``ctr events`` for the length of a with block: the topics containerd published meanwhile."""

    def __init__(self, n):
        self.argv = n.ctr + ['events']
        self.proc = None
        self.out = None
        self.topics = []

    def __enter__(self):
        self.out = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen(self.argv, stdout=self.out, stderr=subprocess.STDOUT)
        time.sleep(0.3)  # subscribed before the module starts
        return self

    def __exit__(self, *exc):
        time.sleep(0.3)  # the last events are delivered
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(10)
        self.out.seek(0)
        self.topics = [word for line in self.out.read().splitlines() for word in line.split()
                       if word.startswith('/containers/') or word.startswith('/tasks/')]
        self.out.close()


def check(run_module, n, check_mode=False, expect_fail=False, **args):
    params = dict(path=n.config, state_dir=n.state_dir, containerd_bin=n.binary, address=n.address,
                  handlers=HANDLERS, probe=True, probe_image=PROBE_IMAGE, probe_command=['/bin/true'],
                  probe_pull=False, kubernetes='false', timeout=30, probe_timeout=30, fail=False)
    params.update(args)
    with Events(n) as events:
        r = run_module(MODULE, check=check_mode, expect_fail=expect_fail, env=n.env, **params)
    report = r['readiness']
    report['by_name'] = dict((c['name'], c) for c in report['checks'])
    report['events'] = events.topics
    return report


CREATED = ('/containers/create', '/tasks/create')


def probe_checks(report):
    return dict((name, report['by_name']['probe:' + name]) for name in HANDLERS)


def assert_probed(report, names, why=None, events=True):
    """Each handler of names ran its probe (and passed); why: the reason the stamp did not stand in (a pattern);
    events: containerd's events were seen for the whole call (not across a restart)."""
    for name in names:
        res = report['probes'][name]
        assert res['reused'] is False and res['ok'] and res['argv'], res
        assert report['by_name']['probe:' + name]['reason'].startswith('probe container (%s) exited 0' % PROBE_IMAGE)
        if why is not None:
            assert re.fullmatch(why, res['not_reused']), res
    if events:
        assert sum(report['events'].count(topic) for topic in CREATED) == 2 * len(names), report['events']


def assert_reused(report, names, stamps, reuse_seconds=3600, note=''):
    """Each handler of names reused its stamp; note: what the check's reason says after that (the probe's notes)."""
    for name in names:
        res, check_ = report['probes'][name], report['by_name']['probe:' + name]
        passed_at = time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(stamps[name]['time']))
        assert res['reused'] is True and res['ok'] and res['kind'] == 'run' and res['rc'] == 0, res
        assert res['passed_at'] == passed_at and 0 <= res['age_seconds'] <= reuse_seconds, res
        assert res['argv'] == [] and 'not_reused' not in res, res
        assert check_['status'] == 'pass' and check_['required'], check_
        assert check_['reason'] == (
            'probe container (%s) passed through %s %d s ago (%s); nothing it depends on changed since '
            '(probe_reuse_seconds=%g)%s' % (PROBE_IMAGE, name, res['age_seconds'], passed_at, reuse_seconds, note))


# ------------------------------------------------------------------ stamped, then reused
@pytest.mark.parametrize('binary', [pytest.param(CONTAINERD_1, id='containerd-1.6'),
                                    pytest.param(CONTAINERD_2, id='containerd-2.1')])
def test_a_passing_probe_is_stamped_then_reused_without_running_a_container(run_module, make_node, binary):
    n = make_node(binary)
    first = check(run_module, n, probe_reuse_seconds=3600)
    assert first['ok'], first['failed']
    assert_probed(first, HANDLERS, why='no stamp of an earlier passing probe')
    assert any(' create ' in ' %s ' % call for call in n.runc_calls())  # through the logged handler's runc
    # the stamp: private, one per handler
    folder = os.path.dirname(n.stamps_path)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700 and stat.S_IMODE(os.stat(n.stamps_path).st_mode) == 0o600
    stamps = n.stamps()
    assert sorted(stamps) == sorted(HANDLERS)
    assert all(abs(stamps[h]['time'] - time.time()) < 60 and stamps[h]['kind'] == 'run' for h in HANDLERS)
    with open(n.stamps_path, 'rb') as f:
        written = f.read()
    runc_calls = n.runc_calls()

    again = check(run_module, n, probe_reuse_seconds=3600)
    assert again['ok'] and again['summary'] == first['summary'], again['failed']
    assert_reused(again, HANDLERS, stamps)
    # no probe ran: containerd created no container or task, the handler's runtime was not called
    assert again['events'] == [] and n.runc_calls() == runc_calls
    with open(n.stamps_path, 'rb') as f:
        assert f.read() == written  # the stamp keeps the time the probe passed


def test_the_default_probes_every_time_and_keeps_the_stamps_true(run_module, node):
    report = check(run_module, node)
    assert report['ok'] and not os.path.exists(os.path.join(node.state_dir, 'readiness'))  # nothing written
    assert_probed(report, HANDLERS)
    assert all('not_reused' not in report['probes'][h] for h in HANDLERS)
    check(run_module, node, probe_reuse_seconds=3600)
    stamps = node.stamps()
    # a stamp exists: probe_reuse_seconds 0 still probes, and records the new pass
    report = check(run_module, node, probe_reuse_seconds=0)
    assert_probed(report, HANDLERS)
    assert all(node.stamps()[h]['time'] > stamps[h]['time'] for h in HANDLERS)


# ------------------------------------------------------------------ what makes a probe run again
def change_config(n):
    n.write_config('[plugins."io.containerd.gc.v1.scheduler"]\n  pause_threshold = 0.03\n')


def restart_containerd(n):
    pid = n.info()['pid']
    res = n.ctl('restart', 'containerd')
    assert res.returncode == 0 and n.info()['pid'] != pid, res.stderr + n.daemon_log()


def touch_handler_binary(n):
    later = time.time() + 5
    os.utime(n.wrapper, (later, later))


def replace_handler_binary(n):
    """The same bytes, mode and times under a new inode, as a package upgrade's rename leaves it."""
    shutil.copy2(n.wrapper, n.wrapper + '.new')
    os.rename(n.wrapper + '.new', n.wrapper)


def shift_the_stamps(n, key, seconds):
    """Each stamp's reading of one clock (time: the wall clock, mono: the monotonic clock) moved by seconds."""
    with open(n.stamps_path) as f:
        data = json.load(f)
    for stamp in data['handlers'].values():
        stamp[key] += seconds
    with open(n.stamps_path, 'w') as f:
        json.dump(data, f)


def age_the_stamps(n):
    shift_the_stamps(n, 'time', -100)


def age_the_stamps_on_the_monotonic_clock(n):
    """Passed 100 s ago, and the wall clock was set back 100 s since: only the monotonic clock says so."""
    shift_the_stamps(n, 'mono', -100)


BOTH = HANDLERS
LOGGED = ['logged']
FILES_CHANGED = (r'changed since the probe passed: the shim, runtime or configuration files of the handler or a file '
                 r'its configuration names')


@pytest.mark.parametrize('change,probed,why', [
    pytest.param(change_config, BOTH, r'changed since the probe passed: the effective config', id='config-changed'),
    pytest.param(restart_containerd, BOTH, r'changed since the probe passed: the containerd process \(restarted\)',
                 id='containerd-restarted'),
    pytest.param(touch_handler_binary, LOGGED, FILES_CHANGED, id='handler-binary-touched'),
    pytest.param(replace_handler_binary, LOGGED, FILES_CHANGED, id='handler-binary-replaced'),
    pytest.param(age_the_stamps, BOTH, r'the probe passed 10\d s ago, more than probe_reuse_seconds=60',
                 id='stamp-too-old'),
    pytest.param(age_the_stamps_on_the_monotonic_clock, BOTH,
                 r'the probe passed 10\d s ago, more than probe_reuse_seconds=60', id='stamp-too-old-wall-clock-set-back'),
])
def test_each_change_a_probe_depends_on_probes_again(run_module, node, change, probed, why):
    assert check(run_module, node, probe_reuse_seconds=60)['ok']
    stamps = node.stamps()
    runc_calls = len(node.runc_calls())
    change(node)
    report = check(run_module, node, probe_reuse_seconds=60)
    assert report['ok'], report['failed']
    assert_probed(report, probed, why=why)
    assert_reused(report, [h for h in HANDLERS if h not in probed], stamps, reuse_seconds=60)
    assert len(node.runc_calls()) > runc_calls  # the logged handler's runtime ran in every case
    # the new pass is stamped: the next check reuses it
    stamps = node.stamps()
    report = check(run_module, node, probe_reuse_seconds=60)
    assert_reused(report, HANDLERS, stamps, reuse_seconds=60)
    assert report['events'] == []


def test_a_wall_clock_set_back_leaves_a_young_stamp_reused(run_module, node):
    """The stamp is in the wall clock's future; the monotonic clock (the same boot) says how old it is."""
    check(run_module, node, probe_reuse_seconds=60)
    shift_the_stamps(node, 'time', 600)
    stamps = node.stamps()
    report = check(run_module, node, probe_reuse_seconds=60)
    assert_reused(report, HANDLERS, stamps, reuse_seconds=60)
    assert report['events'] == []


# ------------------------------------------------------------------ the files a kata configuration names
KATA_FILES = ('qemu-system-x86_64', 'vmlinux', 'kata-containers.img')


def add_kata_handler(n):
    """A kata handler: the stand-in kata shim (it hands the container to the runc shim) as runtime_path, and a
    kata configuration as options.ConfigPath that names the files of the VM, all in the handler's folder."""
    shim = os.path.join(n.handler_dir, 'containerd-shim-kata-v2')
    shutil.copy2(os.path.join(STANDINS, 'containerd-shim-kata-v2'), shim)
    for name in KATA_FILES:
        with open(os.path.join(n.handler_dir, name), 'w') as f:
            f.write(name + ' 1\n')
    config = os.path.join(n.handler_dir, 'configuration-qemu.toml')
    with open(config, 'w') as f:
        f.write('[hypervisor.qemu]\npath = "{d}/qemu-system-x86_64"\nkernel = "{d}/vmlinux"\n'
                'image = "{d}/kata-containers.img"\n'.format(d=n.handler_dir))
    n.write_config('[{cri}.containerd.runtimes.kata]\n  runtime_type = "io.containerd.kata-qemu.v2"\n'
                   '  runtime_path = "{shim}"\n[{cri}.containerd.runtimes.kata.options]\n  ConfigPath = "{config}"\n'
                   .format(cri=CRI, shim=shim, config=config))
    restart_containerd(n)


@pytest.mark.parametrize('name', KATA_FILES)
def test_a_file_the_kata_configuration_names_replaced_probes_again(run_module, node, name):
    """A kata payload updated file by file, or the distribution's qemu upgraded: the shim and the configuration
    file are the same, the VM is not."""
    add_kata_handler(node)
    # the runc shim refuses kata's --runtime-config-path
    args = dict(handlers=HANDLERS + ['kata'], pass_config_path=False, probe_reuse_seconds=60)
    note = '; options.ConfigPath %s not passed (pass_config_path is false)' % os.path.join(
        node.handler_dir, 'configuration-qemu.toml')
    first = check(run_module, node, **args)
    assert first['ok'], first['failed']
    assert_probed(first, HANDLERS + ['kata'], why='no stamp of an earlier passing probe')
    stamps = node.stamps()
    report = check(run_module, node, **args)
    assert_reused(report, HANDLERS, stamps, reuse_seconds=60)
    assert_reused(report, ['kata'], stamps, reuse_seconds=60, note=note)
    assert report['events'] == []
    path = os.path.join(node.handler_dir, name)
    with open(path + '.new', 'w') as f:
        f.write(name + ' 2, another version\n')
    os.rename(path + '.new', path)
    report = check(run_module, node, **args)
    assert report['ok'], report['failed']
    assert_probed(report, ['kata'], why=FILES_CHANGED)
    assert_reused(report, HANDLERS, stamps, reuse_seconds=60)


# ------------------------------------------------------------------ failures and check mode
def test_a_failing_probe_removes_its_stamp(run_module, node):
    check(run_module, node, probe_reuse_seconds=3600)
    open(node.fail_flag, 'w').close()  # the logged runtime now refuses to create: nothing the stamp knows changed
    report = check(run_module, node, probe_reuse_seconds=0)
    assert report['failed'] == ['probe:logged'], report['failed']
    assert '%s did not terminate successfully' % node.wrapper in report['probes']['logged']['stderr']
    assert sorted(node.stamps()) == ['runc']
    # with reuse asked for, the failed handler probes (and fails) again; runc's stamp stands in
    stamps = node.stamps()
    report = check(run_module, node, probe_reuse_seconds=3600)
    assert report['failed'] == ['probe:logged'] and report['probes']['logged']['reused'] is False, report['failed']
    assert report['probes']['logged']['not_reused'] == 'no stamp of an earlier passing probe'
    assert_reused(report, ['runc'], stamps)
    os.remove(node.fail_flag)
    report = check(run_module, node, probe_reuse_seconds=3600)
    assert report['ok'] and sorted(node.stamps()) == sorted(HANDLERS)


def test_check_mode_reuses_but_writes_no_stamp(run_module, node):
    report = check(run_module, node, check_mode=True, probe_reuse_seconds=3600)
    assert report['ok'] and not os.path.exists(node.state_dir)
    assert_probed(report, HANDLERS, why='no stamp of an earlier passing probe')
    check(run_module, node, probe_reuse_seconds=3600)
    stamps = node.stamps()
    with open(node.stamps_path, 'rb') as f:
        written = f.read()
    report = check(run_module, node, check_mode=True, probe_reuse_seconds=3600)
    assert_reused(report, HANDLERS, stamps)
    # a failing probe in check mode leaves the stamps as they are
    open(node.fail_flag, 'w').close()
    report = check(run_module, node, check_mode=True)
    assert report['failed'] == ['probe:logged']
    with open(node.stamps_path, 'rb') as f:
        assert f.read() == written


def test_an_unreadable_stamp_file_probes_again_and_is_rewritten(run_module, node):
    check(run_module, node, probe_reuse_seconds=3600)
    with open(node.stamps_path, 'w') as f:
        f.write('{"format": 1, "handlers": ')  # cut short, as a full disk could leave it
    report = check(run_module, node, probe_reuse_seconds=3600)
    assert_probed(report, HANDLERS, why=r'no stamp of an earlier passing probe')
    assert sorted(node.stamps()) == sorted(HANDLERS)


# ------------------------------------------------------------------ the end of a converge (step=restart_check)
def test_restart_check_reuses_on_a_no_op_re_run_and_probes_after_its_restart(run_module, node):
    args = dict(step='restart_check', probe_reuse_seconds=3600, preflight=False)
    report = check(run_module, node, **args)
    assert_probed(report, HANDLERS)
    stamps = node.stamps()
    report = check(run_module, node, **args)
    assert_reused(report, HANDLERS, stamps)
    assert report['events'] == [] and node.info()['restarts'] == 1
    # a change of the config: the restart step restarts containerd, the checks probe the new one
    change_config(node)
    later = time.time() + 2
    os.utime(node.config, (later, later))
    runc_calls = len(node.runc_calls())
    report = check(run_module, node, **args)
    assert report['ok'] and node.info()['restarts'] == 2, node.info()
    # ctr events ends with the containerd it listened to: the logged runtime's calls say its probe ran
    assert_probed(report, HANDLERS, events=False,
                  why=r'changed since the probe passed: the effective config, the containerd process \(restarted\)')
    assert len(node.runc_calls()) > runc_calls
    stamps = node.stamps()
    report = check(run_module, node, **args)
    assert_reused(report, HANDLERS, stamps)
    assert report['events'] == [] and node.info()['restarts'] == 2
