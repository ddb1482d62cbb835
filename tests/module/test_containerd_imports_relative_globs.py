# -*- coding: utf-8 -*-
"""containerd_imports and relative globs, judged by the real containerd 1.6, 1.7 and 2.1.

containerd 1.6 expands a relative glob in ``imports`` against its working
folder (``/`` under systemd), 1.7 and 2.x against the importing file's
folder.  So ``conf.d/*.toml`` and ``/etc/containerd/conf.d/*.toml`` are one
entry on 1.7 and 2.1 and two different ones on 1.6, where only the absolute
one loads the drop-ins.  Each test asks the binary's own ``config dump``, run
from ``/`` as the daemon runs, which files it loads.
"""

import os
import subprocess

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, read

NYDUS = '''[proxy_plugins.nydus]
  type = "snapshot"
  address = "/run/containerd-nydus/containerd-nydus-grpc.sock"
'''

# (name, binary, the config version it reads)
BINARIES = [('1.6', CONTAINERD_1, 2), ('1.7', CONTAINERD_17, 2), ('2.1', CONTAINERD_2, 3)]


def binary_named(name):
    binary, version = [(b, v) for n, b, v in BINARIES if n == name][0]
    if binary is None:
        pytest.fail('containerd %s is not unpacked: run `make deps`' % name)
    return binary, version


def tree(workdir, version, entries):
    """<workdir>/etc/config.toml importing entries ($R stands for its folder), and conf.d/nydus.toml."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    with open(os.path.join(etc, 'conf.d', 'nydus.toml'), 'w') as f:
        f.write('version = %d\n\n%s' % (version, NYDUS))
    path = os.path.join(etc, 'config.toml')
    with open(path, 'w') as f:
        f.write('version = %d\nimports = [%s]\n' % (version, ', '.join(
            '"%s"' % e.replace('$R', etc) for e in entries)))
    return path, etc


def loads_nydus(path, binary):
    """Whether the binary's config dump of path, run from / as systemd runs containerd, has the drop-in's table."""
    proc = subprocess.run([binary, '--config', path, 'config', 'dump'], capture_output=True, text=True,
                          timeout=60, check=False, cwd='/')
    assert proc.returncode == 0, proc.stderr[-2000:]
    return 'nydus' in (tomlkit.parse(proc.stdout).unwrap().get('proxy_plugins') or {})


def test_on_1_6_a_relative_glob_is_no_duplicate_of_the_absolute_one(run_module, workdir):
    binary, version = binary_named('1.6')
    path, etc = tree(workdir, version, ['conf.d/*.toml', '$R/conf.d/*.toml'])
    before = read(path)
    assert loads_nydus(path, binary)
    absolute = os.path.join(etc, 'conf.d', '*.toml')
    res = run_module('containerd_imports', path=path, imports=[absolute], owner='coco', containerd_bin=binary)
    # the only entry that loads the drop-ins stays, and nothing was folded
    assert not res['changed'] and res['duplicates_removed'] == []
    assert res['imports'] == ['conf.d/*.toml', absolute]
    assert read(path) == before and loads_nydus(path, binary)
    # the relative entry is named with its fix
    warned = [w for w in res['warnings'] if 'conf.d/*.toml' in w and 'working folder' in w]
    assert warned and 'write the entry absolute: %s' % absolute in warned[0]
    # coco found the entry there: its uninstall leaves it, and the drop-ins still load
    res = run_module('containerd_imports', path=path, imports=[absolute], owner='coco', containerd_bin=binary,
                     state='absent')
    assert res['removed'] == [] and res['kept'] == [absolute]
    assert read(path) == before and loads_nydus(path, binary)


def test_on_1_6_the_absolute_glob_an_owner_added_beside_a_relative_one_goes_alone(run_module, workdir):
    binary, version = binary_named('1.6')
    path, etc = tree(workdir, version, ['conf.d/*.toml'])
    before = read(path)
    assert not loads_nydus(path, binary)
    absolute = os.path.join(etc, 'conf.d', '*.toml')
    res = run_module('containerd_imports', path=path, imports=[absolute], owner='coco', containerd_bin=binary)
    assert res['changed'] and res['imports'] == ['conf.d/*.toml', absolute] and loads_nydus(path, binary)
    res = run_module('containerd_imports', path=path, imports=[absolute], owner='coco', containerd_bin=binary,
                     state='absent')
    assert res['removed'] == [absolute] and res['imports'] == ['conf.d/*.toml']
    assert read(path) == before and not loads_nydus(path, binary)


@pytest.mark.parametrize('name', ['1.7', '2.1'])
def test_after_1_6_a_relative_glob_and_its_absolute_spelling_fold_and_the_dropins_still_load(
        run_module, workdir, name):
    binary, version = binary_named(name)
    path, etc = tree(workdir, version, ['conf.d/*.toml', '$R/conf.d/*.toml'])
    absolute = os.path.join(etc, 'conf.d', '*.toml')
    res = run_module('containerd_imports', path=path, imports=[absolute], owner='coco', containerd_bin=binary)
    assert res['changed'] and res['duplicates_removed'] == [absolute]
    assert res['imports'] == ['conf.d/*.toml']
    assert not any('working folder' in w for w in res['warnings'])
    assert loads_nydus(path, binary)


@pytest.mark.parametrize('name', ['1.6', '1.7', '2.1'])
def test_adding_a_relative_glob_warns_exactly_where_containerd_loads_nothing_from_it(run_module, workdir, name):
    binary, version = binary_named(name)
    path, etc = tree(workdir, version, [])
    res = run_module('containerd_imports', path=path, imports=['conf.d/*.toml'], owner='coco', containerd_bin=binary)
    assert res['changed'] and res['added'] == ['conf.d/*.toml']
    warned = [w for w in res['warnings'] if 'working folder' in w]
    loaded = loads_nydus(path, binary)
    # the warning and containerd agree: a warning exactly where the drop-in is not loaded
    assert bool(warned) == (not loaded) == (name == '1.6')
    if warned:
        assert 'conf.d/*.toml' in warned[0] and os.path.join(etc, 'conf.d', '*.toml') in warned[0]
    # the owner's entry goes again, whatever containerd made of it
    res = run_module('containerd_imports', path=path, imports=['conf.d/*.toml'], owner='coco', containerd_bin=binary,
                     state='absent')
    assert res['removed'] == ['conf.d/*.toml'] and res['imports'] == []
