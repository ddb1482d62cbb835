# -*- coding: utf-8 -*-
"""config.toml as a link with follow: true: the target is written, and the tree is read, judged and validated
as containerd reads it from the link, so a relative import is relative to the link's folder."""

import os
import subprocess

import pytest

from helpers.common import CONTAINERD_1, read

MAIN = '''version = 2
imports = [%s]
[plugins."io.containerd.grpc.v1.cri".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
'''
SITE = 'version = 2\n[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "/run/n.sock"\n'


@pytest.fixture
def linked(workdir):
    """<workdir>/etc/config.toml -> real/config.toml; the folders of both."""
    etc = os.path.join(workdir, 'etc')
    real = os.path.join(etc, 'real')
    os.makedirs(real)
    link = os.path.join(etc, 'config.toml')
    os.symlink('real/config.toml', link)
    return link, etc, real


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)


def _dump(link):
    return subprocess.run([CONTAINERD_1, '--config', link, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False)


def test_an_import_found_only_beside_the_target_is_refused(run_module, linked):
    link, _etc, real = linked
    _write(os.path.join(real, 'config.toml'), MAIN % '')
    _write(os.path.join(real, 'd.toml'), 'version = 2\n')
    res = run_module('containerd_imports', expect_fail=True, path=link, follow=True, containerd_bin=CONTAINERD_1,
                     imports=['d.toml'])
    assert 'does not exist' in res['msg'] and os.path.join(os.path.dirname(link), 'd.toml') in res['msg']
    assert read(link) == MAIN % '' and _dump(link).returncode == 0


def test_an_import_beside_the_link_is_judged_and_kept(run_module, linked):
    link, etc, real = linked
    _write(os.path.join(real, 'config.toml'), MAIN % '"site.toml"')
    _write(os.path.join(etc, 'site.toml'), SITE)
    res = run_module('containerd_setting', path=link, follow=True, containerd_bin=CONTAINERD_1,
                     key='images.snapshotter', value='native')
    assert res['changed'] and res['validated'] == 'config dump', res
    assert os.path.islink(link) and 'snapshotter = "native"' in read(os.path.join(real, 'config.toml'))
    assert sorted(os.listdir(etc)) == ['config.toml', 'real', 'site.toml'], 'no copy left beside the link'
    pruned = run_module('containerd_imports', path=link, follow=True, containerd_bin=CONTAINERD_1, imports=[],
                        prune_missing=True)
    assert pruned['pruned'] == [] and 'imports = ["site.toml"]' in read(link)
    dump = _dump(link)
    assert dump.returncode == 0 and 'nydus' in dump.stdout
