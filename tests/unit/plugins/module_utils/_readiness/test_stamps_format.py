# -*- coding: utf-8 -*-
"""The stamps file as text (sorted keys, two-space indent, one trailing newline), the shim names containerd
derives from short runtime types, and fingerprints that do not depend on the order a dict was built in."""

import json
import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe, stamps

FP = dict((key, key * 3) for key, _what in stamps.PARTS)
OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10',
            probe_command=[], pass_config_path=True)


def test_the_stamps_file_is_sorted_json_indented_by_two(tmp_path):
    state = str(tmp_path / 'state')
    found = stamps.ProbeStamps(state, 60)
    found.fingerprints = dict(runc=dict(FP))
    found.note({'runc': dict(kind='start', ok=True, rc=0, seconds=0.4)})
    path = found.save(False, None)
    with open(path) as fh:
        text = fh.read()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True) + '\n'
    stamp = data['handlers']['runc']
    assert list(stamp) == sorted(stamp) == ['fingerprint', 'kind', 'mono', 'rc', 'seconds', 'time']
    assert '\n      "fingerprint": {' in text  # format, handlers, runc: three levels of two spaces
    assert os.stat(path).st_mode & 0o777 == 0o600


def test_the_shim_of_a_two_word_runtime_type_is_named_by_both_words():
    assert stamps.shim_binary_name('kata.v2') == 'containerd-shim-kata-v2'


def test_the_shim_of_a_three_word_runtime_type_is_named_by_the_last_two():
    assert stamps.shim_binary_name('vendor.kata.v2') == 'containerd-shim-kata-v2'
    assert stamps.shim_binary_name('runsc') == 'runsc'


def test_a_fingerprint_does_not_depend_on_the_order_of_containerd_s_identity(tmp_path):
    entry = probe.handlers(['runc'], dict(runc=dict(runtime_type='io.containerd.runc.v2')), OPTS, True)[0]
    table = dict(runtime_type='io.containerd.runc.v2', options=dict(SystemdCgroup=True, BinaryName='/usr/bin/runc'))
    reordered = dict(options=dict(BinaryName='/usr/bin/runc', SystemdCgroup=True), runtime_type='io.containerd.runc.v2')
    one = dict(config='c' * 64, containerd=dict(pid=42, started=1000, boot='b'), path='', beside=str(tmp_path))
    other = dict(config='c' * 64, containerd=dict(boot='b', started=1000, pid=42), path='', beside=str(tmp_path))
    assert stamps.probe_fingerprint(entry, table, one) == stamps.probe_fingerprint(entry, reordered, other)
