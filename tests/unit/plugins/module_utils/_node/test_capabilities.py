# -*- coding: utf-8 -*-
"""_node.capabilities.check_classes on a folder laid out as a node's /dev, /sys, /proc and /lib/modules: what a
kata runtime class needs (by its name, or as given) and whether the node has it.

/dev/kvm is a real character device (mknod; the tests run as root)."""

import os
import stat

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._node.capabilities import check_classes

RELEASE = '6.12.0-test'
VHOST_DEP = ('kernel/drivers/vhost/vhost_vsock.ko.zst: kernel/net/vmw_vsock/vsock.ko.zst '
             'kernel/drivers/vhost/vhost.ko.zst kernel/drivers/vhost/vhost_iotlb.ko.zst\n'
             'kernel/drivers/vhost/vhost_net.ko.xz: kernel/drivers/net/tap.ko.xz kernel/drivers/vhost/vhost.ko.xz\n'
             'kernel/drivers/vhost/vhost.ko.zst: kernel/drivers/vhost/vhost_iotlb.ko.zst\n'
             'kernel/drivers/vhost/vhost_iotlb.ko.zst:\n')
VHOST_ONLY = 'kernel/drivers/vhost/vhost.ko.zst: kernel/drivers/vhost/vhost_iotlb.ko.zst\n'


def write(root, path, text):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w', encoding='utf-8') as f:
        f.write(text)


def node(tmp_path, release=RELEASE, dep=VHOST_DEP, builtin=None, prot_virt_host=None):
    """A node root: /dev/kvm a character device, the vhost modules loadable as dep says (nothing loaded)."""
    root = str(tmp_path / 'node')
    os.makedirs(os.path.join(root, 'dev'))
    os.mknod(os.path.join(root, 'dev', 'kvm'), stat.S_IFCHR | 0o600, os.makedev(10, 232))
    write(root, '/proc/cpuinfo', 'processor\t: 0\nflags\t\t: fpu sie\n')
    if dep is not None:
        write(root, '/lib/modules/%s/modules.dep' % release, dep)
    if builtin is not None:
        write(root, '/lib/modules/%s/modules.builtin' % release, builtin)
    if prot_virt_host is not None:
        write(root, '/sys/firmware/uv/prot_virt_host', prot_virt_host)
    return root


def test_modules_listed_in_modules_dep_with_their_dependencies_can_be_loaded(tmp_path):
    report, refused = check_classes([dict(name='kata-qemu')], root=node(tmp_path), release=RELEASE)
    assert refused == []
    assert report['kata-qemu'] == dict(needs=['kvm', 'vhost_vsock', 'vhost_net'], missing={}, ok=True)


def test_modules_built_into_the_kernel_count(tmp_path):
    builtin = 'kernel/drivers/vhost/vhost.ko\nkernel/drivers/vhost/vhost_vsock.ko\nkernel/drivers/vhost/vhost_net.ko\n'
    report, refused = check_classes([dict(name='kata-clh')], root=node(tmp_path, dep=VHOST_ONLY, builtin=builtin),
                                    release=RELEASE)
    assert refused == [] and report['kata-clh']['ok'] is True


def test_a_kernel_with_vhost_but_without_vhost_vsock_and_vhost_net_refuses_the_vm_classes(tmp_path):
    report, refused = check_classes([dict(name='kata-qemu')], root=node(tmp_path, dep=VHOST_ONLY), release=RELEASE)
    assert list(report['kata-qemu']['missing']) == ['vhost_vsock', 'vhost_net']
    assert refused == [
        'runtime class kata-qemu cannot run on this node: needs vhost_vsock - the kernel module vhost_vsock is not '
        'loaded, has no /dev/vhost-vsock and is not among the modules of kernel %s (/sys/module/vhost_vsock, '
        '/lib/modules/%s/modules.dep); needs vhost_net - the kernel module vhost_net is not loaded, has no '
        '/dev/vhost-net and is not among the modules of kernel %s (/sys/module/vhost_net, '
        '/lib/modules/%s/modules.dep)' % ((RELEASE,) * 4)]


def test_without_a_release_the_running_kernels_modules_are_read(tmp_path):
    running = os.uname().release
    report, refused = check_classes([dict(name='kata-qemu')], root=node(tmp_path, release=running))
    assert refused == [] and report['kata-qemu']['ok'] is True


def test_an_s390x_host_booted_with_prot_virt_runs_the_secure_execution_classes(tmp_path):
    report, refused = check_classes([dict(name='kata-qemu-se')], root=node(tmp_path, prot_virt_host='1\n'),
                                    release=RELEASE)
    assert refused == []
    assert report['kata-qemu-se'] == dict(needs=['kvm', 'vhost_vsock', 'vhost_net', 'se'], missing={}, ok=True)


@pytest.mark.parametrize('prot_virt_host, shown', [('0\n', '0'), (None, 'missing')])
def test_a_host_without_prot_virt_refuses_the_secure_execution_classes_saying_what_it_has(tmp_path, prot_virt_host,
                                                                                          shown):
    report, refused = check_classes([dict(name='kata-qemu-se'), dict(name='kata-qemu')],
                                    root=node(tmp_path, prot_virt_host=prot_virt_host), release=RELEASE)
    assert report['kata-qemu']['ok'] is True
    assert refused == [
        'runtime class kata-qemu-se cannot run on this node: needs se - IBM Secure Execution: '
        '/sys/firmware/uv/prot_virt_host is %s (an s390x host booted with prot_virt=1)' % shown]


def test_kata_remote_named_without_its_shim_needs_nothing_of_the_node(tmp_path):
    """Peer pods run their VM elsewhere: an empty node root has all kata-remote needs."""
    root = tmp_path / 'empty'
    root.mkdir()
    report, refused = check_classes([dict(name='kata-remote')], root=str(root), release=RELEASE)
    assert refused == [] and report['kata-remote'] == dict(needs=[], missing={}, ok=True)
