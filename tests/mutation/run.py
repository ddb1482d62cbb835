# -*- coding: utf-8 -*-
"""Mutation testing of plugins/module_utils/ with cosmic-ray, never in this checkout.

    .venv/bin/python tests/mutation/run.py                 # every file (make mutation)
    .venv/bin/python tests/mutation/run.py --changed       # lines changed against HEAD (make mutation-changed)
    .venv/bin/python tests/mutation/run.py --files _core/ledger.py _core/atomic.py --max-minutes 30

What it does:

1. Copies the tree (the working tree's tracked and new files, or `--tree
   head`: git archive of HEAD) into build/mutation/<run>/w0, w1 (one copy per
   worker).  Mutants are written only there: the checkout itself is never
   touched, and each copy's tests import the copy's code (conftest.py links
   build/collections/ansible_collections/nodeguard/containerd to the copy;
   this is checked before anything runs, see 3).
2. Runs the fast suites (config.toml: suites) once in a copy with a line
   tracer (tests/mutation/trace/), also inside the modules the tests start as
   subprocesses, to learn which tests run which lines, and how long each
   takes.  Tests that fail here (on unmutated code) are left out and named.
3. Canaries: in each copy, a mutant that makes every file fail at import
   must be killed, through an in-process test and through a module run as a
   subprocess (the test files picked by what they import and run:
   canary_tests).  If one survives, the tests are not importing the copy and
   the run stops.
4. Makes the cosmic-ray mutants of the selected files (the operator set of
   config.toml `operators` or --operators: "mutmut", mutmut's one
   replacement per operator site, or "all"; see MUTMUT_OPERATORS; a session
   database per file under sessions/, readable with `cr-report`), drops
   those listed in tests/mutation/equivalents.toml (each with a reason), and
   runs, for each remaining mutant, only the tests that run its line,
   fastest first, stopping at the first failure (pytest -x), with a
   per-test and a per-mutant timeout.  A mutant on a line no test runs
   survives without a run.  Each copy has a fork server
   (tests/mutation/forkserver.py: pytest and its plugins imported once, a
   fork per mutant, never the collection's code); --no-fork-server starts
   `python -m pytest` for each mutant instead.  The canaries of 3 are judged
   the same way.
5. Prints killed / timed out / survived per file and writes
   build/mutation/report.md and report.json (also kept in the run folder),
   with the diff of every survivor.  Exit status 1 when a file scores below
   fail_under (config.toml) or some mutants could not be run.

--changed mutates only lines added or changed against --base (default HEAD)
in the working tree, for use before a commit.  --recheck judges a report's
survivors again with named tests (which must pass on the unmutated copy
first); --stale-equivalents lists the entries of equivalents.toml that name
no mutant.  Files are named by their path below plugins/module_utils/
(_core/atomic.py), every *.py there, packages too.
"""

import argparse
import datetime
import difflib
import fnmatch
import hashlib
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HERE = REPO / 'tests' / 'mutation'
TRACE = HERE / 'trace'
LINK = Path('build', 'collections', 'ansible_collections', 'nodeguard', 'containerd')
CANARY = '\nraise RuntimeError("nodeguard mutation canary: the tests must import this copy")\n'

KILLED, TIMEOUT, SURVIVED, UNCOVERED, INCOMPETENT, EQUIVALENT, NOT_RUN = (
    'killed', 'timeout', 'survived', 'survived (no test runs the line)', 'incompetent', 'equivalent', 'not run')


def log(msg):
    print('[mutation %s] %s' % (time.strftime('%H:%M:%S'), msg), flush=True)


def git(*args, cwd=None, binary=False):
    out = subprocess.run(['git'] + list(args), cwd=str(cwd or REPO), check=True, capture_output=True).stdout
    return out if binary else out.decode('utf-8')


# ------------------------------------------------------------------ config
EQUIVALENT_FIELDS = ('file', 'operator', 'line', 'mutated', 'reason')
EQUIVALENT_OPTIONAL = ('scope', 'twin')


def check_equivalents(entries):
    """Refuse an entry that could silence more than the one mutant it names: each gives the file (its path under
    the source folder), the exact operator, the source line, the mutated text and a reason; `scope` (the
    enclosing def, e.g. "TomlText._prune_implicit") and `twin` (which of the same lines in that scope, from 1)
    single out a line the file has more than once."""
    for entry in entries:
        for field in EQUIVALENT_FIELDS:
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise SystemExit('equivalents.toml: an entry lacks %r: %r' % (field, entry))
        unknown = sorted(set(entry) - set(EQUIVALENT_FIELDS) - set(EQUIVALENT_OPTIONAL))
        if unknown:
            raise SystemExit('equivalents.toml: unknown field %s in %r' % (', '.join(unknown), entry))
        if any(c in entry['operator'] for c in '*?['):
            raise SystemExit('equivalents.toml: operator %r is a pattern; name one operator' % entry['operator'])
        if 'twin' in entry and ('scope' not in entry or not isinstance(entry['twin'], int) or entry['twin'] < 1):
            raise SystemExit('equivalents.toml: twin needs a scope and is a number from 1: %r' % (entry,))
        if 'scope' in entry and not isinstance(entry['scope'], str):
            raise SystemExit('equivalents.toml: scope is the name of a def or class: %r' % (entry,))
    return entries


def load_config(here=None):
    here = here or HERE
    with open(here / 'config.toml', 'rb') as f:
        cfg = tomllib.load(f)['mutation']
    with open(here / 'equivalents.toml', 'rb') as f:
        eq = tomllib.load(f)
    return cfg, check_equivalents(eq.get('mutant', []))


def _package_rank(cfg, name):
    packages = cfg.get('packages', [])
    top = name.split('/', 1)[0] if '/' in name else ''
    return (packages.index(top) if top in packages else len(packages), name)


def source_files(cfg, tree=None):
    """Every *.py below the source folder (packages too), as paths relative to it (`_core/atomic.py`): the
    config's `order` first, then by package (config `packages`), then by name. An empty __init__.py has
    nothing to mutate and is left out."""
    folder = (tree or REPO) / cfg['source']
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob('*.py')
                   if '__pycache__' not in p.parts and (p.name != '__init__.py' or p.read_text().strip()))
    order = [n for n in cfg['order'] if n in names]
    return order + sorted((n for n in names if n not in order), key=lambda n: _package_rank(cfg, n))


def changed_lines(cfg, base):
    """{file name: set of line numbers} added or changed in the working tree against base."""
    out = {}
    src = cfg['source']
    diff = git('diff', '-U0', '--no-color', base, '--', src)
    current = None
    for line in diff.splitlines():
        if line.startswith('+++ '):
            name = line[4:]
            current = None if name == '/dev/null' else _relative_to_source(name[2:], src)
            if current and current.endswith('.py'):
                out.setdefault(current, set())
            else:
                current = None
        m = re.match(r'^@@ -\S+ \+(\d+)(?:,(\d+))? @@', line)
        if m and current:
            start, count = int(m.group(1)), int(m.group(2) or 1)
            out[current].update(range(start, start + count))
    for name in git('ls-files', '--others', '--exclude-standard', '--', src).split():
        if name.endswith('.py'):
            with open(REPO / name) as f:
                out[_relative_to_source(name, src)] = set(range(1, len(f.read().splitlines()) + 1))
    return dict((k, v) for k, v in out.items() if v)


def _relative_to_source(path, source):
    """plugins/module_utils/_core/atomic.py -> _core/atomic.py (git names paths from the top of the repo)."""
    return Path(path).relative_to(source).as_posix()


# -------------------------------------------------------------------- trees
def copy_tree(dest, tree_mode, overlay, rev='HEAD'):
    dest.mkdir(parents=True)
    if tree_mode == 'head':
        data = git('archive', '--format=tar', rev, binary=True)
        subprocess.run(['tar', '-xf', '-', '-C', str(dest)], input=data, check=True)
    else:
        names = [n for n in git('ls-files', '-z', '--cached', '--others', '--exclude-standard').split('\0')
                 if n and os.path.lexists(REPO / n)]
        subprocess.run(['tar', '--null', '-T', '-', '-cf', '-'], cwd=str(REPO), check=True,
                       input='\0'.join(names).encode('utf-8'), stdout=open(dest / '.tree.tar', 'wb'))
        subprocess.run(['tar', '-xf', str(dest / '.tree.tar'), '-C', str(dest)], check=True)
        os.unlink(dest / '.tree.tar')
    for rel in overlay:
        src = REPO / rel
        if src.is_dir():
            shutil.copytree(src, dest / rel, dirs_exist_ok=True, ignore=shutil.ignore_patterns('__pycache__'))
        else:
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    link = dest / LINK
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink('../../../..', link)


def test_env(tree, extra=None):
    env = dict(os.environ)
    for name in ('PYTHONPATH', 'NODEGUARD_COLLECTIONS_PATH', 'PYTEST_ADDOPTS', 'NG_TRACE_DIR', 'NG_TRACE_ROOT',
                 'NG_TRACE_TEST', 'PYTHONPYCACHEPREFIX'):
        env.pop(name, None)
    env['ANSIBLE_COLLECTIONS_PATH'] = str(tree / 'build' / 'collections')
    env['PYTHONDONTWRITEBYTECODE'] = '1'   # a mutant must never run from a stale .pyc
    for var, sub in (('NODEGUARD_CONTAINERD2', 'containerd2'), ('NODEGUARD_CONTAINERD17', 'containerd17')):
        binary = REPO / 'build' / sub / 'usr' / 'bin' / 'containerd'
        if var not in env and os.access(binary, os.X_OK):
            env[var] = str(binary)   # build/ is not part of the copy
    env.update(extra or {})
    return env


