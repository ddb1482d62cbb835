# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Would containerd load this config?  Checked before any file is replaced.

``containerd config dump`` is necessary but not sufficient (facts note): on
2.x it accepts a missing import that the daemon then refuses, and on 1.x it
accepts a default runtime with no table, which the CRI plugin then refuses.
So the built-in checks here run first, on the candidate and its imports
merged the way the node's containerd merges them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import glob
import os
import re
import shlex
import weakref

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    ConfigError,
    Layout,
    SUPPORTED_VERSIONS,
    TomlParseError,
    bom_refused_message,
    parse_error_message,
    parse_toml,
    split_bom,
    version_line,
    version_text,
)

GLOB_CHARS = re.compile(r'[*?\[]')
_VERSION_RE = re.compile(r'\bv?(\d+)\.(\d+)(?:\.(\d+))?')


def is_glob(entry):
    return bool(GLOB_CHARS.search(entry))


def resolve_import(entry, importing_file):
    """An imports entry as an absolute path, relative to the importing file."""
    if os.path.isabs(entry):
        return os.path.normpath(entry)
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(importing_file)), entry))


# containerd's working folder under systemd: 1.6 expands a relative glob
# entry against it, not against the importing file (measured on 1.6.20;
# 1.7 and 2.x use the importing file's folder)
DAEMON_CWD = '/'


def import_pattern(entry, importing_file, containerd_ver=None):
    """The path or glob an entry names, as the node's containerd resolves it.

    1.6 expands a relative glob against its working folder (DAEMON_CWD); 1.7
    and 2.x, and every plain file, against the importing file's folder.
    """
    if is_glob(entry) and not os.path.isabs(entry) and containerd_ver is not None and tuple(containerd_ver) < (1, 7):
        return os.path.normpath(os.path.join(DAEMON_CWD, entry))
    return resolve_import(entry, importing_file)


def expand_import(entry, importing_file, containerd_ver=None):
    """The files an entry loads, in containerd's order (globs sorted)."""
    full = import_pattern(entry, importing_file, containerd_ver)
    if is_glob(entry):
        return sorted(glob.glob(full))
    return [full]


def version_word(out):
    """The version in ``containerd --version`` output, without its v (``1.6.20~ds1``, ``2.1.9``), or None.

    "containerd github.com/containerd/containerd 1.6.20~ds1 ..." or "... v2.1.9 ...".
    """
    for word in (out or '').split()[1:]:
        if _VERSION_RE.match(word):
            return word.lstrip('v')
    return None


# The answers of `containerd --version`, per asker (the module behind a run_command) and binary file: one
# module run asks the same binary several times (the edit, its baseline, the report), and each exec of the
# Go binary costs tens of milliseconds on a busy node.
_VERSION_ANSWERS = weakref.WeakKeyDictionary()


def _asker(run_command):
    """The module behind a context's run_command (ctx.run_command, module.run_command), else the callable."""
    owner = getattr(run_command, '__self__', run_command)
    return getattr(owner, 'module', owner)


def version_answer(run_command, binary):
    """(rc, out, err) of ``binary --version``, asked once per asker and binary file (path, size, mtime); a
    failed answer is not kept, so the next caller asks again."""
    try:
        st = os.stat(binary)
        kept = _VERSION_ANSWERS.setdefault(_asker(run_command), {})
    except (OSError, TypeError):  # TypeError: an asker that takes no weak reference
        return run_command([binary, '--version'])
    key = (os.path.realpath(binary), st.st_size, st.st_mtime)
    if key not in kept:
        answer = run_command([binary, '--version'])
        if answer[0] != 0:
            return answer
        kept[key] = answer
    return kept[key]


def containerd_version(run_command, binary):
    """(major, minor) of the node's containerd, or None if unknown."""
    rc, out, _err = version_answer(run_command, binary)
    word = version_word(out) if rc == 0 else None
    if word is None:
        return None
    m = _VERSION_RE.match(word)
    return int(m.group(1)), int(m.group(2))


