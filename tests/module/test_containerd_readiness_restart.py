# -*- coding: utf-8 -*-
"""containerd_readiness step=pending/restart/wait: the restart contract, against the real containerd.

The decision runs the real ``containerd config dump``; for step=restart a
stand-in ``systemctl`` (first in PATH) runs a real containerd daemon on a
private socket, root and state, as systemd runs the unit: ``restart`` stops
it and starts it again, blocking until its socket answers; ``show`` reports
its state and start on the monotonic clock; a flag file makes the next start
hit systemd's start limit, which only ``reset-failed`` clears. The module
waits with the real ``ctr plugins ls`` and load-tests with the real
containerd in a sandbox (containerd_preflight's code).
containerd 1.6/1.7 print the imports line of the dump in a random order, so
the fingerprint leaves it out.
"""

import hashlib
import itertools
import os
import re
import subprocess
import time

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_2, FIXTURES
from helpers.readiness import StandinUnit, standin_units

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.restart import (
    dump_fingerprint,
    record_fingerprint,
)

CRI = 'plugins."io.containerd.grpc.v1.cri".containerd.runtimes'
CRI_V3 = 'plugins."io.containerd.cri.v1.runtime".containerd.runtimes'
MODULE = 'containerd_readiness'


class Unit(StandinUnit):
    """The stand-in containerd unit; for the decision alone, systemd's view of it can be set by hand."""

    def started(self, epoch, active='active'):
        """For the decision only: systemd's view of a unit that started at epoch (no daemon)."""
        mono = int((time.monotonic() - (time.time() - epoch)) * 1e6)
        self.unit['fixed'] = 'ActiveState=%s\nExecMainStartTimestampMonotonic=%d\n' % (active, mono)
        self.save()

    def record(self, fingerprint):
        os.makedirs(self.state_dir, exist_ok=True)
        with open(os.path.join(self.state_dir, 'containerd-started.sha256'), 'w') as f:
            f.write(fingerprint + '\n')


@pytest.fixture
def unit(workdir):
    with standin_units('ng-unit-', Unit) as make:
        yield make


def pending(run_module, u, cfg, *extra, binary=CONTAINERD_1):
    r = run_module(MODULE, step='pending', path=str(cfg), state_dir=u.state_dir, containerd_bin=binary,
                   restart_files=[str(f) for f in extra], env=u.env)
    assert r['changed'] is False
    return r['decision']


def write_config(folder, version, table, drop_ins):
    imports = []
    for i in range(drop_ins):
        path = os.path.join(str(folder), 'drop-%d.toml' % i)
        with open(path, 'w') as f:
            f.write('version = %d\n\n[%s.extra%d]\n  runtime_type = "io.containerd.runc.v2"\n' % (version, table, i))
        imports.append('"%s"' % path)
    cfg = os.path.join(str(folder), 'config.toml')
    with open(cfg, 'w') as f:
        f.write('version = %d\nimports = [%s]\n\n[%s.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
                % (version, ', '.join(imports), table))
    return cfg


