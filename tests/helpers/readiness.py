# -*- coding: utf-8 -*-
"""containerd_readiness run on a real containerd: the daemon on a private socket with an active systemd
unit (the readiness_node fixture of tests/module/conftest.py starts it), a stand-in systemd unit that starts,
stops and restarts a real containerd as systemd does (StandinUnit), the module's report by check name, and a
journalctl that answers what the test gives it."""

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

from helpers.common import CONTAINERD_1
from helpers.standins import unmount_below

MODULE = 'containerd_readiness'
CRI = 'io.containerd.grpc.v1.cri'
RUNC = ['plugins', CRI, 'containerd', 'runtimes', 'runc']
SYSTEMCTL_ACTIVE = '#!/bin/sh\nprintf "ActiveState=active\\nSubState=running\\nResult=success\\nLoadState=loaded\\n"\n'


def socket_folder(prefix):
    """A new folder for a containerd's socket, root and state: under /run, as a socket's path must be short."""
    return tempfile.mkdtemp(prefix=prefix, dir='/run' if os.access('/run', os.W_OK) else None)


def start_readiness_node(workdir, started, binary=CONTAINERD_1, extra='', version=2):
    """A real containerd on a private socket (named by the config's grpc.address) and an active systemd unit;
    (process, folder) is added to started for stop_readiness_nodes."""
    if binary is None:
        pytest.fail('no containerd binary: run `make deps`')
    base = socket_folder('ng-rd-')
    bin_dir = os.path.join(base, 'bin')
    os.makedirs(bin_dir)
    with open(os.path.join(bin_dir, 'systemctl'), 'w') as f:
        f.write(SYSTEMCTL_ACTIVE)
    os.chmod(os.path.join(bin_dir, 'systemctl'), 0o755)
    cri = CRI if version == 2 else 'io.containerd.cri.v1.runtime'
    cfg = os.path.join(workdir, 'config.toml')
    with open(cfg, 'w') as f:
        f.write('version = {v}\nroot = "{b}/root"\nstate = "{b}/state"\n[grpc]\n  address = "{b}/c.sock"\n'
                '[plugins."io.containerd.internal.v1.opt"]\n  path = "{b}/opt"\n'
                '[plugins."{cri}".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n{x}'
                .format(v=version, b=base, cri=cri, x=extra))
    proc = subprocess.Popen([binary, '--config', cfg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append((proc, base))
    ctr = os.path.join(os.path.dirname(binary), 'ctr')
    for dummy in range(200):
        if subprocess.run([ctr, '--address', base + '/c.sock', 'version'], capture_output=True,
                          check=False).returncode == 0:
            break
        assert proc.poll() is None, 'containerd did not start'
        subprocess.run(['sleep', '0.1'], check=False)
    return dict(config=cfg, base=base, binary=binary, env=dict(PATH=bin_dir + os.pathsep + os.environ['PATH']),
                address=base + '/c.sock')


def stop_readiness_nodes(started):
    for proc, base in started:
        proc.terminate()
        proc.wait(20)
        for sub in ('state', 'root'):
            subprocess.run(['umount', '-R', os.path.join(base, sub)], capture_output=True, check=False)
        subprocess.run(['rm', '-rf', base], check=False)


# systemctl as systemd answers for one unit, the unit a real containerd: unit.json beside it says which binary,
# config, socket and PATH; a start-limit file there makes the next start hit systemd's start limit, which only
# reset-failed clears; unit.json's "fixed" is what show prints instead (a unit's state without a daemon)
SYSTEMCTL_UNIT = r'''#!%(python)s
import json, os, signal, socket, subprocess, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.path.join(HERE, 'unit.json')
START_LIMIT = os.path.join(HERE, 'start-limit')
with open(STATE) as f:
    unit = json.load(f)
with open(os.path.join(HERE, 'calls.log'), 'a') as f:
    f.write(' '.join(sys.argv[1:]) + '\n')

def save():
    with open(STATE + '.tmp', 'w') as f:
        json.dump(unit, f)
    os.rename(STATE + '.tmp', STATE)

def mono():
    return int(time.monotonic() * 1e6)

def alive():
    try:
        with open('/proc/%%d/stat' %% unit['pid']) as f:
            return f.read().split(') ')[1][0] not in 'ZX'
    except (KeyError, TypeError, OSError):
        return False

def stop():
    if alive():
        os.kill(unit['pid'], signal.SIGTERM)
        for _ in range(400):
            if not alive():
                break
            time.sleep(0.05)
        unit['exit'] = mono()

def start():
    if os.path.exists(START_LIMIT):
        unit['result'] = 'start-limit-hit'
        save()
        sys.stderr.write('Job for containerd.service failed: start-limit-hit\n')
        sys.exit(1)
    log = open(os.path.join(HERE, 'containerd.log'), 'a')
    env = dict(os.environ, PATH=unit['path']) if unit.get('path') else None
    proc = subprocess.Popen([unit['binary'], '--config', unit['config']], stdout=log, stderr=log,
                            start_new_session=True, env=env)
    unit.update(pid=proc.pid, start=mono(), result='success', restarts=unit.get('restarts', 0) + 1)
    deadline = time.time() + 30
    while time.time() < deadline and proc.poll() is None:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(unit['address'])
            break
        except OSError:
            time.sleep(0.05)
        finally:
            s.close()
    unit['active'] = mono()
    save()
    sys.exit(0 if proc.poll() is None else 1)

def show():
    if 'fixed' in unit:
        sys.stdout.write(unit['fixed'])
        return
    up = alive()
    state = 'active' if up else ('failed' if unit.get('result') != 'success' or unit.get('pid') else 'inactive')
    props = dict(ActiveState=state, SubState='running' if up else 'dead', Result=unit.get('result', 'success'),
                 LoadState='loaded', NRestarts=unit.get('restarts', 0), MainPID=unit['pid'] if up else 0,
                 ExecMainStartTimestampMonotonic=unit['start'] if up else 0,
                 ActiveEnterTimestampMonotonic=unit.get('active', 0), ActiveExitTimestampMonotonic=unit.get('exit', 0))
    wanted = [w for a in sys.argv if a.startswith('--property=') for w in a.split('=', 1)[1].split(',')]
    for key in wanted or sorted(props):
        print(props.get(key, '') if '--value' in sys.argv else '%%s=%%s' %% (key, props.get(key, '')))

cmd = sys.argv[1]
if cmd == 'show':
    show()
elif cmd == 'restart':
    stop()
    start()
elif cmd == 'start':
    if not alive():
        start()
elif cmd == 'reset-failed':
    if os.path.exists(START_LIMIT):
        os.remove(START_LIMIT)
    unit['result'] = 'success'
    save()
elif cmd == 'stop':
    stop()
    save()
'''


class StandinUnit(object):
    """A stand-in systemd unit of a real containerd on a private socket: its bin folder (first in the module's
    PATH) holds systemctl, the unit's state (unit.json), the calls it was given and the daemon's log.

    path: the PATH the daemon starts with (default: systemctl's own).
    """

    def __init__(self, base, binary, config=None, path=None):
        self.base = base
        self.binary = binary
        self.bin_dir = os.path.join(base, 'bin')
        os.makedirs(self.bin_dir)
        self.systemctl = os.path.join(self.bin_dir, 'systemctl')
        with open(self.systemctl, 'w') as f:
            f.write(SYSTEMCTL_UNIT % dict(python=sys.executable))
        os.chmod(self.systemctl, 0o755)
        self.address = os.path.join(base, 'containerd.sock')
        self.state_dir = os.path.join(base, 'state-dir')
        self.unit = dict(binary=binary, config=config, address=self.address)
        if path:
            self.unit['path'] = path
        self.save()

    def save(self):
        """Write self.unit for the next systemctl call."""
        with open(os.path.join(self.bin_dir, 'unit.json'), 'w') as f:
            json.dump(self.unit, f)

    def info(self):
        """unit.json as systemctl last left it (pid, start, restarts ...)."""
        with open(os.path.join(self.bin_dir, 'unit.json')) as f:
            return json.load(f)

    @property
    def env(self):
        return dict(PATH=self.bin_dir + os.pathsep + os.environ['PATH'])

    def ctl(self, *args):
        return subprocess.run([self.systemctl] + list(args), capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, **self.env), check=False)

    def calls(self, verb):
        """How many times systemctl was called with verb."""
        path = os.path.join(self.bin_dir, 'calls.log')
        if not os.path.exists(path):
            return 0
        with open(path) as f:
            return sum(1 for line in f if line.split()[:1] == [verb])

    def daemon_log(self):
        """The end of the daemon's log, for a failed assertion's message."""
        path = os.path.join(self.bin_dir, 'containerd.log')
        if not os.path.exists(path):
            return ''
        with open(path) as f:
            return f.read()[-3000:]

    def stop(self):
        """Stop the daemon, unmount what it left and remove the folder."""
        self.ctl('stop', 'containerd')
        unmount_below(self.base)
        shutil.rmtree(self.base, ignore_errors=True)


@contextlib.contextmanager
def standin_units(prefix, make_unit):
    """make(binary=CONTAINERD_1, **kw): make_unit(folder, binary, **kw) in a new socket_folder(prefix); each unit
    made is stopped when the with block ends."""
    made = []

    def make(binary=CONTAINERD_1, **kw):
        if binary is None:
            pytest.fail('no containerd binary: run `make deps`', pytrace=False)
        made.append(make_unit(socket_folder(prefix), binary, **kw))
        return made[-1]
    try:
        yield make
    finally:
        for unit in made:
            unit.stop()


def check(run_module, n, expect_fail=False, **args):
    args.setdefault('kubernetes', 'false')
    args.setdefault('probe', False)
    args.setdefault('timeout', 20)
    r = run_module(MODULE, expect_fail=expect_fail, path=n['config'], containerd_bin=n['binary'], env=n['env'], **args)
    assert r['changed'] is False
    report = r['readiness']
    report['by_name'] = dict((c['name'], c) for c in report['checks'])
    return r, report


FAKE_JOURNALCTL = '''#!/bin/sh
printf '%%s\\n' "$*" >> %(calls)s
[ -n "%(fail)s" ] && { echo "Failed to open journal: %(fail)s" >&2; exit 1; }
cat <<'ENTRIES'
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"containerd.service","JOB_TYPE":"start",\
"MESSAGE":"Started containerd.service - containerd container runtime."}
{"_SYSTEMD_UNIT":"containerd.service","MESSAGE":"Started containerd (not systemd's entry: containerd's own log line)"}
{"MESSAGE_ID":"9d1aaa27d60140bd96365438aad20286","UNIT":"containerd.service","MESSAGE":"Stopped containerd.service - containerd container runtime."}
-- Boot 0c8e... --
{"MESSAGE_ID":"39f53479d3a045ac8e11786248231fbf","UNIT":"containerd.service","MESSAGE":"Started containerd container runtime."}
ENTRIES
'''


def fake_journalctl(folder, fail=''):
    os.makedirs(folder)
    calls = os.path.join(folder, 'calls')
    with open(os.path.join(folder, 'journalctl'), 'w') as f:
        f.write(FAKE_JOURNALCTL % dict(calls=calls, fail=fail))
    os.chmod(os.path.join(folder, 'journalctl'), 0o755)
    return calls