def replaces_plugin_tables(containerd_ver, config_version):
    """True when imports replace whole plugin tables (containerd < 2.0)."""
    if config_version >= 3:
        return False  # only containerd 2.x reads a version 3 config
    if containerd_ver is not None:
        return containerd_ver[0] < 2
    # unknown binary: a version 2 file may be read by 1.x, so assume the worst
    return config_version < 3


def describe_lost(main_table, import_table, cri_id):
    """What the main file's plugin table has that the import's lacks."""
    lost = []
    if cri_id is not None:
        main_rt = get_in(main_table, ('containerd', 'runtimes')) or {}
        imp_rt = get_in(import_table, ('containerd', 'runtimes')) or {}
        for name in main_rt:
            if name not in imp_rt:
                lost.append('runtime %r' % name)
            else:
                for k in sorted(set(main_rt[name].get('options', {}) or {})
                                - set(imp_rt[name].get('options', {}) or {})):
                    lost.append('runtimes.%s.options.%s' % (name, k))
    for k in main_table:
        if k not in import_table and not (cri_id is not None and k == 'containerd'):
            lost.append(k)
    if cri_id is not None:
        for k in (main_table.get('containerd') or {}):
            if k != 'runtimes' and k not in (import_table.get('containerd') or {}):
                lost.append('containerd.' + k)
    return lost


def imports_not_a_list(path, value):
    """The message for a file whose imports is not a list: containerd (1.6, 1.7, 2.1) refuses the whole config."""
    return ('%s: "imports" must be an array of file paths, found %r: containerd refuses the whole config. Fix: '
            'write it as a list, imports = ["%s"].'
            % (path, value, value if isinstance(value, str) else '/etc/containerd/conf.d/*.toml'))


def import_entries(data):
    """The string entries of a file's imports list (nothing when it is not a list)."""
    value = data.get('imports')
    return [e for e in value if isinstance(e, str)] if isinstance(value, list) else []


def imported_by(path, data, containerd_ver=None):
    """The files a file's imports entries name, in order (globs expanded as the node's containerd does)."""
    out = []
    for entry in import_entries(data):
        out.extend(f for f in expand_import(entry, path, containerd_ver) if f not in out)
    return out


def self_imports(path, data, containerd_ver=None):
    """[path] when the file's imports name the file itself (an entry or a glob), else [].

    NVIDIA's v1.17.8 installer writes imports = ["/etc/containerd/config.toml"]
    at the top of the file it manages. containerd loads each file once, so the
    entry adds nothing on the node; but a copy of the file at another path
    (a candidate, a backup) reads the live file through it.
    """
    me = os.path.normpath(os.path.abspath(path))
    return [me] if me in imported_by(me, data, containerd_ver) else []


def self_import_warning(path):
    """The one warning for a config that imports itself (readiness, baseline check and the edits say it)."""
    return ('%s imports itself (imports lists its own path; NVIDIA\'s container toolkit before v1.18 writes '
            'that): containerd loads each file once, so the entry adds nothing, but a copy of the file checked '
            'at another path would read the live file through it; nodeguard validates its candidate with the '
            'entry pointing at the candidate. Fix: once the toolkit no longer manages the file, delete %s from its '
            'imports by hand (containerd_imports removes only entries an owner recorded, or whose file is '
            'gone).' % (path, path))


def copies_for_containerd(files, texts, committed, write, containerd_ver=None):
    """The main copy to hand containerd so that it reads the candidate tree as it will be read in place.

    files: [(path, data)] of the candidate tree in load order, main first;
    texts: {path: text} of the files being replaced (main always);
    committed: {path: temporary file} of candidates written already (a
    drop-in's, renamed on commit); write(path, text) -> a temporary file
    beside path (the transaction's temp(): a failure is its ConfigError).
    Returns None when no file of the tree imports a file being replaced.

    containerd loads each path once, breadth first, so a self-import adds
    nothing in place; at a temporary path it would read the live file.  The
    main copy lists every file of the tree (each copy in its file's place),
    so a copy's own entries for copied files add nothing either: they are
    left out, and each copy is written once, drop-ins before the main copy
    that names them.
    """
    main = files[0][0]
    needs = [p for p, d in files if any(f in texts for f in imported_by(p, d, containerd_ver))]
    if not needs:
        return None
    if needs == [main] and set(texts) == set([main]):
        return write(main, without_imports_of(texts[main], files[0][1], main, set([main]), containerd_ver))
    copied = set(texts) | set(committed) | set(needs) | set([main])
    moved = dict(committed)
    for path, data in files[1:]:
        if path in needs:
            text = texts[path] if path in texts else _read_text(path)
            moved[path] = write(path, without_imports_of(text, data, path, copied, containerd_ver))
    # config.toml with its imports spelled out (every file listed, each copy in its file's place)
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlText
    doc = TomlText(texts[main], copy.deepcopy(files[0][1]))
    doc.set_value(('imports',), [moved.get(p, p) for p, _d in files[1:]])
    return write(main, doc.text)