def dump_of(binary, cfg):
    proc = subprocess.run([binary, '--config', str(cfg), 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=True)
    return proc.stdout


def touch_later(path, seconds=2.0):
    later = time.time() + seconds
    os.utime(str(path), (later, later))
    return later


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text
    with open(path, 'w') as f:
        f.write(text.replace(old, new))


PRIVILEGED = 'runtime_type = "io.containerd.runc.v2"\n  privileged_without_host_devices = true'


# ------------------------------------------------------------------ the fingerprint
@pytest.mark.parametrize('binary,version,table', [
    pytest.param(CONTAINERD_1, 2, CRI, id='containerd-1.x'),
    pytest.param(CONTAINERD_2, 3, CRI_V3, id='containerd-2.x'),
])
def test_fingerprint_ignores_the_order_of_the_imports_line(tmp_path, binary, version, table):
    if binary is None:
        pytest.fail('no containerd binary: run `make deps`')
    cfg = write_config(tmp_path, version, table, 3)
    dump = dump_of(binary, cfg).rstrip('\r\n')
    expected = dump_fingerprint(dump)
    m = re.search(r'(?m)^imports = \[(.*)\]$', dump)
    assert m, 'the dump has no imports line'
    entries = m.group(1).split(', ')
    assert len(entries) >= 3  # 1.x lists the main file too
    for order in list(itertools.permutations(entries))[1:]:
        other = dump[:m.start(1)] + ', '.join(order) + dump[m.end(1):]
        assert hashlib.sha256(other.encode()).hexdigest() != hashlib.sha256(dump.encode()).hexdigest()
        assert dump_fingerprint(other) == expected
    # containerd's own repeated dumps of one config: one fingerprint
    assert {dump_fingerprint(dump_of(binary, cfg)) for dummy in range(4)} == {expected}


def test_fingerprint_follows_the_content_of_imported_files(tmp_path):
    cfg = write_config(tmp_path, 2, CRI, 2)
    before = dump_fingerprint(dump_of(CONTAINERD_1, cfg))
    drop = tmp_path / 'drop-1.toml'
    drop.write_text(drop.read_text() + '  privileged_without_host_devices = true\n')
    assert dump_fingerprint(dump_of(CONTAINERD_1, cfg)) != before
    # only the top-level imports line is left out; an indented key of that name is config
    a = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/b"]'
    b = 'version = 2\nimports = ["/a"]\n[x]\n  imports = ["/c"]'
    assert dump_fingerprint(a) != dump_fingerprint(b)


def test_the_record_is_rewritten_so_its_time_is_the_last_restart(tmp_path):
    """Same fingerprint after a reboot: the record's time must still move (pending compares it with the start)."""
    state = tmp_path / 'state'
    path = record_fingerprint(str(state), 'ab' * 32)
    old = time.time() - 3600
    os.utime(path, (old, old))
    record_fingerprint(str(state), 'ab' * 32)
    assert os.stat(path).st_mtime > old + 3000
    assert open(path).read() == 'ab' * 32 + '\n'
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o600)
    assert os.listdir(str(state)) == ['containerd-started.sha256']  # no temporary file left


# ------------------------------------------------------------------ the decision (step=pending)
def test_started_after_the_last_change_is_not_pending(tmp_path, run_module, unit):
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 1)
    u.started(time.time() + 60)
    out = pending(run_module, u, cfg)
    assert out['dump_ok'] and not out['pending'], out
    assert out['fingerprint'] == dump_fingerprint(dump_of(CONTAINERD_1, cfg))
    assert 'started after' in out['reason']


def test_a_changed_import_makes_a_restart_pending(tmp_path, run_module, unit):
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 2)
    u.started(time.time())
    touch_later(tmp_path / 'drop-1.toml')
    out = pending(run_module, u, cfg)
    assert out['pending'] and out['newest_path'] == str(tmp_path / 'drop-1.toml'), out


def test_an_extra_file_counts_too(tmp_path, run_module, unit):
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 0)
    extra = tmp_path / 'not-imported-yet.toml'
    extra.write_text('version = 2\n')
    u.started(time.time())
    touch_later(extra)
    assert not pending(run_module, u, cfg)['pending']
    assert pending(run_module, u, cfg, extra)['pending']


def test_same_effective_config_as_the_recorded_restart_is_not_pending(tmp_path, run_module, unit):
    """A comment edit after nodeguard's restart: the files are newer, the effective config is the same."""
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 0)  # no import: on 1.x a drop-in's CRI table would replace the main one
    u.started(time.time() - 30)
    first = pending(run_module, u, cfg)
    u.record(first['fingerprint'])  # what the restart step writes after its restart
    with open(cfg, 'a') as f:
        f.write('# a comment\n')
    touch_later(cfg)
    out = pending(run_module, u, cfg)
    assert not out['pending'] and out['fingerprint'] == first['fingerprint'], out
    assert 'last restarted containerd with' in out['reason']
    edit(cfg, 'runtime_type = "io.containerd.runc.v2"', PRIVILEGED)  # a real change is pending again
    touch_later(cfg)
    assert pending(run_module, u, cfg)['pending']


