# -*- coding: utf-8 -*-
"""Config trees the batch forms of the editing modules are tried on, beside the single calls."""

# (fixture, containerd binary that reads it): Debian's stock 1.6 file (no
# runtimes table: runc is written out), kubeadm's on 1.7, version 3 on 2.x
NODES = [('v2_debian_stock.toml', 'host'), ('v2_kubeadm.toml', '1.7'), ('v3_default.toml', '2')]


def importing_main(version):
    """A config.toml of version 2 or 3 importing one entry (the template's %s), runc its default runtime; version 3
    in single quotes, as containerd 2.x's own default config."""
    cri, q = ("'io.containerd.cri.v1.runtime'", "'") if version == 3 else ('"io.containerd.grpc.v1.cri"', '"')
    return ('version = %d\nimports = ["%%s"]\n\n[plugins.%s.containerd]\n  default_runtime_name = %srunc%s\n'
            '  [plugins.%s.containerd.runtimes.runc]\n    runtime_type = %sio.containerd.runc.v2%s\n'
            % (version, cri, q, q, cri, q, q))


# a version 3 config.toml importing one drop-in (%s: the drop-in's path)
DROPIN_MAIN = importing_main(3)
# a version 2 config.toml importing one entry (%s: the entry)
V2_IMPORTING_MAIN = importing_main(2)


# the drop-in that defines kata-qemu
KATA_DROPIN = '''version = 3

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata-qemu]
  runtime_type = 'io.containerd.kata-qemu.v2'
'''

# the drop-in that decides enable_cdi
CDI_DROPIN = '''version = 3

[plugins.'io.containerd.cri.v1.runtime']
  enable_cdi = false
'''


def write_tree(tmp_path, main, **files):
    """config.toml (with {name} placeholders for the other files' paths) and the other files, each NAME.toml
    under tmp_path; (config.toml's path, {name: path})."""
    paths = dict((name, str(tmp_path / ('%s.toml' % name))) for name in files)
    for name, text in files.items():
        (tmp_path / ('%s.toml' % name)).write_text(text)
    path = str(tmp_path / 'config.toml')
    (tmp_path / 'config.toml').write_text(main.format(**paths))
    return path, paths


def effective_view(path, ver):
    """The effective-config model of the tree at path, as containerd ver reads it."""
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
    from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
    with open(path) as f:
        return load_effective(path, parse_toml(f.read()), ver)


# the drop-in the Confidential Containers operator writes for the nydus snapshotter
NYDUS_DROPIN = '''version = 2

[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''


def dropin_call(paths, content):
    """The params of containerd_dropin's logic for one drop-in (paths: main, dropin, state), as a maker:
    params(**changes)."""
    def params(**kw):
        out = dict(path=paths['main'], dropin=paths['dropin'], owner='coco', state_dir=paths['state'],
                   content=content, mode='0644', create_folder=True, lock_timeout=5, validate='none', backup=False)
        out.update(kw)
        return out
    return params


class DropinModule(object):
    """What containerd_dropin's write/remove ask of AnsibleModule: check and diff mode, and a backup."""

    def __init__(self, check=False, diff=False):
        self.check_mode = check
        self._diff = diff
        self.backups = []

    def backup_local(self, path):
        self.backups.append(path)
        return path + '.bak'
