# -*- coding: utf-8 -*-
"""Judge the modules' answers on a generated tree with the real containerd's `config dump`.

For each edit (a new runtime, `runc` as the default, a runtime a drop-in
already defines, a CDI or snapshot setting, an import):

- reported changed or ok: the edit must be in effect in the binary's dump of
  the whole tree, the tree must still load, no runtime that was in effect may
  be lost or altered (other than the one edited), the default runtime may
  change only when asked; `ok` must write nothing;
- the undo (state=absent, same owner) must give back every file's bytes;
- a refusal must change no file, name a file of the tree, and be true: when
  the same edit written straight into config.toml is in effect with nothing
  lost (checked with the dump), the refusal is wrong.

Every edit runs on a fresh copy of the tree with its own state folder.
"""

import json
import os
import random
import shutil
import subprocess
import tempfile

import tomlkit

try:
    import tomllib
except ImportError:  # Python < 3.11: tomlkit reads the dump too
    tomllib = None

from helpers.modules import ModuleRunner

OWNER = 'differential'
NEW_RUNTIME = 'ngdiff'
NEW_BINARY = '/usr/local/bin/ngdiff-runtime'
EXTRA_DROPIN = 'extra/50-ngdiff.toml'
EXTRA_PROXY = 'ngdiff'

# (config version of a file) -> key paths, as a file of that version writes them
CRI_OF_FILE = {2: ('plugins', 'io.containerd.grpc.v1.cri'), 3: ('plugins', 'io.containerd.cri.v1.runtime')}
SETTING_IN_FILE = {
    ('cri.enable_cdi', 2): ('plugins', 'io.containerd.grpc.v1.cri', 'enable_cdi'),
    ('cri.enable_cdi', 3): ('plugins', 'io.containerd.cri.v1.runtime', 'enable_cdi'),
    ('images.disable_snapshot_annotations', 2): ('plugins', 'io.containerd.grpc.v1.cri', 'containerd',
                                                 'disable_snapshot_annotations'),
    ('images.disable_snapshot_annotations', 3): ('plugins', 'io.containerd.cri.v1.images',
                                                 'disable_snapshot_annotations'),
}


def dump_version(ctd):
    """The config version a binary's dump is written in."""
    return 2 if ctd.startswith('1.') else 3


class Finding(object):
    def __init__(self, kind, op, detail):
        self.kind = kind
        self.op = op
        self.detail = detail

    def __str__(self):
        return '[%s] %s: %s' % (self.kind, self.op, self.detail)


class Dump(object):
    """A binary's `config dump` of a tree: rc, parsed data, the views the judge reads."""

    def __init__(self, binary, ctd, main):
        proc = subprocess.run([binary, '--config', main, 'config', 'dump'], capture_output=True, text=True,
                              timeout=60, check=False)
        self.rc = proc.returncode
        self.stderr = proc.stderr
        self.ctd = ctd
        self.data = None
        if self.rc == 0:
            self.data = tomllib.loads(proc.stdout) if tomllib else tomlkit.parse(proc.stdout).unwrap()

    def get(self, path):
        node = self.data
        for part in path:
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node

    def containerd(self):
        return self.get(CRI_OF_FILE[dump_version(self.ctd)] + ('containerd',)) or {}

    def runtimes(self):
        return self.containerd().get('runtimes') or {}

    def default(self):
        return self.containerd().get('default_runtime_name')

    def setting(self, key):
        return self.get(SETTING_IN_FILE[(key, dump_version(self.ctd))])

    def imports(self):
        return set(self.data.get('imports') or ())


class Runner(ModuleRunner):
    """conftest's ModuleRunner with the arguments as one dict: the result whether the module failed or not."""

    def __init__(self, tmpdir):
        ModuleRunner.__init__(self, tmpdir, state_dir=None)

    def __call__(self, module, args):  # pylint: disable=arguments-differ
        return ModuleRunner.__call__(self, module, expect_fail=None, **args)


def snapshot(root):
    """{absolute path: bytes} of every file under root but the modules' lock files."""
    files = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.endswith('.nodeguard.lock'):
                continue
            path = os.path.join(folder, name)
            with open(path, 'rb') as f:
                files[path] = f.read()
    return files


def changed_files(before, after):
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def set_in(doc, path, value):
    """Set a key in a tomlkit document, making the tables on the way."""
    node = doc
    for part in path[:-1]:
        if part not in node:
            node[part] = tomlkit.table()
        node = node[part]
    node[path[-1]] = value


