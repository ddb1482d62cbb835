# -*- coding: utf-8 -*-
"""Stateful property test of ownership: several owners and an operator, in any order.

A hypothesis RuleBasedStateMachine drives the real modules (containerd_setting,
containerd_runtime, containerd_imports, run in this process through the real
engine) on a real config file, version 2 (checked with containerd 1.6) or 3
(containerd 2.1).  Owners add, change and remove runtimes, settings and
imports; between their steps an operator edits the file by hand.

The model keeps, for every key, the stack of who wrote it (owners and the
operator) in order; an owner that leaves drops out of every stack; a runtime
table exists while the owner that created it is there, and goes with it,
whoever changed keys inside.  After every step:

- the file parses, and the real `containerd config dump` accepts it;
- every key's value is the value of the newest writer still on its stack
  (an owner's value unless another owner or the operator changed it later),
  or the original value when nobody is;
- each runtime exists exactly while its creator is there; the imports are
  those some owner still holds.

When every owner has left, the bytes are the original, or exactly the
operator's hand edits applied to the original.

Profiles: NG_HYPOTHESIS_PROFILE=fast (default, in `make test`: a few seconds)
or long (`NG_HYPOTHESIS_PROFILE=long .venv/bin/pytest tests/unit/plugins/module_utils/_core/test_ownership_machine.py`).
"""

import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import tomllib

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_1, CONTAINERD_2, fixture_text
from ansible_collections.nodeguard.containerd.plugins.modules import (
    containerd_imports,
    containerd_runtime,
    containerd_setting,
)

PROFILES = {
    'fast': dict(max_examples=15, stateful_step_count=8),
    'long': dict(max_examples=400, stateful_step_count=30),
}
PROFILE = os.environ.get('NG_HYPOTHESIS_PROFILE', 'fast')
if PROFILE not in PROFILES:
    raise ValueError('NG_HYPOTHESIS_PROFILE must be one of %s, got %r' % (', '.join(sorted(PROFILES)), PROFILE))

OWNERS = ('gpu', 'coco', 'ops')
FIXTURES = {'v2_kubeadm.toml': 2, 'v3_default.toml': 3}
CRI = {2: 'io.containerd.grpc.v1.cri', 3: 'io.containerd.cri.v1.runtime'}
IMAGES = {2: ('plugins', 'io.containerd.grpc.v1.cri', 'containerd'), 3: ('plugins', 'io.containerd.cri.v1.images')}
# setting -> (path per version, values an owner may want)
SETTINGS = {
    'images.snapshotter': (lambda v: IMAGES[v] + ('snapshotter',), ['nydus', 'native', 'zfs']),
    'images.disable_snapshot_annotations': (lambda v: IMAGES[v] + ('disable_snapshot_annotations',), [True, False]),
    'grpc.max_recv_message_size': (lambda v: ('grpc', 'max_recv_message_size'), [16777216, 33554432]),
}
RAW = ('grpc.max_recv_message_size',)
# lines the operator edits by hand: (setting it is, or None; regex of the line; values)
HAND = {
    'snapshotter': ('images.snapshotter', r'^(\s*snapshotter = ).*$', ['native', 'stargz']),
    'annotations': ('images.disable_snapshot_annotations', r'^(\s*disable_snapshot_annotations = ).*$',
                    [True, False]),
    'sandbox': (None, r'^(\s*sandbox(?:_image)? = ).*$', ['registry.k8s.io/pause:3.8', 'example.org/pause:1']),
}
RUNTIMES = ('nvidia', 'kata', 'runc')
DROPINS = ('nydus', 'extra')


def toml_raw(value):
    return json.dumps(value) if not isinstance(value, bool) else ('true' if value else 'false')


def get_in(data, path):
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


class Refused(Exception):
    pass


def call_module(module, params):
    """Run a module's main() in this process, as Ansible would run it; its JSON result."""
    out = io.StringIO()
    with patch_module_args(params), contextlib.redirect_stdout(out):
        try:
            module.main()
        except SystemExit:
            pass
    return json.loads(out.getvalue())


