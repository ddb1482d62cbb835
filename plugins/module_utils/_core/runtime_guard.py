# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The check step's guard: an edit must not take away a runtime another file defines.

An edit of one file can change how containerd reads the others: on 2.x a
version 3 runtimes table in config.toml stops the migration of a version 2
drop-in's runtimes (measured on 2.1); on 1.x an imported CRI table replaces
the main file's.  The guard compares the merged views (_effective) of the
tree before and after the edit, for the node's containerd version.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
    ConfigError,
    version_text,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import file_version

BUILT_IN = 'runc'  # containerd's own default runtime, there whatever the files say


def _containerd_table(view):
    plugin = CRI_V2 if view.replace else CRI_V3_RUNTIME
    return ('plugins', plugin, 'containerd')


def runtimes_in_effect(view):
    """{name: table} of the runtimes the merged view defines."""
    runtimes = get_in(view.merged, _containerd_table(view) + ('runtimes',))
    return dict(runtimes) if isinstance(runtimes, dict) else {}


def default_runtime(view):
    name = get_in(view.merged, _containerd_table(view) + ('default_runtime_name',))
    return name if isinstance(name, str) and name else BUILT_IN


def targeted_runtimes(paths):
    """The runtime names an edit's changed key paths touch (any layout: the name follows ``runtimes``)."""
    names = set()
    for path in paths:
        path = tuple(path)
        for i, part in enumerate(path[:-1]):
            if part == 'runtimes':
                names.add(path[i + 1])
    return names


def _files_defining(view, name):
    return sorted(view.files_behind(_containerd_table(view) + ('runtimes', name)))


def _why(view_after, files, gone):
    """Why the candidate does not run what files define: the model's reason, else the merge rule. gone: some
    runtime is missing from the candidate (not only changed)."""
    for (path, key), why in sorted(view_after.unread.items(), key=lambda item: str(item[0])):
        if path in files and 'runtimes' in key:
            return why
    ver = version_text(view_after.containerd_ver, '?')
    versions = dict((p, file_version(d)) for p, d in view_after.files)
    if not view_after.replace and gone and any(versions.get(f) == 2 for f in files):
        return ('containerd %s drops a version 2 drop-in\'s runtimes once a version 3 runtimes table exists '
                '(it migrates no version 2 runtimes then)' % ver)
    if view_after.replace:
        return 'containerd %s replaces the whole CRI plugin table with the one read last' % ver
    return 'a file read later decides them'


def _why_default(view_after, files, taken, removed=False):
    """Why default_runtime_name names no runtime in the candidate: files define it before the edit; taken: the
    edit takes them all out of the tree; removed: the edit removes that runtime itself."""
    if removed:
        return 'the edit removes it from %s' % ', '.join(files or ['the tree'])
    if not files:
        return 'no file defines it'
    if taken:
        return '%s defines it, and the edit takes that file out of the tree' % ', '.join(files)
    return '%s defines it, and %s' % (', '.join(files), _why(view_after, files, True))


def _fix(view_after, files, target):
    versions = dict((p, file_version(d)) for p, d in view_after.files)
    v2 = [f for f in files if versions.get(f) == 2]
    if not view_after.replace and v2:
        return ('put the runtime in the version 2 drop-in (edit_in: %s), or migrate the drop-ins to version 3 '
                '(containerd config migrate) and run again' % v2[0])
    return 'make the change in the file that defines them (edit_in: %s), or change that file so %s does not ' \
           'override it' % (files[0] if files else 'auto', target)


def refuse_lost_runtimes(view_before, view_after, target, changed_paths, allow_plugin_override=False):
    """Raise ConfigError when the candidate (view_after) loses or alters a runtime in effect before.

    The runtimes the edit itself touches (changed_paths, in the edited
    file's layout) may change, and so may those of a file the edit takes
    out of the tree (an import removed); the default runtime must still name
    one in effect (or containerd's built-in runc).  allow_plugin_override:
    on 1.x the caller accepted that an import replaces plugin tables whole.
    """
    if allow_plugin_override and view_after.replace:
        return
    targeted = targeted_runtimes(changed_paths)
    before, after = runtimes_in_effect(view_before), runtimes_in_effect(view_after)
    removed = set(p for p, _d in view_before.files) - set(p for p, _d in view_after.files)
    lost, files, any_gone = [], set(), False
    for name, table in sorted(before.items()):
        defined_in = set(_files_defining(view_before, name))
        if name in targeted or after.get(name) == table or (defined_in and defined_in <= removed):
            continue
        gone = name not in after and name != BUILT_IN  # containerd keeps its built-in runc, with its defaults
        any_gone = any_gone or gone
        lost.append('%s (%s)' % (name, 'gone' if gone else 'its settings change'))
        files.update(defined_in)
    default = default_runtime(view_after)
    bad_default = default not in after and default != BUILT_IN and (
        default_runtime(view_before) in before or default_runtime(view_before) == BUILT_IN)
    if not lost and not bad_default:
        return
    lost_files = sorted(files)
    default_files = sorted(_files_defining(view_before, default)) if bad_default else []
    default_taken = bool(default_files) and set(default_files) <= removed
    default_removed = bad_default and default in targeted
    parts = []
    if lost:
        parts.append('runtimes in effect now would be lost or altered: %s; they are defined in %s, and %s'
                     % (', '.join(lost), ', '.join(lost_files) or 'containerd\'s defaults',
                        _why(view_after, lost_files, any_gone)))
    if bad_default:
        parts.append('default_runtime_name = "%s" would name no runtime containerd runs, so its CRI plugin '
                     'would fail: %s' % (default, _why_default(view_after, default_files, default_taken,
                                                               default_removed)))
    if not lost and default_removed:
        fix = ('first set default_runtime_name to a runtime that stays (containerd\'s built-in runc always does), '
               'then remove %s' % default)
    elif not lost and default_taken:
        fix = ('keep importing %s, or first set default_runtime_name to a runtime that stays (containerd\'s '
               'built-in runc always does)' % ', '.join(default_files))
    else:
        fix = _fix(view_after, sorted(files | set(default_files)), target)
    raise ConfigError('refusing to write %s: %s. Nothing was written. Fix: %s.' % (target, '; '.join(parts), fix),
                      key=None)
