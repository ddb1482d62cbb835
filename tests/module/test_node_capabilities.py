# -*- coding: utf-8 -*-
"""containerd_preflight's runtime class check: what each kata class needs (/dev/kvm, vhost_vsock, vhost_net, and
TDX or SEV-SNP by name) read from a node root laid out as the kernel lays out /dev, /sys, /proc and /lib/modules.

The roots are folders here (node_root), with a real character device for /dev/kvm (mknod; the tests run as
root). A class the node cannot run fails the module with status refused, naming the class and what is missing.
"""

import os
import stat

import pytest

from helpers.modules import PlainModuleRunner

RELEASE = '6.16.0-test'


@pytest.fixture
def run_module(workdir):
    """conftest's runner without the state_dir it adds for the editing modules (containerd_preflight has none)."""
    return PlainModuleRunner(workdir)


def write(root, path, text=''):
    full = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, 'w') as f:
        f.write(text)


def node(tmp_path, kvm=True, tdx=None, snp=None, flags='fpu vmx', vsock='sysfs'):
    """A node root: kvm a char device (or absent), vhost_net loadable (modules.dep), vhost_vsock as asked."""
    root = str(tmp_path / 'node')
    os.makedirs(os.path.join(root, 'dev'))
    if kvm:
        os.mknod(os.path.join(root, 'dev', 'kvm'), stat.S_IFCHR | 0o600, os.makedev(10, 232))
    write(root, '/proc/cpuinfo', 'processor\t: 0\nflags\t\t: %s\n\nprocessor\t: 1\nflags\t\t: %s\n' % (flags, flags))
    dep = 'kernel/drivers/vhost/vhost_net.ko.xz: kernel/drivers/vhost/vhost.ko.xz\n'
    if vsock == 'sysfs':
        os.makedirs(os.path.join(root, 'sys', 'module', 'vhost_vsock'))
    elif vsock == 'dep':
        dep += 'kernel/drivers/vhost/vhost_vsock.ko.xz: kernel/drivers/vhost/vhost.ko.xz\n'
    write(root, '/lib/modules/%s/modules.dep' % RELEASE, dep)
    if tdx is not None:
        write(root, '/sys/module/kvm_intel/parameters/tdx', tdx + '\n')
    if snp is not None:
        write(root, '/sys/module/kvm_amd/parameters/sev_snp', snp + '\n')
    return root


def check(run_module, root, classes, expect_fail=False):
    return run_module('containerd_preflight', load_test=False, node_root=root, kernel_release=RELEASE,
                      runtime_classes=[c if isinstance(c, dict) else dict(name=c) for c in classes],
                      expect_fail=expect_fail)


def test_a_kvm_node_runs_the_plain_classes_and_no_containerd_is_started(run_module, tmp_path):
    root = node(tmp_path, vsock='dep')
    res = check(run_module, root, ['kata-qemu', 'kata-qemu-coco-dev', 'kata-qemu-nvidia-gpu', 'kata-clh'])
    assert res['status'] == 'ok' and res['refused'] == [] and not res['changed']
    assert res['capabilities']['kata-qemu'] == dict(needs=['kvm', 'vhost_vsock', 'vhost_net'], missing={}, ok=True)
    assert 'containerd_version' not in res and 'plugins' not in res


def test_a_node_without_dev_kvm_refuses_every_vm_class_naming_what_is_missing(run_module, tmp_path):
    root = node(tmp_path, kvm=False, vsock='none')
    res = check(run_module, root, ['kata-qemu', {'name': 'kata-remote', 'shim': 'remote'}], expect_fail=True)
    assert res['status'] == 'refused'
    assert res['refused'] == [
        'runtime class kata-qemu cannot run on this node: needs kvm - /dev/kvm does not exist (no hardware '
        'virtualisation enabled in the firmware, kvm_intel / kvm_amd not loaded, or a VM without nested '
        'virtualisation); needs vhost_vsock - the kernel module vhost_vsock is not loaded, has no /dev/vhost-vsock '
        'and is not among the modules of kernel %s (/sys/module/vhost_vsock, /lib/modules/%s/modules.dep)'
        % (RELEASE, RELEASE)]
    # peer pods run their VM elsewhere
    assert res['capabilities']['kata-remote'] == dict(needs=[], missing={}, ok=True)
    assert res['msg'].endswith('Nothing was changed. Fix: remove the class(es) from the runtime classes asked for '
                               '(coco_runtime_classes), give the node what is missing, or skip this check '
                               '(coco_check_node: false).')


