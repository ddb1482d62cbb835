"""Compatibility matrix of nodeguard.containerd (`make test-compat`).

1. Module tests with the managed node's interpreter set to the Pythons and
   tomlkit versions distributions ship (tests/conftest.py's ModuleRunner runs
   each module with NODEGUARD_NODE_PYTHON; ansible-core's module_utils are
   put on its path, as AnsiballZ does on a real node).
2. A node whose tomlkit is too old is refused up front with the version
   found, the minimum and the install command.
3. tests/compat/playbook.yml under each ansible-core controller (2.16 ...
   2.21; 2.20 and 2.21 on Python 3.12 and 3.13), one inventory host per node
   interpreter, so the controller's own module_utils and result handling meet
   every node. A warning in a controller's output fails its row.

Every venv is made here from the pyenv Pythons of this machine kind
(~/.pyenv/versions/3.X.Y) and cached under /var/cache/nodeguard/compat
(build/compat when /var/cache is not writable; COMPAT_CACHE moves it): a
second run, from any clone, only checks them. A Python or a venv that cannot
be had fails the run: nothing is skipped.

  COMPAT_MATRIX=lean (default) | wide    wide: every node row, whole module suite
  COMPAT_ONLY=modules|playbooks|refusal|packaging  one part only
  COMPAT_ROWS=rhel9,ubuntu2204           only these node rows
  COMPAT_CONTROLLERS=2.16.19,dev         only these controllers (dev: the .venv's ansible-core)
  COMPAT_CACHE=/path                     where the venvs are kept
  run.py --controller 2.21 [PKG==V ...]  make (or check) that controller's venv, print its bin and Python
  COMPAT_JOBS=2                          pytest-xdist workers per module run
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, 'build', 'collections'))
BUILD = os.path.join(REPO, 'build', 'compat')
# The venvs (node rows, controllers, ansible-builder) depend only on a pyenv
# Python and pinned packages: keep them beside the node image cache, so a
# fresh clone does not make them again (COMPAT_CACHE to move it).
VENVS = os.environ.get('COMPAT_CACHE') or (
    '/var/cache/nodeguard/compat' if os.access('/var/cache', os.W_OK) else BUILD)
PYENV = os.path.expanduser(os.environ.get('COMPAT_PYENV', '~/.pyenv/versions'))
VENV = os.environ.get('VENV') or os.path.join(REPO, '.venv')
RETRY = os.path.join(REPO, '.ci', 'retry.sh')

# name, Python, tomlkit, what it stands for, in the lean matrix
NODES = [
    ('rhel9', '3.9', '0.11.4', 'RHEL 9 platform Python + EPEL 9 python3-tomlkit', True),
    ('ubuntu2204', '3.10', '0.9.2', 'Ubuntu 22.04 python3 + python3-tomlkit', True),
    ('ubuntu2404', '3.12', '0.12.4', 'Ubuntu 24.04 python3 + python3-tomlkit', True),
    ('py313', '3.13', '0.15.2', 'Python 3.13 with the newest tomlkit tested', True),
    ('minimum', '3.9', '0.7.0', 'the minimum tomlkit (Debian 11 python3 + pip tomlkit)', True),
    ('debian12', '3.11', '0.11.7', 'Debian 12 python3 + python3-tomlkit', False),
    ('tk0110', '3.10', '0.11.0', 'tomlkit 0.11.0 (its unwrap() kept the quotes of strings)', False),
    ('rhel8-38', '3.8', '0.11.6', 'RHEL 8 AppStream python38 + pip tomlkit', False),
]
# The refusal: Debian 11's python3-tomlkit, older than the minimum.
TOO_OLD = ('debian11', '3.9', '0.6.0', 'Debian 11 python3 + python3-tomlkit (below the minimum)', True)
MINIMUM = '0.7.0'

# Module tests: the lean subset covers dotted keys and inline tables
# (runtime_layouts), imports, baselines and settings (the runtime module is
# driven by playbook.yml on every controller); wide runs the whole folder. test_containerd_preflight starts modules with the
# test's own Python, so it says nothing about the node interpreter.
# Of the baseline tests, the lean rows take the ones that go through every state (snapshot, check, repair,
# restore) on v2 and v3 and through the import walk; the rest of that file mostly times containerd's own load
# test, which is the same on every node Python (wide runs it all).
_BASELINE = 'tests/module/test_containerd_baseline.py::'
LEAN_TESTS = ['tests/module/test_runtime_layouts.py', 'tests/module/test_containerd_imports.py',
              'tests/module/test_containerd_setting.py',
              _BASELINE + 'test_toolkit_revert_check_repair_restore_v2',
              _BASELINE + 'test_toolkit_revert_v3_deep_merge',
              _BASELINE + 'test_restore_from_broken_imports_array_and_missing_dropin',
              _BASELINE + 'test_glob_import_snapshot_restores_deleted_dropin_v3',
              _BASELINE + 'test_snapshot_refuses_invalid_toml']
WIDE_TESTS = ['tests/module', '--deselect', 'tests/module/test_containerd_preflight.py',
              '--ignore', 'tests/module/test_containerd_preflight.py']

# ansible-core controllers for the playbook: the pinned dev one (.venv) and
# the other lines requires_ansible admits. 2.16 - 2.19 run on Python 3.11;
# 2.20 and 2.21 need a controller Python >= 3.12 (CONTROLLER_PYTHON).
CONTROLLERS = ['2.16.19', '2.17.14', '2.18.19', None, '2.20.10', '2.21.5']  # None: .venv (requirements-dev.txt)
CONTROLLER_PYTHON = {'2.20': '3.12', '2.21': '3.13'}
# Node rows each controller drives (ansible-core 2.16 does not list 3.13 as a target).
PLAYBOOK_NODES = ['rhel9', 'ubuntu2204', 'ubuntu2404', 'minimum']


def log(msg):
    print('compat: ' + msg, flush=True)


def pyenv_python(minor):
    found = sorted(glob.glob(os.path.join(PYENV, minor + '.*', 'bin', 'python' + minor)),
                   key=lambda p: [int(x) for x in p.split(os.sep)[-3].split('.') if x.isdigit()])
    if not found:
        raise SystemExit('compat: no Python %s under %s (this machine kind has 3.6 ... 3.13 there; set '
                         'COMPAT_PYENV to another folder of pyenv versions)' % (minor, PYENV))
    return found[-1]


def run(argv, **kw):
    return subprocess.run(argv, check=False, **kw)


def pip_install(python, what, packages):
    argv = [python, '-m', 'pip', 'install', '-q', '--disable-pip-version-check'] + packages
    if os.access(RETRY, os.X_OK):
        argv = [RETRY, '--what', what] + argv
    proc = run(argv)
    if proc.returncode:
        raise SystemExit('compat: %s failed (rc=%d)' % (what, proc.returncode))


def ensure_venv(folder, base_python, packages, what):
    """A venv at folder with packages, made once; the stamp says with what."""
    stamp = os.path.join(folder, '.compat-stamp')
    want = json.dumps([base_python, packages])
    if os.path.isfile(stamp) and open(stamp).read() == want and os.access(os.path.join(folder, 'bin', 'python'),
                                                                          os.X_OK):
        return os.path.join(folder, 'bin', 'python')
    shutil.rmtree(folder, ignore_errors=True)
    t0 = time.time()
    if run([base_python, '-m', 'venv', folder]).returncode:
        raise SystemExit('compat: %s -m venv %s failed' % (base_python, folder))
    pip_install(os.path.join(folder, 'bin', 'python'), what, packages)
    with open(stamp, 'w') as f:
        f.write(want)
    log('made %s (%s) in %.0f s' % (folder, ' '.join(packages), time.time() - t0))
    return os.path.join(folder, 'bin', 'python')


def node_env(row):
    name, minor, tk = row[0], row[1], row[2]
    return ensure_venv(os.path.join(VENVS, 'node-' + name), pyenv_python(minor), ['tomlkit==' + tk],
                       'pip install tomlkit==%s for Python %s (node row %s)' % (tk, minor, name))


def check_node(python, row):
    """The venv really is that Python with that tomlkit (what the tests then stand for)."""
    out = subprocess.run([python, '-c', 'import sys, tomlkit; print(sys.version.split()[0], tomlkit.__version__)'],
                         capture_output=True, text=True, check=False).stdout.split()
    if len(out) != 2 or not out[0].startswith(row[1] + '.') or out[1] != row[2]:
        raise SystemExit('compat: %s is %r, not Python %s with tomlkit %s' % (python, out, row[1], row[2]))


def ansible_lib():
    """A folder holding only the controller's `ansible` package: what AnsiballZ ships to a node."""
    import ansible  # the .venv's ansible-core, whose module_utils the tests' ModuleRunner uses
    lib = os.path.join(BUILD, 'ansible-lib')
    link = os.path.join(lib, 'ansible')
    target = os.path.dirname(ansible.__file__)
    if os.path.realpath(link) != os.path.realpath(target):
        os.makedirs(lib, exist_ok=True)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(target, link)
    return lib


