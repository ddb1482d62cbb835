# -*- coding: utf-8 -*-
"""How the engine reads the config: again while another tool is rewriting it (the settled read),
and what it refuses to read."""

import threading
import time
import pytest
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import _decode, _read_settled


# ------------------------------------------------------------------ a file another tool is rewriting
def test_an_empty_read_is_read_again_until_the_writer_is_done(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text('')
    later = threading.Timer(0.3, lambda: path.write_text('version = 2\n'))
    later.start()
    try:
        assert _read_settled(str(path), wait=5.0) == b'version = 2\n'
    finally:
        later.cancel()


def test_a_file_that_stays_empty_is_empty_after_the_wait(tmp_path):
    path = tmp_path / 'config.toml'
    path.write_text('')
    start = time.monotonic()
    assert _read_settled(str(path), wait=0.3) == b''
    assert 0.3 <= time.monotonic() - start < 3


def test_a_file_that_is_not_utf8_is_refused_naming_the_byte():
    with pytest.raises(ConfigError) as err:
        _decode('/etc/containerd/config.toml', b'version = 2\n# \xff\n')
    assert str(err.value).startswith('/etc/containerd/config.toml is not UTF-8 text (byte 14): it is not a '
                                     'containerd config. Nothing was written.')


# ------------------------------------------------------------------ an empty file is read again for a second
class Clock(object):
    def __init__(self):
        self.now = 100.0

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def test_an_empty_file_is_read_again_for_one_second(tmp_path, monkeypatch):
    clock = Clock()
    monkeypatch.setattr(_engine, 'time', clock)
    path = tmp_path / 'config.toml'
    path.write_bytes(b'')
    assert _read_settled(str(path)) == b''
    assert 1.0 <= clock.now - 100.0 < 1.06
