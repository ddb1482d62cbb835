# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Would the node's containerd really load this config?  Start it and see.

``containerd config dump`` exits 0 on configs whose CRI plugin then fails to
load in the daemon (facts note: 7 of 279 NVIDIA-toolkit configs).  The only
sufficient test is a start: ``load_test`` starts the node's own containerd
binary on the candidate in a sandbox, reads the plugin list and requires the
CRI plugin(s) to be ``ok``, then stops it.

The sandbox (docs/preflight.md says why each part is there):

- a private mount, network and (where unshare can) PID namespace;
- ``--root``, ``--state`` on a tmpfs mounted in that namespace only;
  ``--address`` in a private temporary folder;
- a private copy of every file of the config tree (the candidate and each
  import it names) is bind-mounted over the original path inside the
  namespace, so the daemon reads the same paths, resolves relative imports
  and globs the same way, and merges the files itself; the copies differ from
  the originals only in settings that would make the daemon touch the host
  (socket paths, the opt and NRI folders, snapshotter root paths, cgroup path,
  proxy plugin sockets) and in the device-touching snapshotters, which are
  disabled (recorded in ``skipped``);
- ``/run`` (and a real ``/var/run``) is an overlay whose upper layer is on the
  private tmpfs: whatever containerd writes there without being configured to
  (``/run/containerd`` on 1.7 and 2.x) vanishes with the namespace.

No Ansible imports: the module, the engine and the tests call it directly.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import tempfile
import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    TomlParseError,
    parse_error_message,
    parse_toml,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import containerd_log, process, sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.sandbox import CRI_V2, CRI_V3_IMAGES, CRI_V3_RUNTIME

STATUS_OK = 'ok'
STATUS_FAILED = 'failed'
STATUS_TIMEOUT = 'timeout'
STATUS_CANNOT_RUN = 'cannot_run'


def required_for(version):
    """The CRI plugin ids that must be ``ok`` for containerd (major, minor)."""
    if version is not None and version[0] >= 2:
        return [CRI_V2, CRI_V3_RUNTIME, CRI_V3_IMAGES]
    return [CRI_V2]


class LoadResult(object):
    """What one load test found.

    status: ``ok`` (the daemon started and every required plugin is ok),
    ``failed`` (the daemon refused the config, or a required plugin is not
    ok: ``errors`` says which and quotes containerd), ``timeout`` (no answer
    within the time limit), ``cannot_run`` (the test itself could not be
    made: not root, no unshare, no binary...; ``errors`` says why).  Only
    ``ok`` is a pass.
    """

    FIELDS = ('status', 'ok', 'config_path', 'binary', 'containerd_version', 'required', 'plugins',
              'errors', 'warnings', 'skipped', 'seconds', 'method', 'log_tail')

    def __init__(self, config_path, binary):
        self.status = STATUS_CANNOT_RUN
        self.config_path = config_path
        self.binary = binary
        self.containerd_version = None  # '1.6.20', '2.1.9' ... when known
        self.required = {}               # {plugin id: status} of the required plugins
        self.plugins = {}                # {plugin id: status} of every plugin the daemon listed
        self.errors = []
        self.warnings = []
        self.skipped = []
        self.seconds = 0.0
        self.method = None               # 'ctr' or 'log': where the plugin list came from
        self.log_tail = ''

    @property
    def ok(self):
        return self.status == STATUS_OK

    def as_dict(self):
        return dict((k, getattr(self, k)) for k in self.FIELDS)

    def message(self):
        """One human line: the verdict and every error."""
        if self.ok:
            return '%s: containerd %s loads it, %s ok' % (
                self.config_path, self.containerd_version or '?', ', '.join(sorted(self.required)))
        return ' '.join(self.errors) or '%s: load test %s' % (self.config_path, self.status)

    def __repr__(self):
        return 'LoadResult(%r)' % (self.as_dict(),)


# ---------------------------------------------------------------- load_test

