# -*- coding: utf-8 -*-
"""containerd_config's --diff: one diff per file it writes, on install and on
uninstall alike (the drop-ins' and config.toml's, in the order they are written).
"""

import os

from helpers.common import binary_of, read


def test_an_uninstall_shows_config_toml_s_diff_then_each_drop_in_going(run_module, config):
    path = config('v2_debian_stock.toml')
    original = read(path)
    etc = os.path.dirname(path)
    nydus, kata = os.path.join(etc, 'conf.d', 'nydus.toml'), os.path.join(etc, 'conf.d', 'kata.toml')
    args = dict(path=path, owner='coco', containerd_bin=binary_of('host'), imports=[nydus, kata],
                dropins=[dict(path=nydus, content='version = 2\n'), dict(path=kata, content='version = 2\n# kata\n')])
    installed = run_module('containerd_config', diff=True, **args)
    assert [d['after_header'] for d in installed['diff']] == ['%s (after)' % p for p in (nydus, kata, path)]
    with_imports = read(path)
    gone = run_module('containerd_config', diff=True, state='absent', **args)
    assert gone['changed'] and read(path) == original
    assert [(d['before'], d['after']) for d in gone['diff']] == [
        (with_imports, original), ('version = 2\n', ''), ('version = 2\n# kata\n', '')]
    assert not os.path.exists(nydus) and not os.path.exists(kata)
