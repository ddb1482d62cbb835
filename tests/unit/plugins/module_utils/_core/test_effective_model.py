# -*- coding: utf-8 -*-
"""The merged view (_effective) agrees with each real containerd's own `config dump`.

Layouts are the ones that go wrong in the field: the NVIDIA toolkit >= 1.18's
drop-in with the whole CRI table, kata drop-ins with and without a version
line, version 2 drop-ins under version 3 files.  For each, on every binary
that reads the main file's version, the model and the dump must name the same
runtimes, the same default runtime, the same SystemdCgroup per runtime and
the same disable_snapshot_annotations.  containerd's own defaults (default
runtime "runc", 2.x's built-in runc) are what the dump adds to the files.
"""

import os
import pathlib
import re
import subprocess
import tempfile

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, FIXTURES, read
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import (
    ABSENT,
    changed_leaves,
    effects_of,
    load_effective,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import containerd_version

NV = os.path.join(FIXTURES, 'nvidia-ctk')
V2 = 'io.containerd.grpc.v1.cri'
V3_RT = 'io.containerd.cri.v1.runtime'
V3_IMAGES = 'io.containerd.cri.v1.images'

KATA_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
           'runtime_type = "io.containerd.kata.v2"\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
           'disable_snapshot_annotations = false\n')
KATA_V3 = ('version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.kata]\n'
           'runtime_type = "io.containerd.kata.v2"\n')
KATA_NO_VERSION = ('[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                   'runtime_type = "io.containerd.kata.v2"\n')
IMAGES_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = false\n'
             '[plugins."io.containerd.grpc.v1.cri".containerd]\nsnapshotter = "native"\n')


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _binaries():
    assert CONTAINERD_1 and CONTAINERD_17 and CONTAINERD_2, 'run make deps (containerd 1.6, 1.7 and 2.1)'
    return {'1.6': CONTAINERD_1, '1.7': CONTAINERD_17, '2.1': CONTAINERD_2}


def _with_glob(text, folder):
    return re.sub(r'(?m)^imports = .*$', 'imports = ["%s/*.toml"]' % folder, text, count=1)


def _nvidia(flavour):
    stem = os.path.join(NV, 'ctk-head-d34b304-installer-%s-systemd-default.after-setup' % flavour)
    return read(stem + '.config.toml'), {'99-nvidia.toml': read(stem + '.conf.d-99-nvidia.toml')}


C16 = read(os.path.join(os.path.dirname(NV), 'v2_kubeadm.toml'))
C2 = read(os.path.join(os.path.dirname(NV), 'v3_default.toml'))

CASES = {
    'nvidia-dropin-v2': (lambda: _nvidia('c16'), ['1.6', '1.7', '2.1']),
    'nvidia-dropin-v3': (lambda: _nvidia('c2'), ['2.1']),
    'kata-v2-on-v2': (lambda: (C16, {'kata.toml': KATA_V2}), ['1.6', '1.7', '2.1']),
    'kata-no-version-on-v2': (lambda: (C16, {'kata.toml': KATA_NO_VERSION}), ['1.6', '1.7', '2.1']),
    'kata-v2-on-v3': (lambda: (C2, {'kata.toml': KATA_V2}), ['2.1']),
    'kata-v3-on-v3': (lambda: (C2, {'kata.toml': KATA_V3}), ['2.1']),
    'kata-no-version-on-v3': (lambda: (C2, {'kata.toml': KATA_NO_VERSION}), ['2.1']),
    'images-v2-on-v3': (lambda: (C2, {'images.toml': IMAGES_V2}), ['2.1']),
}


def _tree(tmp_path, main_text, dropins):
    conf_d = tmp_path / 'conf.d'
    conf_d.mkdir()
    text = _with_glob(main_text.replace('/etc/containerd/conf.d/*.toml', str(conf_d) + '/*.toml'), conf_d)
    if 'imports = ' not in text:
        text = text.replace('version = ', 'imports = ["%s/*.toml"]\nversion = ' % conf_d, 1)
    main = tmp_path / 'config.toml'
    main.write_text(text)
    for name, body in dropins.items():
        (conf_d / name).write_text(body)
    return str(main)


def _summary(data, v3):
    """What decides which pods run how: runtimes, default, SystemdCgroup, snapshot annotations."""
    cri = get_in(data, ('plugins', V3_RT if v3 else V2, 'containerd')) or {}
    images = get_in(data, ('plugins', V3_IMAGES)) if v3 else cri
    runtimes = cri.get('runtimes') or {}
    return dict(default=cri.get('default_runtime_name') or 'runc', runtimes=sorted(runtimes),
                systemd=dict((n, (t.get('options') or {}).get('SystemdCgroup')) for n, t in runtimes.items()),
                annotations=(images or {}).get('disable_snapshot_annotations'),
                snapshotter=(images or {}).get('snapshotter') if v3 else cri.get('snapshotter'))