def without_imports_of(text, data, path, copied, containerd_ver=None):
    """The text of a file with its imports of the files in copied left out (a glob spelled out to its other
    matches); the text itself when it imports none of them."""
    entries, changed = [], False
    for entry in (data.get('imports') if isinstance(data.get('imports'), list) else []):
        files = expand_import(entry, path, containerd_ver) if isinstance(entry, str) else []
        if not any(f in copied for f in files):
            entries.append(entry)
            continue
        changed = True
        entries.extend(f for f in files if f not in copied)
    if not changed:
        return text
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import TomlText
    doc = TomlText(text, copy.deepcopy(data))
    doc.set_value(('imports',), entries)
    return doc.text


def _read_text(path):
    try:
        with open(path, 'rb') as f:
            return split_bom(f.read().decode('utf-8'))[0]
    except (IOError, OSError) as exc:
        raise ConfigError('cannot read %s (%s) to check the candidate config with containerd. Nothing was '
                          'written. Fix: make %s readable by the user nodeguard runs as.'
                          % (path, exc.strerror, path), key=None)
    except UnicodeDecodeError as exc:
        raise ConfigError('cannot read %s: it is not UTF-8 (%s). Nothing was written. Fix: save it as UTF-8.'
                          % (path, exc), key=None)


class ImportProblem(object):
    def __init__(self, entry, importing_file, message, whole=False):
        self.entry = entry
        self.importing_file = importing_file
        self.message = message
        self.whole = whole      # containerd refuses the whole config (not just this entry)


def _edit_in_for(importing_file, main_path):
    """containerd_imports' option that reaches an entry of importing_file (a drop-in of main_path)."""
    return '' if importing_file == main_path else 'path: %s, edit_in: %s, ' % (main_path, importing_file)


def load_tree(main_path, main_data, containerd_ver=None, overrides=None):
    """The main file and its imports, breadth first, as containerd loads them.

    Returns (files, problems): files is a list of (path, data) in merge order;
    problems lists imports that are missing or unreadable (or that start with
    a byte order mark containerd_ver cannot parse).  overrides maps a file's
    absolute path to the data to use instead of reading it (a candidate
    drop-in that is not written yet).
    """
    overrides = overrides or {}
    files = [(os.path.abspath(main_path), main_data)]
    seen = set([os.path.abspath(main_path)])
    problems = []
    queue = [(os.path.abspath(main_path), main_data)]
    while queue:
        path, data = queue.pop(0)
        value = data.get('imports')
        if value is not None and not isinstance(value, list):
            # a string would be walked letter by letter (its '*' a glob), a number would not iterate
            problems.append(ImportProblem(value, path, imports_not_a_list(path, value), whole=True))
            continue
        for entry in value or []:
            if not isinstance(entry, str):
                problems.append(ImportProblem(entry, path, '%s: imports entry %r is not a string' % (path, entry)))
                continue
            for full in expand_import(entry, path, containerd_ver):
                if full in seen:
                    continue
                seen.add(full)
                if full in overrides:
                    files.append((full, overrides[full]))
                    queue.append((full, overrides[full]))
                    continue
                try:
                    with open(full, 'rb') as f:
                        text = f.read().decode('utf-8')
                except IOError as exc:
                    problems.append(ImportProblem(entry, path, '%s imports %s, which cannot be read (%s): '
                                                  'containerd would refuse to start. Fix: create the file, '
                                                  'or remove the entry with nodeguard.containerd.'
                                                  'containerd_imports (%sstate: absent, or prune_missing: true).'
                                                  % (path, full, exc.strerror, _edit_in_for(path, files[0][0]))))
                    continue
                except UnicodeDecodeError:
                    problems.append(ImportProblem(entry, path, '%s imports %s, which is not UTF-8 text.'
                                                  % (path, full)))
                    continue
                text, bom = split_bom(text)
                refused = bom_refused_message(full, containerd_ver) if bom else None
                if refused:
                    problems.append(ImportProblem(entry, path, refused + ' (imported by %s)' % path))
                    continue
                try:
                    sub = parse_toml(text)
                except TomlParseError as exc:
                    problems.append(ImportProblem(entry, path, parse_error_message(full, exc)
                                                  + ' (imported by %s)' % path))
                    continue
                files.append((full, sub))
                queue.append((full, sub))
    return files, problems


