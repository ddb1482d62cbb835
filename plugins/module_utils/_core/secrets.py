# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one redaction rule: which config values are secrets, and how they are kept out of output.

containerd keeps registry credentials in its CRI (v2) or images (v3, v4)
plugin's ``registry.configs."<host>".auth`` tables (and in the older
``registry.auths."<host>"``): ``password``, ``auth`` and ``identitytoken``
are secrets; ``username`` is not (masking a short common word would mangle
every message it appears in). A user adds paths of their own with the
``secret_keys`` option: dotted TOML paths where ``*`` stands for one key,
and a path that names a table makes every value under it a secret.

Modules hand every secret value they read to ``module.no_log_values``
(``bind`` once, then ``note_data`` for each file read or built): Ansible then
masks those values wherever they appear in the module's output (diffs,
messages, warnings, return values, the invocation's arguments), in check
mode too. Files written on the controller (fetched baselines, reports) go
through ``redact_text`` / ``redact``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    dotted_path,
    parse_dotted_key,
    parse_raw_value,
    plain,
    render_value,
)

MASK = '********'
# Ansible masks a no-log value wherever it appears in the output: a value of 1-3 characters would mangle every
# message (a one-letter value masks that letter everywhere), so such a value is not masked (docs/secrets.md)
MIN_LENGTH = 4
SECRET_FIELDS = ('password', 'auth', 'identitytoken')
REGISTRY_PLUGINS = ('io.containerd.grpc.v1.cri', 'io.containerd.cri.v1.images')
BUILTIN_PATTERNS = tuple(
    [('plugins', plugin, 'registry', 'configs', '*', 'auth', field)
     for plugin in REGISTRY_PLUGINS for field in SECRET_FIELDS]
    + [('plugins', plugin, 'registry', 'auths', '*', field) for plugin in REGISTRY_PLUGINS for field in SECRET_FIELDS]
)

# the module of this process (one module per process), and what was noted before it was bound
_STATE = {'module': None, 'patterns': BUILTIN_PATTERNS, 'pending': set(), 'noted': set()}


class SecretKeyError(ValueError):
    pass


def parse_patterns(secret_keys):
    """The built-in secret paths plus the user's (dotted TOML paths, ``*`` for one key)."""
    patterns = list(BUILTIN_PATTERNS)
    for text in secret_keys or []:
        try:
            parts = split_pattern(str(text))
        except ValueError as exc:
            raise SecretKeyError('secret_keys: %r is not a dotted TOML path (%s). Fix: write it as containerd\'s '
                                 'config spells it, for example plugins."io.containerd.grpc.v1.cri".registry.'
                                 'configs.*.auth.password' % (text, exc))
        if parts and parts not in patterns:
            patterns.append(parts)
    return tuple(patterns)


def split_pattern(text):
    """A dotted TOML path whose bare ``*`` parts stand for any one key: its parts."""
    parts, pos, text = [], 0, text.strip()
    while pos <= len(text):
        while pos < len(text) and text[pos] in ' \t':
            pos += 1
        if pos < len(text) and text[pos] in '"\'':
            end = text.find(text[pos], pos + 1)
            while text[pos] == '"' and end > 0 and text[end - 1] == '\\':
                end = text.find('"', end + 1)
            if end < 0:
                raise ValueError('unterminated quote at offset %d' % pos)
            raw = text[pos:end + 1]
            parts.append(json.loads(raw) if raw[0] == '"' else raw[1:-1])
            pos = end + 1
        else:
            end = text.find('.', pos)
            end = len(text) if end < 0 else end
            part = text[pos:end].strip()
            if not part or not all(c.isalnum() or c in '_-' for c in part) and part != '*':
                raise ValueError('bad key %r at offset %d' % (part, pos))
            parts.append(part)
            pos = end
        while pos < len(text) and text[pos] in ' \t':
            pos += 1
        if pos < len(text) and text[pos] != '.':
            raise ValueError('"." expected at offset %d' % pos)
        pos += 1
    return tuple(parts)


def _covers(pattern, path):
    """pattern names path itself or a table above it."""
    if len(pattern) > len(path):
        return False
    return all(p == '*' or p == k for p, k in zip(pattern, path))