class OwnershipMachine(RuleBasedStateMachine):
    """Owners and an operator on one config file; see the module docstring."""

    @initialize(fixture=st.sampled_from(sorted(FIXTURES)))
    def start(self, fixture):
        self.version = FIXTURES[fixture]
        self.work = tempfile.mkdtemp(prefix='ng-machine-')
        etc = os.path.join(self.work, 'etc')
        os.makedirs(os.path.join(etc, 'conf.d'))
        self.path = os.path.join(etc, 'config.toml')
        self.original = fixture_text(fixture)
        with open(self.path, 'w') as f:
            f.write(self.original)
        self.dropins = {}
        for i, name in enumerate(DROPINS):
            p = os.path.join(etc, 'conf.d', name + '.toml')
            with open(p, 'w') as f:
                f.write('version = %d\n\n[proxy_plugins.%s]\n  type = "snapshot"\n  address = "/run/%s-%d.sock"\n'
                        % (self.version, name, name, i))
            self.dropins[name] = p
        self.state = os.path.join(self.work, 'state')
        self.stacks = {}       # key id -> [(writer, value)], oldest first
        self.creator = {}      # runtime -> owner
        self.touched = dict((o, set()) for o in OWNERS)
        self.imports = {}      # entry -> owners holding it
        self.hand = {}         # hand-edited line -> the operator's last value
        self.dumped = set()
        self.active = {}       # owner -> number of its last module run
        self.clock = 0
        self.binary = CONTAINERD_1 if self.version == 2 else CONTAINERD_2
        assert self.binary, 'containerd %s is needed (make deps)' % ('1.6' if self.version == 2 else '2.1')

    def teardown(self):
        if getattr(self, 'work', None) is None:
            return
        try:
            # uninstalls usually come in the reverse order of the installs: the owner active last leaves first
            for owner in sorted(OWNERS, key=lambda o: -self.active.get(o, 0)):
                self._leave(owner, sorted(self.touched[owner]))
            with open(self.path) as f:
                final = f.read()
            assert final == self._expected_final(), 'after every owner left:\n%s' % final
        finally:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None

    # ----------------------------------------------------------- plumbing
    def _module(self, module, **args):
        self.clock += 1
        if args.get('owner'):
            self.active[args['owner']] = self.clock
        params = dict(path=self.path, state_dir=self.state, validate='none', _ansible_tmpdir=self.work,
                      _ansible_remote_tmp=self.work, containerd_bin=self.binary)
        params.update(args)
        result = call_module(module, params)
        if result.get('failed'):
            raise Refused(result['msg'])
        return result

    def _setting_path(self, key):
        return SETTINGS[key][0](self.version)

    def _runtime_path(self, name):
        return ('plugins', CRI[self.version], 'containerd', 'runtimes', name)

    def _push(self, key_id, writer, value):
        stack = [e for e in self.stacks.get(key_id, []) if e[0] != writer or writer == 'operator']
        stack.append((writer, value))
        self.stacks[key_id] = stack

    def _data(self):
        with open(self.path, 'rb') as f:
            raw = f.read()
        return raw, tomllib.loads(raw.decode('utf-8'))

    def _expected_final(self):
        text = self.original
        for name, value in sorted(self.hand.items()):
            text = re.sub(HAND[name][1], lambda m: m.group(1) + toml_raw(value), text, count=1, flags=re.M)
        return text

    # -------------------------------------------------------------- rules
    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(sorted(SETTINGS)), data=st.data())
    def set_setting(self, owner, key, data):
        value = data.draw(st.sampled_from(SETTINGS[key][1]))
        key_id = ('setting', key)
        self._module(containerd_setting, key=key, value=value, owner=owner, raw=key in RAW)
        self._push(key_id, owner, value)
        self.touched[owner].add(('setting', key))

    @rule(owner=st.sampled_from(OWNERS), key=st.sampled_from(sorted(SETTINGS)))
    def remove_setting(self, owner, key):
        if ('setting', key) not in self.touched[owner]:
            return
        self._leave(owner, [('setting', key)])

    @rule(owner=st.sampled_from(OWNERS), name=st.sampled_from(RUNTIMES), data=st.data())
    def set_runtime(self, owner, name, data):
        """Create a runtime, or change keys of one (another owner's, or runc that nobody created)."""
        path = self._runtime_path(name)
        exists = self._current(path) is not None
        creating = not exists
        binary = data.draw(st.sampled_from(['/opt/%s/%s-a' % (owner, name), '/opt/%s/%s-b' % (owner, name)]))
        wanted = {('options', 'BinaryName'): binary}
        if data.draw(st.booleans()):
            wanted[('privileged_without_host_devices',)] = data.draw(st.booleans())
        args = dict(name=name, owner=owner, options={'BinaryName': binary},
                    settings=dict((k[0], v) for k, v in wanted.items() if len(k) == 1))
        if creating and name == 'kata':
            args.update(inherit='none', runtime_type='io.containerd.kata.v2')
        self._module(containerd_runtime, **args)
        if creating:
            self.creator[name] = owner
            base = {} if name == 'kata' else dict(self._runc_copy())
            for key in list(self.stacks):
                if key[:2] == ('rt', name):
                    del self.stacks[key]
            for key, value in base.items():
                self.stacks[('rt', name, key)] = [(owner, value)]
        for key, value in wanted.items():
            self._push(('rt', name, key), owner, value)
        self.touched[owner].add(('runtime', name))

    def _runc_copy(self):
        _raw, data = self._data()
        runc = get_in(data, self._runtime_path('runc')) or {}
        out = {}
        for k, v in runc.items():
            if k == 'options':
                for ok, ov in v.items():
                    out[('options', ok)] = ov
            elif not isinstance(v, dict):
                out[(k,)] = v
        return out

    @rule(owner=st.sampled_from(OWNERS), name=st.sampled_from(RUNTIMES))
    def remove_runtime(self, owner, name):
        if ('runtime', name) not in self.touched[owner]:
            return
        self._leave(owner, [('runtime', name)])

    @rule(owner=st.sampled_from(OWNERS), name=st.sampled_from(DROPINS), prepend=st.booleans())
    def add_import(self, owner, name, prepend):
        entry = self.dropins[name]
        self._module(containerd_imports, imports=[entry], owner=owner, position='prepend' if prepend else 'append')
        self.imports.setdefault(entry, set()).add(owner)
        self.touched[owner].add(('import', entry))

    @rule(owner=st.sampled_from(OWNERS), name=st.sampled_from(DROPINS))
    def remove_import(self, owner, name):
        entry = self.dropins[name]
        if ('import', entry) not in self.touched[owner]:
            return
        self._leave(owner, [('import', entry)])

    @rule(line=st.sampled_from(sorted(HAND)), data=st.data())
    def operator_edits_by_hand(self, line, data):
        setting, regex, values = HAND[line]
        value = data.draw(st.sampled_from(values))
        with open(self.path) as f:
            text = f.read()
        current = re.search(regex.replace('.*$', '(.*)$'), text, flags=re.M).group(2)
        if tomllib.loads('v = ' + current)['v'] == value:
            return  # writing what is there already (in other quotes, at most) changes no value: not an edit
        if setting:
            owners = [v for w, v in self.stacks.get(('setting', setting), []) if w != 'operator']
            if owners and owners[-1] == value:
                # back to the value the newest owner wrote: the file then cannot tell this hand edit from
                # that owner's own write (no tool could), so its undo restores what it overwrote. A limit
                # of undo by value, not a case to test: the operator's edit must differ from it.
                return
        new, n = re.subn(regex, lambda m: m.group(1) + toml_raw(value), text, count=1, flags=re.M)
        assert n == 1, (regex, text)
        with open(self.path, 'w') as f:
            f.write(new)
        self.hand[line] = value
        if setting:
            self._push(('setting', setting), 'operator', value)

    # two rules that aim at the interleavings that matter most
    def _owned_hand_lines(self):
        return [n for n in sorted(HAND) if HAND[n][0]
                and any(w != 'operator' for w, _v in self.stacks.get(('setting', HAND[n][0]), []))]

    @precondition(lambda self: bool(self._owned_hand_lines()))
    @rule(data=st.data())
    def operator_overrides_an_owner(self, data):
        self.operator_edits_by_hand(line=data.draw(st.sampled_from(self._owned_hand_lines())), data=data)

    @precondition(lambda self: bool(self.creator))
    @rule(owner=st.sampled_from(OWNERS), data=st.data())
    def owner_changes_another_owners_runtime(self, owner, data):
        names = [n for n, c in sorted(self.creator.items()) if c != owner]
        if names:
            self.set_runtime(owner=owner, name=data.draw(st.sampled_from(names)), data=data)

    @rule(owner=st.sampled_from(OWNERS), data=st.data())
    def owner_leaves(self, owner, data):
        order = data.draw(st.permutations(sorted(self.touched[owner])))
        self._leave(owner, order)

    def _leave(self, owner, resources):
        for kind, what in resources:
            if kind == 'setting':
                self._module(containerd_setting, key=what, owner=owner, state='absent', raw=what in RAW)
                self._drop(('setting', what), owner)
            elif kind == 'runtime':
                res = self._module(containerd_runtime, name=what, owner=owner, state='absent')
                if self.creator.get(what) == owner:
                    assert res['removed'], res
                    del self.creator[what]
                    for key in list(self.stacks):
                        if key[:2] == ('rt', what):
                            del self.stacks[key]
                    for other in OWNERS:
                        self.touched[other].discard(('runtime', what))
                else:
                    assert not res['removed'], res
                    for key in list(self.stacks):
                        if key[:2] == ('rt', what):
                            self._drop(key, owner)
            else:
                self._module(containerd_imports, imports=[what], owner=owner, state='absent')
                self.imports.get(what, set()).discard(owner)
            self.touched[owner].discard((kind, what))

    def _drop(self, key_id, owner):
        self.stacks[key_id] = [e for e in self.stacks.get(key_id, []) if e[0] != owner]

    def _current(self, path):
        return get_in(self._data()[1], path)

    # --------------------------------------------------------- invariants
    @invariant()
    def containerd_loads_it(self):
        if getattr(self, 'work', None) is None:
            return
        raw, _data = self._data()
        digest = hashlib.sha256(raw).hexdigest()
        if digest in self.dumped:
            return
        proc = subprocess.run([self.binary, '--config', self.path, 'config', 'dump'], capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 0, 'containerd refused:\n%s\n%s' % (raw.decode(), proc.stderr[-1500:])
        self.dumped.add(digest)

    @invariant()
    def newest_writer_wins(self):
        if getattr(self, 'work', None) is None:
            return
        raw, data = self._data()
        original = tomllib.loads(self.original)
        for key in SETTINGS:
            path = self._setting_path(key)
            stack = self.stacks.get(('setting', key), [])
            want = stack[-1][1] if stack else get_in(original, path)
            got = get_in(data, path)
            assert got == want and type(got) is type(want), (key, got, want, stack, raw.decode())
        for name in RUNTIMES:
            table = get_in(data, self._runtime_path(name))
            if name != 'runc':
                assert (table is not None) == (name in self.creator), (name, self.creator, raw.decode())
            for key_id, stack in self.stacks.items():
                if key_id[:2] != ('rt', name):
                    continue
                got = get_in(table, key_id[2])
                want = stack[-1][1] if stack else get_in(get_in(original, self._runtime_path(name)), key_id[2])
                assert got == want, (key_id, got, want, stack, raw.decode())
        held = set(e for e, owners in self.imports.items() if owners)
        assert set(data.get('imports') or []) == held, (data.get('imports'), held)


OwnershipMachine.TestCase.settings = settings(
    deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    **PROFILES[PROFILE])
test_ownership_machine = OwnershipMachine.TestCase


# ------------------------------------------ the bugs it found, one test each
class _File(object):
    """config.toml (v2_kubeadm.toml, judged by containerd 1.6) and a state folder for the tests below."""

    def __init__(self, tmp_path):
        self.path = tmp_path / 'config.toml'
        self.original = fixture_text('v2_kubeadm.toml')
        self.path.write_text(self.original)
        self.state = str(tmp_path / 'state')

    def run(self, module, **args):
        params = dict(path=str(self.path), state_dir=self.state, validate='none', containerd_bin=CONTAINERD_1)
        params.update(args)
        result = call_module(module, params)
        if result.get('failed'):
            raise Refused(result['msg'])   # not an AssertionError: a refusal is not a broken invariant
        return result

    def snapshotter(self, owner, value=None):
        """owner sets the CRI snapshotter to value, or leaves it (value None)."""
        args = dict(value=value) if value is not None else dict(state='absent')
        return self.run(containerd_setting, key='images.snapshotter', owner=owner, **args)

    def text(self):
        return self.path.read_text()

    def by_hand(self, old, new):
        """The operator's edit; returns the file as it left it."""
        self.path.write_text(self.text().replace(old, new))
        return self.text()


@pytest.fixture
def cfg(tmp_path):
    return _File(tmp_path)


def test_reapply_after_a_hand_edit_keeps_the_operators_value(cfg):
    cfg.snapshotter('gpu', 'nydus')
    hand = cfg.by_hand('snapshotter = "nydus"', 'snapshotter = "native"')
    cfg.snapshotter('gpu', 'nydus')  # a re-run
    cfg.snapshotter('gpu')
    # the operator's edit is what gpu overwrote on its re-run, so that is what its undo gives back
    assert cfg.text() == hand


def test_creator_reasserts_a_value_another_owner_set_in_its_table(cfg):
    cfg.run(containerd_runtime, name='kata', owner='coco', inherit='none',
            runtime_type='io.containerd.kata.v2', settings={'privileged_without_host_devices': False})
    cfg.run(containerd_runtime, name='kata', owner='ops', settings={'privileged_without_host_devices': True})
    # coco now wants True as well (its role changed); the file already says so
    cfg.run(containerd_runtime, name='kata', owner='coco', settings={'privileged_without_host_devices': True})
    cfg.run(containerd_runtime, name='kata', owner='ops', state='absent')
    data = tomllib.loads(cfg.text())
    assert data['plugins'][CRI[2]]['containerd']['runtimes']['kata']['privileged_without_host_devices'] is True


def test_a_hand_edit_between_two_owners_is_what_the_second_gives_back(cfg):
    """gpu sets a key, the operator changes it by hand, coco sets it: when gpu leaves first, coco's undo gives
    back the operator's value (what coco overwrote), not gpu's prior."""
    cfg.snapshotter('gpu', 'nydus')
    hand = cfg.by_hand('snapshotter = "nydus"', 'snapshotter = "stargz"')
    cfg.snapshotter('coco', 'zfs')
    cfg.snapshotter('gpu')
    assert 'snapshotter = "zfs"' in cfg.text()
    cfg.snapshotter('coco')
    assert cfg.text() == hand


def test_a_hand_edit_over_the_newest_owner_outlives_the_older_ones(cfg):
    """gpu sets native, coco sets nydus, the operator sets native by hand: when coco leaves the operator's value
    stays, and gpu's undo (whose own value is native too) must not bring back gpu's prior over it."""
    cfg.snapshotter('gpu', 'native')
    cfg.snapshotter('coco', 'nydus')
    hand = cfg.by_hand('snapshotter = "nydus"', 'snapshotter = "native"')
    cfg.snapshotter('coco')
    cfg.snapshotter('gpu')
    assert cfg.text() == hand


def test_an_owner_reasserting_its_value_under_another_moves_on_top(cfg):
    """coco sets zfs, ops sets native, coco now wants native too (already so): when ops leaves, native stays
    (coco is the newest to want it); when coco leaves, the original comes back (long profile)."""
    cfg.snapshotter('coco', 'zfs')
    cfg.snapshotter('ops', 'native')
    cfg.snapshotter('coco', 'native')
    cfg.snapshotter('ops')
    assert 'snapshotter = "native"' in cfg.text()
    cfg.snapshotter('coco')
    assert cfg.text() == cfg.original


def test_an_owner_asking_for_the_value_the_operator_put_there_only_holds_it(cfg):
    """gpu sets false, the operator sets true by hand, gpu now wants true (already so), the operator sets false:
    gpu's undo must leave the operator's false (long profile)."""
    key = 'images.disable_snapshot_annotations'
    line = 'disable_snapshot_annotations = %s'
    cfg.run(containerd_setting, key=key, value=False, owner='gpu')
    cfg.by_hand(line % 'false', line % 'true')
    cfg.run(containerd_setting, key=key, value=True, owner='gpu')
    hand = cfg.by_hand(line % 'true', line % 'false')
    cfg.run(containerd_setting, key=key, owner='gpu', state='absent')
    assert cfg.text() == hand