def node_environ(python):
    env = dict(os.environ)
    env['NODEGUARD_NODE_PYTHON'] = python
    env['PYTHONPATH'] = ansible_lib() + os.pathsep + env.get('PYTHONPATH', '')
    env['PYTHONDONTWRITEBYTECODE'] = '1'
    env.pop('PYTHONPYCACHEPREFIX', None)   # the module suite's cache (Makefile) is for its own interpreter
    return env


def parse_check(python, row):
    """parse_toml on the node interpreter gives exactly what tomllib (3.11) gives, on every fixture and
    tests/compat/samples.toml (dotted keys, inline tables, arrays of tables, dates, every string kind)."""
    import tomllib
    files = sorted(glob.glob(os.path.join(REPO, 'tests', 'fixtures', '*.toml'))) + [
        os.path.join(REPO, 'tests', 'compat', 'samples.toml')]

    def default(value):
        return value.isoformat()

    want = json.loads(json.dumps(dict((f, tomllib.load(open(f, 'rb'))) for f in files), default=default))
    proc = subprocess.run([python, os.path.join(REPO, 'tests', 'compat', 'parse_check.py'),
                           os.path.join(REPO, 'build', 'collections')] + files,
                          capture_output=True, text=True, check=False, env=node_environ(python))
    try:
        got = json.loads(proc.stdout)
    except ValueError:
        got = None

    def imports(data):
        entries = data.get('imports') or []
        return [e for e in entries if isinstance(e, str)] if isinstance(entries, list) else []
    bad = [os.path.basename(f) for f in files if got is None or got.get(f) != want[f]]
    utils = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(REPO, 'plugins', 'module_utils', '_*.py')))
    if got is not None and got.get('module_utils') != utils:
        bad.append('module_utils that did not import: %s' % sorted(set(utils) - set(got.get('module_utils') or [])))
    bad += ['%s (engine import walk)' % os.path.basename(f) for f in files
            if got is None or got.get('imports:' + f) != imports(want[f])]
    if bad:
        print('parse check on %s: %s differ from tomllib\n%s' % (row[0], ', '.join(bad), proc.stderr[-3000:]))
    summary = '%d files as tomllib reads them (engine parse and import walk), %d module_utils imported' % (
        len(files), len(utils))
    return ('parse', row[0], '%s / tomlkit %s' % (row[1], row[2]), not bad, 0.0,
            summary if not bad else 'differ: ' + ', '.join(bad))