PYTEST_BASE = ['-p', 'no:cacheprovider', '--no-header']


def run_pytest(tree, args, env, timeout):
    """(rc or 'timeout', output tail, seconds)."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, '-m', 'pytest'] + PYTEST_BASE + list(args),
                            cwd=str(tree), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        out = proc.communicate(timeout=timeout)[0]
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out = proc.communicate()[0]
        rc = 'timeout'
    return rc, out.decode('utf-8', 'replace')[-6000:], time.monotonic() - start


# -------------------------------------------------------------- fork server
class ForkServerError(Exception):
    """The fork server died or answered what it should not: the job runs as a subprocess instead."""


class _Late(Exception):
    """No answer from the fork server by the deadline."""


# forkserver.py: SETUP_FAILED_RC, SETUP_FAILED (a child that could not start pytest)
FORK_SETUP_FAILED_RC = 121
FORK_SETUP_FAILED = 'nodeguard fork server: the child could not start pytest'
FORK_SERVERS = {}   # tree -> ForkServer; judge() runs its tests there (run_tests)


class ForkServer(object):
    """A long-lived python per tree copy (tests/mutation/forkserver.py) that has imported pytest, its plugins,
    hypothesis, ansible and tomlkit, never the collection nor a test, and forks a child per job that runs
    `python -m pytest ARGS` in the tree: run() answers as run_pytest does, without ~0.5 s of imports a job."""

    START_TIMEOUT = 120   # seconds for the imports
    ANSWER_TIMEOUT = 60   # seconds for the server to fork, or to reap a child that was killed
    MAX_STARTS = 3        # after this many (re)starts the tree's jobs run as subprocesses
    # the plugins the server imported cannot have their asserts rewritten by pytest (which says so for each)
    ARGS = ['-W', 'ignore::pytest.PytestAssertRewriteWarning']

    def __init__(self, tree, scratch, env=None):
        self.tree, self.scratch = Path(tree), Path(scratch)
        self.env = dict(env if env is not None else test_env(self.tree))
        self.proc = None
        self.starts = self.jobs = self.fallbacks = 0
        self.last_pid = None
        self.last_forked = False   # whether the last job of run_tests() for this tree ran in the server
        self._buf = b''

    def usable(self):
        return self.proc is not None or self.starts < self.MAX_STARTS

    def start(self):
        self.stop()
        self.starts += 1
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._buf = b''
        self.proc = subprocess.Popen([sys.executable, str(HERE / 'forkserver.py'), str(self.scratch / 'server.log')],
                                     cwd=str(self.tree), env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     start_new_session=True)
        try:
            msg = self._answer(time.monotonic() + self.START_TIMEOUT)
        except _Late:
            msg = {'error': 'no answer in %d s' % self.START_TIMEOUT}
        except ForkServerError as exc:
            msg = {'error': str(exc)}
        if not msg.get('ready'):
            self.stop()
            raise ForkServerError('it could not start: %s' % msg.get('error'))

    def stop(self):
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        proc.stdout.close()

    def _answer(self, deadline):
        """The server's next JSON line; _Late at the deadline, ForkServerError if it ended."""
        fd = self.proc.stdout.fileno()
        while b'\n' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _Late()
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                raise ForkServerError('it exited (rc=%s, log: %s)' % (self.proc.poll(), self.scratch / 'server.log'))
            self._buf += chunk
        line, self._buf = self._buf.split(b'\n', 1)
        try:
            return json.loads(line.decode('utf-8'))
        except ValueError:
            raise ForkServerError('it answered %r' % line[:200])

    @staticmethod
    def kill_group(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def run(self, args, timeout):
        """(rc or 'timeout', output tail, seconds) of `python -m pytest ARGS` in the tree; ForkServerError if
        the server failed (its child's process group is killed then)."""
        if self.proc is None:
            self.start()
        start = time.monotonic()
        self.jobs += 1
        out_path = self.scratch / ('job-%d.out' % self.jobs)
        try:
            self.proc.stdin.write((json.dumps({'args': PYTEST_BASE + self.ARGS + list(args), 'out': str(out_path)})
                                   + '\n').encode('utf-8'))
            self.proc.stdin.flush()
        except OSError as exc:
            self.stop()
            raise ForkServerError('it took no job (%s)' % exc)
        pid = None
        try:
            msg = self._answer(start + self.ANSWER_TIMEOUT)
            pid = self.last_pid = msg.get('pid')
            if not isinstance(pid, int) or pid <= 1:
                raise ForkServerError('it answered %r, not the pid of a child' % msg)
            try:
                msg = self._answer(start + timeout)
                rc = msg.get('rc')
            except _Late:
                self.kill_group(pid)
                msg = self._answer(time.monotonic() + self.ANSWER_TIMEOUT)   # the server reaps it
                rc = 'timeout'
            if rc != 'timeout' and not isinstance(rc, int):
                raise ForkServerError('it answered %r, not an exit status' % msg)
            try:
                out = out_path.read_bytes()
                out_path.unlink()
            except OSError as exc:
                raise ForkServerError('the child left no output (%s)' % exc)
            text = out.decode('utf-8', 'replace')
            if rc == FORK_SETUP_FAILED_RC and text.startswith(FORK_SETUP_FAILED):
                raise ForkServerError(text[-2000:])
        except (ForkServerError, _Late) as exc:
            if pid:
                self.kill_group(pid)
            self.stop()
            raise ForkServerError(str(exc) or 'no answer in time')
        return rc, text[-6000:], time.monotonic() - start


def run_tests(tree, args, env, timeout):
    """run_pytest, in the tree's fork server when it has one: the same (rc or 'timeout', output tail, seconds).
    When the server fails, the job runs as a subprocess (and the next one restarts the server)."""
    server = FORK_SERVERS.get(tree)
    if server is not None:
        server.last_forked = False
        if server.usable():
            try:
                result = server.run(args, timeout)
                server.last_forked = True
                return result
            except ForkServerError as exc:
                server.fallbacks += 1
                log('fork server of %s: %s; this job runs as a subprocess%s'
                    % (tree.name, exc, '' if server.usable() else ' (and every later one: %d starts failed)'
                       % server.starts))
    return run_pytest(tree, args, env, timeout)


def start_fork_servers(trees, run_dir):
    for tree in trees:
        server = FORK_SERVERS[tree] = ForkServer(tree, run_dir / ('fork-%s' % tree.name))
        try:
            server.start()
        except ForkServerError as exc:
            log('fork server of %s: %s (its jobs run as subprocesses until one starts)' % (tree.name, exc))


def fork_server_summary(trees, off):
    if off:
        return 'off (--no-fork-server)'
    servers = [FORK_SERVERS[t] for t in trees if t in FORK_SERVERS]
    if not servers:
        return 'off (no server passed the canaries)'
    return '%d of %d copies: %d jobs, %d run as subprocesses after a server failed, %d starts' % (
        len(servers), len(trees), sum(s.jobs for s in servers), sum(s.fallbacks for s in servers),
        sum(s.starts for s in servers))


def stop_fork_servers(trees):
    for tree in trees:
        server = FORK_SERVERS.pop(tree, None)
        if server is not None:
            server.stop()


# -------------------------------------------------------------------- trace
def tree_key(tree, cfg):
    h = hashlib.sha256()
    for top in [cfg['source']] + list(cfg['suites']) + ['tests/conftest.py', 'tests/fixtures', 'plugins/modules',
                                                        'tests/mutation/trace']:
        base = tree / top
        files = [base] if base.is_file() else sorted(p for p in base.rglob('*') if p.is_file()
                                                     and '__pycache__' not in p.parts)
        for p in files:
            h.update(str(p.relative_to(tree)).encode() + b'\0' + p.read_bytes() + b'\0')
    return h.hexdigest()[:16]


def trace_tests(tree, cfg, workers, cache_dir):
    """{'tests': {nodeid: {duration, outcome, lines: {file: [n]}}}, 'import_lines': {file: [n]}}."""
    key = tree_key(tree, cfg)
    cache = cache_dir / ('trace-%s.json' % key)
    if cache.exists():
        log('test map: cached %s' % cache.name)
        with open(cache) as f:
            return json.load(f)
    tdir = tree / '.ng-trace'
    shutil.rmtree(tdir, ignore_errors=True)
    tdir.mkdir()
    env = test_env(tree, {'PYTHONPATH': str(TRACE), 'NG_TRACE_DIR': str(tdir),
                          'NG_TRACE_ROOT': str(tree / cfg['source'])})
    args = ['-q', '-p', 'ng_trace_plugin'] + (['-n', str(workers)] if workers > 1 else []) + list(cfg['suites'])
    log('test map: running %s with the line tracer (%d worker%s)'
        % (' '.join(cfg['suites']), workers, 's' if workers > 1 else ''))
    rc, out, secs = run_pytest(tree, args, env, timeout=3600)
    log('test map: pytest rc=%s in %.0f s' % (rc, secs))
    merged = {'tests': {}, 'import_lines': {}}
    procs = []
    for p in sorted(tdir.glob('*.json')):
        with open(p) as f:
            data = json.load(f)
        if p.name.startswith('pytest-'):
            for name, nums in data['import_lines'].items():
                merged['import_lines'].setdefault(name, set()).update(nums)
            for nodeid, e in data['tests'].items():
                merged['tests'][nodeid] = dict(e, lines=dict((k, set(v)) for k, v in e['lines'].items()))
        else:
            procs.append(data)
    if not merged['tests']:
        raise SystemExit('the traced test run produced no map (rc=%s):\n%s' % (rc, out))
    for data in procs:
        entry = merged['tests'].get(data['test'])
        if entry is not None:
            for name, nums in data['lines'].items():
                entry['lines'].setdefault(name, set()).update(nums)
    merged['import_lines'] = dict((k, sorted(v)) for k, v in merged['import_lines'].items())
    for e in merged['tests'].values():
        e['lines'] = dict((k, sorted(v)) for k, v in e['lines'].items())
    shutil.rmtree(tdir, ignore_errors=True)
    cache_dir.mkdir(parents=True, exist_ok=True)
    with open(cache, 'w') as f:
        json.dump(merged, f)
    return merged


# ---------------------------------------------------------------- operators
# The operator sets (config.toml `operators`, --operators). "all": every cosmic-ray operator (but the two that
# need per-run arguments) at every position, and the two membership operators below. "mutmut": the replacements
# mutmut makes (boxed/mutmut, mutmut/node_mutation.py: _operator_mapping, _keyword_mapping, operator_name,
# operator_remove_unary_ops, operator_number; the same table as mutmut 2.x's operator_mutation), one replacement
# per binary or comparison site instead of cosmic-ray's 11 or 7, and the cosmic-ray operators mutmut has no
# counterpart for, which make one mutant per site. Each entry: the cosmic-ray operator name, and which of its
# positions are kept (None: every one; else a test of (node, index of the position at that node)). The names are
# checked against cosmic-ray's before a run (operator_table).
def _first_at_node(_node, index):
    """NumberReplacer makes n + 1, then n - 1 at each number: mutmut makes n + 1 only."""
    return index == 0


def _not_a_negation_already_made(node, _index):
    """AddNot puts `not` before the condition of an if / while / assert / conditional expression. When that
    condition is `not x`, or one `==`, `!=`, `is`, `is not`, `in` or `not in` comparison, the set already has
    its exact negation (`x`; the opposite operator, for every type whose `!=` is the negation of its `==`):
    the AddNot mutant would be a second copy of that mutant, judged twice."""
    cond = node.children[2] if node.type == 'test' else node.children[1]
    if cond.type == 'not_test':
        return False
    if cond.type == 'comparison' and len(cond.children) == 3:
        negation = NEGATIONS.get(cond.children[1].get_code().strip())
        return not (negation and any(True for _pos in _operator(negation).mutation_positions(cond)))
    return True


MUTMUT_OPERATORS = {
    # binary operators: + -> -, - -> +, * -> /, / -> *, // -> /, % -> /, ** -> *, << -> >>, >> -> <<,
    # & -> |, | -> &, ^ -> &
    'core/ReplaceBinaryOperator_Add_Sub': None,
    'core/ReplaceBinaryOperator_Sub_Add': None,
    'core/ReplaceBinaryOperator_Mul_Div': None,
    'core/ReplaceBinaryOperator_Div_Mul': None,
    'core/ReplaceBinaryOperator_FloorDiv_Div': None,
    'core/ReplaceBinaryOperator_Mod_Div': None,
    'core/ReplaceBinaryOperator_Pow_Mul': None,
    'core/ReplaceBinaryOperator_LShift_RShift': None,
    'core/ReplaceBinaryOperator_RShift_LShift': None,
    'core/ReplaceBinaryOperator_BitAnd_BitOr': None,
    'core/ReplaceBinaryOperator_BitOr_BitAnd': None,
    'core/ReplaceBinaryOperator_BitXor_BitAnd': None,
    # comparisons: < -> <=, <= -> <, > -> >=, >= -> >, == -> !=, != -> ==, is -> is not, is not -> is,
    # in -> not in, not in -> in (cosmic-ray makes no `== None` -> `!= None`: it allows only `is not` there)
    'core/ReplaceComparisonOperator_Lt_LtE': None,
    'core/ReplaceComparisonOperator_LtE_Lt': None,
    'core/ReplaceComparisonOperator_Gt_GtE': None,
    'core/ReplaceComparisonOperator_GtE_Gt': None,
    'core/ReplaceComparisonOperator_Eq_NotEq': None,
    'core/ReplaceComparisonOperator_NotEq_Eq': None,
    'core/ReplaceComparisonOperator_Is_IsNot': None,
    'core/ReplaceComparisonOperator_IsNot_Is': None,
    'nodeguard/ReplaceComparisonOperator_In_NotIn': None,
    'nodeguard/ReplaceComparisonOperator_NotIn_In': None,
    # unary: mutmut drops `not` and `~`, and swaps unary - and +
    'core/ReplaceUnaryOperator_Delete_Not': None,
    'core/ReplaceUnaryOperator_Delete_Invert': None,
    'core/ReplaceUnaryOperator_USub_UAdd': None,
    'core/ReplaceUnaryOperator_UAdd_USub': None,
    # and <-> or, True <-> False, break <-> continue (mutmut 2.x; 3.x: continue -> break, break -> return)
    'core/ReplaceAndWithOr': None,
    'core/ReplaceOrWithAnd': None,
    'core/ReplaceTrueWithFalse': None,
    'core/ReplaceFalseWithTrue': None,
    'core/ReplaceBreakWithContinue': None,
    'core/ReplaceContinueWithBreak': None,
    # a number n -> n + 1 (mutmut); cosmic-ray's n - 1 is left out
    'core/NumberReplacer': _first_at_node,
    # a decorator removed (mutmut 2.x's decorator_mutation)
    'core/RemoveDecorator': None,
    # no mutmut counterpart, kept: one mutant per site, each a different fault than the ones above (a negated
    # condition, a loop that never runs, an except clause that catches nothing)
    'core/AddNot': _not_a_negation_already_made,
    'core/ZeroIterationForLoop': None,
    'core/ExceptionReplacer': None,
}
OPERATOR_SETS = ('mutmut', 'all')
# the comparison operator whose mutant is the exact negation of a comparison (see _not_a_negation_already_made)
NEGATIONS = {'==': 'core/ReplaceComparisonOperator_Eq_NotEq', '!=': 'core/ReplaceComparisonOperator_NotEq_Eq',
             'is': 'core/ReplaceComparisonOperator_Is_IsNot', 'is not': 'core/ReplaceComparisonOperator_IsNot_Is',
             'in': 'nodeguard/ReplaceComparisonOperator_In_NotIn',
             'not in': 'nodeguard/ReplaceComparisonOperator_NotIn_In'}
_MEMBERSHIP = {}


def _membership_operators():
    """cosmic-ray 8.7 has no operator for `in` / `not in`: these two make mutmut's `in` -> `not in` and back,
    the way cosmic-ray's comparison operators do (the operator token replaced, at each place in a chain)."""
    if _MEMBERSHIP:
        return _MEMBERSHIP
    import parso
    from cosmic_ray.operators.operator import Example, Operator

    def make(from_op, to_op):
        class ReplaceMembership(Operator):
            def mutation_positions(self, node):
                for _i, op in self._points(node):
                    yield op.start_pos, op.end_pos

            def mutate(self, node, index):
                i = list(self._points(node))[index][0]
                node.children[i] = parso.parse(' ' + to_op)
                return node

            @staticmethod
            def _points(node):
                if node.type == 'comparison':
                    for i in range(1, len(node.children), 2):
                        if node.children[i].get_code().strip() == from_op:
                            yield i, node.children[i]

            @classmethod
            def examples(cls):
                return (Example('x %s y' % from_op, 'x %s y' % to_op),)
        return ReplaceMembership
    _MEMBERSHIP['nodeguard/ReplaceComparisonOperator_In_NotIn'] = make('in', 'not in')
    _MEMBERSHIP['nodeguard/ReplaceComparisonOperator_NotIn_In'] = make('not in', 'in')
    return _MEMBERSHIP


def _operator(name):
    import cosmic_ray.plugins
    return (_membership_operators().get(name) or cosmic_ray.plugins.get_operator(name))()


def operator_table(which, exclude=()):
    """[(operator name, operator, position filter or None)] of the set `which` ('mutmut' or 'all')."""
    import cosmic_ray.plugins
    if which not in OPERATOR_SETS:
        raise SystemExit('operators: %r is not one of %s' % (which, ', '.join(OPERATOR_SETS)))
    names = [n for n in cosmic_ray.plugins.operator_names()
             if not cosmic_ray.plugins.get_operator(n).arguments()]   # VariableReplacer/Inserter: not used
    names += sorted(_membership_operators())
    unknown = sorted(set(MUTMUT_OPERATORS) - set(names))
    if unknown:
        raise SystemExit('this cosmic-ray has no operator %s (tests/mutation/run.py: MUTMUT_OPERATORS)'
                         % ', '.join(unknown))
    names = [n for n in names if (which == 'all' or n in MUTMUT_OPERATORS)
             and not any(fnmatch.fnmatch(n, pat) for pat in exclude)]
    keep = dict((n, MUTMUT_OPERATORS[n] if which == 'mutmut' else None) for n in names)
    if 'core/AddNot' in keep and not set(NEGATIONS.values()) <= set(names):
        keep['core/AddNot'] = None   # a negation it would copy is excluded (config.toml): every AddNot is new
    return [(n, _operator(n), keep[n]) for n in names]


# ------------------------------------------------------------------ mutants
def _statement_lines(node):
    """The lines a mutation at node can be seen running on: its statement (a header only, for if/for/def...)."""
    simple = ('simple_stmt', 'expr_stmt', 'return_stmt', 'raise_stmt')
    compound = ('if_stmt', 'while_stmt', 'for_stmt', 'with_stmt', 'try_stmt', 'funcdef', 'classdef',
                'decorated', 'async_stmt', 'lambdef')
    cur = node
    while cur is not None:
        if cur.type in simple:
            return set(range(cur.start_pos[0], cur.end_pos[0] + 1))
        if cur.type in compound:
            return set(range(cur.start_pos[0], node.end_pos[0] + 1))
        cur = cur.parent
    return set(range(node.start_pos[0], node.end_pos[0] + 1))


def _changed_text(original, mutated):
    a, b = original.splitlines(), mutated.splitlines()
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    old, new = [], []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag != 'equal':
            old.extend(a[i1:i2])
            new.extend(b[j1:j2])
    return ' '.join(x.strip() for x in old), ' '.join(x.strip() for x in new)


def _format_group(op_name, node):
    """A key shared by the mutants of one `'literal' % (a, b)`: replaced by any other binary operator, it
    raises the same TypeError (str and tuple support no other operator), so one run decides them all."""
    if not op_name.startswith('core/ReplaceBinaryOperator_Mod_') or node.type != 'operator':
        return None
    parent = node.parent
    if parent is None or parent.type != 'term' or len(parent.children) != 3 or parent.children[1] is not node:
        return None
    left, right = parent.children[0], parent.children[2]
    if left.type not in ('string', 'strings') or right.type != 'atom' or len(right.children) != 3:
        return None
    inner = right.children[1]
    if right.children[0].type != 'operator' or right.children[0].value != '(' or inner.type != 'testlist_comp' \
            or not any(c.type == 'operator' and c.value == ',' for c in inner.children):
        return None
    return 'str%%tuple@%d:%d' % node.start_pos


def _scopes(module_ast, nlines):
    """[scope of each line] (index 0 unused): the dotted names of the defs and classes around it, innermost
    last ('TomlText._prune_implicit'); '' at module level."""
    scopes = [''] * (nlines + 2)

    def walk(node, prefix):
        for child in getattr(node, 'children', ()):
            if child.type in ('funcdef', 'classdef'):
                name = prefix + child.name.value
                for n in range(child.start_pos[0], min(child.end_pos[0], nlines) + 1):
                    scopes[n] = name
                walk(child, name + '.')
            else:
                walk(child, prefix)
    walk(module_ast, '')
    return scopes


def line_places(code, module_ast):
    """{line number: (stripped text, scope, lines of the file with that text, of them in that scope, which of
    those this one is (from 1))}: what an equivalents.toml entry names to single out one line."""
    lines = code.splitlines()
    scopes = _scopes(module_ast, len(lines))
    by_text = {}
    for n, text in enumerate(lines, 1):
        by_text.setdefault(text.strip(), []).append(n)
    out = {}
    for n, text in enumerate(lines, 1):
        same = by_text[text.strip()]
        in_scope = [k for k in same if scopes[k] == scopes[n]]
        out[n] = (text.strip(), scopes[n], len(same), len(in_scope), in_scope.index(n) + 1)
    return out


def make_mutants(tree, cfg, name, only_lines=None, operators=None, want=None):
    """(source, [mutant]) of one file, with the operator set `operators` (default: config.toml's, else mutmut).
    want(operator name, source line text): False skips a position before the (slow) mutant is made."""
    from cosmic_ray.ast import ast_nodes, get_ast
    from cosmic_ray.mutating import mutate_code

    path = tree / cfg['source'] / name
    code = path.read_text(encoding='utf-8')
    module_ast = get_ast(code)
    places = line_places(code, module_ast)
    mutants = []
    table = operator_table(operators or cfg.get('operators', 'mutmut'), cfg.get('exclude_operators', []))
    for op_name, operator, keep in table:
        # occurrence: cosmic-ray's own count of the operator's positions in the file (all of them), so a
        # session's work item names the same mutant whichever set made it
        positions = [(node, index, start, end) for node in ast_nodes(module_ast)
                     for index, (start, end) in enumerate(operator.mutation_positions(node))]
        for occurrence, (node, index, start, end) in enumerate(positions):
            if keep is not None and not keep(node, index):
                continue
            lines = _statement_lines(node)
            if only_lines is not None and not (lines & only_lines) and start[0] not in only_lines:
                continue
            text, scope, line_twins, scope_twins, twin = places.get(start[0], ('', '', 1, 1, 1))
            if want is not None and not want(op_name, text):
                continue
            try:
                mutated = mutate_code(code, operator, occurrence)
            except Exception as exc:  # pylint: disable=broad-except
                # cosmic-ray 8.7's ExceptionReplacer fails on a dotted name in an
                # except tuple (tarfile.TarError): that one mutant is not made
                log('%s:%d %s: cosmic-ray could not make this mutant (%s: %s); skipped'
                    % (name, start[0], op_name, type(exc).__name__, exc))
                continue
            if mutated is None:
                continue
            old, new = _changed_text(code, mutated)
            mutants.append({'job_id': uuid.uuid4().hex, 'file': name, 'operator': op_name, 'occurrence': occurrence,
                            'start': list(start), 'end': list(end), 'lines': sorted(lines), 'old': old, 'new': new,
                            'code': mutated, 'group': _format_group(op_name, node), 'line': text, 'scope': scope,
                            'line_twins': line_twins, 'scope_twins': scope_twins, 'twin': twin})
    return code, mutants


def entry_matches(entry, mutant):
    """Whether an equivalents.toml entry names this mutant: the same file, operator, source line and mutated
    text, and, for a line the file has more than once, the same scope (and `twin` when the scope has it more
    than once too). An entry never stands for a twin line it does not name."""
    if (entry['file'], entry['operator']) != (mutant['file'], mutant['operator']):
        return False
    if entry['line'].strip() != mutant['line'] or entry['mutated'].strip() != mutant['new'].strip():
        return False
    if 'scope' in entry:
        if entry['scope'] != mutant['scope']:
            return False
        return entry.get('twin', 1) == mutant['twin'] if 'twin' in entry else mutant['scope_twins'] == 1
    return mutant['line_twins'] == 1


def equivalent_reason(mutant, equivalents):
    for e in equivalents:
        if entry_matches(e, mutant):
            return e['reason']
    return None


def _ambiguity(entry, mutant):
    """Why an entry with this mutant's file, operator, line and mutated text still does not name it."""
    if mutant['line_twins'] > 1 and 'scope' not in entry:
        return 'the line is in %d places: give its scope (this one: %r)' % (mutant['line_twins'], mutant['scope'])
    if 'scope' in entry and entry['scope'] == mutant['scope'] and 'twin' not in entry:
        return 'the line is %d times in %s: give its twin (this one: %d)' % (
            mutant['scope_twins'], mutant['scope'] or 'the module', mutant['twin'])
    return None


def equivalents_status(tree, cfg, entries, files):
    """Which entries of equivalents.toml name a mutant of these files ({index: [mutant]}), and the ones that
    name none: stale ([(entry, why)]; a moved line is said where it is now), ambiguous ones among them. Every
    cosmic-ray operator is made (the set "all"), so an entry for an operator of `--operators all` only is not
    stale; only the positions on an entry's line are mutated."""
    by_file = {}
    for i, e in enumerate(entries):
        by_file.setdefault(e['file'], []).append(i)
    found, stale = {}, []
    texts = {}
    for name in files:
        texts[name] = (tree / cfg['source'] / name).read_text(encoding='utf-8')
    for name, idx in sorted(by_file.items()):
        if name not in texts:
            for i in idx:
                stale.append((entries[i], 'no file %s' % name + _moved(entries[i], texts)))
            continue
        wanted = set((entries[i]['operator'], entries[i]['line'].strip()) for i in idx)
        _code, mutants = make_mutants(tree, cfg, name, operators='all',
                                      want=lambda op, text, w=wanted: (op, text) in w)
        for i in idx:
            hits = [m for m in mutants if entry_matches(entries[i], m)]
            if hits:
                found[i] = hits
                continue
            near = [m for m in mutants if (m['operator'], m['line'], m['new'].strip()) ==
                    (entries[i]['operator'], entries[i]['line'].strip(), entries[i]['mutated'].strip())]
            why = [w for w in (_ambiguity(entries[i], m) for m in near) if w]
            stale.append((entries[i], 'ambiguous: ' + why[0] if why else 'no such mutant' + _moved(entries[i], texts)))
    return found, stale


def _moved(entry, texts):
    """Where the entry's line is now, in another file of the source folder."""
    at = ['%s:%d' % (name, n) for name, code in sorted(texts.items()) if name != entry['file']
          for n, text in enumerate(code.splitlines(), 1) if text.strip() == entry['line'].strip()]
    return ' (the line is now at %s)' % ', '.join(at[:3]) if at else ''


def select_tests(mutant, trace, excluded):
    """The tests that run the mutated statement, fastest first."""
    name = mutant['file']
    lines = set(mutant['lines'])
    at_import = bool(lines & set(trace['import_lines'].get(name, [])))
    chosen = []
    for nodeid, e in trace['tests'].items():
        if nodeid in excluded:
            continue
        if at_import and name in e['lines'] or lines & set(e['lines'].get(name, [])):
            chosen.append((e['duration'], nodeid))
    if at_import and not chosen:
        chosen = [(e['duration'], n) for n, e in trace['tests'].items() if n not in excluded and e['lines']]
    return [n for _d, n in sorted(chosen)], sum(d for d, _n in chosen), max([d for d, _n in chosen] + [0])


# --------------------------------------------------------------- execution
def _first_failure(out):
    for line in out.splitlines():
        if line.startswith(('FAILED ', 'ERROR ')):
            return line.split(' - ')[0]
    return ''


_killers = {}
_killers_lock = threading.Lock()


def _written_for(name, nodeid):
    """2 for a test in a file or folder named after the source file (test_atomic_lock.py, .../atomic/... for
    _core/atomic.py), 1 for one in a folder named after its package (tests/unit/plugins/module_utils/_core/),
    else 0."""
    path = nodeid.split('::', 1)[0].split('/')
    parts = name[:-len('.py')].split('/')
    stem = parts[-1].lstrip('_')
    if path[-1].startswith('test_' + stem) or stem in path[:-1]:
        return 2
    return 1 if len(parts) > 1 and parts[-2] in path[:-1] else 0


def by_kill_history(name, tests):
    """The tests written for this file go first (those of its package next), then those that killed mutants of
    it before (most kills first); the rest stay fastest first. So a --max-tests cap keeps the tests aimed at the
    file even when hundreds of faster ones also run the line (every module test takes the lock of
    _core/atomic.py)."""
    with _killers_lock:
        counts = dict(_killers.get(name, {}))
    rank = dict((t, i) for i, t in enumerate(tests))
    return sorted(tests, key=lambda t: (-_written_for(name, t), -counts.get(t, 0), rank[t]))


def note_killer(name, out):
    nodeid = _first_failure(out).split(' ', 1)[-1]
    if nodeid:
        with _killers_lock:
            per_file = _killers.setdefault(name, {})
            per_file[nodeid] = per_file.get(nodeid, 0) + 1
    return nodeid


def seed_kill_history(report_json):
    """Start the kill history with the tests that killed each file's mutants in the last report (its rechecks
    too): under a --max-tests cap a test that killed there is judged first again, even where hundreds of the
    file's own tests run the line. The number of kills taken over (0 without a readable report)."""
    try:
        with open(str(report_json)) as f:
            records = json.load(f).get('mutants', [])
    except (IOError, OSError, ValueError, AttributeError):
        return 0
    seeded = 0
    for r in records:
        killer = r.get('killed_by') or ''
        if r.get('outcome') == KILLED and killer.startswith(('FAILED ', 'ERROR ')):
            note_killer(r['file'], killer)
            seeded += 1
    return seeded


MAX_TESTS = [None]


def judge(tree, cfg, mutant, original, tests, total, slowest):
    target = tree / cfg['source'] / mutant['file']
    tests = by_kill_history(mutant['file'], tests)
    if MAX_TESTS[0]:
        tests = tests[:MAX_TESTS[0]]
    per_test = max(cfg['test_timeout_floor'], cfg['test_timeout_factor'] * slowest)
    whole = cfg['timeout_floor'] + cfg['timeout_factor'] * total
    target.write_text(mutant['code'], encoding='utf-8')
    try:
        rc, out, secs = run_tests(tree, ['-x', '-q', '--timeout=%d' % per_test, '--'] + tests, test_env(tree),
                                  timeout=whole)
    finally:
        target.write_text(original, encoding='utf-8')
    if rc == 'timeout' or 'Timeout (>' in out or '+++++ Timeout' in out:
        return TIMEOUT, out, secs
    if rc == 0:
        return SURVIVED, out, secs
    if rc in (1, 2, 3) or (rc == 4 and 'ERROR collecting' in out):
        # a test failed, collection (an import of the mutant) failed, or pytest itself crashed
        note_killer(mutant['file'], out)
        return KILLED, out, secs
    return INCOMPETENT, out, secs


def _imports(name):
    """A pattern for a Python import of the source file `name` (`_core/ledger.py`) through the collection:
    `...module_utils._core.ledger` or `from ...module_utils._core import (..., ledger, ...)`."""
    pkg, mod = name[:-len('.py')].rsplit('/', 1) if '/' in name else ('', name[:-len('.py')])
    where = r'module_utils' + (r'\.' + re.escape(pkg.replace('/', '.')) if pkg else '')
    return re.compile(r'%s(?:\.%s\b|\s+import\s+(?:\([^)]*\b%s\b[^)]*\)|[^\n]*\b%s\b))'
                      % (where, re.escape(mod), re.escape(mod), re.escape(mod)))


def canary_tests(tree, cfg, excluded=()):
    """{source file: test file} for the two canaries, picked by what the test files say, not by their paths
    (so moving tests never breaks the run): the smallest test file of the suites that imports the in-process
    canary's file (config `canary_in_process`), and the smallest that imports nothing of the source folder
    and names a module (plugins/modules/) that imports the subprocess canary's file (`canary_subprocess`).
    A test file with a test that failed on the unmutated copy (excluded) is not picked."""
    inproc, subproc = cfg.get('canary_in_process', '_core/ledger.py'), cfg.get('canary_subprocess', '_edits/engine.py')
    bad = set(n.split('::', 1)[0] for n in excluded)
    files = sorted((p for suite in cfg['suites'] for p in (tree / suite).rglob('test_*.py')
                    if '__pycache__' not in p.parts and p.relative_to(tree).as_posix() not in bad),
                   key=lambda p: (p.stat().st_size, p.as_posix()))
    modules = [p.stem for p in sorted((tree / 'plugins' / 'modules').glob('*.py'))
               if _imports(subproc).search(p.read_text(encoding='utf-8'))]
    named = re.compile(r'\b(?:%s)\b' % '|'.join(map(re.escape, modules))) if modules else None
    picked = {}
    for p in files:
        text = p.read_text(encoding='utf-8')
        if inproc not in picked and _imports(inproc).search(text):
            picked[inproc] = p.relative_to(tree).as_posix()
        if subproc not in picked and named and 'module_utils' not in text and named.search(text):
            picked[subproc] = p.relative_to(tree).as_posix()
    for name, how in ((inproc, 'imports it'), (subproc, 'runs a module that imports it, importing nothing of %s'
                                                        % cfg['source'])):
        if name not in picked:
            raise SystemExit('canary: no test file of %s %s (%s)' % (' '.join(cfg['suites']), how, name))
    return picked


def check_canaries(trees, cfg, excluded):
    """A mutant that breaks every import must be killed in each copy, in process and in a module subprocess,
    judged as the mutants are: in the copy's fork server when there is one (so its children import the copy's
    code, not something the server holds)."""
    picked = canary_tests(trees[0], cfg, excluded)
    log('canaries: %s' % ', '.join('%s by %s' % kv for kv in sorted(picked.items())))
    for tree in trees:
        for name, test in sorted(picked.items()):
            tests = [test]
            original = (tree / cfg['source'] / name).read_text(encoding='utf-8')
            mutant = {'file': name, 'code': original + CANARY}
            outcome, out, _s = judge(tree, cfg, mutant, original, tests, 60, 30)
            if outcome != KILLED or 'nodeguard mutation canary' not in out:
                raise SystemExit('canary in %s survived (%s) running %s: the tests do not import the copy. '
                                 'Output:\n%s' % (tree, outcome, tests, out))
            server = FORK_SERVERS.get(tree)
            if server is not None and not server.last_forked:
                # its children were not shown to import the copy: none judges a mutant
                log('canary in %s ran as a subprocess, not in the fork server: every mutant of this copy will'
                    % tree.name)
                FORK_SERVERS.pop(tree).stop()
    log('canaries killed in every copy (in process and through a module subprocess%s)'
        % (', in the fork servers' if FORK_SERVERS else ''))


def end_copies(trees, run_dir, keep):
    """Stop the copies' fork servers; remove the copies and the servers' scratch unless kept (--keep)."""
    stop_fork_servers(trees)
    if not keep:
        for tree in trees:
            shutil.rmtree(tree, ignore_errors=True)
            shutil.rmtree(run_dir / ('fork-%s' % tree.name), ignore_errors=True)


def run_jobs(trees, cfg, originals, work, produced, deadline, on_result):
    """Judge the mutants put on `work` until `produced` is set and it is empty, or the deadline passed."""
    results = queue.Queue()

    def worker(tree):
        while time.monotonic() < deadline:
            try:
                mutant, tests, total, slowest = work.get(timeout=1)
            except queue.Empty:
                if produced.is_set() and work.empty():
                    return
                continue
            try:
                outcome, out, secs = judge(tree, cfg, mutant, originals[mutant['file']], tests, total, slowest)
            except Exception as exc:  # keep going; the mutant is reported
                outcome, out, secs = INCOMPETENT, 'runner error: %r' % exc, 0.0
            results.put((mutant, outcome, out, secs))

    threads = [threading.Thread(target=worker, args=(t,), daemon=True) for t in trees]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) or not results.empty():
        try:
            on_result(*results.get(timeout=1))
        except queue.Empty:
            pass
    produced.wait()
    left = []
    while not work.empty():
        left.append(work.get_nowait()[0])
    return left


