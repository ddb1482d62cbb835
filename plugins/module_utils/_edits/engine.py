# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One transaction for every write of a containerd config: edits, restores, repairs.

Four steps (``Transaction``): open (lock, read, parse, ledger) -> build (the
candidate: an edit callback, a baseline's files; verified to say what was
meant) -> check (built-in checks, the ``validate`` command with %s and the
node's containerd on a temporary copy) -> commit (ledger, compare with what
open read: a foreign writer that does not take our lock sends it back to
open, up to MAX_ATTEMPTS -> atomic rename -> flush the folder).  Nothing is
written unless every step passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import errno
import itertools
import os
import stat
import time
import traceback

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    atomic_write,
    clean_stale_temps,
    commit_temp,
    LockTimeout,
    lock_path_for,
    read_bytes,
    remove_quietly,
    sha256_bytes,
    write_temp,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    HAS_TOMLKIT,
    TOMLKIT_IMPORT_ERROR,
    UTF8_BOM,
    ConfigDocument,
    ConfigError,
    bom_refused_message,
    lock_or_fail,
    split_bom,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    EditElsewhere,
    changed_leaves,
    confirm_with_dump,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.runtime_guard import refuse_lost_runtimes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import (
    Ledger,
    LedgerError,
    file_identity,
    ledger_key,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlLayoutError, dotted_path, plain
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    check_tree,
    check_warnings,
    containerd_version,
    copies_for_containerd,
    load_tree,
    refuse_generated,
    refuse_unreadable_version,
    require_placeholder,
    run_validate,
    validation_failed,
    VALIDATE_WORDS,
)

MAX_ATTEMPTS = 3
# containerd's default config is ~10 KB and 5,000 runtimes with options are
# ~1.5 MB; a bigger file is refused before it is parsed (a 50 MB one would
# take minutes and GBs), so every run ends in bounded time and memory.
MAX_CONFIG_BYTES = 4 * 1024 * 1024

# Where containerd is installed: distribution packages (/usr/bin), kubespray
# and the upstream tarball (/usr/local/bin, which RHEL's sudo secure_path
# leaves out), Flatcar (/opt/bin).
CONTAINERD_DIRS = ['/usr/bin', '/usr/local/bin', '/opt/bin', '/usr/sbin', '/usr/local/sbin']

# Options every config-editing module takes (documented in the
# nodeguard.containerd.common doc fragment).
COMMON_ARGUMENT_SPEC = dict(
    path=dict(type='path', default='/etc/containerd/config.toml', aliases=['dest']),
    owner=dict(type='str', default='nodeguard'),
    backup=dict(type='bool', default=False),
    validate=dict(type='str', default='auto'),
    edit_in=dict(type='str', default='auto'),
    containerd_bin=dict(type='path'),
    containerd_version=dict(type='str'),
    lock_timeout=dict(type='float', default=30.0),
    state_dir=dict(type='path', default='/var/lib/nodeguard'),
    follow=dict(type='bool', default=False),
    create=dict(type='bool', default=False),
    mode=dict(type='raw'),
    file_owner=dict(type='str'),
    group=dict(type='str'),
    seuser=dict(type='str'),
    serole=dict(type='str'),
    setype=dict(type='str'),
    selevel=dict(type='str'),
    attributes=dict(type='str', aliases=['attr']),
    # dotted TOML paths of values masked in every output (beside containerd's registry credentials)
    secret_keys=dict(type='list', elements='str', default=[], no_log=False),
)


def require_tomlkit(module):
    if not HAS_TOMLKIT:
        from ansible.module_utils.basic import missing_required_lib
        module.fail_json(msg=missing_required_lib('tomlkit'), exception=str(TOMLKIT_IMPORT_ERROR))


def _parse_version_option(given):
    parts = str(given).strip().lstrip('v').split('.')
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ConfigError('containerd_version must look like 1.7 or 2.1, got %r' % given, key='containerd_version')


class Context(object):
    """What an edit callback may ask about the node; computed once."""

    def __init__(self, module, path, allowed_missing=()):
        self.module = module
        self.path = path
        self.owner = module.params.get('owner')
        self.edit_in = module.params.get('edit_in') or 'auto'
        self.warnings = []
        self.written = []  # files renamed into place by this run: a later failure names them
        self.tree_files = None  # [(path, data)] of the tree when the edit runs on a drop-in
        self.view_before = None  # the merged view of the tree as read, before the edit (set by the open step)
        # drop-ins whose undo a check-mode uninstall previewed (the next step previews the next file)
        self.previewed = set()
        # check mode: how a batch that spans files was judged whole (its writes, not made, are not judged again)
        self.judged_whole = None
        self._bin = False
        self._version = False
        self._always_missing = frozenset(allowed_missing)
        self._missing_ok = set(self._always_missing)
        # every secret this run reads or is given goes to module.no_log_values: masked in all its output
        try:
            secrets.bind(module)
        except secrets.SecretKeyError as exc:
            module.fail_json(msg=str(exc))
        note_tree_secrets(path)

    @property
    def containerd_bin(self):
        """The node's containerd: the containerd_bin option, else PATH and the usual install folders."""
        if self._bin is False:
            given = self.module.params.get('containerd_bin')
            if given:
                if not (os.path.isfile(given) and os.access(given, os.X_OK)):
                    raise ConfigError('containerd_bin: %s is not an executable file. Nothing was written. Fix: give '
                                      'the path of the node\'s containerd binary, or leave containerd_bin unset to '
                                      'search PATH and %s.' % (given, ', '.join(CONTAINERD_DIRS)), key='containerd_bin')
                self._bin = given
            else:
                # PATH first (get_bin_path would search opt_dirs before PATH)
                self._bin = self.module.get_bin_path('containerd') or next(
                    (os.path.join(d, 'containerd') for d in CONTAINERD_DIRS
                     if os.access(os.path.join(d, 'containerd'), os.X_OK)), None)
        return self._bin

    def run_command(self, cmd):
        return self.module.run_command(cmd, environ_update={'LC_ALL': 'C'})

    @property
    def containerd_version(self):
        """(major, minor) of the node's containerd.

        The binary is the truth; the containerd_version option stands in only
        where there is no binary, and a contradiction is an error.
        """
        if self._version is False:
            given = self.module.params.get('containerd_version')
            wanted = _parse_version_option(given) if given else None
            found = containerd_version(self.run_command, self.containerd_bin) if self.containerd_bin else None
            if wanted and found and wanted != found:
                raise ConfigError('containerd_version is %s, but the node\'s containerd (%s) is %d.%d. Nothing was '
                                  'written. Fix: remove containerd_version (it only stands in where there is no '
                                  'containerd binary), or point containerd_bin at the binary that runs.'
                                  % (given, self.containerd_bin, found[0], found[1]), key='containerd_version')
            self._version = found or wanted
        return self._version

    def warn(self, msg):
        self.warnings.append(msg)

    def allow_missing_import(self, entry):
        """The edit knows this imports entry names a missing file (it is pruning it, or
        require_exists: false adds it): the built-in check lets that entry pass."""
        self._missing_ok.add(entry)

    @property
    def missing_imports_allowed(self):
        return frozenset(self._missing_ok)

    def _begin_edit(self):
        # each run of the edit says again what it allows
        self._missing_ok = set(self._always_missing)


def note_tree_secrets(path):
    """The secrets of config.toml and its drop-ins as they are now, before anything can quote them."""
    try:
        if not path or os.path.getsize(path) > MAX_CONFIG_BYTES:
            return
        files = load_effective(path, ConfigDocument(path, _decode(path, read_bytes(path) or b'')).data, None).files
    except Exception:  # an unreadable tree: the module's own steps name the problem
        return
    for _file, data in files:
        secrets.note_file(_file, data=data)  # each secret as the file spells it too