def test_a_start_after_the_record_voids_it(tmp_path, run_module, unit):
    """Killed between its restart and the record, or restarted by hand: the record no longer describes containerd."""
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 0)
    u.started(time.time() - 30)
    u.record(pending(run_module, u, cfg)['fingerprint'])
    u.started(time.time() + 1)  # containerd started after the record was written
    touch_later(cfg, 5)         # and the file changed after that start
    out = pending(run_module, u, cfg)
    assert out['pending'] and out['recorded'] == out['fingerprint'], out


def test_a_config_containerd_cannot_load_is_pending_and_not_ok(tmp_path, run_module, unit):
    u = unit()
    cfg = tmp_path / 'config.toml'
    cfg.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"\n')
    u.started(time.time() + 60)
    out = pending(run_module, u, cfg)
    assert out['pending'] and not out['dump_ok'] and str(cfg) in out['reason'], out


def test_containerd_not_running_is_pending(tmp_path, run_module, unit):
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 0)
    u.started(time.time() + 60, active='failed')
    out = pending(run_module, u, cfg)
    assert out['pending'] and 'not running' in out['reason'] and out['active_state'] == 'failed', out


def test_an_unreadable_import_leaves_the_decision_to_the_fingerprint(tmp_path, run_module, unit):
    """File times cannot vouch for a drop-in the walk could not read: no shortcut, the fingerprint decides.

    The drop-in has a Latin-1 byte in a comment: containerd 1.6 loads it, the engine's walk cannot decode it.
    """
    u = unit()
    drop = tmp_path / 'latin1.toml'
    drop.write_bytes(b'version = 2\n# caf\xe9\n')
    cfg = tmp_path / 'config.toml'
    cfg.write_text('version = 2\nimports = ["%s"]\n' % drop)
    assert subprocess.run([CONTAINERD_1, '--config', str(cfg), 'config', 'dump'], capture_output=True,
                          timeout=60, check=False).returncode == 0
    u.started(time.time() + 60)
    out = pending(run_module, u, cfg)
    assert out['walk_errors'] and out['pending'], out
    u.record(out['fingerprint'])  # as the restart step does after a restart, i.e. after containerd started
    later = time.time() + 120
    os.utime(os.path.join(u.state_dir, 'containerd-started.sha256'), (later, later))
    assert not pending(run_module, u, cfg)['pending']


def test_a_file_deleted_from_a_glob_import_is_seen_through_its_folder(tmp_path, run_module, unit):
    u = unit()
    conf_d = tmp_path / 'conf.d'
    conf_d.mkdir()
    (conf_d / 'a.toml').write_text('version = 2\n[proxy_plugins.a]\n  type = "snapshot"\n  address = "/run/a.sock"\n')
    (conf_d / 'b.toml').write_text('version = 2\n[proxy_plugins.b]\n  type = "snapshot"\n  address = "/run/b.sock"\n')
    cfg = tmp_path / 'config.toml'
    cfg.write_text('version = 2\nimports = ["%s/*.toml"]\n' % conf_d)
    u.started(time.time() + 1)
    time.sleep(1.5)
    (conf_d / 'b.toml').unlink()  # no remaining file changes; the folder does
    out = pending(run_module, u, cfg)
    assert out['pending'] and out['newest_path'] == str(conf_d), out


def test_a_copy_that_keeps_the_old_time_is_still_a_change(tmp_path, run_module, unit):
    """cp -p over the config after containerd started: the mtime is old, the inode change time is not."""
    u = unit()
    cfg = write_config(tmp_path, 2, CRI, 0)
    old = time.time() - 3600
    os.utime(cfg, (old, old))
    u.started(time.time() - 1)
    time.sleep(1.2)
    edit(cfg, 'runtime_type = "io.containerd.runc.v2"', PRIVILEGED)
    os.utime(cfg, (old, old))  # what cp -p / copystat leave
    assert pending(run_module, u, cfg)['pending']