def is_secret_path(path, patterns=None):
    patterns = _STATE['patterns'] if patterns is None else patterns
    return any(_covers(p, tuple(path)) for p in patterns)


def secret_leaves(data, patterns=None, prefix=()):
    """[(path, value)] of every secret value in data (plain or tomlkit dicts), in document order."""
    out = []
    if not isinstance(data, dict):
        return out
    for key, value in data.items():
        path = prefix + (str(key),)
        if isinstance(value, dict):
            out.extend(secret_leaves(value, patterns, path))
        elif is_secret_path(path, patterns):
            out.append((path, value))
    return out


def _plain(value):
    if value is None:
        return None
    try:
        return plain(value)
    except TomlLayoutError:
        return str(value)


def _forms(value):
    """The texts a secret value may be written as: itself, its TOML and JSON escaped spellings."""
    value = _plain(value)
    if isinstance(value, (list, tuple)):
        return [f for v in value for f in _forms(v)]
    if isinstance(value, dict) or value is None or isinstance(value, bool):
        return []
    text = value if isinstance(value, str) else str(value)
    forms = set([text])
    if isinstance(value, str):
        forms.add(render_value(value)[1:-1])
        forms.add(json.dumps(value)[1:-1])
    return [f for f in forms if len(f.strip()) >= MIN_LENGTH]


def secret_values(data, patterns=None):
    """Every text under which data's secret values may appear."""
    out = set()
    for _path, value in secret_leaves(data, patterns):
        out.update(_forms(value))
    return out


# ------------------------------------------------------------ the module's no_log_values
def bind(module):
    """The module of this run: its secret_keys, and every value noted so far, into its no_log_values."""
    params = getattr(module, 'params', None) or {}
    if _STATE['module'] is not module:
        _STATE['noted'] = set(_STATE['pending'])  # a new run (one per process; several in a unit test)
    _STATE['module'] = module
    _STATE['patterns'] = parse_patterns(params.get('secret_keys'))
    _add_no_log(module, _STATE['pending'])
    _STATE['pending'] = set()
    note_params(params)


def _add_no_log(module, values):
    target = getattr(module, 'no_log_values', None)
    if target is not None:
        target.update(values)


def patterns():
    return _STATE['patterns']


def note_values(values):
    _STATE['noted'].update(values)
    module = _STATE['module']
    if module is None:
        _STATE['pending'].update(values)
    else:
        _add_no_log(module, values)


def note_data(data):
    """data's secret values (a file read, a candidate built) are masked in this run's output."""
    note_values(secret_values(data))


def raw_values(path, raw, patterns=None):
    """The texts of a raw TOML value recorded for a key (a ledger's prior or value) when the key is a secret."""
    if not isinstance(raw, str) or not isinstance(path, (list, tuple)) or not is_secret_path(path, patterns):
        return set()
    try:
        return set(_forms(parse_raw_value(raw)))
    except Exception:  # not a value text: masked as written
        return set([raw])


def record_values(records, patterns=None):
    """The secret priors and values a ledger's key records hold."""
    out = set()
    for rec in records or []:
        if isinstance(rec, dict):
            for field in ('prior', 'value'):
                out.update(raw_values(rec.get('path'), rec.get(field), patterns))
    return out


def note_records(records):
    note_values(record_values(records))


def note_text(text):
    """The secret values of a TOML text (a drop-in's content given as an option)."""
    try:
        import tomlkit
        data = plain(tomlkit.parse(text))
    except Exception:  # not TOML (the module says so later): nothing to learn from it
        return
    note_data(data)


def note_params(params):
    """Secrets a task gives in its own arguments: a setting whose key is a secret path, a drop-in's content."""
    settings = list(params.get('settings') or [])
    if params.get('key') is not None:
        settings.append(dict(key=params.get('key'), value=params.get('value'), raw=params.get('raw')))
    for entry in settings:
        if not isinstance(entry, dict) or entry.get('value') is None:
            continue
        try:
            path = parse_dotted_key(str(entry.get('key')))
        except (TomlLayoutError, ValueError, IndexError):
            continue
        if is_secret_path(path):
            note_values(_forms(entry['value']))
    contents = [params.get('content')] + [d.get('content') for d in params.get('dropins') or []
                                          if isinstance(d, dict)]
    for content in contents:
        if isinstance(content, str):
            note_text(content)
    # a drop-in the task replaces or removes: its diff quotes the old text, which no import may reach
    dropins = [params.get('dropin')] + list(params.get('dropins') or [])
    for path in [d.get('path') if isinstance(d, dict) else d for d in dropins]:
        note_file(path)


