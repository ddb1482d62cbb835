# -*- coding: utf-8 -*-
"""as_entries and readiness_handlers: names as module entries, and the handlers readiness expects."""

from ansible_collections.nodeguard.containerd.plugins.filter.as_entries import as_entries
from ansible_collections.nodeguard.containerd.plugins.filter.readiness_handlers import readiness_handlers


def test_names_as_entries_with_the_same_keys():
    assert as_entries(['kata-qemu', 'kata-clh'], 'name', force=False) == [
        {'name': 'kata-qemu', 'force': False}, {'name': 'kata-clh', 'force': False}]
    assert as_entries(['/a.toml'], 'path', content=None) == [{'path': '/a.toml', 'content': None}]


def test_a_name_twice_gives_one_entry_and_nothing_gives_nothing():
    assert as_entries(['a', 'b', 'a'], 'key', raw=True) == [{'key': 'a', 'raw': True}, {'key': 'b', 'raw': True}]
    assert as_entries([], 'name') == []


def test_handlers_keep_the_base_ones_not_added_then_the_runtimes():
    runtimes = [{'name': 'nvidia', 'probe': True}, {'name': 'runc', 'probe': False}]
    assert readiness_handlers(['runc', 'crun'], runtimes) == [
        'crun', {'name': 'nvidia', 'probe': True}, {'name': 'runc', 'probe': False}]


def test_a_runtime_twice_is_one_handler_with_the_last_probe():
    runtimes = [{'name': 'nvidia', 'probe': True, 'binary': '/x'}, {'name': 'nvidia', 'probe': False}]
    assert readiness_handlers([{'name': 'nvidia', 'probe': True}], runtimes) == [{'name': 'nvidia', 'probe': False}]
    assert readiness_handlers(['runc']) == ['runc']


def test_a_runtimes_probe_settings_become_the_handlers_image_command_and_env():
    runtimes = [{'name': 'nvidia', 'probe': True, 'probe_image': 'img', 'probe_command': 'nvidia-smi -L',
                 'probe_env': ['NVIDIA_VISIBLE_DEVICES=all'], 'binary': '/x'},
                {'name': 'nvidia-cdi', 'probe': False}]
    assert readiness_handlers(['runc'], runtimes) == [
        'runc', {'name': 'nvidia', 'probe': True, 'image': 'img', 'command': 'nvidia-smi -L',
                 'env': ['NVIDIA_VISIBLE_DEVICES=all']},
        {'name': 'nvidia-cdi', 'probe': False}]
    # the last of a name wins whole: its probe settings are not merged with an earlier one's
    runtimes.append({'name': 'nvidia', 'probe': True})
    assert readiness_handlers([], runtimes)[0] == {'name': 'nvidia', 'probe': True}