# ------------------------------------------------------------------- report
def summarise(files, records):
    rows = []
    for name in files:
        recs = [r for r in records if r['file'] == name]
        count = dict((k, sum(1 for r in recs if r['outcome'] == k))
                     for k in (KILLED, TIMEOUT, SURVIVED, UNCOVERED, INCOMPETENT, EQUIVALENT, NOT_RUN))
        judged = count[KILLED] + count[TIMEOUT] + count[SURVIVED] + count[UNCOVERED]
        score = 100.0 * (count[KILLED] + count[TIMEOUT]) / judged if judged else None
        rows.append(dict(file=name, total=len(recs), score=score, judged=judged,
                         by_sibling=sum(1 for r in recs if r.get('decided_by') and r['outcome'] != NOT_RUN), **count))
    return rows


def write_report(run_dir, meta, rows, records, out_dir):
    def pct(v):
        return '-' if v is None else '%.1f %%' % v
    lines = ['# Mutation testing report', '',
             '- started %s, finished %s (%s)' % (meta['started'], meta['finished'], meta['elapsed']),
             '- tree: %s (HEAD %s), mode: %s, workers: %d, tool: cosmic-ray %s'
             % (meta['tree'], meta['head'], meta['mode'], meta['workers'], meta['cosmic_ray']),
             '- operators: %s (%s cosmic-ray operators; docs/testing.md, "Mutation testing"), fork server: %s'
             % (meta.get('operators', 'all'), len(meta.get('operator_names', [])) or 'all the',
                meta.get('fork_server', 'off')),
             '- command: `%s`' % meta['command'],
             '- tests per mutant: %s' % ('all that run its line' if not meta.get('max_tests') else
                                         'at most %d of those that run its line (kills can only be under-counted)'
                                         % meta['max_tests']),
             '- score = (killed + timed out) / (killed + timed out + survived); equivalent mutants '
             '(tests/mutation/equivalents.toml) are not counted; "not run" = left when the time budget ran out; '
             '"by a sibling" = mutants of one `\'literal\' % (a, b)` decided by the run of one of them (every '
             'other binary operator raises the same TypeError there)', '',
             '| file | mutants | killed | timed out | survived | of which no test runs the line | equivalent '
             '| incompetent | not run | by a sibling | score |',
             '|---|---|---|---|---|---|---|---|---|---|---|']
    for r in rows:
        lines.append('| %s | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |'
                     % (r['file'], r['total'], r[KILLED], r[TIMEOUT], r[SURVIVED] + r[UNCOVERED], r[UNCOVERED],
                        r[EQUIVALENT], r[INCOMPETENT], r[NOT_RUN], r['by_sibling'], pct(r['score'])))
    tot = dict((k, sum(r[k] for r in rows)) for k in (KILLED, TIMEOUT, SURVIVED, UNCOVERED, EQUIVALENT,
                                                      INCOMPETENT, NOT_RUN, 'total', 'judged', 'by_sibling'))
    lines.append('| **all** | %d | %d | %d | %d | %d | %d | %d | %d | %d | %s |'
                 % (tot['total'], tot[KILLED], tot[TIMEOUT], tot[SURVIVED] + tot[UNCOVERED], tot[UNCOVERED],
                    tot[EQUIVALENT], tot[INCOMPETENT], tot[NOT_RUN], tot['by_sibling'],
                    pct(100.0 * (tot[KILLED] + tot[TIMEOUT]) / tot['judged'] if tot['judged'] else None)))
    for rc in meta.get('rechecks', []):
        lines.append('- rechecked %s at %s: %d of %d survivors killed by `%s` (no test map: only these tests ran)'
                     % (rc['at'], rc['head'], rc['killed'], rc['of'], ' '.join(rc['tests'])))
    if meta.get('excluded_tests'):
        lines += ['', '## Tests left out (failed on the unmutated copy, or excluded in config.toml)', '']
        lines += ['- `%s`: %s' % (n, why) for n, why in sorted(meta['excluded_tests'].items())]
    if meta.get('stale_equivalents'):
        lines += ['', '## Stale entries of equivalents.toml (%d)' % len(meta['stale_equivalents']), '',
                  'They name no mutant of the files run: drop them, or give the line, scope or file it has now.', '']
        lines += ['- `%s` %s `%s` -> `%s`: %s' % (e['file'], e['operator'], e['line'].strip(), e['mutated'].strip(),
                                                  e['why']) for e in meta['stale_equivalents']]
    surv = [r for r in records if r['outcome'] in (SURVIVED, UNCOVERED, INCOMPETENT)]
    lines += ['', '## Survivors (%d)' % len(surv), '',
              'Kill each with a test, or list it in tests/mutation/equivalents.toml with the reason it cannot '
              'change behaviour.', '']
    for r in sorted(surv, key=lambda r: (r['file'], r['start'][0])):
        lines.append('- `%s:%d` %s (%s, %d tests ran)  \n  `%s`  \n  → `%s`'
                     % (r['file'], r['start'][0], r['operator'], r['outcome'], len(r.get('tests', [])),
                        r['old'][:200], r['new'][:200]))
    text = '\n'.join(lines) + '\n'
    data = dict(meta=meta, files=rows, mutants=[dict((k, v) for k, v in r.items() if k not in ('code', 'siblings'))
                                                for r in records])
    for folder in (run_dir, out_dir):
        (folder / 'report.md').write_text(text)
        with open(folder / 'report.json', 'w') as f:
            json.dump(data, f, indent=1)
    return text


