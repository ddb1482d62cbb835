# -*- coding: utf-8 -*-
"""Config trees for the differential test, generated from a seed.

A tree is a main config.toml (version 2, or 3 for containerd 2.x) and the
drop-ins the programs around containerd write: the NVIDIA toolkit's
conf.d/99-nvidia.toml (a whole copy of the CRI plugin table), kata-deploy's
runtimes.kata-<shim> tables, a CDI drop-in (enable_cdi, cdi_spec_dirs) and
the nydus one (proxy_plugins.nydus, disable_snapshot_annotations), each with
or without a `version` line. They are imported by glob, by absolute path, by
a relative path, from another drop-in (nested), and config.toml may import
itself (the v1.17 toolkit installer writes that).

Paths are written with the placeholder ROOT, replaced by the folder the tree
is materialised in, so one tree can be copied to many folders.

    python tests/differential/trees.py 2.1 17     # print one tree
"""

import os
import random
import sys

ROOT = '@ROOT@'
CTD_VERSIONS = ('1.6', '1.7', '2.1')

V2_CRI = 'plugins."io.containerd.grpc.v1.cri"'
V3_RUNTIME = "plugins.'io.containerd.cri.v1.runtime'"
V3_IMAGES = "plugins.'io.containerd.cri.v1.images'"
KATA_SHIMS = ('qemu', 'qemu-coco-dev', 'qemu-tdx', 'qemu-snp', 'clh', 'qemu-nvidia-gpu')
NVIDIA_RUNTIMES = (('nvidia', '/usr/local/nvidia/toolkit/nvidia-container-runtime'),
                   ('nvidia-cdi', '/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi'),
                   ('nvidia-legacy', '/usr/local/nvidia/toolkit/nvidia-container-runtime.legacy'))
NYDUS_ADDRESS = '/run/containerd-nydus/containerd-nydus-grpc.sock'
# where each kind of drop-in lives when it is not in the glob folder
HOMES = {'nvidia': 'conf.d/99-nvidia.toml', 'kata': 'opt-kata/config.d/kata-deploy.toml',
         'cdi': 'cdi.d/10-cdi.toml', 'nydus': 'config.toml.d/nydus-snapshotter.toml'}