@pytest.mark.parametrize('case', sorted(CASES))
def test_model_matches_config_dump(tmp_path, case):
    make, labels = CASES[case]
    main_text, dropins = make()
    path = _tree(tmp_path, main_text, dropins)
    data = parse_toml(read(path))
    for label in labels:
        binary = _binaries()[label]
        rc, out, err = _run([binary, '--config', path, 'config', 'dump'])
        assert rc == 0, err
        dumped = tomlkit.parse(out).unwrap()
        v3 = dumped.get('version') == 3
        view = load_effective(path, data, containerd_version(_run, binary))
        want, got = _summary(dumped, v3), _summary(view.merged, v3)
        if v3:
            # 2.x runs a built-in runc whatever the files say: the dump shows it, the files need not
            want['runtimes'] = [n for n in want['runtimes'] if n in got['runtimes'] or n != 'runc']
            want['systemd'] = dict((n, v) for n, v in want['systemd'].items() if n in got['systemd'])
        if got['annotations'] is None:
            want['annotations'] = None  # the dump adds containerd's default
        if got['snapshotter'] is None:
            want['snapshotter'] = None
        assert got == want, '%s on containerd %s: model %s, config dump %s' % (case, label, got, want)


def test_1x_nvidia_dropin_owns_the_cri_table():
    """On 1.x the drop-in's CRI table replaces config.toml's: every CRI key comes from the drop-in."""
    main_text, dropins = _nvidia('c16')
    with tempfile.TemporaryDirectory() as tmp:
        path = _tree(pathlib.Path(tmp), main_text, dropins)
        view = load_effective(path, parse_toml(read(path)), (1, 6))
        dropin = os.path.join(tmp, 'conf.d', '99-nvidia.toml')
        assert view.plugin_owner(V2) == dropin
        assert view.source_of(('plugins', V2, 'containerd', 'runtimes', 'runc', 'options', 'SystemdCgroup')) == dropin
        # a key config.toml sets but the drop-in does not is not in effect on 1.x
        changes = [(('plugins', V2, 'containerd', 'snapshotter'), 'native')]
        [effect] = effects_of(view, path, changes)
        assert not effect.in_effect and effect.shadowed_by == dropin and 'replaces the whole plugin table' in effect.why
        # on 2.x the same tree deep-merges: config.toml keys the drop-in does not set stay in effect
        view2 = load_effective(path, parse_toml(read(path)), (2, 1))
        gc = ('plugins', 'io.containerd.gc.v1.scheduler', 'pause_threshold')
        assert view2.source_of(gc) == path and view.source_of(gc) == path


def test_changed_leaves_names_sets_and_removals():
    before = {'a': {'b': 1, 'c': [1, 2]}, 'd': {}}
    after = {'a': {'b': 2, 'c': [1, 2]}, 'e': {'f': True}}
    assert changed_leaves(before, after) == [(('a', 'b'), 2), (('d',), ABSENT), (('e', 'f'), True)]
    assert changed_leaves(after, after) == []
    # 1 and 1.0 are the same number for containerd's decoder; True and 1 are not
    assert changed_leaves({'x': 1}, {'x': 1.0}) == []
    assert changed_leaves({'x': 1}, {'x': True}) == [(('x',), True)]


def test_relative_glob_import_follows_each_version(tmp_path):
    """1.6 expands a relative glob against its working folder (/ under systemd); 1.7 and 2.x against the file's."""
    conf_d = tmp_path / 'conf.d'
    conf_d.mkdir()
    (conf_d / 'a.toml').write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                                   'default_runtime_name = "kata"\n')
    main = tmp_path / 'config.toml'
    main.write_text('version = 2\nimports = ["conf.d/*.toml"]\n')
    binaries = _binaries()
    for label, ver in (('1.6', (1, 6)), ('1.7', (1, 7))):
        proc = subprocess.run([binaries[label], '--config', str(main), 'config', 'dump'], capture_output=True,
                              text=True, timeout=60, check=False, cwd='/')
        dumped = get_in(tomlkit.parse(proc.stdout).unwrap(), ('plugins', V2, 'containerd', 'default_runtime_name'))
        view = load_effective(str(main), parse_toml(main.read_text()), ver)
        modelled = get_in(view.merged, ('plugins', V2, 'containerd', 'default_runtime_name')) or 'runc'
        assert modelled == dumped, (label, modelled, dumped)
        assert dumped == ('runc' if label == '1.6' else 'kata')