def print_table(rows):
    print('%-26s %7s %7s %9s %9s %11s %8s %8s' % ('file', 'mutants', 'killed', 'timed out', 'survived', 'equivalent',
                                                  'not run', 'score'))
    for r in rows:
        print('%-26s %7d %7d %9d %9d %11d %8d %8s' % (
            r['file'], r['total'], r[KILLED], r[TIMEOUT], r[SURVIVED] + r[UNCOVERED], r[EQUIVALENT], r[NOT_RUN],
            '-' if r['score'] is None else '%.1f%%' % r['score']))


def save_sessions(run_dir, cfg, files, records):
    """One cosmic-ray session per file (sessions/<file>.sqlite), for cr-report / cr-html."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import MutationSpec, TestOutcome, WorkerOutcome, WorkItem, WorkResult

    folder = run_dir / 'sessions'
    folder.mkdir(exist_ok=True)
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        with use_db(str(folder / (name + '.sqlite')), WorkDB.Mode.create) as db:
            items, results = [], []
            for r in (r for r in records if r['file'] == name):
                end = r['end'] if tuple(r['end']) > tuple(r['start']) else [r['start'][0], r['start'][1] + 1]
                items.append(WorkItem.single(r['job_id'], MutationSpec(
                    module_path=str(Path(cfg['source']) / name), operator_name=r['operator'],
                    occurrence=r['occurrence'], start_pos=tuple(r['start']), end_pos=tuple(end))))
                if r['outcome'] == NOT_RUN:
                    continue
                if r['outcome'] == EQUIVALENT:
                    res = WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=r.get('reason'))
                else:
                    test = {KILLED: TestOutcome.KILLED, TIMEOUT: TestOutcome.KILLED, SURVIVED: TestOutcome.SURVIVED,
                            UNCOVERED: TestOutcome.SURVIVED}.get(r['outcome'], TestOutcome.INCOMPETENT)
                    res = WorkResult(worker_outcome=WorkerOutcome.NORMAL, test_outcome=test,
                                     output=r.get('output', '')[-2000:], diff='-' + r['old'] + '\n+' + r['new'])
                results.append((r['job_id'], res))
            db.add_work_items(items)
            for job_id, res in results:
                db.set_result(job_id, res)


def rescore(report_json):
    cfg, equivalents = load_config()
    with open(report_json) as f:
        data = json.load(f)
    records = data['mutants']
    if any('scope' not in r for r in records):
        raise SystemExit('%s was written by an older run.py (its mutants name no scope): run it again' % report_json)
    for r in records:
        if r['outcome'] == EQUIVALENT:
            continue
        # matched by what the report kept of each mutant (line text, scope, twins), not by today's files
        reason = equivalent_reason(r, equivalents)
        if reason:
            r.update(outcome=EQUIVALENT, reason=reason, was=r['outcome'])
    files = [row['file'] for row in data['files']]
    rows = summarise(files, records)
    meta = dict(data['meta'], rescored=datetime.datetime.now().isoformat(timespec='seconds'))
    out_dir = REPO / 'build' / 'mutation'
    write_report(report_json.parent, meta, rows, records, out_dir)
    print_table(rows)
    return 0


def survivor_keys(records, files=None):
    """{file: [(operator, old, new, line)]} of the mutants a report left alive (survived, on no test's line,
    incompetent), in the report's order."""
    out = {}
    for r in records:
        if r['outcome'] in (SURVIVED, UNCOVERED, INCOMPETENT) and (not files or r['file'] in files):
            out.setdefault(r['file'], []).append((r['operator'], r['old'], r['new'], r['start'][0]))
    return out