# ------------------------------------------------------------------ the edits
class Edit(object):
    """One module call, its undo, what must be in the dump, and the same edit written into config.toml."""

    module = 'containerd_runtime'
    touches_default = False
    runtime = None  # the runtime this edit changes (others must stay as they were)

    def __init__(self, name):
        self.name = name

    def args(self, root):
        raise NotImplementedError

    def undo_args(self, root):
        raise NotImplementedError

    def in_effect(self, dump, root):
        """None when in effect, else what is missing."""
        raise NotImplementedError

    def write_directly(self, doc, version, root):
        """The edit made in config.toml's own tomlkit document (the refusal oracle)."""
        raise NotImplementedError

    def prepare(self, root, tree):
        """Files the edit needs that are not part of the tree."""


def runtime_missing(dump, name, runtime_type=None, runtime_path=None, options=None):
    table = dump.runtimes().get(name)
    if table is None:
        return 'runtime %s is not in the dump (runtimes there: %s)' % (name, sorted(dump.runtimes()))
    if runtime_type and table.get('runtime_type') != runtime_type:
        return 'runtime %s has runtime_type %r in the dump' % (name, table.get('runtime_type'))
    if runtime_path and table.get('runtime_path') != runtime_path:
        return 'runtime %s has runtime_path %r in the dump' % (name, table.get('runtime_path'))
    for key, value in (options or {}).items():
        got = (table.get('options') or {}).get(key)
        if got != value:
            return 'runtime %s has options.%s = %r in the dump, wanted %r' % (name, key, got, value)
    return None


class AddRuntime(Edit):
    """A new runtime, inheriting the default runtime's table as a role would."""

    def __init__(self):
        Edit.__init__(self, 'runtime add %s' % NEW_RUNTIME)
        self.runtime = NEW_RUNTIME

    def args(self, root):
        return dict(name=NEW_RUNTIME, options={'BinaryName': NEW_BINARY})

    def undo_args(self, root):
        return dict(name=NEW_RUNTIME, state='absent')

    def in_effect(self, dump, root):
        return runtime_missing(dump, NEW_RUNTIME, options={'BinaryName': NEW_BINARY})

    def write_directly(self, doc, version, root):
        table = tomlkit.table()
        table['runtime_type'] = 'io.containerd.runc.v2'
        table['options'] = {'BinaryName': NEW_BINARY}
        set_in(doc, CRI_OF_FILE[version] + ('containerd', 'runtimes', NEW_RUNTIME), table)


class RuncDefault(Edit):
    """`runc` as the default runtime (a repair does this)."""

    touches_default = True

    def __init__(self):
        Edit.__init__(self, 'runtime runc default=true')
        self.runtime = 'runc'

    def args(self, root):
        return dict(name='runc', default=True)

    def undo_args(self, root):
        return dict(name='runc', state='absent')

    def in_effect(self, dump, root):
        if dump.default() != 'runc':
            return 'default_runtime_name is %r in the dump' % dump.default()
        return runtime_missing(dump, 'runc')

    def write_directly(self, doc, version, root):
        cri = CRI_OF_FILE[version]
        set_in(doc, cri + ('containerd', 'default_runtime_name'), 'runc')
        runtimes = doc.get('plugins', {}).get(cri[1], {}).get('containerd', {}).get('runtimes', {})
        if 'runc' not in runtimes:
            table = tomlkit.table()
            table['runtime_type'] = 'io.containerd.runc.v2'
            set_in(doc, cri + ('containerd', 'runtimes', 'runc'), table)


class ExistingRuntime(Edit):
    """A runtime a drop-in already defines, asked for with the same keys."""

    def __init__(self, name, definition):
        Edit.__init__(self, 'runtime %s as its drop-in defines it' % name)
        self.runtime = name
        self.runtime_type, self.runtime_path, self.options = definition

    def args(self, root):
        args = dict(name=self.runtime, runtime_type=self.runtime_type, options=dict(self.options), inherit='none')
        if self.runtime_path:
            args['runtime_path'] = self.runtime_path
        return args

    def undo_args(self, root):
        return dict(name=self.runtime, state='absent')

    def in_effect(self, dump, root):
        return runtime_missing(dump, self.runtime, self.runtime_type, self.runtime_path, self.options)

    def write_directly(self, doc, version, root):
        table = tomlkit.table()
        table['runtime_type'] = self.runtime_type
        if self.runtime_path:
            table['runtime_path'] = self.runtime_path
        table['options'] = dict(self.options)
        set_in(doc, CRI_OF_FILE[version] + ('containerd', 'runtimes', self.runtime), table)


