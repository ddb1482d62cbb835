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

A file's text may spell a secret in many ways that containerd reads as the
same value (``"\\u0041"`` for ``A``, a literal or multi-line string, an
escaped quote, ``0x3039``): ``text_values`` / ``note_text`` add each secret as
the text spells it (tomlkit keeps every value's own text), so a diff or a copy
of the file is masked whatever the spelling.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import Layout, parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    dotted_path,
    parse_dotted_key,
    plain,
    render_value,
    scan,
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

# the config versions whose key paths differ (version 4 has version 3's)
LAYOUT_VERSIONS = (2, 3)

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
            end = _closing_quote(text, pos)
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


def _closing_quote(text, start):
    """The offset of the quote that ends the quoted key opening at start (-1: none). In a basic string ("...") a
    quote after an odd run of backslashes is escaped; after an even one (``"C:\\\\"``) the backslashes pair up and
    the quote ends the key. A literal string ('...') has no escapes."""
    end = text.find(text[start], start + 1)
    while text[start] == '"' and end > 0 and _escaped(text, end):
        end = text.find('"', end + 1)
    return end


def _escaped(text, pos):
    """The character at pos follows an odd number of backslashes."""
    run = len(text[:pos]) - len(text[:pos].rstrip('\\'))
    return run % 2 == 1


def _covers(pattern, path):
    """pattern names path itself or a table above it."""
    if len(pattern) > len(path):
        return False
    return _agree(pattern, path)


def _agree(pattern, path):
    """pattern and path name the same keys as far as the shorter goes (one lies in or at the other)."""
    return all(p == '*' or p == k for p, k in zip(pattern, path))


def is_secret_path(path, patterns=None):
    patterns = _STATE['patterns'] if patterns is None else patterns
    return any(_covers(p, tuple(path)) for p in patterns)


def holds_secret_path(path, patterns=None):
    """path is a secret, or a table a secret path lies under (a value given for it may hold a secret)."""
    patterns = _STATE['patterns'] if patterns is None else patterns
    return any(_agree(p, tuple(path)) for p in patterns)


def secret_leaves(data, patterns=None, prefix=()):
    """[(path, value)] of every secret scalar in data (plain or tomlkit dicts), in document order.

    An array's items (tables or values) are at the array's own path, as TOML
    spells their keys (``[[a.b]]`` then ``token``: ``a.b.token``), so a path
    may come once per item.
    """
    out = []
    if not isinstance(data, dict):
        return out
    for key, value in data.items():
        out.extend(_leaves_at(prefix + (str(key),), value, patterns))
    return out


def _leaves_at(path, value, patterns):
    if isinstance(value, dict):
        return secret_leaves(value, patterns, path)
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves_at(path, item, patterns)]
    return [(path, value)] if is_secret_path(path, patterns) else []


def _placed(path, value):
    """value as a document holds it at path (a setting's value, a runtime's options)."""
    for key in reversed(tuple(path)):
        value = {key: value}
    return value


def _plain(value):
    if value is None:
        return None
    try:
        return plain(value)
    except TomlLayoutError:
        return str(value)


def _forms(value):
    """The texts a secret scalar may be written as: itself, its TOML and JSON escaped spellings, and (a value
    tomlkit parsed) the spelling its file gives it."""
    item, value = value, _plain(value)
    if value is None or isinstance(value, bool):
        return []
    text = value if isinstance(value, str) else str(value)
    forms = set([text])
    if isinstance(value, str):
        forms.add(render_value(value)[1:-1])
        forms.add(json.dumps(value)[1:-1])
    if len(text.strip()) < MIN_LENGTH:  # not masked in any spelling (docs/secrets.md)
        return []
    forms.update(_spellings(item))
    return [f for f in forms if len(f.strip()) >= MIN_LENGTH]


def _spellings(item):
    """The texts a tomlkit value is written as in its file: its own TOML text without the quotes (a \\u escape, an
    escaped quote, a literal or multi-line string, 0x3039 or 1_000), and that text as JSON escapes it (a ledger
    keeps a value's TOML text in a JSON file). Nothing for plain data, which has no spelling."""
    as_string = getattr(item, 'as_string', None)
    if as_string is None:
        return []
    written = _unquoted(as_string().strip())
    return [written, json.dumps(written)[1:-1]]


def _unquoted(raw):
    """A value's TOML text without its string delimiters; a multi-line string also without the line break TOML
    drops right after the opening ones (masked, the file's lines stay as they are)."""
    for quote in ('"""', "'''", '"', "'"):
        if len(raw) >= 2 * len(quote) and raw.startswith(quote) and raw.endswith(quote):
            inner = raw[len(quote):-len(quote)]
            if len(quote) == 3:
                inner = inner[2:] if inner.startswith('\r\n') else inner[1:] if inner.startswith('\n') else inner
            return inner
    return raw