def match_survivors(mutants, keys):
    """The mutants of a file made now that match the report's survivors: by operator, changed text and line
    first; a survivor whose line moved (lines added above it) then takes the nearest alike mutant no survivor
    took. Two alike survivors never take one mutant. Also the keys matched by none (changed since)."""
    chosen, left, free = [], [], list(mutants)
    for k in keys:
        hit = next((m for m in free if (m['operator'], m['old'], m['new'], m['start'][0]) == k), None)
        if hit is None:
            left.append(k)
        else:
            free.remove(hit)
            chosen.append(hit)
    unmatched = []
    for k in left:
        alike = [m for m in free if (m['operator'], m['old'], m['new']) == k[:3]]
        if not alike:
            unmatched.append(k)
            continue
        hit = min(alike, key=lambda m: abs(m['start'][0] - k[3]))
        free.remove(hit)
        chosen.append(hit)
    chosen.sort(key=lambda m: (m['start'][0], m['occurrence']))
    return chosen, unmatched


def mark_rechecked(records, killed, tests):
    """Mark the report's survivors that a recheck killed ([(mutant, outcome)]): each kill goes to the alike
    survivor of the report on its line, else to the nearest alike one; each keeps what it was and the tests
    that killed it."""
    for mutant, outcome in killed:
        alike = [r for r in records if r['outcome'] in (SURVIVED, UNCOVERED, INCOMPETENT)
                 and (r['file'], r['operator'], r['old'], r['new'])
                 == (mutant['file'], mutant['operator'], mutant['old'], mutant['new'])]
        if not alike:
            continue
        r = min(alike, key=lambda r: abs(r['start'][0] - mutant['start'][0]))
        r.update(was=r['outcome'], outcome=outcome, killed_by=mutant['killed_by'], rechecked_with=list(tests))


