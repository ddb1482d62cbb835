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

import os
import time
import traceback

from ansible_collections.nodeguard.containerd.plugins.module_utils._atomic import (
    atomic_write,
    clean_stale_temps,
    commit_temp,
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
from ansible_collections.nodeguard.containerd.plugins.module_utils._ledger import (
    Ledger,
    LedgerError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._validate import (
    check_tree,
    containerd_version,
    run_validate,
)

MAX_ATTEMPTS = 3
# containerd's default config is ~10 KB and 5,000 runtimes with options are
# ~1.5 MB; a bigger file is refused before it is parsed (a 50 MB one would
# take minutes and GBs), so every run ends in bounded time and memory.
MAX_CONFIG_BYTES = 4 * 1024 * 1024

# Options every config-editing module takes (documented in the
# nodeguard.containerd.common doc fragment).
COMMON_ARGUMENT_SPEC = dict(
    path=dict(type='path', default='/etc/containerd/config.toml', aliases=['dest']),
    owner=dict(type='str', default='nodeguard'),
    backup=dict(type='bool', default=False),
    validate=dict(type='str', default='auto'),
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


class Context(object):
    """What an edit callback may ask about the node; computed once."""

    def __init__(self, module, path):
        self.module = module
        self.path = path
        self.owner = module.params.get('owner')
        self.warnings = []
        self._bin = False
        self._version = False

    @property
    def containerd_bin(self):
        if self._bin is False:
            self._bin = self.module.get_bin_path('containerd')
        return self._bin

    def run_command(self, cmd):
        return self.module.run_command(cmd, environ_update={'LC_ALL': 'C'})

    @property
    def containerd_version(self):
        """(major, minor) of the node's containerd; the containerd_version option wins."""
        if self._version is False:
            given = self.module.params.get('containerd_version')
            if given:
                parts = str(given).lstrip('v').split('.')
                try:
                    self._version = (int(parts[0]), int(parts[1]) if len(parts) > 1 else 0)
                except ValueError:
                    raise ConfigError('containerd_version must look like 1.7 or 2.1, got %r' % given,
                                      key='containerd_version')
            elif self.containerd_bin:
                self._version = containerd_version(self.run_command, self.containerd_bin)
            else:
                self._version = None
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
                          'its default config ("containerd config default"), but none was found in PATH. '
                          'Fix: install containerd first.' % path, key='path')
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


def run_transaction(module, edit, ignore_missing_imports=(), allow_plugin_override=False):
    """Apply edit(doc, ledger, ctx) -> dict to the config and exit the module.

    edit mutates doc (a ConfigDocument) and ledger, and returns the module's
    own return values.  It may raise ConfigError for bad input.
    allow_plugin_override is passed to check_tree (containerd_imports).
    """
    require_tomlkit(module)
    params = module.params
    result = dict(changed=False)
    tmp = None
    lock = None
    backup_file = None
    try:
        validate = params.get('validate')
        if validate not in (None, 'auto', 'none') and '%s' not in validate:
            raise ConfigError('validate must contain %%s (replaced by the candidate file), got %r. Nothing was '
                              'written. Fix: e.g. validate: "containerd --config %%s config dump".' % validate,
                              key='validate')
        path = _target_path(module, os.path.abspath(params['path']))
        folder = os.path.dirname(path)
        ctx = Context(module, path)
        if not os.path.isdir(folder):
            if not params.get('create'):
                raise ConfigError('folder %s does not exist (no containerd here?). Fix: install containerd, '
                                  'or set create: true.' % folder, key='path')
            if module.check_mode:
                pass
            else:
                os.makedirs(folder, 0o755)
        lock = lock_or_fail(path, params['lock_timeout'], create=not module.check_mode,
                            fix='Nothing was written. Fix: run as a user who may write to %s (become: true); '
                                'if the lock file is not a regular file, remove it.' % folder)
        clean_stale_temps(path)
        for _attempt in range(MAX_ATTEMPTS):
            original = _read_settled(path)
            if original is not None and len(original) > MAX_CONFIG_BYTES:
                raise ConfigError('%s is %.1f MB; nodeguard edits configs of up to %d MB (containerd\'s default '
                                  'config is about 10 KB). Nothing was written. Fix: check what filled the file; '
                                  'put back a known-good copy with nodeguard.containerd.containerd_baseline '
                                  '(state: restore).' % (path, len(original) / 1048576.0, MAX_CONFIG_BYTES // 1048576),
                                  key='path')
            text = None if original is None else _decode(path, original)
            text, bom = split_bom(text) if text is not None else (None, False)
            if text is not None and not text.strip() and not params.get('create'):
                raise ConfigError('%s is empty: containerd would start with built-in defaults only, without this '
                                  'node\'s settings. Nothing was written. Fix: put back a known-good copy with '
                                  'nodeguard.containerd.containerd_baseline (state: restore), or set create: true '
                                  'to start from the node\'s "containerd config default".' % path, key='path')
            created = False
            if original is None or (params.get('create') and not text.strip()):
                if not params.get('create'):
                    raise ConfigError('%s does not exist. Nothing was written. Fix: set create: true to start '
                                      'from the node\'s "containerd config default", or restore it with '
                                      'nodeguard.containerd.containerd_baseline (state: restore).' % path,
                                      key='path')
                text = _default_config(ctx, path)
                created = True
            doc = ConfigDocument(path, text)
            if bom:
                refused = bom_refused_message(path, ctx.containerd_version, doc.version)
                if refused:
                    raise ConfigError(refused + ' Nothing was written.', key='path')
            ledger = Ledger.load(params['state_dir'], path)
            note = ledger.recover(sha256_bytes(original or b''))
            if note:
                ctx.warn(note)
            values = edit(doc, ledger, ctx) or {}
            result.update(values)
            result['config_version'] = doc.version
            result['plugin'] = doc.layout.cri_plugin
            if doc.changed:
                doc.verify()
            new = (UTF8_BOM if bom else '').encode('utf-8') + doc.text.encode('utf-8')
            file_changed = created or new != original
            if module._diff and file_changed:
                result['diff'] = dict(before='' if original is None else text, after=doc.text,
                                      before_header='%s (%s)' % (path, 'absent' if original is None else 'before'),
                                      after_header='%s (after)' % path)
            if not file_changed:
                if ledger.dirty and not module.check_mode:
                    ledger.save(sha256_bytes(original or b''))
                break
            if module.check_mode:
                result['changed'] = True
                break
            errors = check_tree(path, doc.data, ctx.containerd_version, ignore_missing=ignore_missing_imports,
                                allow_plugin_override=allow_plugin_override)
            if errors:
                raise ConfigError('refusing to write %s: the new config would not load. %s Nothing was written.'
                                  % (path, ' '.join(errors)), key=None, check_errors=errors)
            uid, gid, mode = _stat_owner(module, params)
            try:
                tmp = write_temp(path, new, mode=mode, uid=uid, gid=gid)
            except (IOError, OSError) as exc:
                raise ConfigError('cannot write a temporary file beside %s (%s). Nothing was written; the file '
                                  'is as it was. Fix: free space on that filesystem or make %s writable.'
                                  % (path, exc.strerror, folder))
            checked = run_validate(ctx.run_command, params.get('validate'), ctx.containerd_bin, tmp)
            if checked is not None and checked[1] != 0:
                cmd, rc, out, err = checked
                detail = (err or out).strip().splitlines()
                raise ConfigError('refusing to write %s: validation "%s" failed (rc=%s): %s. Nothing was written.'
                                  % (path, ' '.join(cmd).replace(tmp, '%s'), rc,
                                     ' | '.join(detail[-3:]) or 'no output'), key=None)
            if params.get('backup') and original is not None and backup_file is None:
                backup_file = module.backup_local(path)
            if backup_file:
                result['backup_file'] = backup_file
            ledger_before = read_bytes(ledger.path)
            ledger.save(sha256_bytes(new))
            # compared as late as possible, after every slow step: a writer
            # without our lock (nvidia-ctk) can still slip in before the rename,
            # but not behind the validation, the backup or the ledger write
            if read_bytes(path) != original:
                # another program rewrote the file while we worked: put the
                # ledger back and start over from its content rather than
                # overwrite its change
                if ledger_before is None:
                    remove_quietly(ledger.path)
                else:
                    atomic_write(ledger.path, ledger_before, mode=0o600)
                remove_quietly(tmp)
                tmp = None
                ctx.warn('%s changed while nodeguard was editing it; the edit was applied again on the new '
                         'content' % path)
                result = dict(changed=False)
                continue
            commit_temp(tmp, path)
            tmp = None
            result['changed'] = module.set_fs_attributes_if_different(_file_args(module, path), True)
            break
        else:
            raise ConfigError('%s was changed by another program %d times while nodeguard was editing it (a '
                              'writer that does not take %s, e.g. nvidia-ctk or kata-deploy). Nothing was '
                              'written. Fix: let that program finish, then run again.'
                              % (path, MAX_ATTEMPTS, os.path.basename(lock.lock_path)), key=None)
        if not result['changed'] and os.path.exists(path):
            # mode/owner-only changes; the call itself honours check mode
            result['changed'] = module.set_fs_attributes_if_different(_file_args(module, path), False)
    except ConfigError as exc:
        if tmp:
            remove_quietly(tmp)
        module.fail_json(msg=str(exc), **dict((k, v) for k, v in exc.details.items() if v is not None))
    except LedgerError as exc:
        if tmp:
            remove_quietly(tmp)
        module.fail_json(msg=str(exc))
    except Exception as exc:  # never leave a temp file behind, whatever failed
        if tmp:
            remove_quietly(tmp)
        module.fail_json(msg='nodeguard failed on %s: %s' % (params.get('path'), exc),
                         exception=traceback.format_exc())
    finally:
        if lock is not None:
            lock.release()
    for w in ctx.warnings:
        module.warn(w)
    module.exit_json(**result)