def note_file(path, limit=4 * 1024 * 1024):
    """The secrets of a TOML file on the node (bounded: a huge file is refused later anyway)."""
    try:
        if not isinstance(path, str) or not os.path.isfile(path) or os.path.getsize(path) > limit:
            return
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8-sig')
    except (IOError, OSError, UnicodeDecodeError):
        return
    note_text(text)


def mark_secret_options(argument_spec):
    """argument_spec with the options that carry a secret in this task made no_log.

    AnsibleModule logs its arguments to the node's journal while it starts,
    before bind() could note anything; a no_log option is logged (and returned
    in the invocation) as a placeholder. So, read from the task's arguments
    (which Ansible parses once and keeps): ``value`` when ``key`` is a secret
    path, every ``settings`` entry's ``value`` when one entry's key is, and
    ``content`` (also of ``dropins`` entries) when the TOML text holds a
    secret. Anything unreadable is left to AnsibleModule to report.
    """
    try:
        from ansible.module_utils.basic import _load_params
        params = _load_params()
        patterns = parse_patterns(params.get('secret_keys'))
    except BaseException:  # AnsibleModule reads the same arguments and says what is wrong with them
        return argument_spec
    spec = dict(argument_spec)
    if 'value' in spec and _is_secret_key(params.get('key'), patterns) and params.get('value') is not None:
        spec['value'] = dict(spec['value'], no_log=True)
    entries = params.get('settings') if isinstance(params.get('settings'), list) else []
    if 'settings' in spec and any(isinstance(e, dict) and _is_secret_key(e.get('key'), patterns) for e in entries):
        spec['settings'] = _suboption_no_log(spec['settings'], 'value')
    if 'content' in spec and _holds_secret(params.get('content'), patterns):
        spec['content'] = dict(spec['content'], no_log=True)
    dropins = params.get('dropins') if isinstance(params.get('dropins'), list) else []
    if _suboptions(spec.get('dropins')).get('content') and any(
            isinstance(d, dict) and _holds_secret(d.get('content'), patterns) for d in dropins):
        spec['dropins'] = _suboption_no_log(spec['dropins'], 'content')
    return spec


def _is_secret_key(key, patterns):
    if key is None:
        return False
    try:
        return is_secret_path(parse_dotted_key(str(key)), patterns)
    except (TomlLayoutError, ValueError, IndexError):
        return False


def _holds_secret(content, patterns):
    if not isinstance(content, str):
        return False
    try:
        import tomlkit
        return bool(secret_values(plain(tomlkit.parse(content)), patterns))
    except Exception:  # not TOML: the module refuses it later, naming the parse error
        return False


def _suboptions(option):
    return (option or {}).get('options') or {}


def _suboption_no_log(option, name):
    options = dict(_suboptions(option))
    options[name] = dict(options[name], no_log=True)
    return dict(option, options=options)


# ------------------------------------------------------------ what changed, redacted copies
def changed_secrets(before, after, patterns=None):
    """Dotted paths of the secret values that differ between two documents' data (added, removed, changed)."""
    old = dict(secret_leaves(before or {}, patterns))
    new = dict(secret_leaves(after or {}, patterns))
    return [dotted_path(p) for p in sorted(set(old) | set(new)) if _plain(old.get(p)) != _plain(new.get(p))]


def redact_text(text, values):
    """text with every occurrence of each secret value replaced by MASK (longest first: no half-masked value)."""
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def redact_noted(value):
    """value (a report written to a file, which Ansible's masking never sees) without any secret noted in this run."""
    return redact(value, _STATE['noted'])


def redact(value, values):
    """A result or report (dicts, lists, strings) with every secret value replaced by MASK."""
    if isinstance(value, dict):
        return dict((k, redact(v, values)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [redact(v, values) for v in value]
    if isinstance(value, str):
        return redact_text(value, values)
    return value