def target_path(module, path):
    """The file to write: refuse to write through a link unless follow is set."""
    if os.path.islink(path):
        target = os.path.realpath(path)
        if not module.params.get('follow'):
            raise ConfigError('%s is a symbolic link to %s. nodeguard does not write through links unless '
                              'follow: true (it then replaces %s atomically in its own folder and leaves '
                              'the link as it is). Nothing was written.' % (path, target, target),
                              key='path')
        return target
    return path


def _default_config(ctx, path):
    if not ctx.containerd_bin:
        raise ConfigError('%s does not exist and create: true needs the node\'s containerd binary to write '
                          'its default config ("containerd config default"), but none was found in PATH or %s. '
                          'Fix: install containerd first, or set containerd_bin.' % (path, ', '.join(CONTAINERD_DIRS)),
                          key='path')
    rc, out, err = ctx.run_command([ctx.containerd_bin, 'config', 'default'])
    if rc != 0 or not out.strip():
        raise ConfigError('"containerd config default" failed (rc=%s): %s' % (rc, err.strip()), key='path')
    return out


def _read_settled(path, wait=1.0):
    """The file's bytes; an empty file is read again for up to `wait` seconds.

    A writer that does not take our lock (nvidia-ctk, a shell redirect)
    truncates the file before it writes it: an empty read is most often that
    instant, not the file's real content.
    """
    data = read_bytes(path)
    deadline = time.monotonic() + wait
    while data is not None and not data.strip() and time.monotonic() < deadline:
        time.sleep(0.05)
        data = read_bytes(path)
    return data


def _decode(path, raw):
    try:
        return raw.decode('utf-8')
    except UnicodeDecodeError as exc:
        raise ConfigError('%s is not UTF-8 text (byte %d): it is not a containerd config. Nothing was '
                          'written. Fix: put back a known-good copy with '
                          'nodeguard.containerd.containerd_baseline (state: restore).' % (path, exc.start),
                          key=None)


def stat_owner(module, params, base_mode=None):
    """uid/gid/mode wanted for the file, from the file options.

    A symbolic mode (u+x) needs a mode to apply to: base_mode, the mode the
    caller is about to write (a restore's recorded one); without it the mode
    is left to set_fs_attributes after the rename.
    """
    uid = gid = mode = None
    if params.get('file_owner') is not None:
        uid = _lookup_uid(module, params['file_owner'])
    if params.get('group') is not None:
        gid = _lookup_gid(module, params['group'])
    if params.get('mode') is not None:
        raw = params['mode']
        if isinstance(raw, int):
            mode = raw
        elif isinstance(raw, str) and raw.isdigit():
            mode = int(raw, 8)
        elif base_mode is not None:
            # the same rule set_fs_attributes applies, so it finds nothing left to change
            try:
                mode = module._symbolic_mode_to_octal(os.stat_result((stat.S_IFREG | base_mode,) + (0,) * 9), raw)
            except ValueError as exc:
                raise ConfigError('mode: %s. Nothing was written. Fix: an octal mode (0644) or a symbolic one '
                                  '(u=rw,g=r,o=r).' % exc, key='mode')
    return uid, gid, mode


def _lookup_uid(module, name):
    import pwd
    try:
        return int(name)
    except ValueError:
        try:
            return pwd.getpwnam(name).pw_uid
        except KeyError:
            module.fail_json(msg='file_owner: no such user %r' % name)


def _lookup_gid(module, name):
    import grp
    try:
        return int(name)
    except ValueError:
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            module.fail_json(msg='group: no such group %r' % name)


def file_args(module, path):
    """File attributes wanted, as ansible.builtin.file takes them.

    ``owner`` names the ledger owner in this collection, so the Unix owner
    comes from ``file_owner``.
    """
    params = dict(module.params)
    params['owner'] = params.get('file_owner')
    return module.load_file_common_arguments(params, path=path)


class EditedFile(object):
    """One file of the config tree as read for an edit: bytes, document, ledger."""

    def __init__(self, path, original, text, bom, doc, ledger, created=False, write_path=None):
        self.path = path  # as the tree names it (the candidate's checks match files by this name)
        # the file replaced on commit: a drop-in that is a link is written in its target's folder (follow: true)
        self.write_path = write_path or path
        self.original = original
        self.text = text
        self.bom = bom
        self.doc = doc
        self.ledger = ledger
        self.created = created
        self.data_before = copy.deepcopy(doc.data)
        self.lock = None

    @property
    def new_bytes(self):
        return (UTF8_BOM if self.bom else '').encode('utf-8') + self.doc.text.encode('utf-8')

    @property
    def file_changed(self):
        return self.created or self.new_bytes != self.original


