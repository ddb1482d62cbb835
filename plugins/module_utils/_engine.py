# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One transaction for every module that edits a containerd config.

lock -> read -> edit (a callback) -> verify the text says what we meant ->
built-in checks and the node's ``containerd config dump`` on a temporary copy
beside the file -> compare with the file again (a foreign writer that does
not take our lock is caught here; the edit is re-applied on its content) ->
ledger -> rename -> flush the folder.  Nothing is written unless every step
passed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import time
import traceback

from ansible_collections.nodeguard.containerd.plugins.module_utils._atomic import (
    atomic_write,
    clean_stale_temps,
    commit_temp,
    lock_path_for,
    read_bytes,
    remove_quietly,
    sha256_bytes,
    write_temp,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import (
    HAS_TOMLKIT,
    TOMLKIT_IMPORT_ERROR,
    UTF8_BOM,
    ConfigDocument,
    ConfigError,
    bom_refused_message,
    lock_or_fail,
    split_bom,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._effective import (
    ABSENT,
    EditElsewhere,
    changed_leaves,
    confirm_with_dump,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._ledger import (
    Ledger,
    LedgerError,
    file_identity,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._toml_text import TomlLayoutError, dotted_path, plain
from ansible_collections.nodeguard.containerd.plugins.module_utils._validate import (
    check_tree,
    containerd_version,
    refuse_generated,
    refuse_unreadable_version,
    run_validate,
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

    def __init__(self, module, path):
        self.module = module
        self.path = path
        self.owner = module.params.get('owner')
        self.edit_in = module.params.get('edit_in') or 'auto'
        self.warnings = []
        self.written = []  # files renamed into place by this run: a later failure names them
        self.tree_files = None  # [(path, data)] of the tree when the edit runs on a drop-in
        self._bin = False
        self._version = False

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


def _target_path(module, path):
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


def _stat_owner(module, params):
    """uid/gid/mode wanted for the file, from the file options."""
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
        # a symbolic mode is applied after the rename by set_fs_attributes
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


def _file_args(module, path):
    """File attributes wanted, as ansible.builtin.file takes them.

    ``owner`` names the ledger owner in this collection, so the Unix owner
    comes from ``file_owner``.
    """
    params = dict(module.params)
    params['owner'] = params.get('file_owner')
    return module.load_file_common_arguments(params, path=path)


class EditedFile(object):
    """One file of the config tree as read for an edit: bytes, document, ledger."""

    def __init__(self, path, original, text, bom, doc, ledger, created=False):
        self.path = path
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
    if is_main:
        refuse_unreadable_version(path, doc.version, ctx.containerd_version)
    if bom:
        refused = bom_refused_message(path, ctx.containerd_version, doc.version)
        if refused:
            raise ConfigError(refused + ' Nothing was written.', key='path')
    ledger = Ledger.load(params['state_dir'], path)
    note = ledger.recover(sha256_bytes(original or b''), file_identity(path))
    if note:
        ctx.warn(note)
    return EditedFile(path, original, text, bom, doc, ledger, created)


def _apply(edit, target, ctx):
    """Run the module's edit on one file; (values, changed leaves)."""
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
        fixes.append('or change or remove that drop-in (%s) and run again' % ', '.join(homes))
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
        if wanted == main.path:
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
            if Ledger.load(module.params['state_dir'], path).select(owner=ctx.owner):
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
            raise ConfigError(str(exc) + ' Nothing was written. Fix: edit_in: auto (or edit_in: %s) writes the '
                              'change there.' % exc.path, key='edit_in')
        return _retarget(module, ctx, edit, main, exc.path)
    if not changes:
        return main, values, changes
    view = load_effective(main.path, main.doc.data, ctx.containerd_version)
    effects = [e for e in effects_of(view, main.path, changes) if e.value is not ABSENT]
    # a later file that sets the same key decides it, whatever config.toml says:
    # the change belongs there (an equal value there makes this edit redundant)
    elsewhere = [e for e in effects if e.shadowed_by]
    if not elsewhere:
        return main, values, changes
    homes = set(e.shadowed_by for e in elsewhere)
    lost = [e for e in elsewhere if not e.in_effect]
    if edit_in == 'config' or len(homes) != 1:
        if lost or len(homes) != 1:
            raise _shadow_error(main.path, lost or elsewhere, edit_in)
        return main, values, changes
    return _retarget(module, ctx, edit, main, homes.pop())


def _retarget(module, ctx, edit, main, path):
    main.doc = ConfigDocument(main.path, main.text)  # drop what the first try did to config.toml
    main.ledger = Ledger.load(module.params['state_dir'], main.path)
    target = _read_config(module, ctx, path, main_version=main.doc.version)
    ctx.tree_files = load_effective(main.path, main.doc.data, ctx.containerd_version).files
    try:
        values, changes = _apply(edit, target, ctx)
    except EditElsewhere as exc:
        raise ConfigError(str(exc) + ' Nothing was written.', key='edit_in')
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


def _validate_candidate(module, ctx, main, target, view, tmp):
    """The node's containerd on the candidate tree: (parsed config dump or None, validation note)."""
    params = module.params
    validate = params.get('validate')
    main_tmp = None
    try:
        if target is main:
            candidate = tmp
        else:
            main_tmp = write_temp(main.path, _candidate_main(main, view, target, tmp))
            candidate = main_tmp
        dump_mode = 'auto' if validate == 'load' else validate
        checked = run_validate(ctx.run_command, dump_mode, ctx.containerd_bin, candidate)
        if checked is not None and checked[1] != 0:
            cmd, rc, out, err = checked
            detail = (err or out).strip().splitlines()
            raise ConfigError('refusing to write %s: validation "%s" failed (rc=%s): %s. Nothing was written.'
                              % (target.path, ' '.join(cmd).replace(candidate, '%s'), rc,
                                 ' | '.join(detail[-3:]) or 'no output'), key=None)
        if not ctx.containerd_bin:
            if validate == 'load':
                raise ConfigError('refusing to write %s: validate: load starts the node\'s containerd on the candidate, '
                                  'but no containerd binary was found in PATH or %s. Nothing was written. Fix: set '
                                  'containerd_bin.' % (target.path, ', '.join(CONTAINERD_DIRS)), key='validate')
            return None, 'not validated by containerd: no containerd binary in PATH or %s' % ', '.join(CONTAINERD_DIRS)
        if validate == 'load':
            _load_test_or_fail(ctx, target, candidate)
        out = checked[2] if checked is not None and dump_mode == 'auto' else None
        if out is None:
            rc, out, err = ctx.run_command([ctx.containerd_bin, '--config', candidate, 'config', 'dump'])
            if rc != 0:
                return None, 'config dump failed (rc=%s): %s' % (rc, (err or '').strip()[-300:])
        try:
            from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import parse_toml
            return parse_toml(out), 'config dump'
        except Exception as exc:  # a dump we cannot read confirms nothing
            return None, 'config dump output could not be read (%s)' % exc
    finally:
        if main_tmp:
            remove_quietly(main_tmp)


def _load_test_or_fail(ctx, target, candidate):
    """validate: load - start the node's containerd on the candidate in isolation; its CRI plugins must load.

    The candidate is tested at config.toml's own path (as_path): a config that
    imports itself (nvidia-ctk 1.17.8 writes one) must see the candidate, not
    the old file.
    """
    from ansible_collections.nodeguard.containerd.plugins.module_utils._preflight import STATUS_OK, load_test
    main_path = ctx.path if os.path.exists(ctx.path) else None
    res = load_test(ctx.containerd_bin, candidate, run_command=ctx.run_command, as_path=main_path)
    if res.status != STATUS_OK:
        raise ConfigError('refusing to write %s: validate: load - %s Nothing was written.'
                          % (target.path, res.message().replace(candidate, target.path + ' (candidate)')),
                          key='validate', load_test=res.as_dict())
    for skipped in res.skipped:
        ctx.warn('%s: the load test skipped %s' % (target.path, skipped))


def run_transaction(module, edit, ignore_missing_imports=(), allow_plugin_override=False):
    """Apply edit(doc, ledger, ctx) -> dict to the config tree and exit the module.

    edit mutates doc (a ConfigDocument) and ledger, and returns the module's
    own return values.  It may raise ConfigError for bad input, or
    EditElsewhere when what it edits lives in a drop-in.
    allow_plugin_override is passed to check_tree (containerd_imports).
    An uninstall may touch several files of the tree: each is its own
    locked, validated, atomic write (drop-ins first), and the result lists
    every file written.
    """
    require_tomlkit(module)
    steps = []
    ctx = Context(module, os.path.abspath(module.params['path']))
    # one file per step; only an uninstall (or a check-mode preview) goes on
    for _step in range(8):
        result = _transaction(module, ctx, edit, ignore_missing_imports, allow_plugin_override)
        steps.append(result)
        if not result.get('_wrote') or module.params.get('state') != 'absent' \
                or not _owner_records_left(module, ctx):
            break
    exit_result(module, ctx, _merge_steps(steps))


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


def exit_result(module, ctx, result):
    """exit_json, and never a crash after a write: a result that cannot be sent still says what was written."""
    try:
        result = json_safe(result)
    except Exception as exc:  # a bug of ours; the files are written and in effect
        fail_after_writes(module, ctx, 'nodeguard could not report its result (%s: %s)' % (type(exc).__name__, exc),
                          exception=traceback.format_exc())
    module.exit_json(**result)


def fail_after_writes(module, ctx, msg, **details):
    """fail_json that names the files this run already renamed into place (with their ledgers)."""
    written = list(ctx.written)
    if written:
        msg = ('%s. Already written before this failure, and in effect with their ledgers: %s (run again to '
               'finish; a second run repeats nothing already done).' % (msg.rstrip('. '), ', '.join(written)))
        details['written'] = written
        details['changed'] = True
    module.fail_json(msg=msg, **json_safe(details))


def _owner_records_left(module, ctx):
    """Whether a file of the tree still holds ledger records of the owner (an uninstall goes on there)."""
    path = ctx.path
    try:
        files, _problems = load_effective(path, ConfigDocument(path, _decode(path, read_bytes(path) or b'')).data,
                                          ctx.containerd_version).files, None
    except (ConfigError, TypeError):
        return False
    return any(Ledger.load(module.params['state_dir'], p).select(owner=ctx.owner) for p, _d in files)


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


def _transaction(module, ctx, edit, ignore_missing_imports, allow_plugin_override):
    """One single-file write (or none): the module's result for it, '_wrote' set when a file was replaced."""
    params = module.params
    result = dict(changed=False)
    tmp = None
    locks = []
    backup_file = None
    try:
        validate = params.get('validate')
        if validate not in (None, 'auto', 'none', 'load') and '%s' not in validate:
            raise ConfigError('validate must contain %%s (replaced by the candidate file), got %r. Nothing was '
                              'written. Fix: e.g. validate: "containerd --config %%s config dump".' % validate,
                              key='validate')
        path = _target_path(module, os.path.abspath(params['path']))
        folder = os.path.dirname(path)
        ctx.path = path
        if not os.path.isdir(folder):
            if not params.get('create'):
                raise ConfigError('folder %s does not exist (no containerd here?). Fix: install containerd, '
                                  'or set create: true.' % folder, key='path')
            if not module.check_mode:
                os.makedirs(folder, 0o755)
        lock_fix = ('Nothing was written. Fix: run as a user who may write to %s (become: true); if the lock file '
                    'is not a regular file, remove it.')
        locks.append(lock_or_fail(path, params['lock_timeout'], create=not module.check_mode, fix=lock_fix % folder))
        clean_stale_temps(path)
        for _attempt in range(MAX_ATTEMPTS):
            main = _read_config(module, ctx, path)
            view_before = load_effective(path, main.doc.data, ctx.containerd_version)
            target, values, changes = _choose_target(module, ctx, edit, main, view_before)
            if target is not main and not any(lk.lock_path == lock_path_for(target.path) for lk in locks):
                locks.append(lock_or_fail(target.path, params['lock_timeout'], create=not module.check_mode,
                                          fix=lock_fix % os.path.dirname(target.path)))
                clean_stale_temps(target.path)
            result = dict(changed=False)
            result.update(values)
            result['config_version'] = main.doc.version
            result['plugin'] = main.doc.layout.cri_plugin
            result['file'] = target.path
            doc = target.doc
            if doc.changed:
                doc.verify()
            view = _view_of_candidate(ctx, main, target)
            effects = effects_of(view, target.path, changes)
            if module._diff and target.file_changed:
                result['diff'] = dict(before='' if target.original is None else target.text, after=doc.text,
                                      before_header='%s (%s)' % (target.path, 'absent' if target.original is None
                                                                 else 'before'),
                                      after_header='%s (after)' % target.path)
            if not target.file_changed:
                result['effects'] = []
                if target.ledger.dirty and not module.check_mode:
                    target.ledger.save(sha256_bytes(target.original or b''))
                break
            lost = [e for e in effects if not e.in_effect and e.value is not ABSENT]
            if lost:
                raise _shadow_error(target.path, lost, ctx.edit_in)
            if target is not main and module.params.get('state') != 'absent':
                # said once per write: that drop-in may belong to another tool
                ctx.warn('%s: the change %s written to %s, where containerd reads it (nodeguard records it there and '
                         'undoes it there on state: absent)' % (path, 'would be' if module.check_mode else 'is',
                                                                target.path))
            if module.check_mode:
                result['effects'] = [e.as_dict() for e in effects]
                result['changed'] = True
                break
            overrides = None if target is main else {target.path: doc.data}
            errors = check_tree(path, main.doc.data if target is main else main.data_before, ctx.containerd_version,
                                ignore_missing=ignore_missing_imports, allow_plugin_override=allow_plugin_override,
                                overrides=overrides)
            if errors:
                raise ConfigError('refusing to write %s: the new config would not load. %s Nothing was written.'
                                  % (target.path, ' '.join(errors)), key=None, check_errors=errors)
            uid, gid, mode = _stat_owner(module, params) if target is main else (None, None, None)
            try:
                tmp = write_temp(target.path, target.new_bytes, mode=mode, uid=uid, gid=gid)
            except (IOError, OSError) as exc:
                raise ConfigError('cannot write a temporary file beside %s (%s). Nothing was written; the file '
                                  'is as it was. Fix: free space on that filesystem or make %s writable.'
                                  % (target.path, exc.strerror, os.path.dirname(target.path)))
            dump, how = _validate_candidate(module, ctx, main, target, view, tmp)
            if dump is None:
                if validate != 'none':
                    ctx.warn('%s: %s; the change is judged on nodeguard\'s own model of containerd only. Fix: '
                             'install containerd or set containerd_bin.' % (target.path, how))
            else:
                confirm_with_dump(effects, view, dump)
                lost = [e for e in effects if not e.in_effect and e.value is not ABSENT]
                if lost:
                    raise _shadow_error(target.path, lost, ctx.edit_in)
            result['effects'] = [e.as_dict() for e in effects]
            result['validated'] = how
            if params.get('backup') and target.original is not None and backup_file is None:
                backup_file = module.backup_local(target.path)
            if backup_file:
                result['backup_file'] = backup_file
            ledger_before = read_bytes(target.ledger.path)
            target.ledger.save(sha256_bytes(target.new_bytes))
            # compared as late as possible, after every slow step: a writer
            # without our lock (nvidia-ctk) can still slip in before the rename,
            # but not behind the validation, the backup or the ledger write
            moved = [f for f in set([main, target]) if read_bytes(f.path) != f.original]
            if moved:
                # another program rewrote the file while we worked: put the
                # ledger back and start over from its content rather than
                # overwrite its change
                if ledger_before is None:
                    remove_quietly(target.ledger.path)
                else:
                    atomic_write(target.ledger.path, ledger_before, mode=0o600)
                remove_quietly(tmp)
                tmp = None
                ctx.warn('%s changed while nodeguard was editing it; the edit was applied again on the new '
                         'content' % moved[0].path)
                result = dict(changed=False)
                continue
            commit_temp(tmp, target.path)
            tmp = None
            ctx.written.append(target.path)
            result['_wrote'] = True
            result['changed'] = module.set_fs_attributes_if_different(_file_args(module, target.path), True) \
                if target is main else True
            break
        else:
            raise ConfigError('%s was changed by another program %d times while nodeguard was editing it (a '
                              'writer that does not take %s, e.g. nvidia-ctk or kata-deploy). Nothing was '
                              'written. Fix: let that program finish, then run again.'
                              % (path, MAX_ATTEMPTS, os.path.basename(locks[0].lock_path)), key=None)
        if not result['changed'] and os.path.exists(path):
            # mode/owner-only changes; the call itself honours check mode
            result['changed'] = module.set_fs_attributes_if_different(_file_args(module, path), False)
    except ConfigError as exc:
        if tmp:
            remove_quietly(tmp)
        fail_after_writes(module, ctx, str(exc), **dict((k, v) for k, v in exc.details.items() if v is not None))
    except LedgerError as exc:
        if tmp:
            remove_quietly(tmp)
        fail_after_writes(module, ctx, str(exc))
    except Exception as exc:  # never leave a temp file behind, whatever failed
        if tmp:
            remove_quietly(tmp)
        fail_after_writes(module, ctx, 'nodeguard failed on %s: %s' % (params.get('path'), exc),
                          exception=traceback.format_exc())
    finally:
        for lk in reversed(locks):
            lk.release()
    for w in ctx.warnings:
        module.warn(w)
    ctx.warnings = []
    ctx.tree_files = None
    return result
