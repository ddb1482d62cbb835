# -*- coding: utf-8 -*-
"""The unit's journal as a failed wait quotes it (service.journal_tail): each entry of ``journalctl -o json``
as one line, whatever journald put in it, with journalctl answered by the test (in process)."""

import json

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import service as svc


class Journalctl(object):
    """journalctl -o json answering the given entries (or a failure); every call kept with its timeout."""

    def __init__(self, entries=(), rc=0, err=''):
        self.out = ''.join(json.dumps(e) + '\n' for e in entries)
        self.rc, self.err = rc, err
        self.calls = []

    def __call__(self, argv, timeout=30):
        self.calls.append((list(argv), timeout))
        assert argv[0] == 'journalctl', argv
        return self.rc, self.out, self.err


@pytest.fixture
def journal(monkeypatch):
    def answer(*entries, **kw):
        fake = Journalctl(entries, **kw)
        monkeypatch.setattr(svc, 'run', fake)
        return fake
    return answer


def test_a_message_that_is_not_utf8_keeps_every_byte_journald_gave(journal):
    # journald gives such a MESSAGE as a list of byte values: a NUL and 0xff are bytes like any other
    journal(dict(SYSLOG_IDENTIFIER='containerd', _PID='9', MESSAGE=[0, 98, 0xff, 255]))
    assert svc.journal_tail('containerd') == (['containerd[9]: \x00b\ufffd\ufffd'], None)


@pytest.mark.parametrize('junk', [256, 300, -1, '7', None, 1.5])
def test_what_is_no_byte_in_a_message_list_is_left_out(journal, junk):
    journal(dict(SYSLOG_IDENTIFIER='containerd', _PID='9', MESSAGE=[111, junk, 107]))
    assert svc.journal_tail('containerd') == (['containerd[9]: ok'], None)


def test_an_entry_without_a_pid_or_identifier_is_still_a_line(journal):
    journal(dict(SYSLOG_IDENTIFIER='sh', MESSAGE='site-check: /dev/nvidia0 is missing'),
            dict(_COMM='modprobe', _PID='77', MESSAGE='module nvidia not found'),
            dict(MESSAGE='a line of nobody known'),
            dict(_PID='12', MESSAGE='a line of a process without a name'))
    assert svc.journal_tail('containerd') == (['sh: site-check: /dev/nvidia0 is missing',
                                               'modprobe[77]: module nvidia not found',
                                               '?: a line of nobody known',
                                               '?[12]: a line of a process without a name'], None)


def test_a_long_line_is_cut_at_300_characters(journal):
    journal(dict(SYSLOG_IDENTIFIER='containerd', MESSAGE='x' * 400),
            dict(SYSLOG_IDENTIFIER='containerd', _PID='9', MESSAGE='y' * 400))
    lines, error = svc.journal_tail('containerd')
    assert error is None and lines == [('containerd: ' + 'x' * 400)[:300], ('containerd[9]: ' + 'y' * 400)[:300]]
    assert [len(line) for line in lines] == [300, 300]


def test_journalctl_is_given_15_seconds(journal):
    fake = journal(dict(SYSLOG_IDENTIFIER='containerd', MESSAGE='up'))
    svc.journal_tail('containerd', since=1800000000.5)
    assert fake.calls == [(['journalctl', '-u', 'containerd', '-o', 'json', '--no-pager', '-n', '15',
                            '--since', '@1800000000.500000'], 15)]


def test_a_journalctl_that_fails_is_quoted_by_its_last_300_characters(journal):
    err = 'Failed to open journal: ' + ''.join('%03d ' % i for i in range(120)) + '\n'
    journal(rc=1, err=err)
    lines, error = svc.journal_tail('containerd')
    assert len(err.strip()) > 300
    assert lines == [] and error == 'journalctl -u containerd failed (rc=1): ' + err.strip()[-300:]