class Setting(Edit):
    module = 'containerd_setting'

    def __init__(self, key, value):
        Edit.__init__(self, 'setting %s=%s' % (key, json.dumps(value)))
        self.key = key
        self.value = value

    def args(self, root):
        return dict(key=self.key, value=self.value)

    def undo_args(self, root):
        return dict(key=self.key, state='absent')

    def in_effect(self, dump, root):
        got = dump.setting(self.key)
        return None if got == self.value else '%s is %r in the dump' % (self.key, got)

    def write_directly(self, doc, version, root):
        set_in(doc, SETTING_IN_FILE[(self.key, version)], self.value)


class AddImport(Edit):
    """A new drop-in (a proxy plugin) imported by config.toml, absolute or relative, first or last."""

    module = 'containerd_imports'

    def __init__(self, relative, position):
        Edit.__init__(self, 'imports add %s %s' % ('relative' if relative else 'absolute', position))
        self.relative = relative
        self.position = position

    def entry(self, root):
        return EXTRA_DROPIN if self.relative else os.path.join(root, EXTRA_DROPIN)

    def prepare(self, root, tree):
        path = os.path.join(root, EXTRA_DROPIN)
        os.makedirs(os.path.dirname(path))
        with open(path, 'w') as f:
            f.write('version = %d\n\n[proxy_plugins.%s]\n  type = "snapshot"\n  address = "/run/ngdiff.sock"\n'
                    % (tree.main_version, EXTRA_PROXY))

    def args(self, root):
        return dict(imports=[self.entry(root)], position=self.position)

    def undo_args(self, root):
        return dict(imports=[self.entry(root)], state='absent')

    def in_effect(self, dump, root):
        if EXTRA_PROXY not in (dump.data.get('proxy_plugins') or {}):
            return 'proxy_plugins.%s of %s is not in the dump' % (EXTRA_PROXY, EXTRA_DROPIN)
        return None

    def write_directly(self, doc, version, root):
        entries = list(doc.get('imports', []))
        entries.insert(0 if self.position == 'prepend' else len(entries), self.entry(root))
        doc['imports'] = entries


class BaselineCheck(Edit):
    """containerd_baseline snapshot and check (judged by Judge.judge_baseline)."""

    module = 'containerd_baseline'

    def __init__(self):
        Edit.__init__(self, 'baseline snapshot and check')


def edits_for(tree, rng):
    """The edits tried on a tree (rng: the tree's own random stream, so a seed replays them)."""
    edits = [AddRuntime(), RuncDefault(), Setting('cri.enable_cdi', True)]
    if tree.dropin_runtimes:
        name = rng.choice(sorted(tree.dropin_runtimes))
        edits.append(ExistingRuntime(name, tree.dropin_runtimes[name]))
    # one of the two others, to keep a tree's time down
    if rng.random() < 0.5:
        edits.append(Setting('images.disable_snapshot_annotations', rng.choice([True, False])))
    else:
        edits.append(AddImport(rng.random() < 0.5, rng.choice(['append', 'prepend'])))
    if rng.random() < 0.5:
        edits.append(BaselineCheck())
    return edits