def secret_values(data, patterns=None):
    """Every text under which data's secret values may appear (data parsed by tomlkit: each one's own spelling
    too)."""
    out = set()
    for _path, value in secret_leaves(data, patterns):
        out.update(_forms(value))
    return out


# the spellings of the last texts read: a run reads the same file (and its candidate) at several steps
_SPELLED = {}


def text_values(text, patterns=None, data=None):
    """Every text under which the secret values of a TOML text may appear, each as the text spells it too
    (data: the text as parse_toml parsed it, when the caller has it). Raises on a text that is not TOML."""
    patterns = _STATE['patterns'] if patterns is None else patterns
    values = secret_values(parse_toml(text) if data is None else data, patterns)
    if not values:  # no secret to mask: tomlkit, slow on a huge file, has nothing to read
        return values
    key = (hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest(), patterns)
    if key not in _SPELLED:
        if len(_SPELLED) > 8:
            _SPELLED.clear()
        _SPELLED[key] = frozenset(_spelled_values(text, patterns))
    return values | _SPELLED[key]


def _spelled_values(text, patterns):
    """The secret values of a TOML text as it spells them: each value text at or above a secret path, parsed
    alone by tomlkit, which keeps its spelling (the whole file would take seconds on one with many runtimes)."""
    try:
        entries = scan(text)
    except Exception:  # a layout the scan does not know: tomlkit reads the whole text
        return _spelled_by_tomlkit(text, patterns)
    # an array of tables' element: its keys are at the array's own path (as secret_leaves gives them)
    elements = set(e.path for e in entries if e.kind == 'header' and e.array)
    out = set()
    for e in entries:
        if e.kind == 'keyval':
            path = e.table[:-1] + e.path[len(e.table):] if e.table in elements else e.path
            out.update(raw_values(path, text[e.value_start:e.value_end], patterns))
    return out


def _spelled_by_tomlkit(text, patterns):
    try:
        import tomlkit
        doc = tomlkit.parse(text)
    except Exception:  # tomlkit refuses what parse_toml read: the values as parsed are all there is
        return set()
    return secret_values(doc, patterns)


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


def _parse_raw_item(raw):
    """A raw TOML value text as tomlkit parses it: the value, and the spelling raw gives it."""
    import tomlkit
    return tomlkit.parse('v = ' + raw + '\n')['v']


def raw_values(path, raw, patterns=None):
    """The secret texts of a raw TOML value recorded for a key (a ledger's prior or value): the key's own value
    when it is a secret, those under it when it is a table a secret path lies under."""
    if not isinstance(raw, str) or not isinstance(path, (list, tuple)) or not holds_secret_path(path, patterns):
        return set()
    try:
        value = _parse_raw_item(raw)
    except Exception:  # not a value text: masked as written
        return set([raw])
    return secret_values(_placed(path, value), patterns)


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


def note_text(text, data=None):
    """The secret values of a TOML text (a file read, a candidate built, a drop-in's content given as an option),
    in every spelling the text gives them (data: the text as parse_toml parsed it, when the caller has it)."""
    try:
        values = text_values(text, data=data)  # data's own values among them
    except Exception:  # not TOML (the module says so later): only what data holds
        if data is not None:
            note_data(data)
        return
    note_values(values)


def note_params(params):
    """Secrets a task gives in its own arguments: a setting's value at or under a secret path, a runtime's
    options and settings, a drop-in's content."""
    for path, value in _given_values(params):
        note_data(_placed(path, value))
    contents = [params.get('content')] + [d.get('content') for d in _dicts(params.get('dropins'))]
    for content in contents:
        if isinstance(content, str):
            note_text(content)
    # a drop-in the task replaces or removes: its diff quotes the old text, which no import may reach
    dropins = [params.get('dropin')] + list(params.get('dropins') or [])
    for path in [d.get('path') if isinstance(d, dict) else d for d in dropins]:
        note_file(path)


def _given_values(params):
    """(path, value) of each value the task gives for a place in the config: a setting's (at every path its key
    may stand for), a runtime's options and settings (at its table in every config version)."""
    out = []
    for key, value in _settings_given(params):
        out.extend((path, value) for path in _key_paths(key) if value is not None)
    for entry in [params] + _dicts(params.get('runtimes')):
        out.extend((path, value) for _option, path, value in _runtime_values(entry) if value is not None)
    return out


def _dicts(value):
    """The dict entries of a list option (anything else: AnsibleModule reports it)."""
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _settings_given(params):
    """(key, value) of the task's key and value and of each entry of its settings list."""
    given = [(e.get('key'), e.get('value')) for e in _dicts(params.get('settings'))]
    if params.get('key') is not None:
        given.append((params.get('key'), params.get('value')))
    return given