GENERATED_MARKERS = (
    ('k3s', '# File generated by k3s'),
    ('RKE2', '# File generated by rke2'),
)


def refuse_generated(path, text):
    """k3s and RKE2 write config.toml anew from their template at every start: edits there vanish."""
    head = '\n'.join(text.lstrip(u'\ufeff').splitlines()[:5]).lower()
    for product, marker in GENERATED_MARKERS:
        if marker.lower() in head:
            folder = os.path.dirname(path)
            raise ConfigError(
                '%s is generated by %s (its header says so): %s writes it again from its template at every start, '
                'so an edit here would vanish at the next restart. Nothing was written. Fix: put the change in '
                '%s/config.toml.tmpl (a Go template, not TOML: start it with {{ template "base" . }} and add your '
                'tables after it), then restart %s; %s also detects the NVIDIA runtime by itself.'
                % (path, product, product, folder, product.lower(), product), key='path', generated_by=product)


def refuse_unreadable_version(path, config_version, containerd_ver):
    """A config version the node's containerd cannot read is refused (1.x shows only defaults for version 3)."""
    if containerd_ver is None:
        return
    newest = 2 if containerd_ver[0] < 2 else (3 if containerd_ver < (2, 3) else 4)
    if config_version > newest:
        raise ConfigError(
            '%s declares version = %d, but the node\'s containerd is %d.%d, which reads config version %d at most '
            '(containerd 1.x silently ignores a version 3 layout and runs on built-in defaults: the CRI settings '
            'would be lost). Nothing was written. Fix: write this node\'s config in version %d layout (start from '
            '"containerd config default" on the node), or upgrade containerd first.'
            % (path, config_version, containerd_ver[0], containerd_ver[1], newest, newest),
            key='version', found=config_version)


def file_version(data):
    v = version_line(data)
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


def reads_v3(containerd_ver):
    """Whether the node's containerd is 2.x (it reads version 3 files)."""
    return containerd_ver is not None and containerd_ver[0] >= 2


def node_text(containerd_ver):
    """The node's containerd as the messages name it ("1.7"); "1.x" when unknown (1.x may read the file)."""
    return version_text((containerd_ver or ())[:2], '1.x')


def _higher_version_fate(containerd_ver, version, main_version):
    """What containerd does with a drop-in whose version is higher than the main file's (measured on 1.6, 1.7,
    2.1; 2.3 from its documented rule). The config.toml man page forbids it for every version."""
    if containerd_ver is None:
        return 'containerd 1.7 refuses it and 1.6 does not read it'  # a version 2 main file: 1.x likely
    if tuple(containerd_ver[:2]) >= (2, 3):
        return ('containerd %s does not start ("drop-in config version %d higher than root config version %d")'
                % (node_text(containerd_ver), version, main_version))
    if containerd_ver[0] >= 2:
        return ('the containerd config.toml man page forbids it: containerd %s runs it today, but containerd 2.3 '
                'and later do not start on it, so the node breaks at its next containerd upgrade'
                % node_text(containerd_ver))
    if tuple(containerd_ver[:2]) >= (1, 7):
        return 'containerd %s refuses it' % node_text(containerd_ver)
    return ('containerd %s does not read it (it knows no version %d plugin ids), so nothing in it takes effect'
            % (node_text(containerd_ver), version))