# ------------------------------------------------------------------ the judge
class Judge(object):
    """Runs the edits of one tree against one binary; collects findings."""

    def __init__(self, tree, binary, workdir):
        self.tree = tree
        self.binary = binary
        self.workdir = workdir
        self.findings = []
        self.edits = 0
        self.refusals = 0
        self.runner = Runner(self._mkdir('ansible-tmp'))
        self.count = 0
        self.flaws = []  # what is already wrong with the tree (flaws_of)

    def _mkdir(self, name):
        path = os.path.join(self.workdir, name)
        os.makedirs(path)
        return path

    def find(self, kind, edit, detail):
        self.findings.append(Finding(kind, edit.name, detail))

    def fresh_copy(self, edit):
        self.count += 1
        root = self._mkdir('t%d' % self.count)
        self.tree.materialise(root)
        edit.prepare(root, self.tree)
        return root, os.path.join(root, 'config.toml'), os.path.join(self.workdir, 'state%d' % self.count)

    def call(self, edit, args, main, state):
        args = dict(args, path=main, owner=OWNER, containerd_bin=self.binary, state_dir=state)
        return self.runner(edit.module, args)

    def run(self, edits):
        for edit in edits:
            if isinstance(edit, BaselineCheck):
                self.judge_baseline(edit)
            else:
                self.judge(edit)
        return self.findings

    def judge_baseline(self, edit):
        """containerd_baseline on the tree as it is: its merged values must be the dump's, and a check
        right after the snapshot must find no drift, and fail only over what is already wrong."""
        root, main, state = self.fresh_copy(edit)
        before = Dump(self.binary, self.tree.ctd, main)
        self.flaws = flaws_of(self.tree, before, main)
        files = snapshot(root)
        args = dict(path=main, containerd_bin=self.binary, state_dir=state, load_test=False, allow_broken=True,
                    store=os.path.join(self.workdir, 'store%d' % self.count))
        snap = self.runner('containerd_baseline', dict(args, state='snapshot'))
        if snap.get('failed'):
            self.find('baseline-refused', edit, snap.get('msg'))
            return
        for record in snap.get('effective') or ():
            value, dumped = record.get('value'), record.get('dumped')
            if value is not None and dumped is not None and meaningful(value) != meaningful(dumped):
                self.find('baseline-model-not-dump', edit, '%s: its merged view says %r (from %s), the dump %r' % (
                    record.get('key'), meaningful(value), record.get('file'), meaningful(dumped)))
        self.edits += 1
        check = self.runner('containerd_baseline', dict(args, state='check', protect=PROTECT))
        if check.get('effective_drift') or check.get('protected_drift'):
            self.find('baseline-drift-unchanged', edit, 'drift reported on an unchanged tree: %r %r' % (
                check.get('effective_drift'), check.get('protected_drift')))
        if check.get('failed') and not self.flaws:
            self.find('baseline-check-false-alarm', edit, check.get('msg'))
        written = changed_files(files, snapshot(root))
        if written:
            self.find('baseline-wrote', edit, 'snapshot and check changed %s' % written)

    def judge(self, edit):
        root, main, state = self.fresh_copy(edit)
        before = Dump(self.binary, self.tree.ctd, main)
        if before.rc != 0:
            self.find('tree-unloadable', edit, 'the generated tree does not load: %s' % before.stderr[-600:])
            return
        self.flaws = flaws_of(self.tree, before, main)
        files = snapshot(root)
        result = self.call(edit, edit.args(root), main, state)
        written = changed_files(files, snapshot(root))
        if result.get('failed'):
            self.refusals += 1
            self.judge_refusal(edit, result, root, main, before, written)
            return
        self.edits += 1
        word = 'changed' if result.get('changed') else 'ok'
        if not result.get('changed') and written:
            self.find('ok-but-written', edit, 'reported ok but wrote %s' % written)
        after = Dump(self.binary, self.tree.ctd, main)
        if after.rc != 0:
            self.find('edit-broke-tree', edit, 'reported %s; the dump now fails: %s' % (word, after.stderr[-600:]))
        else:
            self.judge_effect(edit, word, before, after, root)
        undo = self.call(edit, edit.undo_args(root), main, state)
        if undo.get('failed'):
            if root in (undo.get('msg') or '') and any('CRI plugin would fail' in f for f in self.flaws):
                return  # the undo would bring back a tree whose CRI plugin fails: refusing it is right
            self.find('undo-refused', edit, undo.get('msg'))
        for path in changed_files(files, snapshot(root)):
            self.find('undo-not-bytes', edit, '%s differs from the original after the undo' % path)

    def judge_effect(self, edit, word, before, after, root):
        missing = edit.in_effect(after, root)
        if missing:
            self.find('not-in-effect', edit, 'reported %s, but %s' % (word, missing))
        lost = lost_runtimes(before, after, edit.runtime)
        if lost:
            self.find('runtime-lost', edit, 'reported %s; %s' % (word, lost))
        if not edit.touches_default and after.default() != before.default():
            self.find('default-changed', edit, 'default_runtime_name %r -> %r' % (before.default(), after.default()))

    def judge_refusal(self, edit, result, root, main, before, written):
        msg = result.get('msg') or ''
        if written:
            self.find('refusal-wrote', edit, 'refused but changed %s: %s' % (written, msg))
            return
        if root not in msg:
            self.find('refusal-names-no-file', edit, msg)
        if self.flaws:
            return  # a refusal over what is already wrong with the tree is a true one
        placed = self.direct_write_works(edit, root, main, before)
        if placed:
            self.find('false-refusal', edit, '%s -- yet written straight into config.toml it is in effect with '
                                             'nothing lost' % msg)

    def direct_write_works(self, edit, root, main, before):
        """Is the edit, written into config.toml by hand, in effect with no runtime lost? (the refusal oracle)"""
        with open(main) as f:
            text = f.read()
        try:
            doc = tomlkit.parse(text)
            edit.write_directly(doc, self.tree.main_version, root)
            if dump_version(self.tree.ctd) == 2:
                carry_runtimes(doc, self.tree.main_version, before)
            candidate = tomlkit.dumps(doc)
        except Exception:  # pylint: disable=broad-except
            return False  # tomlkit cannot write it: no verdict
        try:
            with open(main, 'w') as f:
                f.write(candidate)
            after = Dump(self.binary, self.tree.ctd, main)
        finally:
            with open(main, 'w') as f:
                f.write(text)
        if after.rc != 0 or edit.in_effect(after, root) or lost_runtimes(before, after, edit.runtime):
            return False
        return edit.touches_default or after.default() == before.default()


