# -*- coding: utf-8 -*-
"""A site's own drop-in, taken over by an owner's drop-in of the same name (containerd_dropin, and
containerd_config's dropins): the install replaces it with a warning that names it, and the uninstall gives
back its bytes and mode, which the real containerd then loads as before.
"""

import os
import stat

import pytest

from helpers.common import assert_containerd_accepts, binary_of, fixture_text, read
from helpers.trees import NODES, NYDUS_DROPIN as NYDUS

SITE = '''# site proxy plugin
version = 2
[proxy_plugins.stargz]
  type = "snapshot"
  address = "/run/stargz.sock"
'''


def site_tree(workdir, fixture):
    """The fixture's config.toml importing conf.d/*.toml, where the site's drop-in (mode 0640) lives."""
    etc = os.path.join(workdir, 'etc')
    os.makedirs(os.path.join(etc, 'conf.d'))
    main = os.path.join(etc, 'config.toml')
    text = fixture_text(fixture).replace('imports = []\n', '')
    with open(main, 'w') as f:
        f.write('imports = ["%s/conf.d/*.toml"]\n' % etc + text)
    dropin = os.path.join(etc, 'conf.d', '10-site.toml')
    with open(dropin, 'w') as f:
        f.write(SITE)
    os.chmod(dropin, 0o640)
    return main, dropin


def bytes_and_mode(path):
    return read(path, 'rb'), stat.S_IMODE(os.stat(path).st_mode)


@pytest.mark.parametrize('fixture,which', NODES)
def test_install_then_uninstall_over_a_sites_drop_in_gives_it_back(run_module, workdir, fixture, which):
    binary = binary_of(which)
    main, dropin = site_tree(workdir, fixture)
    assert 'stargz' in assert_containerd_accepts(main, binary)
    before = bytes_and_mode(dropin)
    res = run_module('containerd_dropin', path=main, dropin=dropin, content=NYDUS, owner='coco', containerd_bin=binary)
    assert res['changed'] and res['owned']
    assert [w for w in res['warnings'] if w.startswith('%s was not written by nodeguard' % dropin)], res['warnings']
    dump = assert_containerd_accepts(main, binary)
    assert 'nydus' in dump and 'stargz' not in dump
    res = run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco',
                     containerd_bin=binary)
    assert res['changed'] and res['restored'] and not res['removed']
    assert bytes_and_mode(dropin) == before
    dump = assert_containerd_accepts(main, binary)
    assert 'stargz' in dump and 'nydus' not in dump
    assert not run_module('containerd_dropin', path=main, dropin=dropin, state='absent', owner='coco',
                          containerd_bin=binary)['changed']


def test_containerd_configs_dropins_give_the_sites_drop_in_back_too(run_module, workdir):
    binary = binary_of('host')
    main, dropin = site_tree(workdir, 'v2_debian_stock.toml')
    before, main_before = bytes_and_mode(dropin), read(main, 'rb')
    res = run_module('containerd_config', path=main, owner='coco', containerd_bin=binary,
                     dropins=[dict(path=dropin, content=NYDUS)],
                     settings=[dict(key='images.disable_snapshot_annotations', value=False)])
    assert res['changed'] and res['dropins'][0]['changed']
    assert [w for w in res['warnings'] if w.startswith('%s was not written by nodeguard' % dropin)], res['warnings']
    assert 'nydus' in assert_containerd_accepts(main, binary)
    res = run_module('containerd_config', path=main, owner='coco', containerd_bin=binary, state='absent',
                     dropins=[dict(path=dropin)], settings=[dict(key='images.disable_snapshot_annotations')])
    assert res['changed'] and res['dropins'][0]['restored'] and not res['dropins'][0]['removed']
    assert bytes_and_mode(dropin) == before and read(main, 'rb') == main_before
    assert 'stargz' in assert_containerd_accepts(main, binary)
