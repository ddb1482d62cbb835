# -*- coding: utf-8 -*-
"""Concurrency: 8 processes x 25 edits on one config, plus a foreign writer.

Each worker is an owner that adds its own runtimes (and drop-in imports,
through containerd_imports) one module run at a time, exactly as Ansible
runs modules, while a foreign writer rewrites the file without our lock the
way nvidia-ctk does (read, modify, open(path, 'w').write).

What nodeguard can promise, and what is asserted:
- no run hangs past lock_timeout, no run fails except with the documented
  "changed by another program N times" refusal (retried, as `until:` would);
- nodeguard never loses an edit of a nodeguard run, and never loses a
  foreign edit that landed before its compare-before-rename check;
- what a lockless writer can do to anyone (read our old file, write it back
  after our rename) is told apart by time stamps (CLOCK_MONOTONIC, logged by
  the crash wrapper at the rename and by the writer around its
  read-modify-write) and counted, not hidden; a converge pass then restores
  those edits and the final set equals the expected set exactly;
- the final file is accepted by the real containerd.

Knobs: NODEGUARD_CONC_WORKERS (8), NODEGUARD_CONC_EDITS (25),
NODEGUARD_CONC_FOREIGN_MS (mean pause of the foreign writer, 3000),
NODEGUARD_CONC_LOCK_TIMEOUT (lock_timeout of every run, 120 s).
"""

import os
import random
import threading
import time

import tomlkit

from conftest import assert_containerd_accepts, fixture_text, read
from ng_reliability import Runner, finish, knob, ledger_problems, module_exists, read_points, temp_files

V2_CRI = 'io.containerd.grpc.v1.cri'
FOREIGN_REFUSAL = 'was changed by another program'
LOCK_REFUSAL = 'could not lock'
LOCK_TIMEOUT = float(knob('NODEGUARD_CONC_LOCK_TIMEOUT', 120))


def _timelog(path):
    """Points a wrapped run logged: [(name, t)]."""
    out = []
    if os.path.exists(path):
        for line in read(path).splitlines():
            name, value = line.split()
            if name != 'pid':
                out.append((name, float(value)))
        os.unlink(path)
    return out


class Worker(threading.Thread):

    def __init__(self, index, edits, path, runner, logdir, use_imports):
        super(Worker, self).__init__(name='worker-%d' % index)
        self.index, self.edits, self.path, self.runner = index, edits, path, runner
        self.logdir, self.use_imports = logdir, use_imports
        self.owner = 'w%d' % index
        self.expected_runtimes, self.expected_imports = set(), set()
        self.renames = []       # (t_compare, t_renamed, what)
        self.durations = []
        self.lock_waits = []
        self.lock_timeouts = []
        self.errors = []
        self.refusals = 0
        self.tasks = []         # every (module, args) this worker ran, for the converge pass

    def task(self, j):
        common = dict(path=self.path, owner=self.owner, lock_timeout=LOCK_TIMEOUT)
        if self.use_imports and j % 5 == 4:
            dropin = os.path.join(os.path.dirname(self.path), 'conf.d', '%s-%d.toml' % (self.owner, j))
            with open(dropin, 'w') as f:
                f.write('version = 2\n\n[proxy_plugins."%s-%d"]\n  type = "snapshot"\n  address = "/run/%s-%d.sock"\n'
                        % (self.owner, j, self.owner, j))
            return 'import', dropin, ('containerd_imports', dict(common, imports=[dropin]))
        if j == self.edits - 1 and j >= 2:   # the last edit removes the worker's first runtime
            name = '%s-r0' % self.owner
            return 'remove', name, ('containerd_runtime', dict(common, name=name, state='absent'))
        name = '%s-r%d' % (self.owner, j)
        args = dict(common, name=name, options={'BinaryName': '/opt/%s/bin/runtime' % name})
        if j % 2:
            args.update(inherit='none', runtime_type='io.containerd.%s.v2' % name.replace('-', ''))
        return 'runtime', name, ('containerd_runtime', args)

    def run(self):
        for j in range(self.edits):
            kind, what, (module, args) = self.task(j)
            self.tasks.append((module, args))
            for _attempt in range(10):
                log = os.path.join(self.logdir, '%s-%d-%d.log' % (self.owner, j, _attempt))
                res, took = self.runner.run(module, args, wrapped=True, env={'NG_TIMELOG': log})
                self.durations.append(took)
                points = _timelog(log)
                if res.get('failed') and FOREIGN_REFUSAL in res.get('msg', ''):
                    self.refusals += 1
                    continue
                if res.get('failed') and LOCK_REFUSAL in res.get('msg', ''):
                    # a clean refusal at lock_timeout (never a hang): counted, and retried as `until:` would
                    self.lock_timeouts.append(took)
                    continue
                break
            if res.get('failed'):
                self.errors.append((module, args.get('name') or args.get('imports'), res.get('msg')))
                continue
            waits = dict(points)
            if 'locked' in waits:
                self.lock_waits.append(waits['locked'] - waits['lock_wait'])
            compares = [t for n, t in points if n == 'compare']
            renamed = [t for n, t in points if n == 'renamed']
            if renamed:
                self.renames.append((compares[-1], renamed[-1], kind, what))
            if kind == 'runtime':
                self.expected_runtimes.add(what)
            elif kind == 'import':
                self.expected_imports.add(what)
            else:
                self.expected_runtimes.discard(what)