# values containerd fills in when a runtime table leaves the key out (1.7: an empty sandbox_mode is podsandbox)
IMPLIED = {'sandbox_mode': 'podsandbox', 'sandboxer': 'podsandbox'}
PROTECT = ['cri.runtimes.runc', 'cri.default_runtime_name']


def meaningful(value):
    """A runtime table without its zero and implied values: containerd 1.x dumps its built-in runc
    with every option at its zero value, and a table that leaves them out runs the same."""
    if isinstance(value, dict):
        kept = dict((k, meaningful(v)) for k, v in value.items())
        return dict((k, v) for k, v in kept.items() if v not in ('', 0, False, [], {}, None) and IMPLIED.get(k) != v)
    return value


def carry_runtimes(doc, version, before):
    """Write the runtimes in effect before that config.toml lacks into it, as a module inheriting
    them does: containerd 1.x drops its built-in runc once the file has a runtimes table."""
    cri = CRI_OF_FILE[version]
    own = doc.get('plugins', {}).get(cri[1], {}).get('containerd', {}).get('runtimes', {})
    for name, table in sorted(before.runtimes().items()):
        if name not in own:
            keys = ('runtime_type', 'runtime_path', 'options')
            kept = dict((k, v) for k, v in meaningful(table).items() if k in keys)
            set_in(doc, cri + ('containerd', 'runtimes', name), kept)


def lost_runtimes(before, after, edited):
    """What of the runtimes in effect before is gone or altered (the edited runtime may change)."""
    problems = []
    for name, table in sorted(before.runtimes().items()):
        if name not in after.runtimes():
            problems.append('runtime %s was in effect and is gone' % name)
        elif name != edited and meaningful(after.runtimes()[name]) != meaningful(table):
            problems.append('runtime %s changed: %r -> %r' % (name, meaningful(table),
                                                              meaningful(after.runtimes()[name])))
    return '; '.join(problems)


def leaves(table, prefix=()):
    for key, value in table.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, prefix + (key,))
        else:
            yield prefix + (key,), value


def flaws_of(tree, dump, main):
    """What is already wrong with the tree as containerd runs it: a default runtime with no table
    (the CRI plugin fails), or on 1.x keys of config.toml's CRI table that a drop-in's table replaced."""
    flaws = []
    default = dump.default() or 'runc'
    if default not in dump.runtimes():
        flaws.append('default runtime %s has no table: the CRI plugin would fail' % default)
    if dump_version(tree.ctd) == 2 and tree.main_version == 2:
        with open(main, 'rb') as f:
            own = (tomllib.load(f) if tomllib else tomlkit.parse(f.read().decode()).unwrap())
        cri = CRI_OF_FILE[2]
        for path, value in leaves(own.get('plugins', {}).get(cri[1], {})):
            if dump.get(cri + path) != value:
                flaws.append('%s of config.toml is not run (a drop-in replaced the CRI table)' % '.'.join(path))
    return flaws


def judge_tree(tree, binary):
    """(findings, edits answered, refusals, flaws of the tree as it was) of one tree on one binary."""
    rng = random.Random('nodeguard-differential-edits/%s/%s' % (tree.ctd, tree.seed))
    workdir = tempfile.mkdtemp(prefix='ng-diff-')
    try:
        judge = Judge(tree, binary, workdir)
        findings = judge.run(edits_for(tree, rng))
        return findings, judge.edits, judge.refusals, judge.flaws
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
