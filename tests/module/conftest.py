# -*- coding: utf-8 -*-
"""Fixtures of the module suites that several files share."""

import pytest

from helpers.common import CONTAINERD_1
from helpers.readiness import start_readiness_node, stop_readiness_nodes


@pytest.fixture
def readiness_node(workdir):
    """start(binary, extra='', version=2): a real containerd on a private socket (named by the config's
    grpc.address) and an active systemd unit; stopped at the end of the test."""
    started = []

    def start(binary=CONTAINERD_1, extra='', version=2):
        return start_readiness_node(workdir, started, binary, extra, version)
    yield start
    stop_readiness_nodes(started)
