# -*- coding: utf-8 -*-
"""How far back a zstd payload stream seeks without decompressing again: the last 8 MiB it read (a member is read
to compare it with the node's file, then again to write it), to the byte; one byte further, or further back than
what a replay left, starts the decompression again, and every read gives the bytes at its position."""

import io

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.kata_payload import ZstdStream

WINDOW = 8 << 20
NINE = 9 << 20
# a period that is not a power of two: bytes read from a wrong offset differ from the right ones
DATA = bytes(range(251)) * ((10 << 20) // 251 + 1)


class Source(object):
    """A decompressed stream from its start; each one opened is counted."""

    def __init__(self, opened):
        self.data = io.BytesIO(DATA)
        opened.append(self)

    def read(self, size):
        return self.data.read(size)

    def close(self):
        pass


def stream_and_opens():
    opened = []
    return ZstdStream(lambda: Source(opened)), opened


def test_the_last_8_mib_are_replayed_to_the_byte_and_one_more_starts_again():
    stream, opened = stream_and_opens()
    assert stream.seek(NINE) == NINE
    # one byte back
    assert stream.seek(NINE - 1) == NINE - 1 and stream.read(1) == DATA[NINE - 1:NINE]
    # the whole window back
    assert stream.seek(NINE - WINDOW) == NINE - WINDOW
    assert len(opened) == 1
    # one byte further than the window
    assert stream.seek(NINE - WINDOW - 1) == NINE - WINDOW - 1
    assert len(opened) == 2
    assert stream.read(5) == DATA[NINE - WINDOW - 1:NINE - WINDOW + 4]


def test_a_seek_back_past_what_a_replay_left_starts_again():
    stream, opened = stream_and_opens()
    assert stream.seek(NINE) == NINE
    assert stream.seek(NINE - (4 << 20)) == NINE - (4 << 20)  # half the window given back to read again
    # 5 MiB further back: within the window's length, but before its first byte
    assert stream.seek(0) == 0
    assert len(opened) == 2
    assert stream.read(300) == DATA[:300]


def test_a_seek_back_to_the_first_byte_read_replays_it():
    stream, opened = stream_and_opens()
    assert stream.read(300) == DATA[:300]
    assert stream.seek(0) == 0 and stream.read(300) == DATA[:300]
    assert len(opened) == 1
