# -*- coding: utf-8 -*-
"""The fork server of one tree copy (tests/mutation/run.py starts it; `--no-fork-server` does without).

    python tests/mutation/forkserver.py LOG    # cwd: the tree copy; env: run.py's test_env(tree)

It imports pytest, its plugins, hypothesis, ansible and tomlkit once, never the collection's code nor a test
(it checks that no module it holds comes from the tree), then reads one job a line on stdin:

    {"args": [...pytest arguments...], "out": "/path/of/the/output"}

and, for each, forks a child that runs `python -m pytest ARGS` as that command would (runpy, the tree
first on sys.path), in a session and process group of its own, stdout and stderr to the output file,
stdin from /dev/null. Each child imports the tree's code afresh from its source (no .pyc is written: the
server runs with PYTHONDONTWRITEBYTECODE=1), so a mutant written after the server started is what it runs.
Answers, one JSON line each on stdout: {"ready": ...} once, then per job {"pid": N} when the child runs in
its own process group (run.py kills that group at the job's timeout) and {"rc": N} (-N: killed by signal
N) when it ended. Anything else the server prints goes to LOG.
"""

import json
import os
import sys

# a child that failed before pytest started exits with this code, its output beginning with SETUP_FAILED
SETUP_FAILED_RC = 121
SETUP_FAILED = 'nodeguard fork server: the child could not start pytest'
# what `python -m pytest` in the tree would import before the tests' own imports, and ansible and
# tomlkit (the modules and the collection import them), but not the collection: importing it here would
# run the unmutated code in every child. pytest_randomly is left out: pytest.ini blocks it (-p no:randomly).
PRELOAD = ('pytest', '_pytest.config', '_pytest.main', '_pytest.python', '_pytest.runner', '_pytest.fixtures',
           '_pytest.terminal', '_pytest.capture', '_pytest.assertion.rewrite',
           'xdist', 'xdist.plugin', 'xdist.looponfail', 'pytest_timeout', 'hypothesis', 'hypothesis.strategies',
           '_hypothesis_pytestplugin', 'testinfra.plugin', 'platformdirs.pytest_plugin', 'tomllib', 'tomlkit',
           'ansible', 'ansible.module_utils.basic', 'ansible.module_utils.testing',
           'ansible.module_utils.common.warnings')


def preload(tree):
    """Import PRELOAD (and pytest's default plugins); the error that makes the server unusable, or None."""
    import importlib
    import threading
    missing = []
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            missing.append('%s (%s)' % (name, exc))
    try:
        from _pytest.config import default_plugins
        for name in default_plugins:
            try:
                importlib.import_module('_pytest.' + name)
            except ImportError:
                pass
    except ImportError as exc:
        return 'pytest cannot be imported: %s' % exc
    prefix = os.path.join(os.path.realpath(tree), '')
    from_tree = sorted(name for name, mod in list(sys.modules.items())
                       if os.path.realpath(getattr(mod, '__file__', None) or '/').startswith(prefix))
    if from_tree:
        return 'modules of the tree imported before any test: %s' % ', '.join(from_tree)
    if [name for name in sys.modules if name.startswith('ansible_collections')]:
        return 'ansible_collections imported before any test'
    if not sys.dont_write_bytecode:
        return 'PYTHONDONTWRITEBYTECODE is not set: a child could run a mutant from a stale .pyc'
    if threading.active_count() != 1:
        return '%d threads after the imports: forking them is not safe' % threading.active_count()
    print('preloaded %d modules; not found: %s' % (len(sys.modules), ', '.join(missing) or 'none'), flush=True)
    return None


def exit_code(code):
    """The exit status the interpreter gives `raise SystemExit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return int(code) & 0xff
    print(code, file=sys.stderr)
    return 1


def child(job, server_fds, ready_w):
    """In the forked child: set up as `python -m pytest` would be, run it, exit; never returns."""
    import traceback
    try:
        os.setsid()
        for fd in server_fds:
            os.close(fd)
        out = os.open(job['out'], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        os.write(ready_w, b'1')
        os.close(ready_w)
        import importlib
        import runpy
        importlib.invalidate_caches()
        sys.argv = ['-m'] + list(job['args'])   # runpy puts pytest/__main__.py's path first, as `-m` does
    except BaseException:  # pylint: disable=broad-except
        try:
            os.write(2, (SETUP_FAILED + '\n' + traceback.format_exc()).encode('utf-8', 'replace'))
        finally:
            os._exit(SETUP_FAILED_RC)
    try:
        runpy.run_module('pytest', run_name='__main__', alter_sys=True)
        code = 0
    except SystemExit as exc:
        code = exit_code(exc.code)
    except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()   # as the interpreter reports an uncaught exception
        code = 1
    try:
        # what the interpreter does at exit: wait for threads, run atexit, flush
        import atexit
        import threading
        getattr(threading, '_shutdown', lambda: None)()
        getattr(atexit, '_run_exitfuncs', lambda: None)()
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def serve():
    tree = os.getcwd()
    sys.path[0] = tree   # `python -m pytest` puts the working directory first, not this script's folder
    requests, answers = os.dup(0), os.dup(1)   # not inherited by the tests' subprocesses (O_CLOEXEC)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if len(sys.argv) > 1 else null
    os.dup2(log, 1)
    os.dup2(log, 2)

    def answer(obj):
        data = (json.dumps(obj) + '\n').encode('utf-8')
        while data:
            data = data[os.write(answers, data):]

    error = preload(tree)
    answer({'ready': error is None, 'error': error, 'pid': os.getpid()})
    if error:
        return 1
    buf = b''
    while True:
        while b'\n' not in buf:
            chunk = os.read(requests, 65536)
            if not chunk:
                return 0   # run.py closed the pipe (or ended)
            buf += chunk
        line, buf = buf.split(b'\n', 1)
        job = json.loads(line.decode('utf-8'))
        sys.stdout.flush()
        sys.stderr.flush()
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            child(job, (requests, answers), ready_w)
        os.close(ready_w)
        os.read(ready_r, 1)   # the child is in its own session (or it failed and exited)
        os.close(ready_r)
        answer({'pid': pid})
        status = os.waitpid(pid, 0)[1]
        answer({'rc': os.waitstatus_to_exitcode(status)})


if __name__ == '__main__':
    sys.exit(serve())