def clean_run(tree, tests, timeout=1800):
    """None when the tests pass on this (unmutated) copy, else why not: a test that fails there would "kill"
    every mutant it judges."""
    rc, out, secs = run_tests(tree, ['-q', '--'] + list(tests), test_env(tree), timeout)
    if rc == 0:
        return None
    return ('rc=%s after %.0f s; a recheck judges mutants only with tests that pass on the unmutated code. '
            'Output:\n%s' % (rc, secs, out[-4000:]))


def recheck(args, cfg):
    """Judge a report's survivors again with the given tests only (no test map): the mutants they kill are
    marked killed in the report (killed_by, rechecked_with), which is written again with its per-file scores.
    For checking that new tests kill what a full run left alive, without a second full run; the report says
    which mutants a recheck decided."""
    report_json = Path(args.recheck)
    with open(report_json) as f:
        data = json.load(f)
    cfg['operators'] = data['meta'].get('operators', cfg['operators'])   # the mutants the report judged
    records = data['mutants']
    keys = survivor_keys(records, args.files)
    if not keys:
        log('no survivors in %s%s' % (report_json, ' for ' + ', '.join(args.files) if args.files else ''))
        return 0
    started = datetime.datetime.now()
    out_dir = REPO / 'build' / 'mutation'
    run_dir = out_dir / ('recheck-%s-%s' % (started.strftime('%Y%m%d-%H%M%S'), uuid.uuid4().hex[:4]))
    workers = max(1, min(2, args.workers or cfg['workers']))
    trees = [run_dir / ('w%d' % i) for i in range(workers)]
    log('recheck of %d survivors in %d files with %s; copying the %s into %s'
        % (sum(len(v) for v in keys.values()), len(keys), ' '.join(args.with_tests),
           'working tree' if args.tree == 'worktree' else 'HEAD', run_dir))
    for tree in trees:
        copy_tree(tree, args.tree, args.overlay, args.rev)
    try:
        if not args.no_fork_server:
            start_fork_servers(trees, run_dir)
        log('recheck: running %s on the unmutated copy first' % ' '.join(args.with_tests))
        failed = clean_run(trees[0], args.with_tests)
        if failed:
            log('recheck refused: %s do not pass on the unmutated copy (%s)' % (' '.join(args.with_tests), failed))
            return 2
        check_canaries(trees, cfg, {})
        originals, work, produced = {}, queue.Queue(), threading.Event()
        by_key = {}
        for name, file_keys in sorted(keys.items()):
            if not (trees[0] / cfg['source'] / name).exists():
                log('%s: gone from the tree; its %d survivors stay as they are' % (name, len(file_keys)))
                continue
            code, mutants = make_mutants(trees[0], cfg, name)
            originals[name] = code
            chosen, unmatched = match_survivors(mutants, file_keys)
            for k in unmatched:
                log('%s:%d: no mutant matches %s %r -> %r now (the line changed?); left as it was'
                    % (name, k[3], k[0], k[1], k[2]))
            for m in chosen:
                by_key.setdefault((name, m['operator'], m['old'], m['new']), []).append(m)
                # no map, so no traced durations: as if the tests took a minute, the slowest 12 s
                work.put((m, list(args.with_tests), 60.0, 12.0))
        produced.set()
        killed = []

        def on_result(mutant, outcome, out, secs):
            if outcome in (KILLED, TIMEOUT):
                mutant['killed_by'] = _first_failure(out) if outcome == KILLED else 'timeout'
                killed.append((mutant, outcome))
            log('%s:%d %s %s' % (mutant['file'], mutant['start'][0], mutant['operator'], outcome))

        run_jobs(trees, cfg, originals, work, produced, float('inf'), on_result)
    finally:
        end_copies(trees, run_dir, args.keep)
    mark_rechecked(records, killed, args.with_tests)
    files = [row['file'] for row in data['files']]
    rows = summarise(files, records)
    meta = dict(data['meta'])
    judged = sum(len(v) for v in by_key.values())
    meta.setdefault('rechecks', []).append(dict(
        at=started.isoformat(timespec='seconds'), tests=list(args.with_tests),
        head=git('rev-parse', '--short', 'HEAD').strip(), killed=len(killed), of=judged))
    # written where the report is (build/mutation/ for the last run's), never over another report
    write_report(report_json.parent, meta, rows, records, report_json.parent)
    print_table(rows)
    log('recheck: %d of %d survivors killed; report: %s' % (len(killed), judged, report_json.parent / 'report.md'))
    return 0


