# -*- coding: utf-8 -*-
"""gpu_runtime_specs and gpu_runtime_entries: what the role gpu_toolkit adds, worked out in Python."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeguard.containerd.plugins.filter.gpu_runtime_entries import gpu_runtime_entries
from ansible_collections.nodeguard.containerd.plugins.filter.gpu_runtime_specs import gpu_runtime_specs

BIN = '/usr/bin/nvidia-container-runtime'
SUFFIXES = {'nvidia-cdi': '.cdi', 'nvidia-legacy': '.legacy'}


def test_a_name_gets_the_binary_and_its_suffix():
    specs = gpu_runtime_specs(['nvidia', 'nvidia-cdi', 'runc'], binary=BIN, suffixes=SUFFIXES)
    assert specs == [
        dict(name='nvidia', binary=BIN, options={'BinaryName': BIN}, settings={}, runtime_type='', probe=True),
        dict(name='nvidia-cdi', binary=BIN + '.cdi', options={'BinaryName': BIN + '.cdi'}, settings={},
             runtime_type='', probe=True),
        dict(name='runc', binary=BIN, options={'BinaryName': BIN}, settings={}, runtime_type='', probe=True)]


def test_a_mapping_gives_its_own_keys_and_its_options_win():
    spec, = gpu_runtime_specs([dict(name='gpu', binary='/opt/rt', options={'SystemdCgroup': False, 'BinaryName': '/x'},
                                    settings={'privileged_without_host_devices': True},
                                    runtime_type='io.containerd.runc.v2', probe='no')], binary=BIN, probe=True)
    assert spec == dict(name='gpu', binary='/opt/rt', options={'BinaryName': '/x', 'SystemdCgroup': False},
                        settings={'privileged_without_host_devices': True}, runtime_type='io.containerd.runc.v2',
                        probe=False)
    assert list(spec['options']) == ['BinaryName', 'SystemdCgroup']


def test_an_empty_binary_sets_no_binaryname_and_probe_follows_the_default():
    spec, = gpu_runtime_specs([dict(name='nvidia', binary='')], binary=BIN, probe=False)
    assert (spec['options'], spec['binary'], spec['probe']) == ({}, '', False)


def test_a_mapping_without_a_name_gives_an_empty_name_for_the_role_to_refuse():
    assert gpu_runtime_specs([{'binary': '/x'}])[0]['name'] == ''


def test_what_is_neither_name_nor_mapping_is_refused():
    with pytest.raises(AnsibleFilterError, match='a name or a mapping'):
        gpu_runtime_specs([['nvidia']])


def test_entries_give_runtime_type_and_inherit_only_when_set():
    specs = gpu_runtime_specs(['nvidia', dict(name='gpu', runtime_type='io.containerd.runc.v2')], binary=BIN)
    assert gpu_runtime_entries(specs) == [
        dict(name='nvidia', options={'BinaryName': BIN}, settings={}),
        dict(name='gpu', options={'BinaryName': BIN}, settings={}, runtime_type='io.containerd.runc.v2')]
    assert [e['inherit'] for e in gpu_runtime_entries(specs, inherit='runc')] == ['runc', 'runc']


def test_the_default_is_set_on_one_and_an_earlier_default_of_the_owner_undone():
    specs = gpu_runtime_specs(['nvidia', 'nvidia-cdi', 'runc'], binary=BIN, suffixes=SUFFIXES)
    entries = gpu_runtime_entries(specs, default='nvidia-cdi', owned_defaults=['nvidia', 'nvidia-cdi'])
    assert [e.get('default') for e in entries] == [False, True, None]
    assert [e.get('default') for e in gpu_runtime_entries(specs, owned_defaults=['nvidia'])] == [False, None, None]


def test_a_mappings_probe_settings_are_kept_only_when_given():
    gpu, plain = gpu_runtime_specs([dict(name='nvidia', probe_image='docker.io/library/ubuntu:24.04',
                                         probe_command=['nvidia-smi', '-L'], probe_env={'NVIDIA_VISIBLE_DEVICES': 'all'}),
                                    dict(name='nvidia-cdi', probe_image='', probe_command=[], probe_env={})],
                                   binary=BIN, suffixes=SUFFIXES)
    assert (gpu['probe_image'], gpu['probe_command'], gpu['probe_env']) == (
        'docker.io/library/ubuntu:24.04', ['nvidia-smi', '-L'], {'NVIDIA_VISIBLE_DEVICES': 'all'})
    # empty ones say nothing: readiness then uses its own image and command
    assert sorted(plain) == ['binary', 'name', 'options', 'probe', 'runtime_type', 'settings']
    # and none of them reaches the config: containerd_config's entry has the runtime's keys only
    assert sorted(gpu_runtime_entries([gpu])[0]) == ['name', 'options', 'settings']