def _higher_version_fix(containerd_ver, version, main_path, main_version):
    """Give the drop-in the main file's version; or, where the node reads the higher one, raise the main file's."""
    fix = 'write the drop-in with version = %d (the main config\'s version and its plugin ids)' % main_version
    first_reader = (2, 3) if version >= 4 else (2, 0)
    if containerd_ver is not None and tuple(containerd_ver[:2]) >= first_reader:
        fix += (', or raise %s to version = %d (containerd config migrate writes it in that version)'
                % (main_path, version))
    return fix


# the full ids of the short plugin names a version 1 config used
FULL_PLUGIN_IDS = {'cri': 'io.containerd.grpc.v1.cri'}
ID_FIX = '(`containerd config default` lists the ids).'


def _full_id(name):
    return FULL_PLUGIN_IDS.get(name, 'io.containerd.<type>.<version>.%s' % name)


def _is_full_id(name, containerd_ver):
    """Whether containerd takes name as a plugin id (measured with config dump): 2.x any id with a dot in it;
    1.7 io.containerd.<type>.<version> and more; 1.6 (and an unknown 1.x) four dotted parts at least."""
    if reads_v3(containerd_ver):
        return '.' in name
    if containerd_ver is not None and tuple(containerd_ver[:2]) >= (1, 7) and not name.startswith('io.containerd.'):
        return False
    return len(name.split('.')) >= 4


def short_plugin_ids(path, data, is_main, containerd_ver):
    """Errors for short plugin ids in a file containerd refuses them in (measured on 1.6, 1.7 and 2.1).

    A file is checked as containerd reads it: the main file by its version;
    an import without a version as version 2 on 1.x (it takes the main
    file's) and as version 1 on 2.x; an import that says version = 1 may
    use short ids everywhere. disabled_plugins and required_plugins need
    full ids on every containerd; plugins.<id> only on 1.x (2.x keeps an
    unknown id as a table of its own). What makes an id full depends on the
    binary (_is_full_id).
    """
    version = version_line(data)
    if version is None and not is_main:
        version = 1 if reads_v3(containerd_ver) else 2
    if file_version({'version': version}) < 2:
        return []
    node = node_text(containerd_ver)
    errors = []
    for key, word in (('disabled_plugins', 'disabled'), ('required_plugins', 'required')):
        value = data.get(key)
        for name in (value if isinstance(value, list) else []):
            if isinstance(name, str) and not _is_full_id(name, containerd_ver):
                errors.append('%s: %s names "%s", not a full plugin id: containerd %s refuses the whole config '
                              '("invalid %s plugin URI"). Fix: name it in full, "%s" %s'
                              % (path, key, name, node, word, _full_id(name), ID_FIX))
    if not reads_v3(containerd_ver):
        plugins = data.get('plugins')
        for name in (plugins if isinstance(plugins, dict) else {}):
            if not _is_full_id(name, containerd_ver):
                errors.append('%s: plugins."%s" is not a full plugin id: containerd %s refuses the whole config '
                              '("invalid plugin key URI") of a file it reads as version 2. Fix: write '
                              'plugins."%s" %s' % (path, name, node, _full_id(name), ID_FIX))
    return errors


def _read_as_version_2(data):
    """A drop-in with no version line as containerd 1.x merges it: version 1's plugins.cri is the CRI plugin."""
    plugins = data.get('plugins')
    if isinstance(plugins, dict) and 'cri' in plugins:
        plugins = dict(plugins)
        plugins[CRI_V2] = plugins.pop('cri')
        return dict(data, plugins=plugins)
    return data


def _last_plugin_tables(files, replace):
    """{plugin id: index of the last file that defines that table} (1.x runs that file's whole table)."""
    last = {}
    for index, (_path, data) in enumerate(files):
        if index and replace and file_version(data) == 1:
            data = _read_as_version_2(data)
        plugins = data.get('plugins')
        for plugin_id, table in (plugins.items() if isinstance(plugins, dict) else ()):
            if isinstance(table, dict):
                last[plugin_id] = index
    return last