class CannotRun(Exception):
    """The load test itself cannot be made; the message says why."""


class Refused(Exception):
    """containerd refuses the config before any start; the message quotes it."""


def _cannot(res, t0, msg):
    res.status = STATUS_CANNOT_RUN
    res.errors.append('%s: the containerd load test cannot run: %s' % (res.config_path, msg))
    res.seconds = round(time.time() - t0, 3)
    return res


def _tools_and_version(res, binary, config_path, run_command):
    """(tools, (major, minor)) for a run, or CannotRun."""
    if not binary or not os.path.isfile(binary) or not os.access(binary, os.X_OK):
        raise CannotRun('no containerd binary at %r' % (binary,))
    if os.geteuid() != 0:
        raise CannotRun('it must run as root (it creates a private mount and network namespace); '
                        'run it with become: true')
    if not os.path.isfile(config_path):
        raise CannotRun('no such file')
    tools = dict((name, process.which(name)) for name in ('unshare', 'mount', 'mkdir', 'sh'))
    missing = [name for name, found in sorted(tools.items()) if found is None]
    if missing:
        raise CannotRun('no %s command on this node (unshare and mount are in util-linux)' % ', '.join(missing))
    version, res.containerd_version, verr = process.binary_version(run_command, binary)
    if version is None:
        raise CannotRun('%s --version failed: %s' % (binary, verr))
    return tools, version


def _private_base(workdir):
    """The parent of the private folder: never under /run (the namespace covers /run)."""
    base = workdir or tempfile.gettempdir()
    if os.path.realpath(base).startswith('/run/') or os.path.realpath(base) == '/run':
        base = '/tmp' if os.path.isdir('/tmp') else '/var/tmp'
    return base


def _main_path(sb, config_path, as_path):
    """(the path the daemon is told, where its bytes come from or None)."""
    if as_path:
        if os.path.isfile(as_path):
            return os.path.abspath(as_path), os.path.abspath(config_path)
        sb.skip('as_path %s does not exist: the candidate was tested at its own path %s' % (as_path, config_path))
    return os.path.abspath(config_path), None


def _make_copies(sb, res, binary, config_path, main, content_from, major, run_command):
    """A private copy of every file of the tree, registered as a bind over the original."""
    try:
        tree = sandbox.read_tree(main, content_from)
    except (IOError, OSError) as exc:
        raise CannotRun('cannot read it (%s)' % exc.strerror)
    for index, (path, raw) in enumerate(tree):
        try:
            text, bom = split_bom(raw.decode('utf-8'))
            data = parse_toml(text)
        except (UnicodeDecodeError, TomlParseError, ValueError) as exc:
            why = parse_error_message(path, exc) if isinstance(exc, TomlParseError) else '%s: %s' % (path, exc)
            rc, out, err = run_command([binary, '--config', config_path, 'config', 'dump'])
            if rc != 0:
                raise Refused('%s: containerd %s refuses it: %s'
                              % (config_path, res.containerd_version, process.last_lines(err or out)))
            raise CannotRun('no private copy could be made of %s (%s); containerd\'s own config '
                            'dump accepts it' % (path, why))
        data = sb.rewrite(path, data, index == 0, major)
        copy = os.path.join(sb.copies, '%d.toml' % index)
        with open(copy, 'wb') as f:
            f.write((u'\ufeff' if bom else u'').encode('utf-8') + sandbox.dump_toml(data).encode('utf-8'))
        sb.binds.append((copy, os.path.realpath(path)))


def _run_dirs():
    """/run, and /var/run where it is a folder of its own."""
    run_dirs = ['/run']
    if os.path.isdir('/var/run') and not os.path.islink('/var/run') \
            and os.path.realpath('/var/run') != os.path.realpath('/run'):
        run_dirs.append('/var/run')
    return run_dirs


