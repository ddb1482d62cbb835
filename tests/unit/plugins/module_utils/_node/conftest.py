# -*- coding: utf-8 -*-
"""Fixtures of the _node tests: a short folder for the stand-in daemon's socket, and the stand-in node."""

import shutil
import tempfile
from pathlib import Path

import pytest

from helpers.kata_payload import Payload
from helpers.preflight import Node


@pytest.fixture
def short_tmp():
    """A folder with a short path: the stand-in daemon binds its socket under it, and a socket path has at most
    107 bytes (pytest's tmp_path under xdist, popen-gw1/<test name>, is longer)."""
    folder = tempfile.mkdtemp(prefix='ng-pf-', dir='/tmp')
    yield Path(folder)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def node(short_tmp):
    return Node(short_tmp)


@pytest.fixture
def p(tmp_path):
    """A kata payload to install under tmp_path."""
    return Payload(tmp_path)