class ForeignWriter(threading.Thread):
    """Adds runtime tables foreign-<k> by read, modify, write in place, without our lock."""

    def __init__(self, path, pause, stop):
        super(ForeignWriter, self).__init__(name='foreign')
        self.path, self.pause, self.stop = path, pause, stop
        self.writes = []        # (k, t_read, t_written)
        self.rng = random.Random()

    def apply(self, k):
        t_read = time.monotonic()
        with open(self.path) as f:
            text = f.read()
        if not text.endswith('\n'):
            text += '\n'
        text += ('\n[plugins."%s".containerd.runtimes.foreign-%d]\n  runtime_type = "io.containerd.runc.v2"\n'
                 % (V2_CRI, k))
        with open(self.path, 'w') as f:
            f.write(text)
        return t_read, time.monotonic()

    def run(self):
        k = 0
        while not self.stop.is_set():
            self.stop.wait(self.rng.uniform(0, 2 * self.pause))
            if self.stop.is_set():
                break
            t_read, t_written = self.apply(k)
            self.writes.append((k, t_read, t_written))
            k += 1


def _final_sets(path):
    data = tomlkit.parse(read(path)).unwrap()
    runtimes = set(data['plugins'][V2_CRI]['containerd']['runtimes'])
    return runtimes, set(data.get('imports', []))


