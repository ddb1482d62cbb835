# -*- coding: utf-8 -*-
"""_readiness_restart: the restart fact's seconds (restart and wait) are in
hundredths of a second, read on a monotonic clock the test sets."""

import time

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import restart as rr

import test_readiness_restart_decision
from test_readiness_restart_decision import Ctx, Daemon, opts

node = test_readiness_restart_decision.node  # the sibling's fixture, for pytest


class Monotonic(object):
    """rr's time module: monotonic() gives the readings in turn."""

    def __init__(self, *readings):
        self.readings = list(readings)

    def monotonic(self):
        return self.readings.pop(0)

    def time(self):
        return 1800000000.0


def test_the_restart_seconds_are_in_hundredths(node, monkeypatch):  # noqa: F811
    node.started('active', time.time() - 3600)
    Daemon(monkeypatch)
    clock = Monotonic(500.0, 501.23456)
    monkeypatch.setattr(rr, 'time', clock)
    fact, decision, _preflight = rr.restart(Ctx(), opts(node), False)
    assert decision['pending'] and fact['restarted'] and fact['cri_ok'] and clock.readings == []
    assert fact['seconds'] == 1.23