def list_stale_equivalents(cfg, equivalents, files=None):
    """Print the entries of equivalents.toml that name no mutant (stale, or ambiguous: a line the file has
    more than once, without the scope that says which) and the mutants two entries name; 1 when there are."""
    entries = [e for e in equivalents if not files or e['file'] in files]
    found, stale = equivalents_status(REPO, cfg, entries, source_files(cfg))
    named = {}
    for i, hits in found.items():
        for m in hits:
            named.setdefault((m['file'], m['operator'], m['start'][0], m['start'][1]), []).append(i)
    twice = [(k, v) for k, v in sorted(named.items()) if len(v) > 1]
    for e, why in stale:
        print('stale: %s %s %r -> %r: %s' % (e['file'], e['operator'], e['line'].strip(), e['mutated'].strip(), why))
    for (name, op, line, _col), idx in twice:
        print('named by %d entries: %s:%d %s' % (len(idx), name, line, op))
    log('equivalents.toml: %d entries checked, %d name a mutant, %d stale, %d mutants named twice'
        % (len(entries), len(found), len(stale), len(twice)))
    return 1 if stale or twice else 0


# --------------------------------------------------------------------- main
def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n', maxsplit=1)[0])
    ap.add_argument('--changed', action='store_true', help='only lines changed against --base (working tree)')
    ap.add_argument('--base', default='HEAD', help='git revision --changed compares with (default HEAD)')
    ap.add_argument('--files', nargs='+', metavar='NAME', help='only these files of plugins/module_utils/')
    ap.add_argument('--tree', choices=('worktree', 'head'), default='worktree',
                    help='copy the working tree (default) or HEAD (git archive)')
    ap.add_argument('--rev', default='HEAD', help='with --tree head: the commit to copy (default HEAD)')
    ap.add_argument('--max-tests', type=int, default=None, metavar='N',
                    help='judge each mutant with at most N of the tests that run its line (kill history first, then '
                         'fastest); quicker, and it can only under-count kills')
    ap.add_argument('--overlay', nargs='+', default=[], metavar='PATH',
                    help='with --tree head: copy these paths from the working tree over it (e.g. new tests)')
    ap.add_argument('--workers', type=int, default=None, help='copies testing at once (at most 2)')
    ap.add_argument('--max-minutes', type=float, default=None,
                    help='stop starting mutants after this long; the rest is reported as not run')
    ap.add_argument('--limit', type=int, default=None, help='at most this many mutants per file (a sample)')
    ap.add_argument('--keep', action='store_true', help='keep the tree copies after the run')
    ap.add_argument('--operators', choices=OPERATOR_SETS, default=None,
                    help="the operator set: mutmut's replacements (one per binary or comparison site) and the "
                         "cosmic-ray operators mutmut has no counterpart for, or all of cosmic-ray's (default: "
                         "config.toml's operators, else mutmut)")
    ap.add_argument('--no-fork-server', action='store_true',
                    help='judge each mutant in a new `python -m pytest` process, not in a fork of a server '
                         'that has imported pytest and its plugins once per copy')
    ap.add_argument('--rescore', metavar='REPORT_JSON', help='run nothing: apply equivalents.toml to a report.json '
                    'again (after listing mutants there) and rewrite build/mutation/report.md')
    ap.add_argument('--recheck', metavar='REPORT_JSON',
                    help="judge that report's survivors again with --with-tests only (no test map) and mark "
                         "those killed in it, with the tests that killed them; --files limits it to some files")
    ap.add_argument('--with-tests', nargs='+', default=[], metavar='TEST',
                    help='with --recheck: the test files or node ids that judge the survivors (they must pass on '
                         'the unmutated copy, or the recheck is refused)')
    ap.add_argument('--stale-equivalents', action='store_true',
                    help='run nothing: list the entries of equivalents.toml (of --files) that name no mutant of the '
                         'working tree, and exit 1 if there are')
    args = ap.parse_args(argv)
    if args.recheck and not args.with_tests:
        ap.error('--recheck needs --with-tests')
    return args


def cosmic_ray_version():
    try:
        import cosmic_ray  # noqa: F401 pylint: disable=unused-import
        from importlib.metadata import version
        return version('cosmic-ray')
    except ImportError:
        raise SystemExit('cosmic-ray is not installed in this Python (%s): run `make deps`' % sys.executable)


def chosen_files(args, cfg):
    """(files of cfg's source to mutate, {file: changed lines} with --changed else None); files is empty when
    --changed finds nothing changed."""
    files = source_files(cfg)
    only = None
    if args.changed:
        only = changed_lines(cfg, args.base)
        files = [f for f in files if f in only]
        if not files:
            log('nothing changed in %s against %s: no mutants' % (cfg['source'], args.base))
            return [], only
        log('changed against %s: %s' % (args.base, ', '.join('%s (%d lines)' % (f, len(only[f])) for f in files)))
    if args.files:
        unknown = [f for f in args.files if f not in source_files(cfg)]
        if unknown:
            raise SystemExit('not in %s: %s' % (cfg['source'], ', '.join(unknown)))
        files = [f for f in files if f in args.files]
    return files, only


