# -*- coding: utf-8 -*-
"""containerd 2.3 and config version 4, through the documented rules (facts note, measured on 2.3.4 built from
source; no 2.3 binary runs here): the merged view keyed on the binary's version, the refusal of a drop-in above
the main file's version, the preflight daemon's private sockets, the shim env warning, and edits of v4 files."""

import os

from helpers.context import doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight, sandbox
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import effects_of, load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import (
    check_tree,
    check_warnings,
    refuse_unreadable_version,
)

import pytest
from helpers.context import FakeContext

V21, V23 = (2, 1), (2, 3)
RT3 = ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes')
RT2 = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'runtimes')


def _tree(tmp_path, main, **dropins):
    paths = {}
    for name, text in sorted(dropins.items()):
        paths[name] = str(tmp_path / ('%s.toml' % name))
        with open(paths[name], 'w') as f:
            f.write(text)
    path = str(tmp_path / 'config.toml')
    data = dict(main, imports=[paths[n] for n in sorted(paths)])
    return path, data, paths


def _main(version, runtimes=('runc',)):
    return {'version': version, 'plugins': {'io.containerd.cri.v1.runtime': {'containerd': {
        'default_runtime_name': 'runc', 'runtimes': dict((n, {'runtime_type': 'io.containerd.runc.v2'})
                                                         for n in runtimes)}}}}


OLD_IN_V3 = 'version = 3\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.old]\n  runtime_type = "x"\n'


def test_2_3_applies_a_version_2_cri_table_in_a_version_3_file_which_2_1_ignored(tmp_path):
    path, data, paths = _tree(tmp_path, _main(3), a=OLD_IN_V3)
    change = [(RT2 + ('old', 'runtime_type'), 'x')]
    (on21,) = effects_of(load_effective(path, data, V21), paths['a'], change)
    (on23,) = effects_of(load_effective(path, data, V23), paths['a'], change)
    assert not on21.in_effect and 'gRPC plugin' in on21.why
    assert on23.in_effect and on23.effective == 'x'


def test_version_2_3_and_4_drop_ins_deep_merge_under_a_version_4_main_file(tmp_path):
    path, data, paths = _tree(
        tmp_path, _main(4),
        a='version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]\n  runtime_type = "n"\n'
          '[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "nvidia"\n',
        b="version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]\n  runtime_type = \"k\"\n",
        c="version = 4\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\n"
          "  SystemdCgroup = true\n")
    view = load_effective(path, data, V23)
    runtimes = view.value(RT3)
    assert sorted(runtimes) == ['kata', 'nvidia', 'runc']
    assert runtimes['runc'] == {'runtime_type': 'io.containerd.runc.v2', 'options': {'SystemdCgroup': True}}
    assert view.value(RT3[:-1] + ('default_runtime_name',)) == 'nvidia'
    assert view.source_of(RT3[:-1] + ('default_runtime_name',)) == paths['a']
    assert view.ignored == [] and view.unread == {}
    assert check_tree(path, data, V23) == []


def test_a_drop_in_above_the_main_file_s_version_is_refused_naming_both(tmp_path):
    path, data, paths = _tree(tmp_path, _main(3), a="version = 4\n")
    (msg,) = check_tree(path, data, V23)
    assert msg.startswith('%s has version = 4, higher than the main config %s (version = 3)' % (paths['a'], path))
    assert 'containerd 2.3 does not start ("drop-in config version 4 higher than root config version 3")' in msg
    (msg21,) = check_tree(path, data, V21)
    assert paths['a'] in msg21 and path in msg21 and 'man page forbids it' in msg21


def test_a_version_4_file_is_read_by_2_3_only(tmp_path):
    refuse_unreadable_version('/etc/containerd/config.toml', 4, V23)
    refuse_unreadable_version('/etc/containerd/config.toml', 4, (2, 4))
    with pytest.raises(ConfigError) as err:
        refuse_unreadable_version('/etc/containerd/config.toml', 4, V21)
    assert 'reads config version 3 at most' in str(err.value)