def check_tree(main_path, main_data, containerd_ver, ignore_missing=(), allow_plugin_override=False, overrides=None):
    """Built-in checks of a candidate config; returns a list of error messages.

    allow_plugin_override: skip the containerd 1.x check that an import's
    plugins.<id> table replaces the main file's table whole (the caller was
    told it is intended); every other check still runs.
    """
    errors = []
    files, problems = load_tree(main_path, main_data, containerd_ver, overrides=overrides)
    errors.extend(p.message for p in problems if p.entry not in ignore_missing)
    main_version = file_version(main_data)
    replace = replaces_plugin_tables(containerd_ver, main_version)

    # containerd's own default config has a runc runtime.  2.x deep-merges
    # the files over it, so it is always there; 1.x decodes the final CRI
    # table over it and loses it when that table has a runtimes table of
    # its own (measured on 1.6: the CRI plugin then fails to load).
    # only the runtimes' names matter here: is the default one of them
    builtin = {'runc'}
    runtimes = set() if replace else set(builtin)
    default, default_set, rts_defined = None, False, False
    main_plugins = main_data.get('plugins') or {}
    last_table = _last_plugin_tables(files, replace)
    for index, (path, data) in enumerate(files):
        errors.extend(short_plugin_ids(path, data, not index, containerd_ver))
        version = file_version(data)
        versionless = index and replace and version == 1
        if versionless:
            # 1.x merges a drop-in with no version line as version 2 (version 1's CRI id renamed): its CRI table
            # replaces the one before it like any other (measured on 1.6 and 1.7); what it replaces is the
            # edit's to keep (an edit goes into that drop-in), so only its runtimes count below
            version, data = 2, _read_as_version_2(data)
        if index and version > main_version:
            errors.append('%s has version = %d, higher than the main config %s (version = %d): %s. Fix: %s.'
                          % (path, version, main_path, main_version,
                             _higher_version_fate(containerd_ver, version, main_version),
                             _higher_version_fix(containerd_ver, version, main_path, main_version)))
            continue
        if version not in SUPPORTED_VERSIONS:
            continue  # the main file's version was checked when it was read
        layout = Layout(version)
        cri = get_in(data, layout.cri)
        if index and replace and not allow_plugin_override and not versionless:
            for plugin_id, table in (data.get('plugins') or {}).items():
                # only the last file that defines the table decides what containerd runs
                if plugin_id in main_plugins and isinstance(table, dict) and last_table.get(plugin_id) == index:
                    lost = describe_lost(main_plugins[plugin_id], table,
                                         plugin_id if plugin_id == layout.cri_plugin else None)
                    if lost:
                        errors.append(
                            '%s defines plugins."%s", which on containerd %s replaces the whole table of '
                            'the main config %s: %s would be lost. Fix: put the change in %s itself, or '
                            'make the drop-in carry the whole plugin table.'
                            % (path, plugin_id, node_text(containerd_ver),
                               main_path, ', '.join(lost), main_path))
        if cri is None:
            continue
        rts = get_in(data, layout.runtimes)
        dflt = get_in(data, layout.default_runtime_name)
        if replace:
            runtimes = set(rts) if isinstance(rts, dict) else set()
            rts_defined = isinstance(rts, dict)
            default, default_set = dflt, dflt is not None
        else:
            runtimes.update(rts if isinstance(rts, dict) else ())
            if dflt is not None:
                default, default_set = dflt, True
    if replace and not rts_defined:
        runtimes = set(builtin)
    name = default if default_set else 'runc'
    if name not in runtimes:
        said = ('default_runtime_name is %r' % name if default_set
                else 'default_runtime_name is not set, so containerd uses \'runc\',')
        why = (' (containerd %s drops its built-in runc when the file has a runtimes table)'
               % node_text(containerd_ver) if replace and name == 'runc' else '')
        errors.append('%s: %s but no runtime table of that name is defined in the file or its imports%s: '
                      'containerd\'s CRI plugin would fail to load and no pod could start. Fix: define the '
                      'runtime, or point default_runtime_name at one of: %s.'
                      % (main_path, said, why, ', '.join(sorted(runtimes)) or '(none defined)'))
    return errors