def test_a_kvm_node_without_tdx_refuses_the_tdx_classes_only(run_module, tmp_path):
    root = node(tmp_path)
    res = check(run_module, root, ['kata-qemu', 'kata-qemu-tdx', 'kata-qemu-nvidia-gpu-tdx'], expect_fail=True)
    assert res['capabilities']['kata-qemu']['ok'] is True
    assert [r.split(':')[0] for r in res['refused']] == [
        'runtime class kata-qemu-tdx cannot run on this node',
        'runtime class kata-qemu-nvidia-gpu-tdx cannot run on this node']
    missing = res['capabilities']['kata-qemu-tdx']['missing']
    assert list(missing) == ['tdx']
    assert missing['tdx'].startswith('Intel TDX: /sys/module/kvm_intel/parameters/tdx does not exist (KVM runs TDX')
    assert missing['tdx'].endswith('; the CPU flag tdx_host_platform is not set in /proc/cpuinfo')


def test_tdx_turned_off_in_kvm_is_named_with_its_value(run_module, tmp_path):
    root = node(tmp_path, tdx='N', flags='fpu vmx tdx_host_platform')
    res = check(run_module, root, ['kata-qemu-tdx'], expect_fail=True)
    assert 'Intel TDX: /sys/module/kvm_intel/parameters/tdx is N, not Y' in res['refused'][0]
    assert 'the CPU flag tdx_host_platform is set in /proc/cpuinfo' in res['refused'][0]


@pytest.mark.parametrize('classes, params', [
    (['kata-qemu-tdx', 'kata-qemu-nvidia-gpu-tdx'], dict(tdx='Y')),
    (['kata-qemu-snp', 'kata-qemu-nvidia-gpu-snp'], dict(snp='Y')),
])
def test_a_tee_node_runs_its_tee_classes(run_module, tmp_path, classes, params):
    res = check(run_module, node(tmp_path, **params), classes)
    assert all(res['capabilities'][c]['ok'] for c in classes), res


def test_an_intel_tdx_node_refuses_snp(run_module, tmp_path):
    res = check(run_module, node(tmp_path, tdx='Y'), ['kata-qemu-tdx', 'kata-qemu-snp'], expect_fail=True)
    assert res['capabilities']['kata-qemu-tdx']['ok'] is True
    assert res['refused'][0].startswith('runtime class kata-qemu-snp cannot run on this node: needs snp - AMD SEV-SNP: '
                                        '/sys/module/kvm_amd/parameters/sev_snp does not exist')


def test_needs_given_replace_those_of_the_name(run_module, tmp_path):
    root = node(tmp_path, kvm=False)
    res = check(run_module, root, [dict(name='kata-qemu', needs=[]), dict(name='my-tdx', shim='qemu', needs=['tdx'])],
                expect_fail=True)
    assert res['capabilities']['kata-qemu'] == dict(needs=[], missing={}, ok=True)
    assert list(res['capabilities']['my-tdx']['missing']) == ['tdx']


def test_the_load_test_is_not_started_for_a_refused_class(run_module, tmp_path, config):
    """Refused before the load test: a config containerd could not even read is not started."""
    path = config('this is not toml')
    res = run_module('containerd_preflight', path=path, node_root=node(tmp_path, kvm=False),
                     kernel_release=RELEASE, runtime_classes=[dict(name='kata-qemu')], expect_fail=True)
    assert res['status'] == 'refused' and 'log_tail' not in res
