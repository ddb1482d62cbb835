# -*- coding: utf-8 -*-
"""_secrets: what a run notes from a ledger's key records and from the drop-in files a task names."""


from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import MAX_CONFIG_BYTES
# fresh_secrets_state is an autouse fixture: imported, it runs for every test here
from helpers.secrets import FakeModule, fresh_secrets_state  # noqa: F401 pylint: disable=unused-import

PASSWORD = ['plugins', 'io.containerd.grpc.v1.cri', 'registry', 'configs', 'h', 'auth', 'password']
SNAPSHOTTER = ['plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter']
DROPIN = ("[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n"
          "  password = 'dropin-pw-1'\n")


def noted_from_ledger(tmp_path, path, prior, value):
    ledger = Ledger(str(tmp_path), str(tmp_path / 'config.toml'))
    ledger.record_key('gpu', 'setting:x', path, prior, value)
    ledger.save('0' * 64)
    module = FakeModule()
    secrets.bind(module)
    Ledger.load(str(tmp_path), str(tmp_path / 'config.toml'))
    return module.no_log_values


def test_a_secret_key_the_ledger_added_notes_its_value_only(tmp_path):
    """No prior (the key did not exist): nothing but the new value is noted."""
    assert noted_from_ledger(tmp_path, PASSWORD, None, '"new-pw-7"') == {'new-pw-7'}


def test_a_ledger_record_of_a_key_that_is_no_secret_notes_nothing(tmp_path):
    assert noted_from_ledger(tmp_path, SNAPSHOTTER, '"overlayfs"', '"native"') == set()


def test_a_recorded_secret_text_that_is_no_toml_value_is_masked_as_written():
    records = [dict(kind='key', path=PASSWORD, prior='old pw 8 unquoted', value='"new-pw-8"')]
    assert secrets.record_values(records) == {'old pw 8 unquoted', 'new-pw-8'}


def dropin_of_size(tmp_path, size):
    path = tmp_path / ('%d.toml' % size)
    padding = size - len(DROPIN.encode('utf-8')) - 2
    path.write_bytes((DROPIN + '#' + 'x' * padding + '\n').encode('utf-8'))
    assert path.stat().st_size == size
    return str(path)


def test_a_dropin_the_task_names_is_read_up_to_the_size_nodeguard_edits(tmp_path):
    """The largest file the edit accepts (4 MiB) has its secrets noted; a bigger one is refused, so not read."""
    largest = dropin_of_size(tmp_path, MAX_CONFIG_BYTES)
    module = FakeModule(dropin=largest)
    secrets.bind(module)
    assert module.no_log_values == {'dropin-pw-1'}


def test_a_dropin_one_byte_over_the_size_nodeguard_edits_is_not_read(tmp_path):
    module = FakeModule(dropin=dropin_of_size(tmp_path, MAX_CONFIG_BYTES + 1))
    secrets.bind(module)
    assert module.no_log_values == set()


def test_a_dropin_that_is_not_utf_8_is_passed_over(tmp_path):
    """containerd would refuse it; noting its secrets must not crash the task before that refusal is said."""
    path = tmp_path / 'latin1.toml'
    path.write_bytes(b'[plugins."io.containerd.grpc.v1.cri".registry.configs."r".auth]\npassword = "caf\xe9"\n')
    module = FakeModule(dropin=str(path))
    secrets.bind(module)
    assert module.no_log_values == set()
