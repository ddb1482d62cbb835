# -*- coding: utf-8 -*-
"""Which lines of the code under test each test runs (see sitecustomize.py).

The tracer looks only at frames of files below NG_TRACE_ROOT (the worker
copy's plugins/module_utils); every other frame is dropped at its call
event, so the tests run about two times slower, once, for the map.
"""

import atexit
import json
import os
import sys
import threading
import uuid

_ROOT = os.path.realpath(os.environ.get('NG_TRACE_ROOT') or '/nonexistent') + os.sep
_names = {}
_lines = set()


def _name_of(filename):
    try:
        return _names[filename]
    except KeyError:
        real = os.path.realpath(filename)
        name = real[len(_ROOT):] if real.startswith(_ROOT) else None
        _names[filename] = name
        return name


def _global(frame, event, arg):
    name = _name_of(frame.f_code.co_filename)
    if name is None:
        return None
    _lines.add((name, frame.f_lineno))

    def local(frame, event, arg):
        _lines.add((name, frame.f_lineno))
        return local
    return local


def start():
    sys.settrace(_global)
    threading.settrace(_global)


def stop():
    sys.settrace(None)
    threading.settrace(None)


def take():
    """The lines seen since the last take(), as {file: [line, ...]}."""
    out = {}
    for name, line in _lines:
        out.setdefault(name, []).append(line)
    _lines.clear()
    return out


def write(kind, data):
    path = os.path.join(os.environ['NG_TRACE_DIR'], '%s-%d-%s.json' % (kind, os.getpid(), uuid.uuid4().hex[:8]))
    with open(path, 'w') as f:
        json.dump(data, f)


def _dump():
    stop()
    lines = take()
    if lines:
        write('proc', {'test': os.environ.get('NG_TRACE_TEST', ''), 'lines': lines})


def start_process_trace():
    """Trace this whole process; its lines are written at exit (a module run as Ansible runs it)."""
    atexit.register(_dump)
    start()


def stop_process_trace():
    """A pytest process: the plugin traces it test by test instead."""
    atexit.unregister(_dump)
    stop()
    take()
