# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What containerd's config.toml means, per config version.

One table maps logical names (the CRI runtimes table, the default runtime,
image settings) to where each config version keeps them, so modules never
spell a plugin id themselves.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import (
    FileLock,
    LockTimeout,
    lock_path_for,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import (
    TomlLayoutError,
    TomlText,
    plain,
)

try:
    import tomlkit
    from tomlkit.exceptions import ParseError as TomlParseError
    HAS_TOMLKIT = True
    TOMLKIT_IMPORT_ERROR = None
except ImportError as exc:  # handled by the modules with missing_required_lib
    HAS_TOMLKIT = False
    TOMLKIT_IMPORT_ERROR = exc
    TomlParseError = ValueError

try:
    import tomllib  # Python 3.11+: a much faster parser for the data itself
except ImportError:
    tomllib = None

CRI_V2 = 'io.containerd.grpc.v1.cri'
CRI_V3_RUNTIME = 'io.containerd.cri.v1.runtime'
CRI_V3_IMAGES = 'io.containerd.cri.v1.images'

SUPPORTED_VERSIONS = (2, 3, 4)


class ConfigError(Exception):
    """A problem with the user's file or input: message says file, key and fix."""

    def __init__(self, msg, **details):
        super(ConfigError, self).__init__(msg)
        self.details = details

    def given_details(self):
        """The details that have a value: what a failed module returns beside msg."""
        return dict((k, v) for k, v in self.details.items() if v is not None)


def lock_or_fail(path, timeout, create=True, fix='Fix: run as root (become: true).', key='path'):
    """Take the lock beside path; a timeout or a lock file that cannot be
    opened becomes a ConfigError that names the lock file and the fix."""
    try:
        return FileLock(path, timeout, create=create).acquire()
    except LockTimeout as exc:
        raise ConfigError(str(exc), key='lock_timeout')
    except (IOError, OSError) as exc:
        raise ConfigError('cannot lock %s: %s (%s). %s' % (path, lock_path_for(path), exc.strerror, fix), key=key)


class Layout(object):
    """Key paths of one config version."""

    def __init__(self, version):
        self.version = version
        if version == 2:
            self.cri_plugin = CRI_V2
            self.images_plugin = CRI_V2
            cri = ('plugins', CRI_V2)
            images = ('plugins', CRI_V2, 'containerd')
        else:
            self.cri_plugin = CRI_V3_RUNTIME
            self.images_plugin = CRI_V3_IMAGES
            cri = ('plugins', CRI_V3_RUNTIME)
            images = ('plugins', CRI_V3_IMAGES)
        self.cri = cri
        self.runtimes = cri + ('containerd', 'runtimes')
        self.default_runtime_name = cri + ('containerd', 'default_runtime_name')
        self.logical = {
            'cri.default_runtime_name': self.default_runtime_name,
            'cri.enable_cdi': cri + ('enable_cdi',),
            'cri.cdi_spec_dirs': cri + ('cdi_spec_dirs',),
            'images.snapshotter': images + ('snapshotter',),
            'images.disable_snapshot_annotations': images + ('disable_snapshot_annotations',),
        }

    def runtime(self, name):
        return self.runtimes + (name,)

    def resolve(self, key):
        """A logical key name to its path for this version."""
        if key not in self.logical:
            raise ConfigError('unknown logical key %r; known keys: %s (or set raw: true and give a '
                              'dotted path)' % (key, ', '.join(sorted(self.logical))))
        return self.logical[key]


UTF8_BOM = u'\ufeff'


def split_bom(text):
    """(text without a leading UTF-8 byte order mark, whether it had one).

    containerd 1.x's TOML reader skips a BOM; 2.x's refuses the file (both
    measured), so nodeguard keeps a BOM where containerd reads it and names
    it where containerd would not.
    """
    if text.startswith(UTF8_BOM):
        return text[len(UTF8_BOM):], True
    return text, False


def bom_refused_message(path, containerd_ver, config_version=None):
    """Why a file with a BOM will not load on this node, or None when it will."""
    if containerd_ver is not None:
        if containerd_ver[0] < 2:
            return None
        reader = 'containerd %d.%d' % tuple(containerd_ver)
    elif config_version is not None and config_version >= 3:
        reader = 'containerd 2.x (which reads config version %d)' % config_version
    else:
        return None
    return ('%s starts with a UTF-8 byte order mark (bytes EF BB BF), which %s cannot parse: containerd would '
            'refuse to start. Fix: remove the mark, e.g. sed -i \'1s/^\\xEF\\xBB\\xBF//\' %s'
            % (path, reader, path))


def version_text(ver, unknown='unknown'):
    """A version tuple as messages name it ("1.7.24"); unknown when it is not known."""
    return '.'.join(str(x) for x in ver) if ver else unknown


# The oldest tomlkit nodeguard runs on (tests/compat: parse checks, the module
# suites and a playbook pass with it).  0.7 - 0.10 have no unwrap(), which
# ``_toml_text.plain`` replaces; 0.6.0 (Debian 11's python3-tomlkit) loses a
# table defined after its sub-tables, so it is refused before anything is read.
MIN_TOMLKIT = (0, 7, 0)
TOMLKIT_INSTALL = ('pip install "tomlkit>=%s" for the Python Ansible uses on the node (Debian 11\'s python3-tomlkit '
                   'is 0.6.0; Ubuntu 22.04+, Debian 12+ and EPEL 9 ship a newer one: apt-get or dnf install '
                   'python3-tomlkit)' % version_text(MIN_TOMLKIT))


def _version_tuple(text):
    out = []
    for part in str(text).split('.')[:3]:
        digits = len(part) - len(part.lstrip('0123456789'))  # the leading digits: 0rc1 is 0
        out.append(int(part[:digits]) if digits else 0)
    return tuple(out + [0] * (3 - len(out)))


def tomlkit_problem():
    """Why this node's tomlkit cannot be used, or None (also None without tomlkit: the modules
    report a missing library with Ansible's missing_required_lib)."""
    if not HAS_TOMLKIT:
        return None
    found = getattr(tomlkit, '__version__', '0')
    if _version_tuple(found) < MIN_TOMLKIT:
        import sys
        return ('tomlkit %s on this node (%s, Python %s) is too old: nodeguard needs tomlkit >= %s. Nothing was '
                'read or written. Fix: %s.' % (found, getattr(tomlkit, '__file__', '?'), sys.version.split()[0],
                                               version_text(MIN_TOMLKIT), TOMLKIT_INSTALL))
    return None


def _tomlkit_parse(text):
    """tomlkit's parse as plain data; every tomlkit error is a ParseError (with line and column when known)."""
    try:
        return plain(tomlkit.parse(text))
    except TomlParseError:
        raise
    except Exception as exc:  # KeyAlreadyPresent and friends are no ParseError
        raise TomlParseError(getattr(exc, 'line', 0) or 0, getattr(exc, 'col', 0) or 0, str(exc))


def parse_toml(text):
    """Parse TOML text into plain dicts (see ``_toml_text.plain``).

    tomllib (3.11+) is used when present because tomlkit takes seconds on a
    config with thousands of runtimes; errors are always reported by tomlkit,
    whose messages carry the line and column.
    """
    problem = tomlkit_problem()
    if problem:
        raise ConfigError(problem, key=None, tomlkit=getattr(tomlkit, '__version__', None),
                          tomlkit_min=version_text(MIN_TOMLKIT))
    if tomllib is None:
        return _tomlkit_parse(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        try:
            tomlkit.parse(text)  # raises a located ParseError in nearly every case
        except TomlParseError:
            raise
        except Exception as kexc:  # e.g. KeyAlreadyPresent (a key defined twice) is no ParseError
            where = [int(w) for w in str(exc).replace(',', ' ').replace(')', ' ').split() if w.isdigit()][-2:]
            raise TomlParseError(*(where if len(where) == 2 else [0, 0]) + [str(kexc)])
        raise TomlParseError(0, 0, str(exc))


def parse_error_message(path, exc):
    """A parse error as 'FILE: line L, column C: reason', for people."""
    line = getattr(exc, 'line', None)
    col = getattr(exc, 'col', None)
    where = ' line %s, column %s:' % (line, col) if line is not None else ''
    return '%s is not valid TOML:%s %s' % (path, where, exc)


def version_line(data):
    """The file's version as written, None when it has no version line. version = 0 is Go's zero value, what a
    missing line decodes to, so containerd reads it the same way (measured on 1.6, 1.7 and 2.1)."""
    v = data.get('version')
    return None if v == 0 and not isinstance(v, bool) else v


def detect_version(path, data, default_version=None):
    """The config version of parsed data, refusing what nodeguard cannot edit.

    default_version: a drop-in without a version line (or with version = 0,
    the same to containerd) is read with the main file's layout (containerd
    1.x applies its plugin tables as they are).
    """
    version = data.get('version')
    if version_line(data) is None and default_version is not None:
        return default_version
    if version is None:
        raise ConfigError(
            '%s has no "version" key, so containerd reads it as config version 1 (containerd < 1.5, '
            'CRI settings under plugins.cri). nodeguard edits version 2 (containerd 1.6/1.7) and 3 '
            '(containerd 2.x) only. Fix: migrate the file (containerd 2.x: "containerd config migrate"; '
            '1.6/1.7: start from "containerd config default" and move your plugins.cri settings to '
            'plugins."io.containerd.grpc.v1.cri"), then run again.' % path, key='version', found=None)
    if isinstance(version, bool) or not isinstance(version, int):
        raise ConfigError('%s: key "version" must be an integer, found %r. Fix: set version = 2 '
                          '(containerd 1.6/1.7) or version = 3 (containerd 2.x).' % (path, version),
                          key='version', found=version)
    if version in (0, 1):
        # 0 is what a file with no version line decodes to: containerd reads it as version 1
        raise ConfigError(
            '%s declares version = %d%s (legacy layout, plugins.cri). nodeguard edits version 2 and 3 only. '
            'Fix: migrate the file to version 2 (containerd 1.6/1.7) or 3 (containerd 2.x) first.'
            % (path, version, ', which containerd reads as version 1' if version == 0 else ''),
            key='version', found=version)
    if version not in SUPPORTED_VERSIONS:
        raise ConfigError('%s declares version = %d, which nodeguard does not know (supported: 2, 3, 4). '
                          'Fix: check the file for a typo; containerd 1.6/1.7 use 2, containerd 2.x uses 3.'
                          % (path, version), key='version', found=version)
    return version


class ConfigDocument(object):
    """config.toml as read: text, data, version and layout, ready for edits.

    A leading byte order mark is not part of the text (bom says it was
    there): whoever writes the file decides whether to put it back."""

    def __init__(self, path, text, default_version=None):
        self.path = path
        text, self.bom = split_bom(text)
        self.original_text = text
        # (path, value) of every key an edit set or found already so: what
        # must be in effect even when no byte changes (principle 7)
        self.wanted = []
        try:
            data = parse_toml(text)
        except TomlParseError as exc:
            raise ConfigError(parse_error_message(path, exc) + '. Nothing was written. Fix the file by '
                              'hand, or put back a known-good copy with '
                              'nodeguard.containerd.containerd_baseline (state: restore).',
                              key=None, line=getattr(exc, 'line', None), col=getattr(exc, 'col', None))
        self.version = detect_version(path, data, default_version)
        self.layout = Layout(self.version)
        try:
            self.toml = TomlText(text, data)
        except TomlLayoutError as exc:
            raise ConfigError('%s: nodeguard cannot read the layout of this file (%s). Nothing was '
                              'written.' % (path, exc))

    @property
    def text(self):
        return self.toml.text

    @property
    def data(self):
        return self.toml.data

    @property
    def changed(self):
        return self.toml.text != self.original_text

    def verify(self):
        """Check that the edited text parses to exactly the data we meant."""
        try:
            self.toml.verify(parse_toml)
        except (TomlLayoutError, TomlParseError) as exc:
            raise ConfigError('%s: nodeguard could not make this edit without touching other content '
                              '(%s). Nothing was written; please report the file layout.'
                              % (self.path, exc))

    def runtimes(self):
        """The runtimes defined in this file: name -> table."""
        table = self.toml.get(self.layout.runtimes)
        return table if isinstance(table, dict) else {}

    def default_runtime(self):
        return self.toml.get(self.layout.default_runtime_name)