def _read_config(module, ctx, path, main_version=None):
    """Read one file of the tree (main when main_version is None) and its ledger, refusing what cannot be edited."""
    params = module.params
    is_main = main_version is None
    original = _read_settled(path)
    if original is not None and len(original) > MAX_CONFIG_BYTES:
        raise ConfigError('%s is %.1f MB; nodeguard edits configs of up to %d MB (containerd\'s default '
                          'config is about 10 KB). Nothing was written. Fix: check what filled the file; '
                          'put back a known-good copy with nodeguard.containerd.containerd_baseline '
                          '(state: restore).' % (path, len(original) / 1048576.0, MAX_CONFIG_BYTES // 1048576),
                          key='path')
    text = None if original is None else _decode(path, original)
    text, bom = split_bom(text) if text is not None else (None, False)
    create = params.get('create') and is_main
    if text is not None and not text.strip() and not create:
        raise ConfigError('%s is empty: containerd would start with built-in defaults only, without this '
                          'node\'s settings. Nothing was written. Fix: put back a known-good copy with '
                          'nodeguard.containerd.containerd_baseline (state: restore), or set create: true '
                          'to start from the node\'s "containerd config default".' % path, key='path')
    created = False
    if original is None or (create and not text.strip()):
        if not create:
            raise ConfigError('%s does not exist. Nothing was written. Fix: set create: true to start '
                              'from the node\'s "containerd config default", or restore it with '
                              'nodeguard.containerd.containerd_baseline (state: restore).' % path, key='path')
        text = _default_config(ctx, path)
        created = True
    refuse_generated(path, text)
    doc = ConfigDocument(path, text, default_version=main_version)
    secrets.note_text(doc.original_text, doc.data)
    if is_main:
        refuse_unreadable_version(path, doc.version, ctx.containerd_version)
    if bom:
        refused = bom_refused_message(path, ctx.containerd_version, doc.version)
        if refused:
            raise ConfigError(refused + ' Nothing was written.', key='path')
    # a file that is a link (config.toml too): refused unless follow; the tree keeps the name containerd is given
    write_path = target_path(module, path)
    ledger = Ledger.load(params['state_dir'], write_path)
    note = ledger.recover(sha256_bytes(original or b''), file_identity(path))
    if note:
        ctx.warn(note)
    return EditedFile(path, original, text, bom, doc, ledger, created, write_path=write_path)


def _apply(edit, target, ctx):
    """Run the module's edit on one file; (values, changed leaves)."""
    ctx._begin_edit()
    values = edit(target.doc, target.ledger, ctx) or {}
    changes = changed_leaves(target.data_before, target.doc.data) if target.doc.changed else []
    return values, changes


def _shadow_error(main_path, effects, edit_in):
    """A true message for edits containerd would not run, with the fixes that work."""
    lines = []
    homes = sorted(set(e.shadowed_by for e in effects if e.shadowed_by))
    for eff in effects:
        lines.append('%s = %r in %s has no effect: %s' % (dotted_path(eff.key), eff.value, eff.file, eff.why))
    fixes = []
    if edit_in == 'config' and homes:
        fixes.append('edit_in: auto writes the change where containerd reads it (%s)' % ', '.join(homes))
    if homes:
        fixes.append('%schange or remove that drop-in (%s) and run again' % ('or ' if fixes else '', ', '.join(homes)))
    else:
        fixes.append('check that the key exists in this containerd version')
    return ConfigError('refusing to write %s: %s. Nothing was written. Fix: %s.'
                       % (main_path, '; '.join(lines), '; '.join(fixes)), key=dotted_path(effects[0].key),
                       effects=[e.as_dict() for e in effects])


def _choose_target(module, ctx, edit, main, view_before):
    """Which file of the tree the edit goes to, and its result: (target, values, changes).

    The edit runs on config.toml first.  What it changed must be in effect
    in the merged view; when a drop-in shadows it and edit_in is auto, the
    edit runs again on that drop-in, where containerd reads it.  An
    uninstall whose records live in a drop-in's ledger runs there.
    """
    edit_in = ctx.edit_in
    if edit_in not in ('auto', 'config'):
        wanted = os.path.abspath(edit_in)
        if wanted in (main.path, main.write_path):
            return (main,) + _apply(edit, main, ctx)
        if wanted not in view_before.imported():
            raise ConfigError('edit_in: %s is not a file %s imports (its imports: %s). Nothing was written. Fix: '
                              'name one of those files, or edit_in: auto.'
                              % (wanted, main.path, ', '.join(view_before.imported()) or 'none'), key='edit_in')
        target = _read_config(module, ctx, wanted, main_version=main.doc.version)
        ctx.tree_files = view_before.files
        return (target,) + _apply(edit, target, ctx)
    if module.params.get('state') == 'absent':
        # an uninstall undoes drop-ins first (the later files, which decide
        # keys like the default runtime), one validated write each, then
        # config.toml: every state in between is one containerd loads
        recorded = None
        for path in reversed(view_before.imported()):
            if path in ctx.previewed:
                continue  # check mode: its undo was previewed in an earlier step, as if written
            if Ledger.load(module.params['state_dir'], ledger_key(path)).select(owner=ctx.owner):
                target = _read_config(module, ctx, path, main_version=main.doc.version)
                ctx.tree_files = view_before.files
                values_d, changes_d = _apply(edit, target, ctx)
                if changes_d:
                    return target, values_d, changes_d
                recorded = recorded or (target, values_d, changes_d)
        values, changes = _apply(edit, main, ctx)
        # nothing left to undo: report the drop-in that holds the owner's records, as install did
        return (main, values, changes) if changes or recorded is None else recorded
    try:
        values, changes = _apply(edit, main, ctx)
    except EditElsewhere as exc:
        if edit_in == 'config':
            raise ConfigError(exc.reason + ' Nothing was written. Fix: edit_in: auto (or edit_in: %s) writes the '
                              'change there.' % exc.path, key='edit_in')
        _refuse_split(edit)
        return _retarget(module, ctx, edit, main, exc.path)
    if not changes and not main.doc.wanted:
        return main, values, changes
    view = load_effective(main.path, main.doc.data, ctx.containerd_version) if changes else view_before
    effects = [e for e in effects_of(view, main.path, changes) if e.value is not ABSENT]
    # config.toml may already say what the edit wants while a later file
    # decides the key otherwise: no byte changes, and still not in effect
    effects += _held_not_in_effect(view, main, changes)
    # a later file that sets the same key decides it, whatever config.toml says:
    # the change belongs there (an equal value there makes this edit redundant)
    elsewhere = [e for e in effects if e.shadowed_by]
    if not elsewhere:
        if effects and not changes:  # held in config.toml, and not in effect (the build judges changes)
            raise _shadow_error(main.path, effects, edit_in)
        return main, values, changes
    homes = set(e.shadowed_by for e in elsewhere)
    lost = [e for e in elsewhere if not e.in_effect]
    if edit_in != 'config' and len(homes) > 1:
        _refuse_split(edit)  # a batch whose parts different drop-ins decide: each part goes to its own
    if edit_in == 'config' or len(homes) != 1:
        # what is in effect already (the drop-ins say the same) is no refusal, however many drop-ins decide it
        if lost:
            raise _shadow_error(main.path, lost, edit_in)
        return main, values, changes
    _refuse_split(edit)
    return _retarget(module, ctx, edit, main, homes.pop())


def _held_not_in_effect(view, target, changes):
    """The effects of what target's file already says the edit wants (no byte change) that view does not run."""
    changed_paths = set(change[0] for change in changes)
    unchanged = [(path, value) for path, value in target.doc.wanted if path not in changed_paths]
    return [e for e in effects_of(view, target.path, unchanged) if not e.in_effect]


class SplitEdit(Exception):
    """A batch edit (one with ``parts``) whose parts would not all go to config.toml.

    A single edit may move to the drop-in that decides it; a batch cannot
    move whole without moving parts that belong in config.toml, so
    run_transaction runs its parts one by one instead: the same files and
    records as separate calls.
    """


class GroupEdit(object):
    """The parts of a batch that go to one file, as one edit of that file (in the batch's order).

    Its values join the parts' (their lists one after the other), as the
    batch's ``combine`` reads the steps of its parts.
    """

    parts = None

    def __init__(self, members):
        self.members = members

    def __call__(self, doc, ledger, ctx):
        out = {}
        for part in self.members:
            for key, value in (part(doc, ledger, ctx) or {}).items():
                joined = isinstance(value, list) and isinstance(out.get(key), list)
                out[key] = out[key] + value if joined else value
        return out


class _NoPlan(Exception):
    """A part that cannot be placed on the tree as read: the parts run one by one, as before."""


def _split_plan(module, ctx, parts, allow_plugin_override):
    """[(file, parts)] of a batch that spans files, in an order whose every state loads, judged whole first.

    Each part goes where a call of its own would (``_choose_target`` on the
    tree as read); the parts of one file are one edit of it.  Before any
    write, the files' candidates together are judged as containerd merges
    them (the built-in checks, then ``config dump``): a set refused as a
    whole writes nothing.
    """
    txn = EditTransaction(module, ctx, None, allow_plugin_override)
    try:
        txn.open()
        homes = []
        for part in parts:
            ctx.tree_files = None  # each part as a call of its own (a drop-in's edit sets it)
            try:
                main = _read_config(module, ctx, txn.main.path)
                homes.append(_choose_target(module, ctx, part, main, txn.view_before)[0].path)
            except (ConfigError, EditElsewhere, SplitEdit):
                raise _NoPlan()
        groups, index = [], {}
        for home, part in zip(homes, parts):
            if home not in index:
                index[home] = len(groups)
                groups.append((home, []))
            groups[index[home]][1].append(part)
        files, allowed = _candidates_of(module, ctx, txn, groups)
        order = _loadable_order(ctx, txn.main, groups, files, allowed, allow_plugin_override)
        _judge_whole(module, ctx, txn, files, allowed, allow_plugin_override)
        return order
    finally:
        txn.drop_temps()
        for lk in reversed(txn.locks):
            lk.release()
        ctx.tree_files = None
        ctx.warnings = []


def _candidates_of(module, ctx, txn, groups):
    """{file: EditedFile with its group applied} and the imports entries the edits allow to be missing."""
    main = _read_config(module, ctx, txn.main.path)
    files, allowed = {}, set()
    for home, members in groups:
        edited = main if home == main.path else _read_config(module, ctx, home, main_version=main.doc.version)
        ctx.tree_files = None if edited is main else txn.view_before.files
        _apply(GroupEdit(members), edited, ctx)
        allowed |= ctx.missing_imports_allowed
        files[home] = edited
    files.setdefault(main.path, main)
    return files, allowed


def _tree_refusals(ctx, main, files, allowed, allow_plugin_override):
    """The built-in checks of the tree with these candidate files in place (main: its data as read if absent)."""
    edited = files.get(main.path)
    overrides = dict((p, f.doc.data) for p, f in files.items() if p != main.path)
    return check_tree(main.path, edited.doc.data if edited is not None else main.data_before, ctx.containerd_version,
                      ignore_missing=allowed, allow_plugin_override=allow_plugin_override, overrides=overrides)


def _loadable_order(ctx, main, groups, files, allowed, allow_plugin_override):
    """The groups in the first order (the batch's own first) after whose every write the tree loads."""
    orders = itertools.permutations(groups) if len(groups) <= 4 else [groups]
    for order in orders:
        written = {}
        for home, _members in order[:-1]:
            written[home] = files[home]
            if _tree_refusals(ctx, main, written, allowed, allow_plugin_override):
                break
        else:
            return list(order)
    raise ConfigError('refusing to write %s: the change goes to %s, and no order of writing them keeps a config '
                      'containerd loads after each write. Nothing was written. Fix: make the change in separate '
                      'calls, each one a config that loads.' % (main.path, ', '.join(g[0] for g in groups)), key=None)


def _judge_whole(module, ctx, txn, files, allowed, allow_plugin_override):
    """Every file's candidate together: the built-in checks, then the node's config dump (written nowhere)."""
    main = files[txn.main.path]
    errors = _tree_refusals(ctx, main, files, allowed, allow_plugin_override)
    shown = ', '.join(sorted(p for p, f in files.items() if f.file_changed))
    if errors:
        raise ConfigError('refusing to write %s: the new config would not load. %s Nothing was written.'
                          % (shown, ' '.join(errors)), key=None, check_errors=errors)
    overrides = dict((p, f.doc.data) for p, f in files.items() if p != main.path)
    view = load_effective(main.path, main.doc.data, ctx.containerd_version, overrides=overrides)
    if module.check_mode:
        problems = load_tree(main.path, main.doc.data, ctx.containerd_version, overrides=overrides)[1]
        if any(p.entry in allowed for p in problems):
            return  # a file the same call writes first is not there in check mode: the built-in checks judged it
    tmps = dict((p, txn.temp(f.write_path, f.new_bytes)) for p, f in files.items() if p != main.path and f.file_changed)
    texts = dict((p, f.doc.text) for p, f in files.items() if p == main.path or f.file_changed)
    candidate = copies_for_containerd(view.files, texts, tmps, lambda path, text: txn.temp(path, text.encode('utf-8')),
                                      ctx.containerd_version) or txn.temp(main.path, main.new_bytes)
    checked = check_with_containerd(ctx, Checked(), candidate, 'none' if module.params.get('validate') == 'none'
                                    else 'auto', shown='the candidates of %s' % shown)
    if checked.problems:
        raise ConfigError('refusing to write %s: %s. Nothing was written.' % (shown, checked.problems[0]), key=None)
    if module.check_mode:
        ctx.judged_whole = checked.how


def _refuse_split(edit):
    if len(getattr(edit, 'parts', None) or ()) > 1:
        raise SplitEdit()


def _retarget(module, ctx, edit, main, path):
    main.doc = ConfigDocument(main.path, main.text)  # drop what the first try did to config.toml
    main.ledger = Ledger.load(module.params['state_dir'], main.write_path)
    target = _read_config(module, ctx, path, main_version=main.doc.version)
    ctx.tree_files = load_effective(main.path, main.doc.data, ctx.containerd_version).files
    try:
        values, changes = _apply(edit, target, ctx)
    except EditElsewhere as exc:
        fix = ''
        if exc.path != path:  # the runtime's table and the key that moved the edit live in two files
            fix = (' Fix: make the change in two calls: the runtime\'s settings alone (they go to %s), then '
                   'default: true alone (it goes to %s).' % (exc.path, path))
        raise ConfigError(str(exc) + ' Nothing was written.' + fix, key='edit_in')
    return target, values, changes


def _view_of_candidate(ctx, main, target):
    if target is main:
        return load_effective(main.path, main.doc.data, ctx.containerd_version)
    return load_effective(main.path, main.data_before, ctx.containerd_version,
                          overrides={target.path: target.doc.data})


def _candidate_main(main, view, target, tmp):
    """config.toml's text with its imports spelled out, the target drop-in replaced by its candidate."""
    entries = [tmp if p == target.path else p for p in view.imported()]
    doc = ConfigDocument(main.path, main.text)
    doc.toml.set_value(('imports',), entries)
    return doc.text.encode('utf-8')


# ------------------------------------------------------------------ the check step, shared
NO_BINARY = 'no containerd binary in PATH or %s' % ', '.join(CONTAINERD_DIRS)


class Checked(object):
    """What the check step found about a candidate.

    problems: why it is refused (empty: accepted), all from one stage
    (``stage``: 'built-in', 'validate' or 'load'); checked: what judged it;
    notes: what could not judge it; how: the engine's one-line ``validated``;
    dump / dump_text: the node's ``config dump`` of it; load: the load test's
    summary (None when it did not run); load_result: the test itself.
    """

    def __init__(self):
        self.problems = []
        self.stage = None
        self.checked = []
        self.notes = []
        self.how = None
        self.dump = None
        self.dump_text = None
        self.load = None
        self.load_result = None

    def refuse(self, stage, problems):
        self.stage = stage
        self.problems.extend(problems)
        return self

    def as_dict(self):
        return dict(checked=list(self.checked), notes=list(self.notes), load_test=self.load)


def check_builtin(ctx, checked, main_path, main_data, overrides=None, allow_plugin_override=False, real=None):
    """Check step, part 1: nodeguard's own model of what containerd refuses (_validate.check_tree)."""
    real = real or (lambda s: s)
    errors = check_tree(main_path, main_data, ctx.containerd_version, ignore_missing=ctx.missing_imports_allowed,
                        allow_plugin_override=allow_plugin_override, overrides=overrides)
    checked.checked.append('built-in checks')
    if errors:
        checked.refuse('built-in', [real(e) for e in errors])
    return checked


def check_with_containerd(ctx, checked, candidate, validate, load_test=None, as_path=None, real=None,
                          dump_must_load=False, shown=None):
    """Check step, part 2: the validate command (%s) and the node's containerd on the candidate file.

    load_test: None (only validate: load starts containerd, and then must),
    True (start it; a test that cannot run is a note), False (the caller's
    load_test: false; said in the notes).  dump_must_load: a failing
    ``config dump`` refuses (a restore); else it only confirms nothing.
    validate: none asks containerd nothing but the ``config dump`` the edit
    confirms its effects with (none at all with dump_must_load).  as_path:
    the path the load test runs the candidate at; shown: the candidate's
    name in messages; real: turns a mirror's paths into the node's.
    """
    real = real or (lambda s: s)
    binary = ctx.containerd_bin
    if validate == 'none' and dump_must_load:
        checked.notes.append('validate: none: containerd itself was not asked (no config dump, no load test)')
        return checked
    dump_mode = 'auto' if validate == 'load' else validate
    ran = run_validate(ctx.run_command, dump_mode, binary, candidate)
    if ran is not None:
        cmd, rc, out, err = ran
        if rc != 0:
            return checked.refuse('validate', [validation_failed(cmd, rc, out, err, candidate, real)])
        if dump_mode != 'auto':
            checked.checked.append('validate command')
    if not binary:
        if validate == 'load':
            return checked.refuse('validate', ['validate: load starts the node\'s containerd on the candidate, but '
                                               'no containerd binary was found in PATH or %s'
                                               % ', '.join(CONTAINERD_DIRS)])
        checked.how = 'not validated by containerd: %s' % NO_BINARY
        checked.notes.append('%s: judged by nodeguard\'s own model of containerd only (set containerd_bin)'
                             % NO_BINARY)
        return checked
    out = ran[2] if ran is not None and dump_mode == 'auto' else None
    if out is None:
        rc, out, err = ctx.run_command([binary, '--config', candidate, 'config', 'dump'])
        if rc != 0:
            if dump_must_load:
                return checked.refuse('validate', ['containerd %s cannot load %s: "containerd config dump" failed '
                                                   '(rc=%s): %s' % (version_text(ctx.containerd_version),
                                                                    shown or real(candidate), rc,
                                                                    _tail(out, err, real))])
            checked.how = 'config dump failed (rc=%s): %s' % (rc, (err or '').strip()[-300:])
            out = None
    if out is not None:
        from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
        try:
            checked.dump = parse_toml(out)
            checked.dump_text = real(out)
            checked.checked.append('config dump')
            checked.how = 'config dump'
        except Exception as exc:  # a dump we cannot read confirms nothing
            checked.how = 'config dump output could not be read (%s)' % exc
            checked.notes.append('the config dump could not be read (%s)' % exc)
    if validate == 'load':
        load_test = 'required'
    if load_test is False and validate != 'none':
        checked.notes.append('load_test: false: containerd was not started on the tree')
    if not load_test or validate == 'none':
        return checked
    if checked.problems:
        checked.notes.append('load test not run: the tree is refused already')
        return checked
    from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import STATUS_CANNOT_RUN, load_test as start
    res = start(binary, candidate, run_command=ctx.run_command, as_path=as_path)
    checked.load_result = res
    checked.load = dict(status=res.status, ok=bool(res.ok), seconds=res.seconds, required=res.required,
                        errors=[real(e) for e in res.errors], skipped=list(res.skipped or []),
                        containerd_version=res.containerd_version)
    if res.ok:
        checked.checked.append('load test')
    elif res.status == STATUS_CANNOT_RUN and load_test != 'required':
        # the test itself could not be made (not root, no unshare...): it judges nothing
        checked.notes.append('load test could not run: %s' % real(res.message()))
    else:
        msg = res.message()
        checked.refuse('load', [real(msg.replace(candidate, shown) if shown else msg)])
    return checked


def _tail(out, err, real):
    lines = [real(line) for line in (err or out or '').strip().splitlines() if line.strip()]
    return ' | '.join(lines[-3:]) or 'no output'


# ------------------------------------------------------------------ the four steps
LOCK_FIX = ('Nothing was written. Fix: run as a user who may write to %s (become: true); if the lock file '
            'is not a regular file, remove it.')


class Transaction(object):
    """One write of the config tree in four steps; run() is the same for every kind of write.

    open    lock the file (once per run), read it, parse it, load its ledger
    build   make the candidate (the module's edit; a baseline's files)
    check   the built-in checks, the validate command (%s) and the node's
            containerd on the candidate (check_builtin, check_with_containerd)
    commit  compare the files with what open read (a writer that ignores our
            lock: all four steps again on its content, up to MAX_ATTEMPTS),
            then the ledger, the atomic renames and the folder flushes
            (commit_files)

    Nothing is written unless every step passed; check mode stops after
    check, before commit, when there is something to write (the same
    refusals as the run; temporary files only, removed at the end), and
    after build when there is not (check_first: after check always, whose
    candidate then is a temporary copy of the tree outside the node's
    folders).
    """

    what = 'edit'
    check_first = False
    checks_in_check_mode = True  # check mode runs the check step where the run would write

    def __init__(self, module, ctx):
        self.module = module
        self.ctx = ctx
        self.path = ctx.path
        self.locks = []
        self.temps = []
        self.moved = None
        self.result = dict(changed=False)

    # the steps (a kind of write fills them in)
    def open(self):
        raise NotImplementedError

    def build(self):
        raise NotImplementedError

    def needs_write(self):
        raise NotImplementedError

    def check(self):
        raise NotImplementedError

    def commit(self):
        """True when written; False when a file changed since open (nothing renamed)."""
        raise NotImplementedError

    def preview(self):
        """The result when nothing is written (no change, or check mode)."""
        return self.result

    # shared pieces of the steps
    def lock(self, path):
        """open: the file's lock, once per run, then the temporary files a killed run left beside it."""
        if any(lk.lock_path == lock_path_for(path) for lk in self.locks):
            return
        self.locks.append(lock_or_fail(path, self.module.params['lock_timeout'], create=not self.module.check_mode,
                                       fix=LOCK_FIX % os.path.dirname(path)))
        clean_stale_temps(path)

    def temp(self, path, data, mode=None, uid=None, gid=None):
        """A flushed temporary file beside path (removed at the end unless commit renamed it)."""
        try:
            tmp = write_temp(path, data, mode=mode, uid=uid, gid=gid)
        except (IOError, OSError) as exc:
            raise ConfigError('cannot write a temporary file beside %s (%s). Nothing was written; the file '
                              'is as it was. Fix: free space on that filesystem or make %s writable.'
                              % (path, exc.strerror, os.path.dirname(path)))
        self.temps.append(tmp)
        return tmp

    def commit_files(self, compare, renames, write_ledger, ledger_path):
        """commit, in this order: the ledger, the compare, each rename and its folder flush.

        compare: [(path, bytes open read, None when absent)]; renames: [(tmp,
        path)], drop-ins before config.toml.  The compare comes as late as
        possible, after every slow step: a writer without our lock
        (nvidia-ctk) can still slip in before the rename, but not behind the
        validation, the backup or the ledger write.  A moved file puts the
        ledger back and returns False.
        """
        ledger_before = read_bytes(ledger_path)
        write_ledger()
        moved = [p for p, original in compare if read_bytes(p) != original]
        if moved:
            if ledger_before is None:
                remove_quietly(ledger_path)
            else:
                atomic_write(ledger_path, ledger_before, mode=0o600)
            self.moved = moved[0]
            return False
        for tmp, path in renames:
            commit_temp(tmp, path)
            self.temps.remove(tmp)
            self.ctx.written.append(path)
        return True

    def drop_temps(self):
        for tmp in self.temps:
            remove_quietly(tmp)
        self.temps = []

    def run(self):
        """open -> build -> check -> commit; the module's result for this write."""
        try:
            result = self._attempts()
            self.drop_temps()
            return result
        except Exception:
            # a failure leaves no temporary file behind (a kill does: the next run's open removes it)
            self.drop_temps()
            raise
        finally:
            for lk in reversed(self.locks):
                lk.release()
            self.locks = []

    def _attempts(self):
        require_placeholder(self.module.params.get('validate'))
        for _attempt in range(MAX_ATTEMPTS):
            self.result = dict(changed=False)
            self.open()
            self.build()
            if self.check_first:
                self.check()
            if not self.needs_write():
                return self.preview()
            if self.module.check_mode and not self.checks_in_check_mode:
                return self.preview()
            if not self.check_first:
                # check mode too: a preview says changed only where the run itself would write
                self.check()
            if self.module.check_mode:
                return self.preview()
            if self.commit():
                return self.result
            # another program rewrote a file while we worked: start over
            # from its content rather than overwrite its change
            self.drop_temps()
            self.ctx.warn('%s changed while nodeguard was editing it; the %s was applied again on the new '
                          'content' % (self.moved, self.what))
        raise ConfigError('%s was changed by another program %d times while nodeguard was editing it (a '
                          'writer that does not take %s, e.g. nvidia-ctk or kata-deploy). Nothing was '
                          'written. Fix: let that program finish, then run again.'
                          % (self.path, MAX_ATTEMPTS, os.path.basename(lock_path_for(self.path))), key=None)


class EditTransaction(Transaction):
    """An edit callback's change to one file of the tree (config.toml or the drop-in that decides it)."""

    def __init__(self, module, ctx, edit, allow_plugin_override=False, load_test=None, checks_in_check_mode=True):
        super(EditTransaction, self).__init__(module, ctx)
        self.checks_in_check_mode = checks_in_check_mode
        self.edit = edit
        self.allow_plugin_override = allow_plugin_override
        self.load_test = load_test
        self.backup_file = None
        self.opened = False

    def open(self):
        """Lock config.toml, read and parse it, load its ledger (recovering a crashed run's)."""
        module, params = self.module, self.module.params
        given = os.path.abspath(params['path'])
        if not self.opened:
            # the file written is a link's target (follow: true); containerd is given the link, so the tree is
            # read, judged and validated from there (a relative import is relative to the link's folder)
            self.path = path = target_path(module, given)
            folder = os.path.dirname(path)
            self.ctx.path = path
            if not os.path.isdir(folder):
                if not params.get('create'):
                    raise ConfigError('folder %s does not exist (no containerd here?). Fix: install containerd, '
                                      'or set create: true.' % folder, key='path')
                if not module.check_mode:
                    os.makedirs(folder, 0o755)
            self.lock(path)
            if given != path:
                clean_stale_temps(given)  # a killed run's copy beside the link (the check step's candidate)
            self.opened = True
        self.main = _read_config(module, self.ctx, given)
        self.view_before = load_effective(given, self.main.doc.data, self.ctx.containerd_version)
        self.ctx.view_before = self.view_before  # the edit callbacks ask it what the other files define
        for _path, data in self.view_before.files:
            secrets.note_file(_path, data=data)  # the drop-ins too: a diff or a message may quote them

    def build(self):
        """Run the edit where containerd reads it; verify the text says what it meant; its effects and diff."""
        module, ctx, main = self.module, self.ctx, self.main
        target, values, changes = _choose_target(module, ctx, self.edit, main, self.view_before)
        if target is not main:
            self.lock(target.write_path)
        self.target = target
        result = self.result
        result.update(values)
        result['config_version'] = main.doc.version
        result['plugin'] = main.doc.layout.cri_plugin
        result['file'] = target.write_path if target is main else target.path  # config.toml: the file written
        doc = target.doc
        if doc.changed:
            doc.verify()
        _note_secrets(ctx, result, target)
        self.view = _view_of_candidate(ctx, main, target)
        self.effects = effects_of(self.view, target.path, changes)
        if target is not main:
            # a drop-in that already says what the edit wants is only ok where containerd runs it
            idle = _held_not_in_effect(self.view, target, changes)
            if idle:
                raise _shadow_error(target.path, idle, ctx.edit_in)
        if module._diff and target.file_changed:
            result['diff'] = dict(before='' if target.original is None else target.text, after=doc.text,
                                  before_header='%s (%s)' % (target.path, 'absent' if target.original is None
                                                             else 'before'),
                                  after_header='%s (after)' % target.path)
        if not target.file_changed:
            return
        lost = [e for e in self.effects if not e.in_effect and e.value is not ABSENT]
        if lost:
            raise _shadow_error(target.path, lost, ctx.edit_in)
        if target is not main and module.params.get('state') != 'absent':
            # said once per write: that drop-in may belong to another tool
            ctx.warn('%s: the change %s written to %s, where containerd reads it (nodeguard records it there and '
                     'undoes it there on state: absent)' % (self.path, 'would be' if module.check_mode else 'is',
                                                            target.path))

    def needs_write(self):
        return self.target.file_changed

    def preview(self):
        target = self.target
        if not target.file_changed:
            self.result['effects'] = []
            if target.ledger.dirty and not self.module.check_mode:
                target.ledger.save(sha256_bytes(target.original or b''))
        else:
            self.result['effects'] = [e.as_dict() for e in self.effects]
            self.result['changed'] = True
        return self.result

    def check(self):
        """Built-in checks on the merged candidate, then containerd on a temporary copy beside the file.

        The tree is judged as containerd reads it: from config.toml's path as
        given (a link's folder for its relative imports, follow: true).
        """
        module, ctx, main, target = self.module, self.ctx, self.main, self.target
        params = module.params
        if module.check_mode and ctx.judged_whole:
            # one file of a set judged whole; the files before it were not written in check mode
            self.result['validated'] = ctx.judged_whole
            return
        checked = Checked()
        overrides = None if target is main else {target.path: target.doc.data}
        check_builtin(ctx, checked, main.path, main.doc.data if target is main else main.data_before,
                      overrides=overrides, allow_plugin_override=self.allow_plugin_override)
        if checked.problems:
            raise ConfigError('refusing to write %s: the new config would not load. %s Nothing was written.'
                              % (target.path, ' '.join(checked.problems)), key=None, check_errors=checked.problems)
        # an edit of one file may change how containerd reads another's runtimes (2.x: a version 3 runtimes table)
        refuse_lost_runtimes(self.view_before, self.view, target.path, [e.key for e in self.effects],
                             allow_plugin_override=self.allow_plugin_override)
        for warning in check_warnings(main.path, None, ctx.containerd_version, files=self.view.files):
            ctx.warn(warning)
        validate = params.get('validate')
        if module.check_mode:
            unjudged = self._not_for_containerd_in_check_mode()
            if unjudged:
                self.result['validated'] = 'not validated by containerd in check mode: %s' % unjudged
                return
            if validate not in VALIDATE_WORDS:
                validate = 'auto'  # a command of the user's may do more than judge: check mode runs config dump
        candidate = self._candidate()
        # a config that imports itself (nvidia-ctk 1.17.8 writes one) must see the candidate, not the old file
        as_path = main.path if os.path.exists(main.path) else None
        check_with_containerd(ctx, checked, candidate, validate, load_test=self.load_test,
                              as_path=as_path, shown=target.path + ' (candidate)')
        if candidate != self.tmp:
            remove_quietly(candidate)
            self.temps.remove(candidate)
        if checked.problems:
            raise self._refusal(checked, candidate)
        self._confirm(checked)

    def _not_for_containerd_in_check_mode(self):
        """Why check mode cannot hand this candidate to containerd as the run would, or None.

        Check mode makes no folder and needs no write access (the temporary
        copies go beside the files), and a file the same call writes first
        (containerd_config's drop-ins) is not there yet: the built-in checks
        judged them.
        """
        main, target = self.main, self.target
        folders = set(os.path.dirname(p) for p in (target.write_path, main.path))
        if not all(os.path.isdir(f) and os.access(f, os.W_OK) for f in folders):
            return 'no temporary copy can be written beside %s' % target.path
        allowed = self.ctx.missing_imports_allowed
        if allowed:
            _files, problems = load_tree(main.path, main.doc.data if target is main else main.data_before,
                                         self.ctx.containerd_version,
                                         overrides=None if target is main else {target.path: target.doc.data})
            waiting = [p.entry for p in problems if p.entry in allowed]
            if waiting:
                return 'the tree imports %s, not written yet' % ', '.join(str(e) for e in waiting)
        return None

    def _candidate(self):
        """The file commit renames (self.tmp, beside the file written) and the config containerd judges.

        containerd resolves a relative import from the folder of the path it
        is given: a candidate copy of config.toml sits beside that path (a
        link's, not its target's).
        """
        module, ctx, main, target = self.module, self.ctx, self.main, self.target
        uid, gid, mode = stat_owner(module, module.params) if target is main else (None, None, None)
        self.tmp = self.temp(target.write_path, target.new_bytes, mode=mode, uid=uid, gid=gid)
        # an import of a file being replaced (a self-import: nvidia-ctk 1.17.8) names its candidate
        candidate = copies_for_containerd(
            self.view.files, {main.path: main.doc.text if target is main else main.text, target.path: target.doc.text},
            {} if target is main else {target.path: self.tmp},
            lambda path, text: self.temp(path, text.encode('utf-8')), ctx.containerd_version)
        if candidate is not None:
            return candidate
        if target is not main:
            return self.temp(main.path, _candidate_main(main, self.view, target, self.tmp))
        if os.path.dirname(main.path) != os.path.dirname(main.write_path):
            return self.temp(main.path, target.new_bytes)
        return self.tmp

    def _confirm(self, checked):
        """After containerd accepted the candidate: its config dump confirms the edit's effects."""
        ctx, target, params = self.ctx, self.target, self.module.params
        res = checked.load_result
        for skipped in (res.skipped if res is not None else []):
            ctx.warn('%s: the load test skipped %s' % (target.path, skipped))
        if checked.dump is None:
            if params.get('validate') != 'none':
                ctx.warn('%s: %s; the change is judged on nodeguard\'s own model of containerd only. Fix: '
                         'install containerd or set containerd_bin.' % (target.path, checked.how))
        else:
            confirm_with_dump(self.effects, self.view, checked.dump)
            lost = [e for e in self.effects if not e.in_effect and e.value is not ABSENT]
            if lost:
                raise _shadow_error(target.path, lost, ctx.edit_in)
        self.result['effects'] = [e.as_dict() for e in self.effects]
        self.result['validated'] = checked.how
        if self.load_test and checked.load is not None:
            self.result['load_tested'] = checked.as_dict()

    def _refusal(self, checked, candidate):
        target = self.target.path
        problem = checked.problems[0]
        if checked.stage == 'load':
            return ConfigError('refusing to write %s: validate: load - %s Nothing was written.' % (target, problem)
                               if self.module.params.get('validate') == 'load' else
                               'refusing to write %s: with the change in place containerd would not load the '
                               'config. %s Nothing was written.' % (target, problem),
                               key='validate' if self.module.params.get('validate') == 'load' else None,
                               load_test=checked.load_result.as_dict(), check_errors=checked.problems,
                               validated=checked.as_dict())
        if problem.startswith('validate: load'):
            return ConfigError('refusing to write %s: %s. Nothing was written. Fix: set containerd_bin.'
                               % (target, problem), key='validate')
        return ConfigError('refusing to write %s: %s. Nothing was written.' % (target, problem), key=None)

    def commit(self):
        """Backup, ledger, compare, rename, folder flush."""
        module, main, target = self.module, self.main, self.target
        params = module.params
        if params.get('backup') and target.original is not None and self.backup_file is None:
            self.backup_file = module.backup_local(target.write_path)
        if self.backup_file:
            self.result['backup_file'] = self.backup_file
        compare = [(f.path, f.original) for f in set([main, target])]
        if not self.commit_files(compare, [(self.tmp, target.write_path)],
                                 lambda: target.ledger.save(sha256_bytes(target.new_bytes)), target.ledger.path):
            return False
        self.result['_wrote'] = True
        self.result['changed'] = module.set_fs_attributes_if_different(file_args(module, target.path), True) \
            if target is main else True
        return True


def _note_secrets(ctx, result, target):
    """The candidate's secrets are masked too; a secret the edit changes is named (its value shows as ********)."""
    secrets.note_text(target.doc.text, target.doc.data)
    changed = secrets.changed_secrets(target.data_before, target.doc.data, secrets.patterns())
    if changed:
        result['secrets_changed'] = changed
        ctx.warn('%s: the secret value of %s %s (shown as %s)' % (
            target.path, ', '.join(changed), 'would change' if ctx.module.check_mode else 'changed', secrets.MASK))


def run_transaction(module, edit, ignore_missing_imports=(), allow_plugin_override=False, load_test=None,
                    checks_in_check_mode=True):
    """Apply edit(doc, ledger, ctx) -> dict to the config tree and exit the module.

    edit mutates doc (a ConfigDocument) and ledger, and returns the module's
    own return values.  It may raise ConfigError for bad input, or
    EditElsewhere when what it edits lives in a drop-in, and may call
    ctx.allow_missing_import(entry) for an imports entry it knows is missing.
    allow_plugin_override is passed to check_tree (containerd_imports);
    load_test=True also starts the node's containerd on the candidate
    (containerd_baseline's repair; its summary is returned in load_tested).
    An uninstall may touch several files of the tree: each is its own
    transaction (drop-ins first), and the result lists every file written.
    ignore_missing_imports: entries allowed to be missing on every step
    (kept for callers; ctx.allow_missing_import is the way for an edit).
    A batch edit (an object with ``parts``, a list of edits, and
    ``combine(result, steps)``) is one transaction when it all goes to one
    file; else (SplitEdit) its parts go where separate calls would put them,
    one write per file, the whole set judged before the first write.
    Check mode runs the check step (built-in checks, config dump, the load
    test where asked) wherever the run would write; checks_in_check_mode=False
    previews after the build (a caller that judges its check mode itself:
    containerd_baseline's repair).
    """
    require_tomlkit(module)
    ctx = Context(module, os.path.abspath(module.params['path']), allowed_missing=ignore_missing_imports)
    exit_result(module, ctx, transaction_result(module, ctx, edit, allow_plugin_override, load_test,
                                                checks_in_check_mode=checks_in_check_mode))


def transaction_result(module, ctx, edit, allow_plugin_override, load_test, checks_in_check_mode=True):
    """run_transaction's steps and their one result, without exiting (a module that does more after them).

    A failure fails the module, naming what this run already wrote (ctx.written).
    """
    def steps_of(one_edit):
        steps = []
        ctx.previewed = set()
        # one file per step; only an uninstall goes on (in check mode too, as if each step had written)
        for _step in range(8):
            result = _transaction(module, ctx, EditTransaction(module, ctx, one_edit, allow_plugin_override,
                                                               load_test, checks_in_check_mode))
            steps.append(result)
            if module.params.get('state') != 'absent':
                break
            if module.check_mode:
                # nothing was written: the next step previews the next file, with this one's undo taken as done
                # (config.toml comes last; a step that would change nothing ends the preview)
                previewed = result.get('file')
                if result.get('changed') and previewed in ctx.previewed:
                    steps.pop()  # a file previewed already (config.toml by another name): nothing new
                    break
                if not result.get('changed'):
                    break
                result['_wrote'] = True
                ctx.previewed.add(previewed)
                if previewed in (None, ctx.path):
                    break
                continue
            if not result.get('_wrote') or not _owner_records_left(module, ctx):
                break
        return steps

    try:
        steps = steps_of(edit)
    except SplitEdit:
        steps = _split_steps(module, ctx, edit, steps_of, allow_plugin_override)
    combine = getattr(edit, 'combine', None)
    result = _merge_steps([dict(s) for s in steps])
    if getattr(edit, 'parts', None) and len(steps) > 1:
        merge_batch_steps(result, steps)
    return combine(result, steps) if combine else result


def _split_steps(module, ctx, edit, steps_of, allow_plugin_override):
    """A batch whose parts go to more than one file: one write per file, the whole set judged before the first
    (``_split_plan``); a part that cannot be placed on the tree as read: the parts one by one."""
    try:
        plan = _split_plan(module, ctx, edit.parts, allow_plugin_override)
    except _NoPlan:
        return [step for part in edit.parts for step in steps_of(part)]
    except ConfigError as exc:
        fail_after_writes(module, ctx, str(exc), **exc.given_details())
    steps, given = [], ctx.edit_in
    try:
        for home, members in plan:
            ctx.edit_in = home  # where the plan put them: the file a call of their own would edit
            steps.extend(steps_of(GroupEdit(members)))
    finally:
        ctx.edit_in = given
        ctx.judged_whole = None
    return steps


def run_batch(module, entries_of, batch):
    """A module's batch option (runtimes, settings): its entries checked before anything is read, one transaction.

    entries_of(params) -> entries (each with its state) or ConfigError; batch(entries, owner) -> the batch edit.
    """
    try:
        entries = entries_of(module.params)
    except ConfigError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    if entries:
        # the engine reads the call's state (an uninstall goes drop-ins first)
        module.params['state'] = entries[0]['state']
    run_transaction(module, batch(entries, module.params['owner']))


def merge_batch_steps(result, steps):
    """A batch's steps (its parts one by one, or an uninstall's files): the call changed what any of them changed.

    Unlike _merge_steps this counts check-mode previews too (changed, not written).
    """
    changed = [s for s in steps if s.get('changed')]
    result['changed'] = bool(changed)
    if len(changed) > 1:
        result['effects'] = [e for s in changed for e in s.get('effects') or []]
        result['diff'] = [d for s in changed for d in (s['diff'] if isinstance(s.get('diff'), list)
                                                       else [s['diff']] if s.get('diff') else [])]
        result['files'] = sorted(set(f for s in changed for f in s.get('files') or [s.get('file')] if f))
    return result


def json_safe(value):
    """value with only plain JSON types (exact dict, list, str, int, float, bool, None).

    tomlkit's items subclass str, int, dict...; ansible-core 2.16 - 2.18 deep
    copy a result and cannot rebuild them (TypeError: __init__() missing 3
    required positional arguments): after the file was written. Scalars go
    through the one tomlkit unwrap (_toml_text.plain); this never raises.
    """
    if isinstance(value, dict):
        return dict((str(k), json_safe(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return [json_safe(v) for v in value]
    if isinstance(value, bytes):
        return value.decode('utf-8', 'replace')
    if value is None:
        return None
    try:
        value = plain(value)
    except TomlLayoutError:
        return str(value)
    return value.isoformat() if hasattr(value, 'isoformat') else value


def unique_in_order(items):
    """items without repeats, first occurrence kept (facts and results read in the order found)."""
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def run_logic(module, ctx, logic, name, subject=None):
    """A module's logic() -> result, outside run_transaction: exit with its result and warnings, or fail clearly.

    Bad input and refusals (ConfigError), a damaged ledger or a held lock fail with their message; anything else
    with one naming the module and its subject (the file it works on: the config unless given); every failure
    names the files this run already wrote.
    """
    try:
        result = logic()
    except ConfigError as exc:
        fail_after_writes(module, ctx, str(exc), **exc.given_details())
    except (LedgerError, LockTimeout) as exc:
        fail_after_writes(module, ctx, str(exc))
    except Exception as exc:  # a clear failure, never a traceback on stdout
        fail_after_writes(module, ctx, '%s failed on %s: %s' % (name, subject or ctx.path, exc),
                          exception=traceback.format_exc())
    for warning in ctx.warnings:
        module.warn(warning)
    exit_result(module, ctx, result)


def exit_result(module, ctx, result):
    """exit_json, and never a crash after a write: a result that cannot be sent still says what was written."""
    try:
        result = json_safe(result)
    except Exception as exc:  # a bug of ours; the files are written and in effect
        fail_after_writes(module, ctx, 'nodeguard could not report its result (%s: %s)' % (type(exc).__name__, exc),
                          exception=traceback.format_exc())
    module.exit_json(**result)


# the errors of a write the node itself refused, and what to look at
REFUSED_WRITE = {errno.EPERM: 'the file or its folder is immutable (lsattr shows an i; chattr -i lifts it)',
                 errno.EACCES: 'the file or its folder is immutable, or a security module (SELinux, AppArmor) '
                               'denies the write',
                 errno.EROFS: 'the filesystem is mounted read-only'}


def refused_write_fix(exc):
    """For an OSError the node gave a write: what is likely wrong and the fix, else ''."""
    why = REFUSED_WRITE.get(getattr(exc, 'errno', None)) if isinstance(exc, (IOError, OSError)) else None
    if why is None:
        return ''
    return ('. The node refused the write: %s. The config was not replaced; the next run rolls back what this '
            'one recorded. Fix: make the file writable, then run again' % why)


def fail_after_writes(module, ctx, msg, **details):
    """fail_json that names the files this run already renamed into place (with their ledgers)."""
    written = list(ctx.written)
    if written:
        msg = ('%s. Already written before this failure, and in effect with their ledgers: %s (run again to '
               'finish; a second run repeats nothing already done).' % (msg.rstrip('. '), ', '.join(written)))
        details['written'] = written
        details['changed'] = True
    module.fail_json(msg=msg, **json_safe(details))


def tree_ledgers(state_dir, path, containerd_ver):
    """(file, its parsed data, its ledger) of config.toml and of every file containerd loads with it, in load
    order.

    Each ledger as it describes the bytes on disk now: a crash between a
    ledger's write and its file's rename is rolled back in memory, as the
    transaction does. A config.toml that cannot be read or parsed gives its
    own ledger only, with data None (the transaction then names what is wrong).
    """
    try:
        files = load_effective(path, ConfigDocument(path, _decode(path, read_bytes(path) or b'')).data,
                               containerd_ver).files
    except (ConfigError, TypeError):
        files = [(path, None)]
    out = []
    for file_path, data in files:
        ledger = Ledger.load(state_dir, ledger_key(file_path))
        ledger.recover(sha256_bytes(read_bytes(file_path) or b''), file_identity(file_path))
        out.append((file_path, data, ledger))
    return out


def tree_records(state_dir, path, containerd_ver):
    """The ledger records of config.toml and of every file containerd loads with it, in load order (tree_ledgers)."""
    return [rec for _file, _data, ledger in tree_ledgers(state_dir, path, containerd_ver) for rec in ledger.records]


def _owner_records_left(module, ctx):
    """Whether a file of the tree still holds ledger records of the owner (an uninstall goes on there)."""
    given = module.params.get('path')
    path = os.path.abspath(given) if given else ctx.path  # as containerd is given it (a link: its folder's imports)
    try:
        files, _problems = load_effective(path, ConfigDocument(path, _decode(path, read_bytes(path) or b'')).data,
                                          ctx.containerd_version).files, None
    except (ConfigError, TypeError):
        return False
    return any(Ledger.load(module.params['state_dir'], ledger_key(p)).select(owner=ctx.owner) for p, _d in files)


def _merge_steps(steps):
    """One module result from the single-file steps of a transaction."""
    wrote = [r for r in steps if r.pop('_wrote', False)]
    if len(wrote) < 2:
        return wrote[0] if wrote else steps[-1]
    result = dict(steps[-1] if steps[-1].get('changed') else wrote[-1])
    result['changed'] = True
    result['files'] = [r['file'] for r in wrote]
    result['effects'] = [e for r in wrote for e in r.get('effects', [])]
    for key in ('removed', 'restored', 'kept'):
        if isinstance(result.get(key), list):
            result[key] = sorted(set(x for r in wrote for x in (r.get(key) or [])))
        elif isinstance(result.get(key), bool):
            result[key] = any(r.get(key) for r in wrote)
    diffs = [r['diff'] for r in wrote if r.get('diff')]
    if diffs:
        result['diff'] = diffs
    return result


def _transaction(module, ctx, txn):
    """One single-file write (or none): the module's result for it, '_wrote' set when a file was replaced.

    A failure fails the module (naming what this run already wrote).
    """
    params = module.params
    result = dict(changed=False)
    try:
        result = txn.run()
        path = txn.path
        if not result['changed'] and os.path.exists(path):
            # mode/owner-only changes; the call itself honours check mode
            result['changed'] = module.set_fs_attributes_if_different(file_args(module, path), False)
    except SplitEdit:
        # before any write (the first step's build); its parts start afresh
        ctx.warnings = []
        ctx.tree_files = None
        raise
    except ConfigError as exc:
        fail_after_writes(module, ctx, str(exc), **exc.given_details())
    except LedgerError as exc:
        fail_after_writes(module, ctx, str(exc))
    except Exception as exc:  # never leave a temp file behind, whatever failed (run() removed them)
        fail_after_writes(module, ctx, 'nodeguard failed on %s: %s%s' % (params.get('path'), exc, refused_write_fix(exc)),
                          exception=traceback.format_exc())
    for w in ctx.warnings:
        module.warn(w)
    ctx.warnings = []
    ctx.tree_files = None
    return result