# ------------------------------------------------------------------ the whole contract (step=restart)
def daemon_config(u, folder, extra=''):
    """A config the stand-in unit runs: a real containerd on the unit's private socket, root and state."""
    cfg = os.path.join(str(folder), 'config.toml')
    with open(cfg, 'w') as f:
        f.write('version = 2\nroot = "{b}/root"\nstate = "{b}/state"\n[grpc]\n  address = "{a}"\n'
                '[plugins."io.containerd.internal.v1.opt"]\n  path = "{b}/opt"\n'
                '[plugins."io.containerd.grpc.v1.cri"]\n  disable_tcp_service = true\n  stream_server_port = "0"\n'
                '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n'
                '  runtime_type = "io.containerd.runc.v2"\n{extra}'.format(b=u.base, a=u.address, extra=extra))
    u.unit['config'] = cfg
    u.save()
    return cfg


def restart(run_module, u, cfg, check=False, expect_fail=False, **args):
    args.setdefault('fail', False)
    return run_module(MODULE, step='restart', check=check, expect_fail=expect_fail, path=cfg, state_dir=u.state_dir,
                      containerd_bin=u.unit['binary'], timeout=60, env=u.env, **args)


def recorded(u):
    path = os.path.join(u.state_dir, 'containerd-started.sha256')
    return open(path).read().strip() if os.path.exists(path) else None


@pytest.fixture
def running(tmp_path, unit):
    """A running stand-in unit (a real containerd 1.6) and its config."""
    u = unit()
    cfg = daemon_config(u, tmp_path)
    res = u.ctl('restart', 'containerd')
    assert res.returncode == 0, res.stderr + u.daemon_log()
    return u, cfg


def test_restart_once_after_a_change_then_nothing(running, run_module):
    u, cfg = running
    pid = u.info()['pid']
    time.sleep(0.1)
    edit(cfg, 'runtime_type = "io.containerd.runc.v2"', PRIVILEGED)
    touch_later(cfg)
    r = restart(run_module, u, cfg)
    fact = r['restart']
    assert r['changed'] and fact['needed'] and fact['restarted'] and fact['cri_ok'] and not fact['refused'], r
    assert fact['wait']['ok'] and fact['wait']['cri_plugins'] == {'io.containerd.grpc.v1.cri': 'ok'}
    assert fact['wait']['containerd_version'].startswith('1.6.')
    assert fact['seconds'] > 0 and 'changed after containerd started' in fact['reason']
    assert r['preflight']['status'] == 'ok'  # the load test ran before the restart
    assert u.info()['pid'] != pid and u.calls('restart') == 2
    assert recorded(u) == r['decision']['fingerprint'] == dump_fingerprint(dump_of(CONTAINERD_1, cfg))
    # a second converge restarts nothing (containerd started after the last change)
    again = restart(run_module, u, cfg)
    assert not again['changed'] and again['restart'] == dict(restarted=False, needed=False, refused=False,
                                                             reason=again['decision']['reason'], cri_ok=False,
                                                             wait={}, seconds=0)
    assert u.calls('restart') == 2 and 'preflight' not in again


def test_check_mode_decides_and_never_restarts(running, run_module):
    u, cfg = running
    pid = u.info()['pid']
    edit(cfg, 'runtime_type = "io.containerd.runc.v2"', PRIVILEGED)
    touch_later(cfg)
    r = restart(run_module, u, cfg, check=True)
    assert r['changed'] and r['restart']['needed'] and not r['restart']['restarted'], r
    assert r['preflight']['status'] == 'ok'
    assert u.info()['pid'] == pid and u.calls('restart') == 1 and recorded(u) is None


def test_a_config_dump_rejects_is_refused_and_containerd_kept(running, run_module):
    u, cfg = running
    pid = u.info()['pid']
    with open(cfg, 'a') as f:
        f.write('[plugins."io.containerd.grpc.v1.cri"\n')
    r = restart(run_module, u, cfg)
    assert r['restart']['refused'] and r['restart']['needed'] and not r['restart']['restarted'], r
    assert 'config dump failed' in r['restart']['reason'] and 'not restarting containerd' in r['msg']
    assert 'preflight' not in r  # config dump already said no
    assert u.info()['pid'] == pid and u.calls('restart') == 1
    # fail: true (the default) fails the task, with the same report
    r = restart(run_module, u, cfg, expect_fail=True, fail=True)
    assert r['restart']['refused'] and 'The running containerd is left as it is' in r['msg']