def run_writers(workdir, workers_n, edits, pause):
    """workers_n workers making edits each through the modules while a foreign writer edits the same
    config without nodeguard's lock; (path, runner, workers, foreign writer, wall seconds) once all joined."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    path = os.path.join(etc, 'config.toml')
    with open(path, 'w') as f:
        f.write(fixture_text('v2_kubeadm.toml'))
    logdir = os.path.join(workdir, 'logs')
    os.makedirs(logdir)
    runner = Runner(os.path.join(workdir, 'tmp'), os.path.join(workdir, 'state'))
    use_imports = module_exists('containerd_imports')

    stop = threading.Event()
    foreign = ForeignWriter(path, pause, stop)
    workers = [Worker(i, edits, path, runner, logdir, use_imports) for i in range(workers_n)]
    start = time.monotonic()
    foreign.start()
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=900)
        assert not w.is_alive(), '%s hangs' % w.name
    stop.set()
    foreign.join(timeout=60)
    return path, runner, workers, foreign, time.monotonic() - start


class Losses(object):
    """Who lost what: each of our edits missing from the final file must have been overwritten by the
    foreign writer's stale copy, each foreign edit missing must have landed in a compare->rename window."""

    def __init__(self, path, workers, foreign):
        self.foreign = foreign
        runtimes, imports = _final_sets(path)
        self.renames = [r for w in workers for r in w.renames]
        self.expected_rt = set(['runc']) | set().union(*[w.expected_runtimes for w in workers])
        self.expected_imp = set().union(*[w.expected_imports for w in workers])
        self.rename_of = dict(((kind, what), t_ren) for _c, t_ren, kind, what in self.renames)
        self.lost_ours = sorted((self.expected_rt - runtimes) - set('foreign-%d' % k for k, _r, _w in foreign.writes))
        self.lost_ours_imp = sorted(self.expected_imp - imports)
        self.lost_foreign = [(k, t_w) for k, _t_r, t_w in foreign.writes if 'foreign-%d' % k not in runtimes]
        # removed runtimes must stay removed (a foreign writer's stale copy could bring one back)
        self.resurrected = sorted(n for n in runtimes - self.expected_rt if not n.startswith('foreign-'))

    def overwritten_by_foreign(self, t):
        return any(t_read < t < t_written for _k, t_read, t_written in self.foreign.writes)

    def clobbered_by_rename(self, t):
        return any(t_cmp < t < t_ren for t_cmp, t_ren, _kind, _what in self.renames)

    def unexplained(self):
        out = []
        for name in self.lost_ours:
            if not self.overwritten_by_foreign(self.rename_of.get(('runtime', name), -1)):
                out.append('runtime %s' % name)
        for entry in self.lost_ours_imp:
            if not self.overwritten_by_foreign(self.rename_of.get(('import', entry), -1)):
                out.append('import %s' % entry)
        for k, t_w in self.lost_foreign:
            if not self.clobbered_by_rename(t_w):
                out.append('foreign-%d' % k)
        return out


def converge_again(runner, workers, losses):
    """What the next playbook run does for the tasks whose result the foreign writer undid (every other task
    would report changed=false), and the foreign writer's lost edits again."""
    for k, _t_w in losses.lost_foreign:
        losses.foreign.apply(k)
    redo_add, redo_remove = set(losses.lost_ours) | set(losses.lost_ours_imp), set(losses.resurrected)
    for w in workers:
        for module, args in w.tasks:
            what = args.get('name') or args['imports'][0]
            if (what in redo_add and args.get('state') != 'absent') or \
                    (what in redo_remove and args.get('state') == 'absent'):
                res, _unused = runner.run(module, args)
                assert not res.get('failed') and res['changed'], res