def prepare_trees(args, cfg, trees, run_dir, out_dir, workers):
    """The copies' test map, the tests left out ({node id: why}), fork servers and canaries; (trace, excluded)."""
    log('copying the %s into %s' % ('working tree' if args.tree == 'worktree' else 'HEAD', run_dir))
    for tree in trees:
        copy_tree(tree, args.tree, args.overlay, args.rev)
    trace = trace_tests(trees[0], cfg, workers, out_dir / 'cache')
    excluded = dict((n, 'failed on the unmutated copy') for n, e in trace['tests'].items()
                    if e['outcome'] == 'failed')
    for prefix in cfg.get('exclude_tests', []):
        for n in trace['tests']:
            if n.startswith(prefix['test']):
                excluded[n] = prefix['reason']
    for n in sorted(excluded):
        log('left out: %s (%s)' % (n, excluded[n]))
    log('test map: %d tests' % len(trace['tests']))
    if not args.no_fork_server:
        start_fork_servers(trees, run_dir)
    check_canaries(trees, cfg, excluded)
    return trace, excluded


class MutantRun(object):
    """One run's mutants: made file by file and queued at once (the workers start on the first file), judged
    by the workers, recorded with their outcome."""

    def __init__(self, args, cfg, trace, excluded, equivalents, only):
        self.args, self.cfg, self.trace, self.excluded = args, cfg, trace, excluded
        self.equivalents, self.only = equivalents, only
        self.records, self.originals = [], {}
        self.queued = self.done = 0
        self.work, self.produced = queue.Queue(), threading.Event()
        self.run_start = None   # run() starts the clock of per_minute()
        self.tree = None

    def produce(self, files):
        """Mutants file by file, queued as soon as each file is made (the workers start at once)."""
        try:
            for name in files:
                try:
                    self.produce_file(name)
                except Exception as exc:  # pylint: disable=broad-except
                    # one file's failure must not end the run's other files
                    log('%s: its mutants could not be made (%s: %s); none of them run'
                        % (name, type(exc).__name__, exc))
        finally:
            self.produced.set()

    def produce_file(self, name):
        only = self.only
        code, mutants = make_mutants(self.tree, self.cfg, name, only_lines=only.get(name) if only else None)
        self.originals[name] = code
        limit = self.args.limit
        if limit is not None and len(mutants) > limit:
            step = len(mutants) / float(limit)
            mutants = [mutants[int(i * step)] for i in range(limit)]
        n_jobs = 0
        groups = {}
        for m in mutants:
            self.records.append(m)
            judged = self.tests_to_run(m)
            if judged is None:
                continue
            if m['group']:
                if m['group'] in groups:
                    groups[m['group']]['siblings'].append(m)
                    m['decided_by'] = groups[m['group']]['job_id']
                    continue
                groups[m['group']] = m
                m['siblings'] = []
            self.work.put((m,) + judged)
            self.queued += 1
            n_jobs += 1
        log('%s: %d mutants, %d to run (%d more decided by the run of a sibling)'
            % (name, len(mutants), n_jobs, sum(len(g['siblings']) for g in groups.values())))

    def tests_to_run(self, m):
        """(tests, total, slowest) of a mutant to run; None for one decided here (an equivalent, or a mutant no
        test runs)."""
        reason = equivalent_reason(m, self.equivalents)
        if reason:
            m.update(outcome=EQUIVALENT, reason=reason)
            return None
        tests, total, slowest = select_tests(m, self.trace, self.excluded)
        if self.args.max_tests and len(tests) > self.args.max_tests:
            m['tests_capped'] = len(tests)
        m['tests'] = tests
        if not tests:
            m['outcome'] = UNCOVERED
            return None
        m['outcome'] = NOT_RUN
        return tests, total, slowest

    def on_result(self, mutant, outcome, out, secs):
        mutant['outcome'] = outcome
        mutant['seconds'] = round(secs, 2)
        if outcome == KILLED:
            mutant['killed_by'] = _first_failure(out)
        else:
            mutant['output'] = out[-3000:]
        for sib in mutant.get('siblings', []):
            sib.update(outcome=outcome, killed_by=mutant.get('killed_by'), seconds=0.0)
        self.done += 1
        if self.done % 25 == 0 or outcome in (SURVIVED, INCOMPETENT):
            log('%d/%d (%.1f/min) %s:%d %s %s'
                % (self.done, self.queued, self.per_minute(), mutant['file'], mutant['start'][0],
                   mutant['operator'], outcome))

    def per_minute(self):
        return self.done / max(1e-6, (time.monotonic() - self.run_start) / 60.0)

    def run(self, trees, files, deadline):
        """Produce and judge every mutant of files (until deadline); the jobs left not run."""
        self.tree = trees[0]
        self.run_start = time.monotonic()
        producer = threading.Thread(target=self.produce, args=(files,), daemon=True)
        producer.start()
        left = run_jobs(trees, self.cfg, self.originals, self.work, self.produced, deadline, self.on_result)
        producer.join()
        by_id = dict((r['job_id'], r) for r in self.records)
        for r in self.records:   # siblings queued after their representative was judged
            if r.get('decided_by') and r['outcome'] == NOT_RUN and by_id[r['decided_by']]['outcome'] != NOT_RUN:
                rep = by_id[r['decided_by']]
                r.update(outcome=rep['outcome'], killed_by=rep.get('killed_by'), seconds=0.0)
        if left:
            log('time budget reached: %d mutants not run' % len(left))
        return left


def report_run(ctx, run, files, left):
    """report.md / report.json, the table and the exit status: 1 when a file scores below fail_under or a
    mutant was not run."""
    args, cfg, trees, run_dir, out_dir = ctx['args'], ctx['cfg'], ctx['trees'], ctx['run_dir'], ctx['out_dir']
    rows = summarise(files, run.records)
    # entries of these files that named no mutant (every operator counts, so not only this run's set)
    stale = [dict(e, why=why) for e, why in
             equivalents_status(trees[0], cfg, [e for e in ctx['equivalents'] if e['file'] in files], files)[1]]
    if stale:
        log('equivalents.toml: %d entries of these files name no mutant (report.md lists them; '
            'run.py --stale-equivalents)' % len(stale))
    elapsed = time.monotonic() - ctx['t0']
    meta = dict(started=ctx['started'].isoformat(timespec='seconds'),
                finished=datetime.datetime.now().isoformat(timespec='seconds'),
                elapsed='%d min %02d s' % (elapsed // 60, elapsed % 60), tree=args.tree,
                head=git('rev-parse', '--short', args.rev).strip(), max_tests=args.max_tests,
                mode='changed lines against %s' % args.base if args.changed else 'all lines',
                workers=len(trees), cosmic_ray=ctx['cr_version'],
                command=' '.join(['run.py'] + (ctx['argv'] or sys.argv[1:])),
                excluded_tests=run.excluded, mutants_per_minute=round(run.per_minute(), 1),
                operators=cfg['operators'], operator_names=ctx['operator_names'],
                fork_server=fork_server_summary(trees, args.no_fork_server), stale_equivalents=stale)
    save_sessions(run_dir, cfg, files, run.records)
    write_report(run_dir, meta, rows, run.records, out_dir)
    print_table(rows)
    log('report: %s (sessions for cr-report: %s)' % (out_dir / 'report.md', run_dir / 'sessions'))
    low = [r['file'] for r in rows if r['score'] is not None and r['score'] < cfg['fail_under']]
    if low or left:
        log('below %.0f %%: %s%s' % (cfg['fail_under'], ', '.join(low) or 'none',
                                     '; %d not run' % len(left) if left else ''))
        return 1
    return 0


def run_all(args, argv, cfg, equivalents, cr_version, operator_names):
    """The whole mutation run of the chosen files in copies of the tree; its exit status."""
    workers = max(1, min(2, args.workers or cfg['workers']))
    started = datetime.datetime.now()
    t0 = time.monotonic()
    out_dir = REPO / 'build' / 'mutation'
    run_dir = out_dir / ('run-%s-%s' % (started.strftime('%Y%m%d-%H%M%S'), uuid.uuid4().hex[:4]))
    files, only = chosen_files(args, cfg)
    if args.changed and not files:
        return 0
    # the commit itself, once: every copy is of it, and the report names it (HEAD may move during a long run)
    args.rev = git('rev-parse', args.rev).strip()
    trees = [run_dir / ('w%d' % i) for i in range(workers)]
    last_report = out_dir / 'report.json'
    log('kill history: %d kills of the last report (%s)' % (seed_kill_history(last_report), last_report))
    try:
        trace, excluded = prepare_trees(args, cfg, trees, run_dir, out_dir, workers)
        log('operators: %s (%d cosmic-ray operators)' % (cfg['operators'], len(operator_names)))
        run = MutantRun(args, cfg, trace, excluded, equivalents, only)
        left = run.run(trees, files, t0 + args.max_minutes * 60 if args.max_minutes else float('inf'))
        ctx = dict(args=args, argv=argv, cfg=cfg, trees=trees, run_dir=run_dir, out_dir=out_dir, t0=t0,
                   started=started, equivalents=equivalents, cr_version=cr_version, operator_names=operator_names)
        return report_run(ctx, run, files, left)
    finally:
        end_copies(trees, run_dir, args.keep)


def main(argv=None):
    args = parse_args(argv)
    if args.rescore:
        return rescore(Path(args.rescore))
    cr_version = cosmic_ray_version()
    cfg, equivalents = load_config()
    if args.stale_equivalents:
        return list_stale_equivalents(cfg, equivalents, args.files)
    if args.operators:
        cfg['operators'] = args.operators
    cfg.setdefault('operators', 'mutmut')
    operator_names = [n for n, _op, _keep in operator_table(cfg['operators'], cfg.get('exclude_operators', []))]
    MAX_TESTS[0] = args.max_tests
    if args.recheck:
        return recheck(args, cfg)
    return run_all(args, argv, cfg, equivalents, cr_version, operator_names)


if __name__ == '__main__':
    sys.exit(main())