def test_the_preflight_copy_of_a_version_4_file_keeps_every_server_socket_private(tmp_path):
    sb = sandbox.Sandbox(str(tmp_path / 'run'))
    data = {'version': 4, 'plugins': {
        'io.containerd.server.v1.ttrpc': {'address': '/run/containerd/containerd.sock.ttrpc'},
        'io.containerd.server.v1.grpc': {'address': '/run/containerd/containerd.sock', 'uid': 0},
        'io.containerd.server.v1.grpc-tcp': {'tcp_address': '0.0.0.0:7777'},
        'io.containerd.server.v1.debug': {'address': '/run/containerd/debug.sock'},
        'io.containerd.server.v1.metrics': {'address': '127.0.0.1:1338'}}}
    out = sb.rewrite('/etc/containerd/config.toml', data, True, 2)['plugins']
    assert out['io.containerd.server.v1.ttrpc']['address'] == sb.socket + '.ttrpc'
    assert out['io.containerd.server.v1.grpc'] == {'address': sb.socket, 'uid': 0}
    assert out['io.containerd.server.v1.debug']['address'].startswith(sb.private)
    assert out['io.containerd.server.v1.metrics']['address'] == ''
    assert out['io.containerd.server.v1.grpc-tcp']['tcp_address'] == ''
    # a version 4 main file without them gets its own: --address does not move a v4 ttrpc socket
    bare = sb.rewrite('/etc/containerd/config.toml', {'version': 4}, True, 2)['plugins']
    assert bare['io.containerd.server.v1.ttrpc']['address'] == sb.socket + '.ttrpc'
    # version 3: the [ttrpc] section as before, no server tables made
    v3 = sb.rewrite('/etc/containerd/config.toml', {'version': 3, 'ttrpc': {'address': '/run/x'}}, True, 2)
    assert v3['ttrpc']['address'] == sb.socket + '.ttrpc'
    assert not [k for k in v3['plugins'] if k.startswith('io.containerd.server.v1.')]


TASK_AND_ENV = ("version = 3\n[plugins.'io.containerd.runtime.v2.task']\n  platforms = ['linux/amd64']\n"
                "[plugins.'io.containerd.shim.v1.manager']\n  env = ['HTTP_PROXY=http://proxy:3128']\n")


def test_a_task_table_beside_shim_env_is_a_warning_on_2_3(tmp_path):
    path, data, paths = _tree(tmp_path, _main(3), a=TASK_AND_ENV)
    (warning,) = check_warnings(path, data, V23)
    assert paths['a'] in warning and 'io.containerd.runtime.v2.task' in warning and '2.3.4' in warning
    assert check_warnings(path, data, V21) == []
    assert check_tree(path, data, V23) == []  # a warning, not a refusal
    path, data, _paths = _tree(tmp_path / 'v4' if os.makedirs(str(tmp_path / 'v4')) is None else None, _main(4),
                               a=TASK_AND_ENV.replace('version = 3', 'version = 4'))
    assert check_warnings(path, data, V23) == []  # nothing to migrate


def test_a_runtime_is_added_to_a_version_4_file_in_the_version_3_layout(tmp_path):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import runtime_present

    text = ("version = 4\n\n[plugins.'io.containerd.cri.v1.runtime'.containerd]\n  default_runtime_name = 'runc'\n\n"
            "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]\n"
            "  runtime_type = 'io.containerd.runc.v2'\n")
    doc, ledger = doc_and_ledger(tmp_path, text)
    assert doc.version == 4
    runtime_present(doc, ledger, FakeContext(containerd_version=V23, tree_files=None), dict(name='kata', owner='coco', runtime_type='io.containerd.kata.v2'))
    assert doc.toml.get(RT3 + ('kata', 'runtime_type')) == 'io.containerd.kata.v2'
    assert "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]" in doc.text
