# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The config tree and the live config, as the readiness checks and the restart decision read them.

The import walk is the engine's (``_effective.load_effective`` and
``_info.imports_facts``), the main file is read by ``_info.read_main``, and
``containerd config dump`` is the node's own merged config.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_RUNTIME,
    TomlParseError,
    parse_toml,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import InfoError, imports_facts, read_main
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in


class Tree(object):
    """The main file and its imports: parse error, version, import entries, duplicates, unreadable files."""

    def __init__(self, path, containerd_ver):
        self.path = path
        self.parse_error = None
        self.config_version = None
        self.entries = []   # [{file, entry, path, glob, exists, files}] in containerd's load order
        self.errors = []    # imported files that could not be read or parsed
        self.self_imports = []   # files of the tree that import themselves (NVIDIA's toolkit before 1.18)
        self.warnings = []       # what loads but should be said: each self-import, named
        data = None
        try:
            _facts, data, _problems = read_main(path, containerd_ver)
        except InfoError as exc:
            self.parse_error = str(exc)
        if data is None:
            self.parse_error = self.parse_error or '%s does not exist' % path
            return
        self.config_version = data.get('version', 1)
        view = load_effective(path, data, containerd_ver)
        facts = imports_facts(view, containerd_ver)
        self.self_imports, self.warnings = facts['self_imports'], facts['warnings']
        missing = set((m['imported_by'], m['entry']) for m in facts['missing'])
        for item in facts['entries']:
            exists = bool(item['files']) if item['glob'] else not item['missing']
            self.entries.append(dict(file=item['imported_by'], entry=item['entry'], path=item['resolved'],
                                     glob=item['glob'], exists=exists, files=item['files']))
        # a missing file is its own check (imports_exist); everything else the walk met is an error
        self.errors = [p.message for p in view.problems if (p.importing_file, p.entry) not in missing]

    @property
    def missing(self):
        return [e['entry'] for e in self.entries if not e['glob'] and not e['exists']]

    @property
    def duplicates(self):
        seen = {}
        for entry in self.entries:
            seen.setdefault(entry['path'], []).append(entry['file'])
        return sorted(p for p, files in seen.items() if len(files) > 1)

    def watched_files(self):
        """The files whose change means containerd may not run them: the config, its imports, glob folders."""
        files = [os.path.abspath(self.path)]
        for entry in self.entries:
            if entry['glob']:
                # a file matched by a glob that was deleted or renamed changes only its folder
                files.append(os.path.dirname(entry['path']))
                files.extend(entry['files'])
            else:
                files.append(entry['path'])
        return files

    def report(self):
        return [dict((k, e[k]) for k in ('file', 'entry', 'path', 'glob', 'exists')) for e in self.entries]


def config_dump(ctx, path):
    """(rc, stdout, stderr) of the node's ``containerd --config PATH config dump``."""
    if not ctx.containerd_bin:
        return 127, '', 'no containerd binary in PATH or the usual folders (set containerd_bin)'
    return ctx.run_command([ctx.containerd_bin, '--config', path, 'config', 'dump'])


def parse_dump(out):
    """The dump as plain data, or (None, why)."""
    try:
        return parse_toml(out), None
    except TomlParseError as exc:
        return None, 'config dump output is not valid TOML: %s' % exc


def dump_runtimes(dump):
    """(runtimes, default runtime name) of the CRI plugin in a config dump (version 3: 2.x's id)."""
    cri = CRI_V3_RUNTIME if (dump.get('version') or 1) >= 3 else CRI_V2
    runtimes = get_in(dump, ('plugins', cri, 'containerd', 'runtimes'))
    default = get_in(dump, ('plugins', cri, 'containerd', 'default_runtime_name'))
    return (runtimes if isinstance(runtimes, dict) else {}), default
