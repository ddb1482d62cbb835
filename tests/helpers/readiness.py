# -*- coding: utf-8 -*-
"""containerd_readiness run on a real containerd: the daemon on a private socket with an active systemd
unit (the readiness_node fixture of tests/module/conftest.py starts it), the module's report by check name,
and a journalctl that answers what the test gives it."""

import os
import subprocess
import tempfile

import pytest

from helpers.common import CONTAINERD_1

MODULE = 'containerd_readiness'
CRI = 'io.containerd.grpc.v1.cri'
RUNC = ['plugins', CRI, 'containerd', 'runtimes', 'runc']
SYSTEMCTL_ACTIVE = '#!/bin/sh\nprintf "ActiveState=active\\nSubState=running\\nResult=success\\nLoadState=loaded\\n"\n'


def start_readiness_node(workdir, started, binary=CONTAINERD_1, extra='', version=2):
    """A real containerd on a private socket (named by the config's grpc.address) and an active systemd unit;
    (process, folder) is added to started for stop_readiness_nodes."""
    if binary is None:
        pytest.fail('no containerd binary: run `make deps`')
    base = tempfile.mkdtemp(prefix='ng-rd-', dir='/run' if os.access('/run', os.W_OK) else None)
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