def test_the_load_test_refuses_what_config_dump_accepts(running, run_module):
    """nvidia-ctk 1.17.8 on Debian 12's shipped config: config dump says yes, the CRI plugin fails to load."""
    u, cfg = running
    pid = u.info()['pid']
    with open(os.path.join(FIXTURES, 'nvidia-ctk',
                           'ctk-v1.17.8-nvidia-ctk-debian-shipped-config-default.configured.config.toml')) as f:
        ctk = f.read()
    with open(cfg, 'w') as f:
        f.write(ctk)
    assert subprocess.run([CONTAINERD_1, '--config', cfg, 'config', 'dump'], capture_output=True,
                          timeout=60, check=False).returncode == 0
    r = restart(run_module, u, cfg)
    assert r['restart']['refused'] and not r['restart']['restarted'], r
    assert r['preflight']['status'] == 'failed'
    assert 'no corresponding runtime configured in `containerd.runtimes`' in r['restart']['reason']
    assert u.info()['pid'] == pid and u.calls('restart') == 1


def test_force_restarts_when_nothing_is_pending(running, run_module):
    u, cfg = running
    assert not restart(run_module, u, cfg)['restart']['needed']
    r = restart(run_module, u, cfg, force=True, preflight=False)
    assert r['restart']['needed'] and r['restart']['restarted'] and r['restart']['cri_ok'], r
    assert 'preflight' not in r and u.calls('restart') == 2


def test_start_limit_hit_is_cleared_once_then_the_fingerprint_recorded(running, run_module):
    u, cfg = running
    u.ctl('stop', 'containerd')
    open(os.path.join(u.bin_dir, 'start-limit'), 'w').close()  # the next start hits systemd's start limit
    r = restart(run_module, u, cfg, preflight=False)
    fact = r['restart']
    assert 'not running' in fact['reason'] and fact['restarted'], r
    assert fact['wait']['restart_rc'] != 0 and 'start-limit-hit' in fact['wait']['restart_error']
    assert fact['wait']['start_limit_hit'] and fact['wait']['reset_failed_done'] and fact['cri_ok'], fact
    assert u.calls('reset-failed') == 1 and recorded(u) == r['decision']['fingerprint']


def test_wait_names_start_limit_hit_and_clears_it_only_when_asked(running, run_module):
    u, cfg = running
    u.ctl('stop', 'containerd')
    open(os.path.join(u.bin_dir, 'start-limit'), 'w').close()
    u.ctl('start', 'containerd')
    r = run_module(MODULE, step='wait', expect_fail=True, timeout=3, path=cfg, containerd_bin=CONTAINERD_1,
                   address=u.address, env=u.env)
    assert r['wait']['ok'] is False and r['wait']['start_limit_hit'] is True and 'start-limit-hit' in r['msg']
    r = run_module(MODULE, step='wait', check=True, expect_fail=True, timeout=3, reset_failed=True, path=cfg,
                   containerd_bin=CONTAINERD_1, address=u.address, env=u.env)
    assert not r['wait']['reset_failed_done'] and u.calls('reset-failed') == 0  # not in check mode
    r = run_module(MODULE, step='wait', timeout=30, reset_failed=True, path=cfg, containerd_bin=CONTAINERD_1,
                   address=u.address, env=u.env)
    assert r['wait']['ok'] and r['wait']['reset_failed_done'], r
    assert u.calls('reset-failed') == 1


def test_fingerprint_of_the_old_script_is_still_valid(running, run_module):
    """Upgrade: a record written by the former node_readiness helper (same sha256 of the same text) is honoured."""
    u, cfg = running
    dump = dump_of(CONTAINERD_1, cfg)
    text = re.sub(r'(?m)^imports = \[.*\]\n?', '', dump.rstrip('\r\n'))
    u.record(hashlib.sha256(text.encode('utf-8')).hexdigest())
    later = time.time() + 60
    os.utime(os.path.join(u.state_dir, 'containerd-started.sha256'), (later, later))
    with open(cfg, 'a') as f:
        f.write('# a comment\n')
    touch_later(cfg)
    r = restart(run_module, u, cfg)
    assert not r['restart']['needed'] and 'last restarted containerd with' in r['restart']['reason'], r


