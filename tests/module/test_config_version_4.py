# -*- coding: utf-8 -*-
"""Config version 4 (containerd 2.3) files are read and edited to the byte. No containerd 2.3 binary runs here:
the edits are judged by nodeguard's own model with containerd_version: "2.3" on a node without a binary (said in
the result), and the real containerd 2.1 shows what an older node does with them: a version 4 config.toml is
refused before any write, and a version 4 drop-in under a version 3 config.toml is refused naming both files."""

import os

from helpers.common import binary_of, read, without_containerd

V4 = """version = 4
imports = []

[plugins]

  [plugins.'io.containerd.cri.v1.runtime']
    enable_cdi = true

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]

        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          runtime_type = 'io.containerd.runc.v2'

          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            SystemdCgroup = true

  [plugins.'io.containerd.server.v1.ttrpc']
    address = '/run/containerd/containerd.sock.ttrpc'
"""


def test_a_runtime_is_added_to_and_removed_from_a_version_4_file_to_the_byte(run_module, config, tmp_path):
    path = config(V4)
    hide, env = without_containerd(tmp_path)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     options={'ConfigPath': '/opt/kata/configuration.toml'}, default=True, containerd_version='2.3',
                     prefix=hide, env=env)
    assert res['changed'] and res['config_version'] == 4 and res['plugin'] == 'io.containerd.cri.v1.runtime', res
    assert all(e['in_effect'] and e.get('confirmed_by') != 'config dump' for e in res['effects']), res['effects']
    assert any('own model' in w for w in res['warnings']), res['warnings']
    text = read(path)
    assert "[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.kata]" in text
    assert "default_runtime_name = 'kata'" in text
    again = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                       options={'ConfigPath': '/opt/kata/configuration.toml'}, default=True,
                       containerd_version='2.3', prefix=hide, env=env)
    assert not again['changed']
    run_module('containerd_runtime', path=path, name='kata', state='absent', containerd_version='2.3',
               prefix=hide, env=env)
    assert read(path) == V4


def test_a_setting_of_a_version_4_file_round_trips(run_module, config, tmp_path):
    path = config(V4)
    hide, env = without_containerd(tmp_path)
    res = run_module('containerd_setting', path=path, key='images.snapshotter', value='stargz',
                     containerd_version='2.3', prefix=hide, env=env)
    assert res['changed'] and "[plugins.'io.containerd.cri.v1.images']" in read(path), res
    run_module('containerd_setting', path=path, key='images.snapshotter', state='absent', containerd_version='2.3',
               prefix=hide, env=env)
    assert read(path) == V4


def test_containerd_2_1_refuses_a_version_4_config_before_any_write(run_module, config):
    path = config(V4)
    res = run_module('containerd_runtime', path=path, name='kata', runtime_type='io.containerd.kata.v2',
                     containerd_bin=binary_of('2'), expect_fail=True)
    assert 'version = 4' in res['msg'] and 'reads config version 3 at most' in res['msg'], res['msg']
    assert read(path) == V4


def test_a_version_4_drop_in_under_a_version_3_config_is_refused_naming_both(run_module, config):
    server = "  [plugins.'io.containerd.server.v1.ttrpc']\n    address = '/run/containerd/containerd.sock.ttrpc'\n"
    main = V4.replace('version = 4', 'version = 3').replace(server, '')
    path = config(main)
    dropin = os.path.join(os.path.dirname(path), 'conf.d', '90-new.toml')
    os.makedirs(os.path.dirname(dropin))
    with open(dropin, 'w') as f:
        f.write("version = 4\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.crun]\n"
                "  runtime_type = 'io.containerd.runc.v2'\n")
    res = run_module('containerd_imports', path=path, imports=[dropin], containerd_bin=binary_of('2'), expect_fail=True)
    assert '%s has version = 4, higher than the main config %s (version = 3)' % (dropin, path) in res['msg'], res
    assert read(path) == main
