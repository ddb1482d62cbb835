# -*- coding: utf-8 -*-
"""The files a kata configuration names are part of a probe's fingerprint: the hypervisor, the guest kernel and
image, the firmware, virtiofsd... A kata payload updated file by file, or the distribution's qemu upgraded, keeps
the shim and the configuration file as they were; the VM the probe would boot is another one all the same.

Files are real files under tmp_path; the module against a real containerd is in
tests/module/test_containerd_readiness_probe_reuse.py."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import probe, stamps

OPTS = dict(ctr='ctr', address='/run/c.sock', namespace='k8s.io', probe_image='registry.k8s.io/pause:3.10',
            probe_command=[], pass_config_path=True)
FILES_CHANGED = 'changed since the probe passed: %s' % dict(stamps.PARTS)['files']

KATA_CONFIG = '''# a kata-containers configuration, as kata-deploy ships it (shortened)
[hypervisor.qemu]
path = "{d}/qemu-system-x86_64"
kernel = "{d}/vmlinux"
image = "{d}/image"
machine_type = "q35"
firmware = ""
valid_hypervisor_paths = ["{d}/qemu-system-x86_64"]
entropy_source = "/dev/urandom"
kernel_params = "console=hvc0"
default_vcpus = 1
virtio_fs_daemon = "{d}/virtiofsd"
valid_virtio_fs_daemon_paths = ["{d}/virtiofsd", "{d}/no-such-virtiofsd"]
shared_fs = "virtio-fs"

[factory]
template_path = "{d}"

[[hypervisor.qemu.extra]]
relative = "bin/qemu"
nested = [["{d}/nested-file"]]

[runtime]
internetworking_model = "tcfilter"
'''


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


def replace(path, text):
    """New bytes under a new inode, as an update that renames a new file into place leaves it."""
    write(path.with_name(path.name + '.new'), text)
    os.rename(str(path) + '.new', str(path))


class Kata(object):
    """A kata handler whose options.ConfigPath names the files of its VM, all under one folder."""

    def __init__(self, tmp_path, config_text=KATA_CONFIG):
        self.dir = tmp_path / 'kata'
        self.shim = write(self.dir / 'containerd-shim-kata-v2', '#!/bin/sh\n')
        for name in ('qemu-system-x86_64', 'vmlinux', 'image', 'virtiofsd', 'nested-file'):
            write(self.dir / name, name + ' 1\n')
        self.config = write(self.dir / 'configuration-qemu.toml', config_text.format(d=self.dir))
        self.table = dict(runtime_type='io.containerd.kata-qemu.v2', runtime_path=self.shim,
                          options=dict(ConfigPath=self.config))
        self.entry = probe.handlers(['kata-qemu'], {'kata-qemu': self.table}, OPTS, True)[0]
        self.state = str(tmp_path / 'state')
        self.common = dict(config='c' * 64, containerd=dict(pid=42, started=1000, boot='b'), path='',
                           beside=str(tmp_path / 'containerd-dir'))

    def files(self):
        return [state[0] for state in stamps.handler_files(self.entry, '', None)]

    def check(self):
        """The result that stands in for the probe (None: it runs) and why not, as a check sees them."""
        found = stamps.ProbeStamps(self.state, 3600)
        found.common, found.daemon_answers = self.common, True
        return found.reused(self.entry, self.table), found.why_not['kata-qemu'], found

    def passes(self):
        res, _why, found = self.check()
        assert res is None
        found.note({'kata-qemu': dict(kind='start', ok=True, rc=0, seconds=2.5)})
        assert found.save(False, None) == stamps.stamps_path(self.state)


def test_the_absolute_files_a_kata_configuration_names_are_fingerprinted(tmp_path):
    kata = Kata(tmp_path)
    d = str(kata.dir)
    # document order, each once; no folder, device, missing file, relative path or empty value
    assert kata.files() == [kata.shim, kata.shim, kata.config, d + '/qemu-system-x86_64', d + '/vmlinux',
                            d + '/image', d + '/virtiofsd', d + '/nested-file']


def test_a_guest_kernel_replaced_under_the_same_configuration_probes_again(tmp_path):
    kata = Kata(tmp_path)
    kata.passes()
    res, why, _found = kata.check()
    assert res is not None and res['reused'] is True and why is None, why  # nothing changed: reused
    replace(kata.dir / 'vmlinux', 'vmlinux 2, a new guest kernel\n')
    res, why, _found = kata.check()
    assert res is None and why == FILES_CHANGED


def test_each_file_the_configuration_names_counts(tmp_path):
    kata = Kata(tmp_path)
    kata.passes()
    for name in ('image', 'qemu-system-x86_64', 'virtiofsd', 'nested-file'):
        replace(kata.dir / name, name + ' 2, another one\n')
        res, why, _found = kata.check()
        assert res is None and why == FILES_CHANGED, name
        kata.passes()
        assert kata.check()[0] is not None  # stamped again: reused until the next change


def test_a_named_file_that_appears_or_goes_away_probes_again(tmp_path):
    kata = Kata(tmp_path)
    kata.passes()
    write(kata.dir / 'no-such-virtiofsd', 'now there is one\n')
    assert kata.check()[1] == FILES_CHANGED
    kata.passes()
    os.unlink(str(kata.dir / 'image'))
    assert kata.check()[1] == FILES_CHANGED


def test_a_configuration_that_does_not_parse_still_counts_as_a_file(tmp_path):
    kata = Kata(tmp_path, KATA_CONFIG + '[hypervisor.qemu\nbroken = \n')
    assert kata.files() == [kata.shim, kata.shim, kata.config]
    kata.passes()
    assert kata.check()[0] is not None
    replace(kata.dir / 'configuration-qemu.toml', KATA_CONFIG.format(d=kata.dir) + '[hypervisor.qemu\n')
    assert kata.check()[1] == FILES_CHANGED


def test_a_configuration_that_is_not_text_or_is_missing_names_no_file(tmp_path):
    kata = Kata(tmp_path)
    (kata.dir / 'configuration-qemu.toml').write_bytes(b'path = "\xff\xfe"\n')
    assert kata.files() == [kata.shim, kata.shim, kata.config]
    os.unlink(kata.config)
    assert stamps.handler_files(kata.entry, '', None)[-1] == [kata.config, 'missing']


def test_at_most_64_named_files_count(tmp_path):
    many = tmp_path / 'many'
    paths = [write(many / ('f%03d' % i), str(i)) for i in range(100)]
    text = '[hypervisor.qemu]\nvalid_hypervisor_paths = [%s]\n' % ', '.join('"%s"' % p for p in paths)
    kata = Kata(tmp_path, text)
    assert kata.files()[3:] == paths[:stamps.CONFIG_NAMED_FILES] and stamps.CONFIG_NAMED_FILES == 64


def test_a_configuration_too_large_for_a_kata_configuration_is_not_read(tmp_path):
    kata = Kata(tmp_path, KATA_CONFIG + '# %s\n' % ('x' * stamps.CONFIG_MAX_BYTES))
    assert kata.files() == [kata.shim, kata.shim, kata.config]
