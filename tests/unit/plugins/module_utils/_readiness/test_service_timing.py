# -*- coding: utf-8 -*-
"""_readiness_service: the wait's own timing figures (how long containerd has
been up, how long the wait took) are in milliseconds, read on a monotonic
clock the test sets."""

import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import service as svc

import test_readiness_service_wait
from test_readiness_service_wait import ACTIVE

node = test_readiness_service_wait.node  # the sibling's fixture, for pytest


class Monotonic(object):
    """svc's time module: monotonic() gives the readings in turn."""

    def __init__(self, *readings):
        self.readings = list(readings)

    def monotonic(self):
        return self.readings.pop(0)

    sleep = staticmethod(time.sleep)


def test_up_for_and_waited_seconds_are_in_milliseconds(node, monkeypatch):  # noqa: F811
    """Started at 990 s (systemd's µs), the wait began at 1000 s, the plugins were ok at 1000.5 s and
    the report was made at 1000.56789 s."""
    clock = Monotonic(1000.0, 1000.5, 1000.56789)
    monkeypatch.setattr(svc, 'time', clock)
    node([dict(ACTIVE, ExecMainStartTimestampMonotonic='990000000')])
    w = svc.wait_ready('c.service', '/usr/bin/ctr', '/s', (1, 7), 5)
    assert w['ok'] and w['polls'] == 1 and clock.readings == []
    assert w['up_for_seconds'] == 10.568
    assert w['waited_seconds'] == 0.568
    assert w['msg'] == 'containerd active, CRI plugins ok after 0.57 s of waiting'