# ------------------------------------------------------------------ restart, then the checks (step=restart_check)
def restart_check(run_module, u, cfg, expect_fail=False, **args):
    args.setdefault('fail', False)
    return run_module(MODULE, step='restart_check', expect_fail=expect_fail, path=cfg, state_dir=u.state_dir,
                      containerd_bin=u.unit['binary'], address=u.address, probe=False, kubernetes='false',
                      env=u.env, **args)


def statuses(report):
    return dict((c['name'], c['status']) for c in report['checks'])


def test_restart_check_restarts_then_reports_on_the_new_containerd(running, run_module):
    u, cfg = running
    edit(cfg, 'runtime_type = "io.containerd.runc.v2"', PRIVILEGED)
    touch_later(cfg)
    r = restart_check(run_module, u, cfg, timeout=60)
    assert r['changed'] and r['restart']['restarted'] and r['restart']['cri_ok'], r
    assert r['readiness']['ok'] and statuses(r['readiness'])['containerd_active'] == 'pass', r['readiness']
    assert 'containerd restarted' in r['msg'] and r['msg'].endswith(': READY'), r['msg']
    assert u.calls('restart') == 2 and recorded(u) == r['decision']['fingerprint']
    # the same report as a separate step=check on the same node
    alone = run_module(MODULE, step='check', fail=False, path=cfg, state_dir=u.state_dir,
                       containerd_bin=CONTAINERD_1, address=u.address, probe=False, kubernetes='false', env=u.env)
    assert statuses(alone['readiness']) == statuses(r['readiness'])
    assert alone['readiness']['containerd']['runtimes'] == r['readiness']['containerd']['runtimes']
    # a re-run: no restart, the checks still run
    again = restart_check(run_module, u, cfg, timeout=60)
    assert not again['changed'] and not again['restart']['needed'] and again['readiness']['ok'], again
    assert u.calls('restart') == 2


def test_restart_check_reports_after_a_refused_restart_and_fails_when_asked(running, run_module):
    u, cfg = running
    pid = u.info()['pid']
    with open(cfg, 'a') as f:
        f.write('[plugins."io.containerd.grpc.v1.cri"\n')
    r = restart_check(run_module, u, cfg, timeout=10)
    assert r['restart']['refused'] and not r['restart']['restarted'], r
    # the checks ran on the containerd still running the old config: active, the file broken
    checks = statuses(r['readiness'])
    assert checks['containerd_active'] == 'pass' and checks['config_dump'] == 'fail', checks
    assert not r['readiness']['ok'] and u.info()['pid'] == pid and u.calls('restart') == 1
    r = restart_check(run_module, u, cfg, expect_fail=True, fail=True, timeout=10)
    assert 'not restarting containerd' in r['msg'] and 'NOT READY' in r['msg'] and '[config_dump]' in r['msg'], r['msg']


def test_restart_check_does_not_wait_twice_for_a_containerd_that_did_not_come_back(running, run_module):
    """The CRI plugin fails to load (config dump accepts the file): the restart waits its timeout, the checks not."""
    u, cfg = running
    # as nvidia-ctk 1.17.8 leaves Debian's config: default_runtime_name "runc" without a runc runtime
    edit(cfg, 'containerd.runtimes.runc]', 'containerd.runtimes.nvidia]')
    touch_later(cfg)
    t0 = time.monotonic()
    r = restart_check(run_module, u, cfg, timeout=4, preflight=False)
    took = time.monotonic() - t0
    assert r['restart']['restarted'] and not r['restart']['cri_ok'], r['restart']
    assert r['restart']['wait']['waited_seconds'] >= 3.5, r['restart']['wait']
    assert statuses(r['readiness'])['cri_plugin'] == 'fail' and not r['readiness']['ok'], r['readiness']
    assert (r['readiness']['containerd']['waited_seconds'] or 0) < 1.0, r['readiness']['containerd']
    assert took < 4 + 3.5, took  # one timeout, not two