def module_tests(rows, wide):
    results = []
    jobs = os.environ.get('COMPAT_JOBS', '2')
    for row in rows:
        python = node_env(row)
        check_node(python, row)
        results.append(parse_check(python, row))
        tests = WIDE_TESTS if wide else LEAN_TESTS
        report = os.path.join(BUILD, 'junit-%s.json' % row[0])
        argv = [os.path.join(VENV, 'bin', 'pytest'), '-q', '-p', 'no:cacheprovider', '-o', 'addopts=',
                '-p', 'no:randomly', '-rfE', '-n', jobs] + tests
        log('module tests, node %s: Python %s, tomlkit %s (%s)' % (row[0], row[1], row[2], row[3]))
        t0 = time.time()
        proc = run(argv, cwd=REPO, env=node_environ(python), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                   text=True)
        took = time.time() - t0
        tail = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ''
        ok = proc.returncode == 0 and ' passed' in tail and 'skipped' not in tail
        if not ok:
            print(proc.stdout[-20000:])
        results.append(('modules', row[0], '%s / tomlkit %s' % (row[1], row[2]), ok, took, tail))
        with open(report, 'w') as f:
            json.dump(dict(row=row[:4], rc=proc.returncode, tail=tail, seconds=took), f)
    return results


def refusal():
    """A node whose tomlkit is older than the minimum: the module fails before reading, naming both."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import MIN_TOMLKIT
    if '.'.join(str(p) for p in MIN_TOMLKIT) != MINIMUM:
        raise SystemExit('compat: MIN_TOMLKIT in _core/config_model.py is %r, this matrix tests %s: change both'
                         % (MIN_TOMLKIT, MINIMUM))
    python = node_env(TOO_OLD)
    check_node(python, TOO_OLD)
    work = tempfile.mkdtemp(prefix='ng-compat-')
    try:
        path = os.path.join(work, 'config.toml')
        text = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
        with open(path, 'w') as f:
            f.write(text)
        args = os.path.join(work, 'args.json')
        with open(args, 'w') as f:
            json.dump({'ANSIBLE_MODULE_ARGS': dict(path=path, name='nvidia', owner='compat', state_dir=work + '/state',
                                                   options=dict(BinaryName='/usr/bin/nvidia-container-runtime'),
                                                   _ansible_tmpdir=work, _ansible_remote_tmp=work)}, f)
        env = node_environ(python)
        env['PYTHONPATH'] = os.path.join(REPO, 'build', 'collections') + os.pathsep + env['PYTHONPATH']
        t0 = time.time()
        proc = run([python, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.containerd_runtime', args],
                   env=env, capture_output=True, text=True)
        try:
            res = json.loads(proc.stdout)
        except ValueError:
            res = {}
        msg = res.get('msg', '')
        with open(path) as f:
            untouched = f.read() == text
        ok = bool(res.get('failed')) and 'tomlkit %s ' % TOO_OLD[2] in msg and '>= %s' % MINIMUM in msg \
            and 'pip install' in msg \
            and untouched and not os.path.exists(os.path.join(work, 'state'))
        if not ok:
            print('refusal run: rc=%s\nstdout: %s\nstderr: %s' % (proc.returncode, proc.stdout[-3000:],
                                                                  proc.stderr[-3000:]))
        else:
            log('refused as it should: ' + msg)
        return [('refusal', TOO_OLD[0], '%s / tomlkit %s' % (TOO_OLD[1], TOO_OLD[2]), ok, time.time() - t0,
                 msg[:100])]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def controller_base(version=None):
    # a pyenv Python, not the checkout's .venv: a cached venv must not point into a clone
    minor = CONTROLLER_PYTHON.get('.'.join((version or '').split('.')[:2]))
    if minor:
        return pyenv_python(minor)
    return pyenv_python('3.11') if glob.glob(os.path.join(PYENV, '3.11.*')) else sys.executable


def controller(version, extra=()):
    """The bin folder of a cached venv with ansible-core==version (and extra packages)."""
    if version is None:
        return os.path.join(VENV, 'bin')
    name = 'ansible-core-' + version + ''.join('+' + p.split('=')[0] for p in extra)
    python = ensure_venv(os.path.join(VENVS, name), controller_base(version), ['ansible-core==' + version] + list(extra),
                         'pip install ansible-core==%s %s (controller)' % (version, ' '.join(extra)))
    return os.path.dirname(python)


def playbooks(rows):
    results = []
    nodes = [r for r in rows if r[0] in PLAYBOOK_NODES]
    pythons = dict((r[0], node_env(r)) for r in nodes)
    pick = os.environ.get('COMPAT_CONTROLLERS')  # e.g. COMPAT_CONTROLLERS=2.16.19,dev
    for version in CONTROLLERS:
        if pick and (version or 'dev') not in pick.split(','):
            continue
        bindir = controller(version)
        vout = subprocess.run([os.path.join(bindir, 'ansible'), '--version'], capture_output=True, text=True,
                              check=False).stdout
        core = vout.split('core ')[1].split(']')[0] if 'core ' in vout else '?'
        work = tempfile.mkdtemp(prefix='ng-compat-pb-')
        try:
            inv = os.path.join(work, 'inventory.ini')
            with open(inv, 'w') as f:
                f.write('[compat_nodes]\n')
                for r in nodes:
                    f.write('%s ansible_connection=local ansible_python_interpreter=%s ng_dir=%s '
                            'ng_expect_python=%s ng_expect_tomlkit=%s\n'
                            % (r[0], pythons[r[0]], os.path.join(work, r[0]), _full_version(pythons[r[0]]), r[2]))
            cfg = os.path.join(work, 'ansible.cfg')
            with open(cfg, 'w') as f:
                f.write('[defaults]\ncollections_path = %s\nretry_files_enabled = False\nforks = %d\n'
                        'interpreter_python = auto_silent\n' % (os.path.join(REPO, 'build', 'collections'), len(nodes)))
            env = dict(os.environ, ANSIBLE_CONFIG=cfg, ANSIBLE_COLLECTIONS_PATH=os.path.join(REPO, 'build', 'collections'),
                       ANSIBLE_FORCE_COLOR='0', ANSIBLE_NOCOLOR='1', PATH=bindir + os.pathsep + os.environ['PATH'])
            log('playbook under ansible-core %s, nodes %s' % (core, ', '.join(r[0] for r in nodes)))
            t0 = time.time()
            play = os.path.join(REPO, 'tests', 'compat', 'playbook.yml')
            proc = run([os.path.join(bindir, 'ansible-playbook'), '-i', inv, play],
                       cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            took = time.time() - t0
            done = [r[0] for r in nodes if os.path.isfile(os.path.join(work, r[0], 'done.json'))]
            # a warning (a deprecation, "does not support Ansible version") fails the row: it is
            # what a user of that controller would see on every run
            warned = [ln.strip() for ln in proc.stdout.splitlines() if 'WARNING]' in ln]
            ok = proc.returncode == 0 and len(done) == len(nodes) and not warned
            if not ok:
                print(proc.stdout[-25000:])
            recap = [ln.strip() for ln in proc.stdout.splitlines() if ' : ok=' in ln]
            results.append(('playbook', 'ansible-core ' + core, 'nodes ' + ','.join(done), ok, took,
                            ('; '.join(warned) or '; '.join(recap))[:160]))
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return results


def _full_version(python):
    return subprocess.run([python, '-c', 'import sys; print(sys.version.split()[0])'], capture_output=True, text=True,
                          check=False).stdout.strip()


# What the Galaxy tarball must hold, and what must never be in it.
TARBALL_MUST = ['MANIFEST.json', 'FILES.json', 'LICENSE', 'README.md', 'meta/runtime.yml',
                'meta/execution-environment.yml', 'requirements.txt', 'bindep.txt', 'changelogs/changelog.yaml',
                'plugins/modules/containerd_runtime.py', 'roles/config_snapshot/tasks/main.yml',
                'playbooks/site.yml']
TARBALL_NEVER = ['.venv/', 'build/', '.ci/', '.config/', '.pytest_cache', '.hypothesis', '__pycache__', '.pyc',
                 'tests/output/', 'tests/mutation/', 'bench/', 'molecule/', 'Makefile', 'requirements-dev.txt',
                 'constraints-dev.txt',
                 '.tar.gz', '.git/']


def packaging():
    """ansible-galaxy collection build: the tarball's file list; ansible-builder introspect and create on it."""
    import tarfile
    t0 = time.time()
    work = tempfile.mkdtemp(prefix='ng-compat-pkg-')
    problems = []
    try:
        galaxy = os.path.join(VENV, 'bin', 'ansible-galaxy')
        proc = run([galaxy, 'collection', 'build', '--output-path', work, REPO], capture_output=True, text=True)
        tars = glob.glob(os.path.join(work, '*.tar.gz'))
        if proc.returncode or len(tars) != 1:
            return [('package', 'build', 'ansible-galaxy', False, time.time() - t0, (proc.stderr or proc.stdout)[-200:])]
        with tarfile.open(tars[0]) as tar:
            names = [m.name + ('/' if m.isdir() else '') for m in tar.getmembers()]
        problems += ['missing %s' % n for n in TARBALL_MUST if n not in names]
        problems += ['has %s' % n for n in names if any(bad in n for bad in TARBALL_NEVER)]
        coll = os.path.join(work, 'collections')
        proc = run([galaxy, 'collection', 'install', '--force', '-p', coll, tars[0]], capture_output=True, text=True)
        if proc.returncode:
            problems.append('install: ' + proc.stderr[-300:])
        builder = os.path.join(os.path.dirname(ensure_venv(os.path.join(VENVS, 'ansible-builder'), controller_base(),
                                                           ['ansible-builder==3.2.0'],
                                                           'pip install ansible-builder==3.2.0')), 'ansible-builder')
        proc = run([builder, 'introspect', '--sanitize', coll], capture_output=True, text=True)
        intro = proc.stdout
        if proc.returncode or 'tomlkit>=0.7.0' not in intro or 'python3' not in intro:
            problems.append('introspect rc=%s: %s' % (proc.returncode, (intro + proc.stderr)[-400:]))
        ee = os.path.join(work, 'execution-environment.yml')
        with open(ee, 'w') as f:
            f.write('---\nversion: 3\nimages:\n  base_image:\n    name: quay.io/ansible/awx-ee:latest\n'
                    'dependencies:\n  galaxy:\n    collections:\n      - name: %s\n        type: file\n'
                    '  python:\n    - tomlkit>=0.7.0\n' % tars[0])
        proc = run([builder, 'create', '-f', ee, '-c', os.path.join(work, 'context'), '--output-filename',
                    'Containerfile'], capture_output=True, text=True, cwd=work)
        if proc.returncode or not os.path.isfile(os.path.join(work, 'context', 'Containerfile')):
            problems.append('create rc=%s: %s' % (proc.returncode, (proc.stdout + proc.stderr)[-400:]))
        if problems:
            print('packaging: ' + '\n  '.join(problems))
        return [('package', 'tarball+ee', '%d files' % len(names), not problems, time.time() - t0,
                 '; '.join(problems)[:160] or 'build, file list, install, builder introspect + create')]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    wide = os.environ.get('COMPAT_MATRIX', 'lean') == 'wide'
    only = os.environ.get('COMPAT_ONLY', '')
    rows = [r for r in NODES if wide or r[4]]
    if os.environ.get('COMPAT_ROWS'):  # e.g. COMPAT_ROWS=rhel9,ubuntu2204
        rows = [r for r in NODES if r[0] in os.environ['COMPAT_ROWS'].split(',')]
    os.makedirs(BUILD, exist_ok=True)
    os.makedirs(VENVS, exist_ok=True)
    t0 = time.time()
    results = []
    if only in ('', 'packaging'):
        results += packaging()
    if only in ('', 'refusal'):
        results += refusal()
    if only in ('', 'modules'):
        results += module_tests(rows, wide)
    if only in ('', 'playbooks'):
        results += playbooks(rows)
    print('\ncompat matrix (%s):' % ('wide' if wide else 'lean'))
    for part, name, what, ok, took, tail in results:
        print('  %-8s %-20s %-24s %-4s %6.0f s  %s' % (part, name, what, 'ok' if ok else 'FAIL', took, tail))
    failed = [r for r in results if not r[3]]
    print('compat: %d passed, %d failed (%.0f s)' % (len(results) - len(failed), len(failed), time.time() - t0))
    return 1 if failed or not results else 0


def controller_cli(argv):
    """`run.py --controller 2.21 [PKG==V ...]`: make (or check) the cached venv of that controller line,
    with those packages besides, and print its bin folder and its Python's major.minor (make sanity, lint)."""
    line, extra = argv[0], argv[1:]
    found = [v for v in CONTROLLERS if v and (v == line or v.startswith(line + '.'))]
    if len(found) != 1:
        raise SystemExit('compat: no controller %r in CONTROLLERS %s' % (line, [v for v in CONTROLLERS if v]))
    bindir = controller(found[0], extra)
    minor = subprocess.run([os.path.join(bindir, 'python'), '-c', 'import sys; print("%d.%d" % sys.version_info[:2])'],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(bindir, minor)
    return 0


if __name__ == '__main__':
    if sys.argv[1:2] == ['--controller']:
        sys.exit(controller_cli(sys.argv[2:]))
    sys.exit(main())