def _key_paths(key):
    """The paths a setting's key may stand for: the dotted TOML key (raw) and the logical name's path in each
    config version (the file, so its version, is read only later)."""
    if key is None:
        return []
    logical = [Layout(v).logical for v in LAYOUT_VERSIONS]
    paths = [names[str(key)] for names in logical if str(key) in names]
    try:
        paths.append(parse_dotted_key(str(key)))
    except (TomlLayoutError, ValueError, IndexError):
        pass
    return paths


def _runtime_values(entry):
    """(option, path, value) of a runtime's options and settings, at its table in each config version."""
    name = entry.get('name')
    if not isinstance(name, str):
        return []
    out = []
    for version in LAYOUT_VERSIONS:
        table = Layout(version).runtime(name)
        out.append(('options', table + ('options',), entry.get('options')))
        out.append(('settings', table, entry.get('settings')))
    return out


def note_file(path, limit=4 * 1024 * 1024, data=None):
    """The secrets of a TOML file on the node, in every spelling its text gives them (bounded: a huge file is
    refused later anyway; data: the file as parse_toml parsed it, noted even when the file cannot be read)."""
    text = None
    try:
        if isinstance(path, str) and os.path.isfile(path) and os.path.getsize(path) <= limit:
            with open(path, 'rb') as f:
                text = f.read().decode('utf-8-sig')
    except (IOError, OSError, UnicodeDecodeError):
        pass
    if text is not None:
        note_text(text, data)
    elif data is not None:
        note_data(data)


def mark_secret_options(argument_spec):
    """argument_spec with the options that carry a secret in this task made no_log.

    AnsibleModule logs its arguments to the node's journal while it starts,
    before bind() could note anything; a no_log option is logged (and returned
    in the invocation) as a placeholder. So, read from the task's arguments
    (which Ansible parses once and keeps): ``value`` when ``key`` is a secret
    path or a table a secret path lies under (a value given for it, such as a
    whole ``auth`` table, may hold the secret), every ``settings`` entry's
    ``value`` when one entry's key is such a path, a runtime's ``options`` or
    ``settings`` (also of ``runtimes`` entries) when they hold a secret value,
    and ``content`` (also of ``dropins`` entries) when the TOML text holds a
    secret. Anything unreadable is left to AnsibleModule to report.
    """
    try:
        from ansible.module_utils.basic import _load_params
        params = _load_params()
        patterns = parse_patterns(params.get('secret_keys'))
    except BaseException:  # AnsibleModule reads the same arguments and says what is wrong with them
        return argument_spec
    spec = dict(argument_spec)
    if 'value' in spec and _key_holds_secret(params.get('key'), patterns) and params.get('value') is not None:
        spec['value'] = dict(spec['value'], no_log=True)
    if any(_key_holds_secret(e.get('key'), patterns) for e in _dicts(params.get('settings'))):
        _mark_suboption(spec, 'settings', 'value')
    for option in _runtime_secret_options(params, patterns):
        if (spec.get(option) or {}).get('type') == 'dict':  # containerd_runtime's own options and settings
            spec[option] = dict(spec[option], no_log=True)
    for entry in _dicts(params.get('runtimes')):
        for option in _runtime_secret_options(entry, patterns):
            _mark_suboption(spec, 'runtimes', option)
    if 'content' in spec and _holds_secret(params.get('content'), patterns):
        spec['content'] = dict(spec['content'], no_log=True)
    if any(_holds_secret(d.get('content'), patterns) for d in _dicts(params.get('dropins'))):
        _mark_suboption(spec, 'dropins', 'content')
    return spec


def _key_holds_secret(key, patterns):
    """key (at any path it may stand for) is a secret or a table a secret path lies under. A value given for it
    holds a secret only then: a secret under the value is at a path that one of those patterns names."""
    return any(holds_secret_path(path, patterns) for path in _key_paths(key))


def _runtime_secret_options(entry, patterns):
    """The names of a runtime's options (options, settings) whose values hold a secret value."""
    return set(option for option, path, value in _runtime_values(entry)
               if isinstance(value, dict) and secret_values(_placed(path, value), patterns))


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


def _mark_suboption(spec, option, name):
    """spec's option with its suboption name made no_log (an option without it stays as it is)."""
    options = dict(_suboptions(spec.get(option)))
    if name in options:
        options[name] = dict(options[name], no_log=True)
        spec[option] = dict(spec[option], options=options)


# ------------------------------------------------------------ what changed, redacted copies
def changed_secrets(before, after, patterns=None):
    """Dotted paths of the secret values that differ between two documents' data (added, removed, changed)."""
    old = _values_by_path(before, patterns)
    new = _values_by_path(after, patterns)
    return [dotted_path(p) for p in sorted(set(old) | set(new)) if old.get(p) != new.get(p)]


def _values_by_path(data, patterns):
    """{path: [value, ...]}: an array's items share their array's path, so each path holds a list of values."""
    out = {}
    for path, value in secret_leaves(data or {}, patterns):
        out.setdefault(path, []).append(_plain(value))
    return out


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
