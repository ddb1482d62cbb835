# -*- coding: utf-8 -*-
"""What the tests of _core/secrets.py share: a module stand-in that only collects no_log values, and the
secrets state of a fresh module run for each test (import fresh_secrets_state into a test module: it is
autouse)."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets


class FakeModule(object):
    def __init__(self, **params):
        self.params = params
        self.no_log_values = set()


@pytest.fixture(autouse=True)
def fresh_secrets_state(monkeypatch):
    monkeypatch.setattr(secrets, '_STATE', {'module': None, 'patterns': secrets.BUILTIN_PATTERNS, 'pending': set(),
                                            'noted': set()})
