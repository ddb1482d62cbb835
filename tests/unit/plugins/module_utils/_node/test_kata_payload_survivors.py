# -*- coding: utf-8 -*-
"""The payload's result lists at most 100 paths of a kind; the counts are exact."""

from test_payload_install import Payload


def test_the_result_lists_the_first_hundred_paths_and_counts_them_all(tmp_path):
    p = Payload(tmp_path)
    members = [('bin/f%03d' % i, 'file', b'x', 0o644) for i in range(101)]
    res = p.install(p.archive(members))
    assert res['installed_count'] >= 101 and len(res['installed']) == 100