def _start(sb, binary, main, tools, logf):
    """Start the namespace's setup script, which execs containerd."""
    script = sandbox.setup_script(sb, binary, main, _run_dirs(), tools)
    unshare = tools['unshare']
    cmd = [unshare] + sandbox.unshare_flags(unshare) + [tools['sh'], '-c', script]
    # the daemon runs while it is asked for its plugins, then is killed: run_command waits for its end
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,  # pylint: disable=ansible-bad-function
                            stderr=subprocess.STDOUT, close_fds=True,
                            start_new_session=True, cwd='/', preexec_fn=process.die_with_parent_fn())


def _wait_up(proc, sb, res, deadline):
    """True once the daemon answers on its socket (and, without ctr, said it booted)."""
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        if process.connectable(sb.socket) and (res.method == 'ctr' or containerd_log.BOOTED in process.read_text(sb.log)):
            return True
        time.sleep(0.03)
    return False


def _ask_plugins(res, ctr, sb, deadline):
    """The plugin list from ctr; on failure the log is read instead."""
    left = max(1.0, deadline - time.time())
    rc, out, err = process.run_bounded([ctr, '--address', sb.socket, 'plugins', 'ls'], left)
    if rc == 0:
        res.plugins = containerd_log.parse_ctr_plugins(out)
    else:
        res.warnings.append('%s plugins ls failed (%s); the plugin list was read from the log'
                            % (ctr, process.last_lines(err or out)))
        res.method = 'log'


def _not_up(res, t0, log, said_log, fatal, timed_out, proc_rc, binary, config_path, timeout, run_command):
    """The verdict when the daemon never answered."""
    if not timed_out and containerd_log.EXEC not in log.splitlines():
        # unshare or the namespace setup failed: containerd never ran
        setup = [line for line in fatal if line.startswith('nodeguard-preflight:')]
        return _cannot(res, t0, '; '.join(setup) or 'the private namespace could not be made: %s'
                       % (process.last_lines(log, 3) or 'unshare exited with %s' % proc_rc))
    if timed_out:
        res.status = STATUS_TIMEOUT
        res.errors.append('%s: containerd %s did not answer within %ss; last log lines: %s'
                          % (config_path, res.containerd_version, timeout, process.last_lines(said_log, 5)))
    else:
        # containerd's words about the original file (line and column of the
        # original, not of the private copy), when config dump refuses it
        # too; otherwise what the daemon said
        rc, out, err = run_command([binary, '--config', config_path, 'config', 'dump'])
        said = process.last_lines(err or out) if rc != 0 else '; '.join(fatal[-3:]) or process.last_lines(said_log, 5)
        res.status = STATUS_FAILED
        res.errors.append('%s: containerd %s refuses to start on it: %s' % (config_path, res.containerd_version, said))
    res.seconds = round(time.time() - t0, 3)
    return res


def _judge_plugins(res, t0, need, log_errors, config_path):
    """The verdict of a daemon that answered: every required plugin ok."""
    res.required = dict((p, res.plugins.get(p, 'missing')) for p in need)
    for pid, status in sorted(res.required.items()):
        if status != 'ok':
            why = log_errors.get(pid) or ('not loaded: no such plugin, or disabled by disabled_plugins'
                                          if status == 'missing' else 'status %s' % status)
            said = {'error': 'failed to load', 'skip': 'was skipped', 'missing': 'is missing'}.get(
                status, 'has status %s' % status)
            res.errors.append('%s: containerd %s starts, but its plugin %s %s (%s): %s'
                              % (config_path, res.containerd_version, pid, said, status, why))
    for pid, status in sorted(res.plugins.items()):
        if status == 'error' and pid not in res.required:
            res.warnings.append('plugin %s: %s' % (pid, log_errors.get(pid, 'error')))
    res.status = STATUS_FAILED if res.errors else STATUS_OK
    res.seconds = round(time.time() - t0, 3)
    return res


