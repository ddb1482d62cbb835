# -*- coding: utf-8 -*-
"""Effective values of protected keys and who is to blame for their drift (no binary: the merge model)."""

import os

import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.store import read_tree
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.effective import (
    Mirror,
    effective_drift,
    effective_records,
    merged_path,
    parse_ver,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective

CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
PROTECT = ['cri.runtimes.runc', 'cri.default_runtime_name']


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    return path


def records(path, ver):
    data = tomlkit.parse(open(path).read()).unwrap()
    view = load_effective(path, data, ver)
    return effective_records(view, PROTECT), view


def by_key(entries):
    return dict((e['key'], e) for e in entries)


V2_MAIN = ('version = 2\nimports = ["%s/conf.d/*.toml"]\n'
           '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n'
           '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
           '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]\n  SystemdCgroup = true\n')
V3_MAIN = V2_MAIN.replace('version = 2', 'version = 3').replace(CRI2, CRI3)


def test_unset_default_runtime_is_containerds_runc(tmp_path):
    path = write(str(tmp_path / 'config.toml'), 'version = 2\n')
    recs, _view = records(path, (1, 6))
    rec = by_key(recs)['cri.default_runtime_name']
    assert rec['value'] == 'runc' and rec['default'] is True and rec['file'] is None
    assert by_key(recs)['cri.runtimes.runc']['value'] is None


def test_v1x_dropin_replacing_the_cri_table_is_blamed_for_what_it_drops(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V2_MAIN % root)
    before, _unused = records(path, (1, 6))
    assert by_key(before)['cri.runtimes.runc']['file'] == path
    # a drop-in with only a kata runtime: on 1.x it replaces the whole CRI table, runc is gone
    dropin = write(os.path.join(root, 'conf.d', '50-kata.toml'),
                   'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                   '  runtime_type = "io.containerd.kata.v2"\n')
    after, view = records(path, (1, 6))
    drift = by_key(effective_drift(before, after, True, view, ver=(1, 6)))
    assert drift['cri.runtimes.runc']['change'] == 'removed' and drift['cri.runtimes.runc']['file'] == dropin
    # the default is unset in the drop-in's table: containerd's own "runc", nothing changed there
    assert 'cri.default_runtime_name' not in drift
    # the same drop-in on 2.x deep-merges: nothing protected drifts
    path3 = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    write(dropin, open(dropin).read().replace('version = 2', 'version = 3').replace(CRI2, CRI3))
    before3, _unused = records(path3, (2, 1))
    os.unlink(dropin)
    base3, _unused = records(path3, (2, 1))
    assert effective_drift(base3, before3, True, None) == []


def test_a_key_removed_from_its_own_file_blames_that_file_on_2x(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    write(os.path.join(root, 'conf.d', '99-nvidia.toml'),
          'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
          '  runtime_type = "io.containerd.runc.v2"\n')
    before, _unused = records(path, (2, 1))
    data = tomlkit.parse(open(path).read())
    del data['plugins'][CRI3]['containerd']['runtimes']['runc']
    write(path, tomlkit.dumps(data))
    after, view = records(path, (2, 1))
    (d,) = effective_drift(before, after, True, view, ver=(2, 1))
    assert d['key'] == 'cri.runtimes.runc' and d['change'] == 'removed'
    assert d['file'] == path and d['before_file'] == path and d['compared'] == 'model'


def test_dropin_setting_the_default_is_blamed_and_the_dump_wins(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V3_MAIN % root)
    before, _unused = records(path, (2, 1))
    dropin = write(os.path.join(root, 'conf.d', '99-nvidia.toml'),
                   'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd]\n'
                   '  default_runtime_name = "nvidia"\n')
    after, view = records(path, (2, 1))
    (d,) = effective_drift(before, after, True, view, ver=(2, 1))
    assert (d['key'], d['before'], d['after'], d['file']) == ('cri.default_runtime_name', 'runc', 'nvidia', dropin)
    assert 'set by %s' % dropin in d['why']
    # where both sides carry a dump of the same containerd, the dump decides (here: it says nothing changed)
    for rec in before + after:
        rec['dumped'] = 'same'
    assert effective_drift(before, after, True, view) == []
    # of different containerd versions the dumps are not comparable: the model decides
    assert [x['key'] for x in effective_drift(before, after, False, view)] == ['cri.default_runtime_name']


def test_v2_paths_are_read_as_version_3_on_containerd_2(tmp_path):
    path = write(str(tmp_path / 'config.toml'), 'version = 2\n')
    data = tomlkit.parse(open(path).read()).unwrap()
    assert merged_path(load_effective(path, data, (1, 7)), 'cri.default_runtime_name')[1] == CRI2
    assert merged_path(load_effective(path, data, (2, 1)), 'cri.default_runtime_name')[1] == CRI3
    assert merged_path(load_effective(path, data, (2, 1)), 'images.snapshotter')[1] == 'io.containerd.cri.v1.images'


def test_mirror_points_absolute_imports_into_itself_and_names_the_real_files(tmp_path):
    root = str(tmp_path)
    path = write(os.path.join(root, 'config.toml'), V2_MAIN % root)
    dropin = write(os.path.join(root, 'conf.d', '99-nvidia.toml'),
                   'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n')
    tree = read_tree(path)
    with Mirror(tree.files, path) as mirror:
        assert mirror.main_data['imports'] == [mirror.root + root + '/conf.d/*.toml']
        view = load_effective(mirror.main, mirror.main_data, (1, 6))
        recs = by_key(effective_records(view, PROTECT, real=mirror.real))
        assert recs['cri.default_runtime_name']['file'] == dropin
        assert mirror.real('%s says no' % (mirror.root + dropin)) == '%s says no' % dropin
        kept = mirror.root
    assert not os.path.exists(kept)


def test_parse_ver():
    assert parse_ver('1.6.20~ds1') == (1, 6) and parse_ver('v2.1.9') == (2, 1) and parse_ver([1, 7]) == (1, 7)
    assert parse_ver(None) is None and parse_ver('x') is None
