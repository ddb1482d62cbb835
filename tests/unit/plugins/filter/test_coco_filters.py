# -*- coding: utf-8 -*-
"""kata_runtimes, kata_runtime_entries and runtime_class_objects: what the role coco adds, in Python."""

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeguard.containerd.plugins.filter.kata_runtime_entries import kata_runtime_entries
from ansible_collections.nodeguard.containerd.plugins.filter.kata_runtimes import kata_runtimes
from ansible_collections.nodeguard.containerd.plugins.filter.runtime_class_objects import runtime_class_objects
from ansible_collections.nodeguard.containerd.plugins.filter.runtimes_to_change import runtimes_to_change

KATA = '/opt/kata'
PATHS = dict(shim_path=KATA + '/bin/shim', shim_rs_path=KATA + '/runtime-rs/bin/shim', config_dir=KATA + '/conf',
             config_rs_dir=KATA + '/conf/rs', rs_shims=['dragonball', 'qemu-runtime-rs'])


def test_names_give_kata_deploys_handlers():
    runtimes = kata_runtimes(['kata-qemu', 'kata-dragonball'], probe_handlers=['kata-qemu'], **PATHS)
    assert runtimes == [
        dict(name='kata-qemu', shim='qemu', runtime_type='io.containerd.kata-qemu.v2', runtime_path=KATA + '/bin/shim',
             config_path=KATA + '/conf/configuration-qemu.toml', snapshotter='', probe=True),
        dict(name='kata-dragonball', shim='dragonball', runtime_type='io.containerd.kata-dragonball.v2',
             runtime_path=KATA + '/runtime-rs/bin/shim', config_path=KATA + '/conf/rs/configuration-dragonball.toml',
             snapshotter='', probe=False)]


def test_a_mapping_gives_its_own_keys():
    runtime, = kata_runtimes([dict(name='gpu-kata', shim='qemu-nvidia-gpu', runtime='rs', snapshotter='nydus',
                                   probe='yes', needs=['kvm'], runtime_path='/usr/bin/shim')],
                             snapshotter='overlayfs', **PATHS)
    assert runtime == dict(name='gpu-kata', shim='qemu-nvidia-gpu', runtime_type='io.containerd.kata-qemu-nvidia-gpu.v2',
                           runtime_path='/usr/bin/shim', config_path=KATA + '/conf/rs/configuration-qemu-nvidia-gpu.toml',
                           snapshotter='nydus', probe=True, needs=['kvm'])


def test_the_default_snapshotter_and_go_runtime():
    runtime, = kata_runtimes([dict(name='kata-qemu-runtime-rs', runtime='go')], snapshotter='nydus', **PATHS)
    assert (runtime['runtime_path'], runtime['snapshotter']) == (KATA + '/bin/shim', 'nydus')
    assert 'needs' not in runtime


def test_a_class_without_a_name_is_refused():
    with pytest.raises(AnsibleFilterError, match='a name or a mapping with a name'):
        kata_runtimes([{'shim': 'qemu'}])


def test_entries_as_kata_deploy_writes_them():
    runtimes = kata_runtimes(['kata-qemu', dict(name='kata-clh', shim='clh', snapshotter='nydus')], **PATHS)
    entries = kata_runtime_entries(runtimes, pod_annotations=['io.katacontainers.*'])
    assert entries[0] == dict(name='kata-qemu', runtime_type='io.containerd.kata-qemu.v2',
                              runtime_path=KATA + '/bin/shim', inherit='none',
                              settings=dict(privileged_without_host_devices=True,
                                            pod_annotations=['io.katacontainers.*']),
                              options=dict(ConfigPath=KATA + '/conf/configuration-qemu.toml'))
    assert entries[1]['settings']['snapshotter'] == 'nydus'


def test_runtime_class_objects_carry_the_marks_and_the_node_selector():
    marks = {'app.kubernetes.io/managed-by': 'nodeguard', 'nodeguard.io/owner': 'coco'}
    objs = runtime_class_objects(['kata-qemu', {'name': 'kata-clh'}], labels=marks, node_label='kata/rt')
    assert objs[1] == {'apiVersion': 'node.k8s.io/v1', 'kind': 'RuntimeClass',
                       'metadata': {'name': 'kata-clh', 'labels': marks}, 'handler': 'kata-clh',
                       'scheduling': {'nodeSelector': {'kata/rt': 'true'}}}
    assert objs[0]['metadata']['name'] == objs[0]['handler'] == 'kata-qemu'


def _effective(table):
    """A runtime as containerd_info returns it: its effective table (and the rest, not compared)."""
    return dict(table=table, file='/etc/containerd/config.toml', builtin=False)


def test_runtimes_to_change_names_only_what_an_edit_would_change():
    entries = kata_runtime_entries(kata_runtimes(['kata-qemu', 'kata-clh'], **PATHS), pod_annotations=['io.k.*'])
    in_place = dict((e['name'], _effective(dict(e['settings'], runtime_type=e['runtime_type'],
                                                runtime_path=e['runtime_path'], options=dict(e['options']),
                                                container_annotations=['x'])))
                    for e in entries)
    # every value there (a key the entry does not name, container_annotations, is not compared)
    assert runtimes_to_change(entries, in_place) == []
    # one handler missing, one with another option value, a setting changed, the runtime type changed
    assert runtimes_to_change(entries, {'kata-clh': in_place['kata-clh']}) == ['kata-qemu']
    other = dict(in_place, **{'kata-qemu': _effective(dict(in_place['kata-qemu']['table'], options={'ConfigPath': '/x'}))})
    assert runtimes_to_change(entries, other) == ['kata-qemu']
    other = dict(in_place, **{'kata-clh': _effective(dict(in_place['kata-clh']['table'], pod_annotations=[]))})
    assert runtimes_to_change(entries, other) == ['kata-clh']
    other = dict(in_place, **{'kata-clh': _effective(dict(in_place['kata-clh']['table'], runtime_type='io.x.v2'))})
    assert runtimes_to_change(entries, other) == ['kata-clh']
    # a key the entry sets but the table lacks is a change, even when the value would be a zero value
    table = dict(in_place['kata-qemu']['table'])
    del table['privileged_without_host_devices']
    assert runtimes_to_change(entries, dict(in_place, **{'kata-qemu': _effective(table)})) == ['kata-qemu']
    assert runtimes_to_change(entries, None) == ['kata-qemu', 'kata-clh']
