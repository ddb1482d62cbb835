# -*- coding: utf-8 -*-
"""Fixtures of the engine's tests: config trees for containerd_setting run in this process."""

import pytest

from helpers.common import fixture_text


@pytest.fixture
def main_only(tmp_path):
    """2.1's default config.toml alone."""
    etc = tmp_path / 'etc'
    etc.mkdir()
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml'))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))
