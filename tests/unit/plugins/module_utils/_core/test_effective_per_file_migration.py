# -*- coding: utf-8 -*-
"""containerd 2.3 migrates each file's version 2 CRI table on its own, before the merge (facts note, measured
on 2.3.4 built from source; no 2.3 binary runs here, so these are the model's rules, keyed on the node's
containerd version): a version 3 runtimes table no longer drops a version 2 drop-in's runtimes, as it does
on 2.1 (measured: test_runtime_guard_reasons.py, test_effective_v2_on_2x.py)."""

import pytest

from helpers.trees import effective_view as viewed, write_tree as tree

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2,
    CRI_V3_IMAGES,
    CRI_V3_RUNTIME,
    ConfigError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import effects_of
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.runtime_guard import refuse_lost_runtimes

V3_RUNTIMES = ('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes')
V2_CONTAINERD = ('plugins', CRI_V2, 'containerd')
KATA_V2 = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
           'runtime_type = "io.containerd.kata.v2"\n')
EXTRA_V3 = ('[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.extra]\n'
            'runtime_type = "io.containerd.runc.v2"\n')


@pytest.mark.parametrize('ver', [(2, 3), (2, 3, 4)])
def test_containerd_2_3_keeps_a_version_2_drop_ins_runtimes_beside_a_version_3_runtimes_table(tmp_path, ver):
    """So the check step lets config.toml gain a runtime there, which it refuses on 2.1."""
    main = 'version = 3\nimports = ["{kata}"]\n'
    path, paths = tree(tmp_path, main, kata=KATA_V2)
    before = {ver: viewed(path, ver), (2, 1): viewed(path, (2, 1))}
    tree(tmp_path, main + EXTRA_V3, kata=KATA_V2)
    after = {ver: viewed(path, ver), (2, 1): viewed(path, (2, 1))}
    view = after[ver]
    assert sorted(view.value(V3_RUNTIMES)) == ['extra', 'kata'] and view.unread == {}
    assert view.source_of(V3_RUNTIMES + ('kata', 'runtime_type')) == paths['kata']
    refuse_lost_runtimes(before[ver], view, path, [V3_RUNTIMES + ('extra', 'runtime_type')])
    assert sorted(after[(2, 1)].value(V3_RUNTIMES)) == ['extra']
    with pytest.raises(ConfigError, match='kata \\(gone\\)'):
        refuse_lost_runtimes(before[(2, 1)], after[(2, 1)], path, [V3_RUNTIMES + ('extra', 'runtime_type')])


def test_containerd_2_3_moves_a_version_2_files_cri_keys_and_keeps_the_grpc_servers_own(tmp_path):
    path, paths = tree(tmp_path, 'version = 3\nimports = ["{v2}"]\n' + EXTRA_V3,
                       v2='version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nstream_server_port = "10011"\n'
                          'sandbox_image = "registry.k8s.io/pause:3.9"\n' + KATA_V2.replace('version = 2\n', ''))
    view = viewed(path, (2, 3))
    assert view.value(('plugins', CRI_V2)) == {'stream_server_port': '10011'}
    assert view.source_of(('plugins', CRI_V2, 'stream_server_port')) == paths['v2']
    assert view.value(('plugins', CRI_V3_IMAGES, 'pinned_images', 'sandbox')) == 'registry.k8s.io/pause:3.9'
    assert sorted(view.value(V3_RUNTIMES)) == ['extra', 'kata']
    (eff,) = effects_of(view, paths['v2'], [(('plugins', CRI_V2, 'stream_server_port'), '10011')])
    assert eff.in_effect, eff.as_dict()


def test_containerd_2_3_reads_a_version_3_files_version_2_cri_key_where_it_moved_it(tmp_path):
    """2.1 reads that table as the gRPC plugin's (the key stays there, unread); 2.3 migrates it."""
    path, _paths = tree(tmp_path, 'version = 3\n[plugins."io.containerd.grpc.v1.cri".containerd]\n'
                                  'default_runtime_name = "crun"\n')
    key = V2_CONTAINERD + ('default_runtime_name',)
    moved = ('plugins', CRI_V3_RUNTIME, 'containerd', 'default_runtime_name')
    view = viewed(path, (2, 3))
    assert view.read_path(key) == moved and view.value(moved) == 'crun'
    (eff,) = effects_of(view, path, [(key, 'crun')])
    assert eff.in_effect, eff.as_dict()
    view = viewed(path, (2, 1))
    assert view.read_path(key) == key and view.value(moved) is None
    (eff,) = effects_of(view, path, [(key, 'crun')])
    assert not eff.in_effect and 'is version 3' in eff.why