class Tree(object):
    """One generated tree: files (relative path -> text with ROOT), what it holds, how it was made."""

    def __init__(self, seed, ctd):
        self.seed = seed
        self.ctd = ctd
        self.files = {}
        self.main_version = 2
        self.features = []
        # runtimes written by drop-ins: name -> (runtime_type, runtime_path or None, options)
        self.dropin_runtimes = {}
        self.dropins = []  # (relative path, kind, version or None, import style)
        self.self_import = False

    def shapes(self):
        """Tags for the shapes that once got wrong answers (the fast profile must hold each)."""
        tags = set('import-' + d[3] for d in self.dropins)
        cri_main = 'containerd.runtimes.runc]' in self.files['config.toml']
        if self.self_import and cri_main and not self.dropins:
            tags.add('self-import')  # the v1.17 toolkit's config.toml, nothing else to shadow it
        for _rel, kind, version, _style in self.dropins:
            if kind in ('nvidia', 'kata') and version == 2 and self.main_version == 3 and cri_main:
                tags.add('v2-runtimes-under-v3')
            if kind in ('nvidia', 'kata') and version == 2 and self.main_version == 3 and not cri_main:
                tags.add('v2-runtimes-under-bare-v3')  # a runtimes table written into config.toml drops them
            if kind == 'cdi':
                tags.add('cdi-dropin')
            if kind in ('nvidia', 'kata') and version is None:
                tags.add('versionless-runtimes')
        return tags

    def materialise(self, root):
        """Write the tree under root; {relative path: absolute path}."""
        paths = {}
        for rel, text in sorted(self.files.items()):
            path = os.path.join(root, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as f:
                f.write(text.replace(ROOT, root))
            paths[rel] = path
        return paths

    def describe(self, root=ROOT):
        """The replay line and every file with its content."""
        lines = ['tree: containerd %s seed %s (%s stands for the tree\'s folder); replay: NG_DIFF_SEED=%s '
                 'NG_DIFF_CTD=%s pytest tests/module/test_differential.py' % (self.ctd, self.seed, ROOT, self.seed,
                                                                              self.ctd),
                 'shape:\n  ' + '\n  '.join(self.features)]
        for rel, text in sorted(self.files.items(), key=lambda kv: (kv[0] != 'config.toml', kv[0])):
            lines.append('----- %s' % os.path.join(root, rel))
            lines.append(text.replace(ROOT, root).rstrip('\n'))
        return '\n'.join(lines)


def q(text):
    return '"%s"' % text


def toml_list(items):
    return '[%s]' % ', '.join(q(i) for i in items)


def cri_paths(version):
    """(runtime plugin table, table of the image keys) as a file of this version writes them."""
    if version == 3:
        return V3_RUNTIME, V3_IMAGES
    return V2_CRI, V2_CRI + '.containerd'


def version_line(version):
    return '' if version is None else 'version = %d\n' % version


def runtime_table(cri, name, runtime_type, options, extra=(), runtime_path=None):
    head = '%s.containerd.runtimes.%s' % (cri, q(name) if '.' in name else name)
    lines = ['[%s]' % head, '  runtime_type = %s' % q(runtime_type)]
    if runtime_path:
        lines.append('  runtime_path = %s' % q(runtime_path))
    lines.extend('  ' + e for e in extra)
    lines.append('  [%s.options]' % head)
    for key, value in options:
        lines.append('    %s = %s' % (key, 'true' if value is True else q(value)))
    return '\n'.join(lines) + '\n'


def main_text(rng, version, shape, imports):
    """config.toml: a kubeadm-like file, a CRI table with no runtimes, or little more than its imports."""
    cri, images = cri_paths(version)
    out = ['# node config (differential test tree)\n', version_line(version)]
    if imports is not None:
        out.append('imports = %s\n' % toml_list(imports))
    out.append('root = "/var/lib/containerd"\n\n[grpc]\n  address = "/run/containerd/containerd.sock"\n\n')
    if shape == 'bare':
        return ''.join(out)
    out.append('[%s]\n' % cri)
    if version == 2:
        out.append('  sandbox_image = "registry.k8s.io/pause:3.9"\n')
    else:
        out.append('  enable_selinux = false\n')
    if shape == 'full':
        out.append('\n[%s.containerd]\n  default_runtime_name = "runc"\n' % cri)
        if version == 2:
            out.append('  snapshotter = "overlayfs"\n')
        out.append('\n# runc runs the static pods: keep SystemdCgroup\n')
        out.append(runtime_table(cri, 'runc', 'io.containerd.runc.v2', [('SystemdCgroup', True)]))
        out.extend(in_place_runtimes(rng, cri))
    if version == 3 and rng.random() < 0.5:
        out.append('\n[%s]\n  snapshotter = "overlayfs"\n' % images)
    return ''.join(out)


def in_place_runtimes(rng, cri):
    """Runtimes written into config.toml itself: the toolkit before v1.18, kata-deploy on containerd 1.x."""
    out = []
    if rng.random() < 0.35:
        options = [('BinaryName', NVIDIA_RUNTIMES[0][1]), ('SystemdCgroup', True)]
        out.append('\n' + runtime_table(cri, 'nvidia', 'io.containerd.runc.v2', options))
    if rng.random() < 0.25:
        out.append('\n' + runtime_table(cri, 'kata-qemu', 'io.containerd.kata-qemu.v2', [
            ('ConfigPath', '/opt/kata/share/defaults/kata-containers/configuration-qemu.toml')]))
    return out


def nvidia_text(rng, version, tree):
    """The toolkit's 99-nvidia.toml: the whole CRI runtime table, runc included, plus its runtimes."""
    cri = cri_paths(version or 2)[0]
    count = rng.randint(1, 3)
    default = 'nvidia' if rng.random() < 0.4 else 'runc'
    out = [version_line(version), '\n[%s]\n' % cri]
    if version != 3:
        out.append('  sandbox_image = "registry.k8s.io/pause:3.9"\n')
    out.append('\n[%s.containerd]\n  default_runtime_name = %s\n' % (cri, q(default)))
    if version != 3:
        out.append('  snapshotter = "overlayfs"\n')
    out.append('\n')
    for name, binary in NVIDIA_RUNTIMES[:count]:
        options = [('BinaryName', binary), ('SystemdCgroup', True)]
        out.append(runtime_table(cri, name, 'io.containerd.runc.v2', options) + '\n')
        tree.dropin_runtimes[name] = ('io.containerd.runc.v2', None, dict(options))
    out.append(runtime_table(cri, 'runc', 'io.containerd.runc.v2', [('SystemdCgroup', True)]))
    tree.features.append('nvidia default=%s runtimes=%d' % (default, count))
    return ''.join(out)


def kata_text(rng, version, tree):
    """kata-deploy's drop-in: one runtimes.kata-<shim> table per shim, nothing else."""
    cri = cri_paths(version or 2)[0]
    shims = rng.sample(KATA_SHIMS, rng.randint(1, 3))
    out = [version_line(version)]
    for shim in shims:
        name = 'kata-' + shim
        options = [('ConfigPath', '/opt/kata/share/defaults/kata-containers/configuration-%s.toml' % shim)]
        extra = ['privileged_without_host_devices = true', 'pod_annotations = ["io.katacontainers.*"]']
        out.append('\n' + runtime_table(cri, name, 'io.containerd.kata-%s.v2' % shim, options, extra,
                                        '/opt/kata/bin/containerd-shim-kata-v2'))
        tree.dropin_runtimes[name] = ('io.containerd.kata-%s.v2' % shim, '/opt/kata/bin/containerd-shim-kata-v2',
                                      dict(options))
    tree.features.append('kata ' + ','.join(shims))
    return ''.join(out)


def cdi_text(rng, version, tree):
    cri = cri_paths(version or 2)[0]
    tree.features.append('cdi')
    return '%s\n[%s]\n  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n' % (
        version_line(version), cri)


def nydus_text(rng, version, tree):
    images = cri_paths(version or 2)[1]
    annotations = rng.choice(['false', 'true'])
    tree.features.append('nydus annotations=%s' % annotations)
    text = '%s\n[proxy_plugins]\n  [proxy_plugins.nydus]\n    type = "snapshot"\n    address = "%s"\n' % (
        version_line(version), NYDUS_ADDRESS)
    return text + '\n[%s]\n  disable_snapshot_annotations = %s\n' % (images, annotations)


WRITERS = {'nvidia': nvidia_text, 'kata': kata_text, 'cdi': cdi_text, 'nydus': nydus_text}


def entry_for(rng, importer, target, style):
    """How importer names target: absolute, or relative to importer's folder."""
    if style == 'relative':
        return os.path.relpath(target, os.path.dirname(importer))
    return ROOT + '/' + target


def place_dropins(rng, tree, kinds, main_version):
    """Write the drop-ins and say who imports each: {importer rel path: [entries]}."""
    imports = {'config.toml': []}
    glob_used = False
    placed = []
    for kind in kinds:
        versions = [2, None] if main_version == 2 else [3, 2, None]
        version = rng.choice(versions)
        style = rng.choice(['glob', 'explicit', 'relative', 'nested'] if placed else ['glob', 'explicit', 'relative'])
        rel = HOMES[kind]
        if style == 'glob':
            rel = 'conf.d/' + os.path.basename(rel)
            if not glob_used:
                imports['config.toml'].append(ROOT + '/conf.d/*.toml')
                glob_used = True
        elif style == 'nested':
            importer = rng.choice(placed)
            imports.setdefault(importer, []).append(entry_for(rng, importer, rel, rng.choice(['explicit',
                                                                                              'relative'])))
        else:
            imports['config.toml'].append(entry_for(rng, 'config.toml', rel, style))
        tree.files[rel] = WRITERS[kind](rng, version, tree)
        tree.features[-1] = '%s: %s, version %s, imported %s' % (rel, tree.features[-1], version, style)
        tree.dropins.append((rel, kind, version, style))
        placed.append(rel)
    return imports


def add_imports_line(text, entries):
    """A drop-in's own imports line goes before its first table."""
    line = 'imports = %s\n' % toml_list(entries)
    if text.startswith('version'):
        head, rest = text.split('\n', 1)
        return head + '\n' + line + rest
    return line + text


def generate(seed, ctd):
    """The tree of this seed for containerd ctd ('1.6', '1.7' or '2.1')."""
    rng = random.Random('nodeguard-differential/%s/%s' % (ctd, seed))
    tree = Tree(seed, ctd)
    tree.main_version = 3 if ctd.startswith('2') and rng.random() < 0.6 else 2
    shape = rng.choice(['full', 'full', 'cri-only', 'bare'])
    tree.features.append('main version=%d %s' % (tree.main_version, shape))
    kinds = rng.sample(sorted(WRITERS), rng.choice([0, 1, 1, 2, 2, 3, 4]))
    imports = place_dropins(rng, tree, kinds, tree.main_version)
    main_entries = imports.pop('config.toml')
    if rng.random() < (0.35 if kinds else 0.7):
        # the v1.17 installer puts the self-import first; a tool appending it puts it last
        self_entry = ROOT + '/config.toml' if rng.random() < 0.8 else 'config.toml'
        main_entries.insert(0 if rng.random() < 0.6 else len(main_entries), self_entry)
        tree.features.append('self-import %s' % self_entry)
        tree.self_import = True
    for importer, entries in imports.items():
        tree.files[importer] = add_imports_line(tree.files[importer], entries)
    tree.files['config.toml'] = main_text(rng, tree.main_version, shape, main_entries)
    in_place = [n for n in ('nvidia', 'kata-qemu') if '.runtimes.%s]' % n in tree.files['config.toml']]
    if in_place:
        tree.features.insert(1, 'config.toml itself defines %s' % ', '.join(in_place))
    return tree


if __name__ == '__main__':
    print(generate(int(sys.argv[2]), sys.argv[1]).describe())
