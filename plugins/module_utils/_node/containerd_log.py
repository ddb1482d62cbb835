# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What containerd says in its log: logfmt (1.x, 2.x) and JSON lines, the
plugins it loaded, skipped or failed, and whether it booted; `ctr plugins ls`.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

BOOTED = 'containerd successfully booted'
# lines the sandbox's setup script writes into the same log
NOTE = 'nodeguard-preflight-note: '
EXEC = 'nodeguard-preflight-exec'  # the namespace is set up; containerd starts

_LOGFMT = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)')


def logfmt(line):
    fields = {}
    for k, v in _LOGFMT.findall(line):
        if v.startswith('"'):
            try:
                v = json.loads(v)
            except ValueError:
                v = v[1:-1]
        fields[k] = v
    return fields


_PLUGIN_IN_MSG = re.compile(r'^(loading plugin|skip loading plugin|failed to load plugin)\s*"?([\w.\-]*)"?')


def parse_log(text):
    """(plugins {id: status}, errors {id: containerd's error}, booted, fatal lines) from containerd's log.

    1.x: msg="loading plugin \\"ID\\"..."  msg="failed to load plugin ID" error="..."
    2.x: msg="loading plugin" id=ID        msg="failed to load plugin" error="..." id=ID
    """
    plugins, errors, fatal = {}, {}, []
    booted = False
    for line in text.splitlines():
        if line.startswith(NOTE) or line == EXEC:
            continue
        if not line.startswith('time=') and not line.startswith('{'):
            if line.strip():
                fatal.append(line.strip())
            continue
        if line.startswith('{'):
            try:
                f = json.loads(line)
            except ValueError:
                continue
        else:
            f = logfmt(line)
        msg = f.get('msg', '')
        if BOOTED in msg:
            booted = True
        if f.get('level') in ('fatal', 'panic'):
            fatal.append(msg + (': ' + f['error'] if f.get('error') else ''))
        m = _PLUGIN_IN_MSG.match(msg)
        if not m:
            continue
        pid = f.get('id') or m.group(2).rstrip('.')
        if not pid:
            continue
        kind = m.group(1)
        if kind == 'loading plugin':
            plugins.setdefault(pid, 'ok')
        elif kind == 'skip loading plugin':
            plugins[pid] = 'skip'
            errors.setdefault(pid, f.get('error', ''))
        else:
            plugins[pid] = 'error'
            errors[pid] = f.get('error', '')
    return plugins, errors, booted, fatal


def parse_ctr_plugins(out):
    """{id: status} from `ctr plugins ls`."""
    status = {}
    for line in out.splitlines()[1:]:
        cols = line.split()
        if len(cols) >= 4:
            status[cols[0] + '.' + cols[1]] = cols[-1]
    return status
