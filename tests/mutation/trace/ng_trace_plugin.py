# -*- coding: utf-8 -*-
"""pytest plugin of the mutation runner's coverage pass: lines run per test.

Loaded with ``-p ng_trace_plugin`` (this folder on PYTHONPATH).  Each test
runs with NG_TRACE_TEST set to its node id, so the subprocesses it starts
tag their lines with it (sitecustomize.py); each pytest process (also an
xdist worker) writes its tests' lines, durations and outcomes, and the lines
run at import, to NG_TRACE_DIR.
"""

import os
import time

import pytest

import ng_linetrace

_tests = {}
_imported = {}


def _entry(nodeid):
    return _tests.setdefault(nodeid, {'lines': {}, 'duration': 0.0, 'outcome': 'passed'})


def pytest_configure(config):
    ng_linetrace.stop_process_trace()
    ng_linetrace.start()   # collection: the lines every importing test depends on


def pytest_collection_finish(session):
    ng_linetrace.stop()
    for name, nums in ng_linetrace.take().items():
        _imported.setdefault(name, set()).update(nums)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    os.environ['NG_TRACE_TEST'] = item.nodeid
    ng_linetrace.take()
    start = time.monotonic()
    ng_linetrace.start()
    try:
        yield
    finally:
        ng_linetrace.stop()
        entry = _entry(item.nodeid)
        entry['duration'] += time.monotonic() - start
        for name, nums in ng_linetrace.take().items():
            entry['lines'].setdefault(name, set()).update(nums)
        os.environ['NG_TRACE_TEST'] = ''


def pytest_runtest_logreport(report):
    entry = _entry(report.nodeid)
    if report.failed:
        entry['outcome'] = 'failed'
    elif report.skipped and entry['outcome'] == 'passed':
        entry['outcome'] = 'skipped'


def pytest_sessionfinish(session, exitstatus):
    if not _tests and not _imported:
        return  # the xdist controller runs no tests
    ng_linetrace.write('pytest', {
        'import_lines': dict((k, sorted(v)) for k, v in _imported.items()),
        'tests': dict((nodeid, {'duration': e['duration'], 'outcome': e['outcome'],
                                'lines': dict((k, sorted(v)) for k, v in e['lines'].items())})
                      for nodeid, e in _tests.items())})
