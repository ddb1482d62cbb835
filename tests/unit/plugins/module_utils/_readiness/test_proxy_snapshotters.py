# -*- coding: utf-8 -*-
"""Which snapshotters the CRI runs (its default and each runtime handler's own), read from the config dump of
the real containerd that reads the file: version 2 keeps the default under the gRPC CRI plugin's containerd table,
version 3 under the CRI images plugin. A proxy plugin that one of them names is a required check."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    CRI_V2, CRI_V3_RUNTIME, parse_toml)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.toml_text import get_in
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy

from helpers.common import assert_containerd_accepts, binary_of

NYDUS = '''
[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''

# the runtimes as inline tables under the containerd table (version 2) and as tables (version 3)
V2 = '''version = 2
%s
[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "%s"
  runtimes = { runc = { runtime_type = "io.containerd.runc.v2" }, kata = { runtime_type = "io.containerd.kata.v2", snapshotter = "nydus" } }
'''

V3 = '''version = 3
%s
[plugins.'io.containerd.cri.v1.images']
  snapshotter = '%s'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
  runtime_type = 'io.containerd.runc.v2'
[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]
  runtime_type = 'io.containerd.kata.v2'
  snapshotter = 'nydus'
'''

# (config text, containerd that reads it, where its dump keeps the runtime tables); a handler's own snapshotter
# is 1.7's (1.6 drops the key from its dump)
VERSIONS = {'2': (V2, '1.7', ('plugins', CRI_V2, 'containerd', 'runtimes')),
            '3': (V3, '2', ('plugins', CRI_V3_RUNTIME, 'containerd', 'runtimes'))}


def dumped(tmp_path, version, default):
    """(containerd's config dump of the file, its runtime tables) for a nydus proxy plugin and a default."""
    text, binary, runtimes_at = VERSIONS[version]
    path = tmp_path / 'config.toml'
    path.write_text(text % (NYDUS, default))
    dump = parse_toml(assert_containerd_accepts(str(path), binary_of(binary)))
    return dump, get_in(dump, runtimes_at)


@pytest.mark.parametrize('version', sorted(VERSIONS))
def test_the_cri_default_snapshotter_is_read_where_the_config_version_keeps_it(tmp_path, version):
    dump, runtimes = dumped(tmp_path, version, 'nydus')
    assert sorted(runtimes) == ['kata', 'runc']
    assert proxy.snapshotters_in_use(dump, runtimes) == {
        'nydus': ['the CRI plugin (default snapshotter)', 'runtime kata']}
    (check,) = proxy.proxy_checks(dump, runtimes)
    assert check[0] == 'proxy_plugin:nydus' and check[3] is True
    assert check[2].endswith('; used by the CRI plugin (default snapshotter), runtime kata')


@pytest.mark.parametrize('version', sorted(VERSIONS))
def test_a_proxy_plugin_only_one_handler_names_is_not_the_cri_default(tmp_path, version):
    dump, runtimes = dumped(tmp_path, version, 'native')
    assert proxy.snapshotters_in_use(dump, runtimes) == {
        'native': ['the CRI plugin (default snapshotter)'], 'nydus': ['runtime kata']}
    (check,) = proxy.proxy_checks(dump, runtimes)
    assert check[3] is True and check[2].endswith('; used by runtime kata')


def test_no_config_dump_uses_no_snapshotter():
    assert proxy.snapshotters_in_use(None, None) == {}
    assert proxy.snapshotters_in_use({}, {'runc': {'snapshotter': ''}}) == {}