def _run_in(tmp, res, t0, binary, config_path, run_command, timeout, need, ctr, as_path, tools, version):
    """The test inside its private folder tmp; the caller removes the folder."""
    proc = None
    logf = None
    try:
        sb = sandbox.Sandbox(tmp)
        os.mkdir(sb.copies)
        os.mkdir(sb.private)
        main, content_from = _main_path(sb, config_path, as_path)
        _make_copies(sb, res, binary, config_path, main, content_from, version[0], run_command)
        logf = open(sb.log, 'w')
        proc = _start(sb, binary, main, tools, logf)
        deadline = t0 + timeout
        up = _wait_up(proc, sb, res, deadline)
        timed_out = not up and proc.poll() is None
        proc_rc = proc.poll()
        if up and res.method == 'ctr':
            _ask_plugins(res, ctr, sb, deadline)
        process.kill_group(proc)
        proc = None
        log = process.read_text(sb.log)
        log_plugins, log_errors, _booted, fatal = containerd_log.parse_log(log)
        if res.method == 'log' or not res.plugins:
            res.plugins = log_plugins
        log_lines = log.splitlines()
        # containerd's own lines: the sandbox's marker and note lines are not its words
        said_log = '\n'.join(line for line in log_lines
                             if not line.startswith(containerd_log.NOTE) and line != containerd_log.EXEC)
        res.log_tail = process.last_lines(said_log, 10, 300)
        res.skipped = sb.skipped + [line[len(containerd_log.NOTE):] for line in log_lines
                                    if line.startswith(containerd_log.NOTE)]
        if not up:
            return _not_up(res, t0, log, said_log, fatal, timed_out, proc_rc, binary, config_path, timeout,
                           run_command)
        return _judge_plugins(res, t0, need, log_errors, config_path)
    finally:
        if proc is not None:
            process.kill_group(proc)
        if logf is not None:
            logf.close()


def load_test(binary, config_path, run_command=None, timeout=20.0, required=None, ctr=None, workdir=None,
              as_path=None):
    """Start ``binary`` on ``config_path`` in a sandbox; see the module docstring.

    binary: the node's containerd.  config_path: the candidate (anywhere; its
    imports are read by the daemon).  run_command(cmd) -> (rc, out, err): for
    ``--version`` and ``config dump`` (default: subprocess).  timeout: seconds
    for the whole test.  required: plugin ids that must be ``ok`` (default:
    the CRI plugins of the binary's major version).  ctr: path of ctr, None
    to look beside the binary and in PATH, False to read the plugin list from
    containerd's log instead.  workdir: parent of the private folder
    (default: the system's temporary folder; never under /run).  as_path:
    test config_path as if it were already at as_path (an existing file,
    typically the real config beside the engine's candidate): the daemon is
    told --config as_path and reads the candidate there, so an import of
    as_path itself (nvidia-ctk 1.17.8 writes one) reads the candidate too,
    as it will after the rename.
    """
    t0 = time.time()
    run_command = run_command or process.run_command
    res = LoadResult(config_path, binary)
    try:
        tools, version = _tools_and_version(res, binary, config_path, run_command)
    except CannotRun as exc:
        return _cannot(res, t0, str(exc))
    need = list(required) if required else required_for(version)
    if ctr is None:
        ctr = process.sibling_ctr(binary)
    res.method = 'ctr' if ctr else 'log'
    base = _private_base(workdir)
    sandbox.remove_stale(base)
    tmp = tempfile.mkdtemp(prefix=sandbox.PREFIX, dir=base)
    os.chmod(tmp, 0o700)
    lock_fd = sandbox.lock_folder(tmp)
    try:
        return _run_in(tmp, res, t0, binary, config_path, run_command, timeout, need, ctr, as_path, tools, version)
    except CannotRun as exc:
        return _cannot(res, t0, str(exc))
    except Refused as exc:
        res.status = STATUS_FAILED
        res.errors.append(str(exc))
        res.seconds = round(time.time() - t0, 3)
        return res
    finally:
        sandbox.remove_folder(tmp)
        os.close(lock_fd)