def print_figures(workers, losses, path, workers_n, edits, wall, lock_timeouts):
    durations = sorted(d for w in workers for d in w.durations)
    waits = sorted(t for w in workers for t in w.lock_waits)
    windows = sorted(t_ren - t_cmp for t_cmp, t_ren, _k, _w in losses.renames)
    runtimes, imports = _final_sets(path)
    print('\ncompare->rename window (a lockless write landing there is overwritten): p50 %.1fms max %.1fms'
          % (windows[len(windows) // 2] * 1000, windows[-1] * 1000))
    print('\nlock waits: p50 %.2fs p95 %.2fs max %.2fs; lock timeouts (%ds, retried): %d'
          % (waits[len(waits) // 2], waits[int(len(waits) * 0.95)], waits[-1], LOCK_TIMEOUT, len(lock_timeouts)))
    print('\nconcurrency: %d workers x %d edits, %d foreign writes, wall %.1fs; run p50 %.2fs p95 %.2fs max '
          '%.2fs; foreign-writer refusals retried: %d; lost to the foreign writer\'s own lost update: %d; '
          'foreign edits lost in the compare->rename window: %d; resurrected by it: %d; runtimes %d, imports %d'
          % (workers_n, edits, len(losses.foreign.writes), wall, durations[len(durations) // 2],
             durations[int(len(durations) * 0.95)], durations[-1], sum(w.refusals for w in workers),
             len(losses.lost_ours) + len(losses.lost_ours_imp), len(losses.lost_foreign), len(losses.resurrected),
             len(runtimes), len(imports)))


def test_eight_writers_and_a_foreign_one(workdir, capsys):
    workers_n = knob('NODEGUARD_CONC_WORKERS', 8)
    edits = knob('NODEGUARD_CONC_EDITS', 25)
    pause = knob("NODEGUARD_CONC_FOREIGN_MS", 3000) / 1000.0
    path, runner, workers, foreign, wall = run_writers(workdir, workers_n, edits, pause)

    errors = [e for w in workers for e in w.errors]
    assert errors == [], errors
    durations = [d for w in workers for d in w.durations]
    # nothing waits past lock_timeout: a run is its lock wait (at most lock_timeout) + its own work
    assert max(durations) < LOCK_TIMEOUT + 60, max(durations)
    lock_timeouts = [t for w in workers for t in w.lock_timeouts]
    assert all(LOCK_TIMEOUT <= t < LOCK_TIMEOUT + 30 for t in lock_timeouts), lock_timeouts

    losses = Losses(path, workers, foreign)
    assert losses.unexplained() == [], losses.unexplained()
    for name in losses.resurrected:
        assert losses.overwritten_by_foreign(losses.rename_of.get(('remove', name), -1)), name

    converge_again(runner, workers, losses)
    runtimes, imports = _final_sets(path)
    assert runtimes == losses.expected_rt | set('foreign-%d' % k for k, _r, _w in foreign.writes)
    assert imports == losses.expected_imp
    assert temp_files(os.path.dirname(path)) == []
    assert ledger_problems(path, runner.state_dir) == []
    assert_containerd_accepts(path)

    with capsys.disabled():
        print_figures(workers, losses, path, workers_n, edits, wall, lock_timeouts)


def test_foreign_writer_caught_between_truncate_and_write(workdir):
    """nvidia-ctk-like writers truncate, then write: a run that reads the empty file in between must
    wait for the content, not fail (and not call it a version 1 config)."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    path = os.path.join(etc, 'config.toml')
    runner = Runner(os.path.join(workdir, 'tmp'), os.path.join(workdir, 'state'))
    with open(path, 'w') as f:
        f.write('')         # the writer has truncated the file ...
    content = fixture_text('v2_kubeadm.toml') + (
        '\n[plugins."%s".containerd.runtimes.foreign]\n  runtime_type = "io.containerd.runc.v2"\n' % V2_CRI)

    def finish_write():
        time.sleep(0.3)     # ... and writes it a moment later
        with open(path, 'w') as f:
            f.write(content)
    writer = threading.Thread(target=finish_write)
    writer.start()
    res, _unused = runner.run('containerd_runtime', dict(path=path, name='nvidia', owner='gpu'))
    writer.join()
    assert not res.get('failed'), res
    runtimes, _imports = _final_sets(path)
    assert runtimes == {'runc', 'foreign', 'nvidia'}


def test_foreign_write_during_the_ledger_write_is_not_overwritten(workdir):
    """A lockless writer that lands after the compare-before-rename check, while the ledger is written
    (two fsyncs: 15 ms p50, 58 ms max in the storm above), must not be overwritten by our rename."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(etc)
    path = os.path.join(etc, 'config.toml')
    runner = Runner(os.path.join(workdir, 'tmp'), os.path.join(workdir, 'state'))
    with open(path, 'w') as f:
        f.write(fixture_text('v2_kubeadm.toml'))
    foreign = ForeignWriter(path, 1.0, threading.Event())
    proc = runner.spawn('containerd_runtime', dict(path=path, name='nvidia', owner='gpu'),
                        env={'NG_PAUSE_AT': 'ledger_temp', 'NG_PAUSE_S': '1.0'})
    assert read_points(proc, 'ledger_temp')
    foreign.apply(0)        # nvidia-ctk adds its runtime while nodeguard writes its ledger
    assert finish(proc) == 0
    runtimes, _imports = _final_sets(path)
    assert runtimes == {'runc', 'nvidia', 'foreign-0'}
    assert ledger_problems(path, runner.state_dir) == []
    assert temp_files(etc) == []