def check_warnings(main_path, main_data, containerd_ver, overrides=None, files=None):
    """What the built-in checks warn of in a candidate tree without refusing it (each message names its file).

    files: the tree's [(path, data)] when the caller has read it already (the engine's view of the candidate).
    """
    if files is None:
        files, _problems = load_tree(main_path, main_data, containerd_ver, overrides=overrides)
    warnings = []
    for path, data in files:
        if self_imports(path, data, containerd_ver):
            warnings.append(self_import_warning(path))
    warnings.extend(shim_env_warnings(files, containerd_ver))
    return warnings


TASK_PLUGIN = 'io.containerd.runtime.v2.task'
SHIM_MANAGER = 'io.containerd.shim.v1.manager'


def shim_env_warnings(files, containerd_ver):
    """containerd 2.3.4: migrating a file to version 4 with an io.containerd.runtime.v2.task table present resets
    io.containerd.shim.v1.manager, which drops the shims' env (and version 2's sched_core) (facts note)."""
    if containerd_ver is not None and tuple(containerd_ver[:2]) < (2, 3):
        return []
    task = [p for p, d in files if file_version(d) < 4 and isinstance(get_in(d, ('plugins', TASK_PLUGIN)), dict)]
    env = [p for p, d in files if get_in(d, ('plugins', SHIM_MANAGER, 'env')) is not None
           or get_in(d, ('plugins', TASK_PLUGIN, 'sched_core')) is not None]
    if not task or not env:
        return []
    return ['%s has a plugins."%s" table and %s sets the shims\' env (plugins."%s".env or sched_core): containerd '
            '2.3.4 resets %s when it migrates a version 2 or 3 file with that table to version 4, so the shims '
            'start without that env. Fix: move the file to version 4 (containerd config migrate), or remove the '
            'empty task table, and check the shims\' env with containerd config dump.'
            % (', '.join(task), TASK_PLUGIN, ', '.join(env), SHIM_MANAGER, SHIM_MANAGER)]


# The validate option: auto (the node's "containerd config dump"), load (that
# and a real start), none, or a command with %s for the candidate file.
VALIDATE_WORDS = (None, 'auto', 'none', 'load')


def require_placeholder(validate):
    """The one %s rule: a validate command must name the candidate file, or nothing could be checked."""
    if validate not in VALIDATE_WORDS and '%s' not in validate:
        raise ConfigError('validate must contain %%s (replaced by the candidate file), got %r. Nothing was '
                          'written. Fix: e.g. validate: "containerd --config %%s config dump".' % validate,
                          key='validate')


def validate_command(validate, containerd_bin, candidate_path):
    """The command that judges candidate_path, or None (validation off, or auto without a binary)."""
    if validate in (None, 'none'):
        return None
    if validate in ('auto', 'load'):
        return [containerd_bin, '--config', candidate_path, 'config', 'dump'] if containerd_bin else None
    require_placeholder(validate)
    return [arg.replace('%s', candidate_path) for arg in shlex.split(validate)]


def validation_failed(cmd, rc, out, err, candidate_path, real=None):
    """The one message for a validate command that refused the candidate (the candidate shown as %s)."""
    real = real or (lambda s: s)
    lines = [real(line) for line in (err or out or '').strip().splitlines() if line.strip()]
    return 'validation "%s" failed (rc=%s): %s' % (' '.join(cmd).replace(candidate_path, '%s'), rc,
                                                   ' | '.join(lines[-3:]) or 'no output')


def run_validate(run_command, validate, containerd_bin, candidate_path):
    """Run the user's or containerd's own validation on the candidate file.

    Returns (command, rc, stdout, stderr) or None when validation is off.
    """
    cmd = validate_command(validate, containerd_bin, candidate_path)
    if cmd is None:
        return None
    rc, out, err = run_command(cmd)
    return cmd, rc, out, err
