# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a kata runtime class needs from the node, and whether the node has it (containerd_preflight).

Read-only: files under /dev, /sys, /proc and /lib/modules, all below an
injectable ``root`` (tests point it at a folder laid out like a node).

What the kernel exposes, and so what is read:
- KVM: the character device /dev/kvm (kvm plus kvm_intel or kvm_amd).
- vhost_vsock / vhost_net (the guest's agent socket and its network):
  loaded or built in (/sys/module/<name>), their device node (/dev/vhost-vsock,
  /dev/vhost-net: the kernel loads the module when the node is opened), or
  a module the kernel can load (modules.builtin / modules.dep of the running
  kernel).
- TDX: KVM's own switch, the read-only kvm_intel parameter ``tdx``
  (/sys/module/kvm_intel/parameters/tdx = Y; Linux 6.16+,
  arch/x86/kvm/vmx/tdx.c). The cpuinfo flag tdx_host_platform (BIOS and TDX
  module ready) is reported beside it.
- SEV-SNP: the read-only kvm_amd parameter ``sev_snp``
  (/sys/module/kvm_amd/parameters/sev_snp = Y; Linux 6.11+,
  arch/x86/kvm/svm/sev.c). The cpuinfo flag sev_snp is reported beside it.
- IBM Secure Execution (s390x, the *-se classes): /sys/firmware/uv/prot_virt_host = 1.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat

KVM = 'kvm'
VHOST_VSOCK = 'vhost_vsock'
VHOST_NET = 'vhost_net'
TDX = 'tdx'
SNP = 'snp'
SE = 'se'
KNOWN_NEEDS = (KVM, VHOST_VSOCK, VHOST_NET, TDX, SNP, SE)
# classes whose VM runs elsewhere (peer pods: kata-remote) need nothing of the node's virtualisation
NO_LOCAL_VM = ('remote',)

# the device node each module creates (and that loads it when opened)
MODULE_DEVICES = {VHOST_VSOCK: 'vhost-vsock', VHOST_NET: 'vhost-net'}
TRUE_WORDS = ('y', 'yes', '1', 'on', 'true')


def needs_of(shim):
    """What a kata shim (kata-qemu-tdx's shim is qemu-tdx) needs: KVM and vhost for every VM, a TEE by name."""
    words = shim.lower().split('-')
    if shim.lower() in NO_LOCAL_VM:
        return []
    needs = [KVM, VHOST_VSOCK, VHOST_NET]
    for tee in (TDX, SNP, SE):
        if tee in words:
            needs.append(tee)
    return needs


def _path(root, path):
    return os.path.join(root, path.lstrip('/'))


def _read(root, path):
    try:
        with open(_path(root, path)) as f:
            return f.read().strip()
    except (IOError, OSError):
        return None


def cpu_flags(root):
    """The flags of the first processor in /proc/cpuinfo (a set; empty when unreadable)."""
    text = _read(root, '/proc/cpuinfo') or ''
    for line in text.splitlines():
        key, _sep, value = line.partition(':')
        if key.strip() == 'flags':
            return set(value.split())
    return set()


def _kvm(root, release):
    dev = _path(root, '/dev/kvm')
    try:
        mode = os.stat(dev).st_mode
    except OSError:
        return ('/dev/kvm does not exist (no hardware virtualisation enabled in the firmware, kvm_intel / kvm_amd '
                'not loaded, or a VM without nested virtualisation)')
    if not stat.S_ISCHR(mode):
        return '/dev/kvm is not a character device'
    return None


def _module_files(root, release, name):
    """True when the running kernel has module name built in or can load it."""
    base = '/lib/modules/%s/' % release
    wanted = (name + '.ko', name.replace('_', '-') + '.ko')
    for listing in ('modules.builtin', 'modules.dep'):
        for line in (_read(root, base + listing) or '').splitlines():
            module = os.path.basename(line.split(':', 1)[0])
            if module.split('.ko', 1)[0] + '.ko' in wanted:
                return True
    return False


def _module(name):
    def check(root, release):
        if os.path.isdir(_path(root, '/sys/module/' + name)):
            return None
        if os.path.exists(_path(root, '/dev/' + MODULE_DEVICES[name])):
            return None
        if release and _module_files(root, release, name):
            return None
        return ('the kernel module %s is not loaded, has no /dev/%s and is not among the modules of kernel %s '
                '(/sys/module/%s, /lib/modules/%s/modules.dep)'
                % (name, MODULE_DEVICES[name], release or '(unknown)', name, release or '(unknown)'))
    return check


def _param(module, param, tee, flag, fix):
    def check(root, release):
        path = '/sys/module/%s/parameters/%s' % (module, param)
        value = _read(root, path)
        if value is not None and value.lower() in TRUE_WORDS:
            return None
        seen = 'the CPU flag %s is %s in /proc/cpuinfo' % (flag, 'set' if flag in cpu_flags(root) else 'not set')
        if value is None:
            return '%s: %s does not exist (%s); %s' % (tee, path, fix, seen)
        return '%s: %s is %s, not Y (%s); %s' % (tee, path, value, fix, seen)
    return check


def _se(root, release):
    value = _read(root, '/sys/firmware/uv/prot_virt_host')
    if value == '1':
        return None
    return ('IBM Secure Execution: /sys/firmware/uv/prot_virt_host is %s (an s390x host booted with prot_virt=1)'
            % ('missing' if value is None else value))


CHECKS = {
    KVM: _kvm,
    VHOST_VSOCK: _module(VHOST_VSOCK),
    VHOST_NET: _module(VHOST_NET),
    TDX: _param('kvm_intel', 'tdx', 'Intel TDX', 'tdx_host_platform',
                'KVM runs TDX guests only on a TDX-capable CPU with TDX enabled in the firmware, a kernel with KVM '
                'TDX host support (Linux 6.16+ or a distribution\'s TDX kernel) and kvm_intel.tdx=1'),
    SNP: _param('kvm_amd', 'sev_snp', 'AMD SEV-SNP', 'sev_snp',
                'KVM runs SEV-SNP guests only on an AMD EPYC CPU with SEV-SNP enabled in the firmware, a kernel with '
                'KVM SEV-SNP host support (Linux 6.11+) and kvm_amd.sev_snp=1'),
    SE: _se,
}


def node_facts(root, release):
    """Each known need: None when the node has it, else what is missing (computed once per run)."""
    return dict((need, CHECKS[need](root, release)) for need in KNOWN_NEEDS)


def check_classes(classes, root='/', release=None):
    """(report, refused): per class its needs and what is missing; the refusal messages, one per class.

    classes: dicts with name, and shim or needs (needs given win; unknown needs are an error of the input).
    """
    if release is None:
        release = os.uname()[2]
    facts = node_facts(root, release)
    report, refused = {}, []
    for entry in classes:
        name = entry['name']
        shim = entry.get('shim') or (name[len('kata-'):] if name.startswith('kata-') else name)
        needs = entry.get('needs')
        if needs is None:
            needs = needs_of(shim)
        unknown = [n for n in needs if n not in CHECKS]
        if unknown:
            raise ValueError('runtime class %s: unknown need(s) %s; known: %s'
                             % (name, ', '.join(unknown), ', '.join(KNOWN_NEEDS)))
        missing = dict((n, facts[n]) for n in needs if facts[n] is not None)
        report[name] = dict(needs=list(needs), missing=missing, ok=not missing)
        if missing:
            refused.append('runtime class %s cannot run on this node: %s'
                           % (name, '; '.join('needs %s - %s' % (n, missing[n]) for n in needs if n in missing)))
    return report, refused
