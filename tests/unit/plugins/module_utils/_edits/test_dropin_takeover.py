# -*- coding: utf-8 -*-
"""A drop-in nodeguard did not write, taken over by an owner (_dropin): what it replaces is kept in the
owner's ledger record and put back by state=absent, and every replacement of bytes nodeguard did not write is
said.

tests/module/test_containerd_dropin_takeover.py runs the same round trip through the modules on a tree the
real containerd loads; these pin the branches: the same content taken over, a change or removal made since,
another owner holding the file too, check mode, and a put back cut short.
"""

import base64
import os
import stat

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import sha256_bytes
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.dropin import remove, remove_all, write
from helpers.context import FakeContext
from helpers.trees import DropinModule as Module, dropin_call

V16 = (1, 6, 20)
NYDUS = 'version = 2\n[proxy_plugins.nydus]\ntype = "snapshot"\naddress = "/run/nydus.sock"\n'
SITE = b'# site proxy plugin\nversion = 2\n[proxy_plugins.stargz]\n  type = "snapshot"\n  address = "/run/stargz.sock"\n'


@pytest.fixture
def site(tmp_path):
    """config.toml importing conf.d/*.toml, and the site's own drop-in there (mode 0640); (params maker, paths)."""
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    (etc / 'config.toml').write_text('version = 2\nimports = ["%s/conf.d/*.toml"]\n' % etc)
    dropin = etc / 'conf.d' / '10-site.toml'
    dropin.write_bytes(SITE)
    os.chmod(str(dropin), 0o640)
    paths = dict(main=str(etc / 'config.toml'), dropin=str(dropin), state=str(tmp_path / 'state'))
    return dropin_call(paths, NYDUS), paths


def records(paths):
    return Ledger.load(paths['state'], paths['dropin']).records


def content_and_mode(path):
    with open(path, 'rb') as f:
        return f.read(), stat.S_IMODE(os.stat(path).st_mode)


def ledger_exists(paths):
    return os.path.exists(Ledger.load(paths['state'], paths['dropin']).path)


def test_a_file_nodeguard_did_not_write_is_replaced_with_a_warning_and_put_back_by_absent(site):
    params, paths = site
    ctx = FakeContext(containerd_version=V16)
    res = write(Module(), ctx, params())
    assert res['changed'] and res['owned']
    assert ctx.warnings == ['%s was not written by nodeguard (no ledger record): coco replaces it. Its content, mode '
                            'and owner are kept in the ledger and put back when coco removes the drop-in (state: '
                            'absent).' % paths['dropin']]
    assert content_and_mode(paths['dropin']) == (NYDUS.encode(), 0o644)
    [rec] = records(paths)
    st = os.stat(paths['dropin'])
    assert rec['replaced'] == dict(base64=base64.b64encode(SITE).decode('ascii'), sha256=sha256_bytes(SITE),
                                   mode=0o640, uid=st.st_uid, gid=st.st_gid)
    # written again: the record keeps what the takeover replaced, and nothing more is said
    ctx = FakeContext(containerd_version=V16)
    assert not write(Module(), ctx, params())['changed'] and ctx.warnings == [] and records(paths) == [rec]

    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert res['changed'] and res['restored'] and not res['removed'] and not res['kept']
    assert content_and_mode(paths['dropin']) == (SITE, 0o640)
    assert ctx.written == [paths['dropin']] and ctx.warnings == [] and not ledger_exists(paths)
    assert os.listdir(os.path.dirname(paths['dropin'])) == ['10-site.toml']  # no temporary file
    # nothing of coco's is left: the site's file is left alone from now on
    res = remove(Module(), FakeContext(containerd_version=V16), params())
    assert not res['changed'] and 'left alone' in res['msg'] and content_and_mode(paths['dropin']) == (SITE, 0o640)


def test_a_file_taken_over_as_it_is_stays_when_the_owner_leaves(site):
    """The owner's content already there (and its mode): nothing is written, but the file was not the owner's
    to delete."""
    params, paths = site
    ctx = FakeContext(containerd_version=V16)
    res = write(Module(), ctx, params(content=SITE.decode(), mode='0640'))
    assert not res['changed'] and res['owned'] and ctx.warnings == []
    assert records(paths)[0]['replaced']['sha256'] == sha256_bytes(SITE)
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert not res['changed'] and not res['restored'] and not res['removed'] and ctx.written == []
    assert content_and_mode(paths['dropin']) == (SITE, 0o640) and not ledger_exists(paths)


@pytest.mark.parametrize('how', ['changed', 'removed'])
def test_a_taken_over_file_changed_or_removed_since_is_put_back_all_the_same_and_said(site, how):
    params, paths = site
    write(Module(), FakeContext(containerd_version=V16), params())
    if how == 'changed':
        with open(paths['dropin'], 'a') as f:
            f.write('# by hand\n')
    else:
        os.unlink(paths['dropin'])
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert res['changed'] and res['restored']
    assert ctx.warnings == ['%s was %s since coco wrote it: the file from before coco is put back all the same.'
                            % (paths['dropin'], how)]
    assert content_and_mode(paths['dropin']) == (SITE, 0o640) and not ledger_exists(paths)


def test_a_put_back_cut_short_before_the_record_went_is_finished_by_the_next_run(site):
    """The rename happened, the ledger save did not: the file already has the bytes to put back."""
    params, paths = site
    write(Module(), FakeContext(containerd_version=V16), params())
    with open(paths['dropin'], 'wb') as f:
        f.write(SITE)
    os.chmod(paths['dropin'], 0o640)
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert not res['changed'] and not res['restored'] and ctx.written == []
    assert content_and_mode(paths['dropin']) == (SITE, 0o640) and not ledger_exists(paths)


def test_check_mode_shows_the_file_put_back_and_writes_nothing(site):
    params, paths = site
    write(Module(), FakeContext(containerd_version=V16), params())
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(check=True, diff=True), ctx, params())
    assert res['changed'] and res['restored'] and ctx.written == []
    assert res['diff'] == dict(before=NYDUS, after=SITE.decode(), before_header='%s (before)' % paths['dropin'],
                               after_header='%s (put back)' % paths['dropin'])
    assert content_and_mode(paths['dropin']) == (NYDUS.encode(), 0o644) and len(records(paths)) == 1
    # a file removed since: the diff says it is absent now
    os.unlink(paths['dropin'])
    res = remove(Module(check=True, diff=True), FakeContext(containerd_version=V16), params())
    assert res['diff']['before'] == '' and res['diff']['before_header'] == '%s (absent)' % paths['dropin']


def test_another_owner_holding_the_file_inherits_what_to_put_back(site):
    params, paths = site
    write(Module(), FakeContext(containerd_version=V16), params())
    ctx = FakeContext(containerd_version=V16)
    write(Module(), ctx, params(owner='gpu'))  # the same content: gpu's too, and nodeguard wrote it
    assert ctx.warnings == [] and 'replaced' not in records(paths)[1]
    res = remove(Module(), FakeContext(containerd_version=V16), params())
    assert not res['changed'] and res['kept'] and not res['restored']
    assert res['msg'] == ('%s is kept: gpu still hold(s) it, and it is put back when the last of them removes it'
                          % paths['dropin'])
    assert content_and_mode(paths['dropin'])[0] == NYDUS.encode()
    [rec] = records(paths)
    assert rec['owner'] == 'gpu' and rec['replaced']['sha256'] == sha256_bytes(SITE)
    res = remove(Module(), FakeContext(containerd_version=V16), params(owner='gpu'))
    assert res['restored'] and content_and_mode(paths['dropin']) == (SITE, 0o640) and not ledger_exists(paths)


def test_replacing_or_removing_an_owned_file_changed_by_hand_since_is_said(site):
    """A file the owner made (nothing to put back): replaced or removed as before, no longer in silence."""
    params, paths = site
    os.unlink(paths['dropin'])
    write(Module(), FakeContext(containerd_version=V16), params())
    with open(paths['dropin'], 'a') as f:
        f.write('# by hand\n')
    ctx = FakeContext(containerd_version=V16)
    assert write(Module(), ctx, params(content=NYDUS + '# v2\n'))['changed']
    assert ctx.warnings == ['%s was changed since nodeguard wrote it: coco replaces it, and those changes are lost '
                            '(backup: true keeps a copy).' % paths['dropin']]
    with open(paths['dropin'], 'a') as f:
        f.write('# by hand\n')
    ctx = FakeContext(containerd_version=V16)
    res = remove(Module(), ctx, params())
    assert res['removed'] and not os.path.exists(paths['dropin'])
    assert ctx.warnings == ['%s was changed since nodeguard wrote it: coco removes it all the same, with those '
                            'changes.' % paths['dropin']]


def test_removing_several_says_which_were_put_back(site):
    params, paths = site
    own = os.path.join(os.path.dirname(paths['dropin']), 'nydus.toml')
    write(Module(), FakeContext(containerd_version=V16), params())
    write(Module(), FakeContext(containerd_version=V16), params(dropin=own))
    res = remove_all(Module(), FakeContext(containerd_version=V16), params(dropins=[paths['dropin'], own]))
    assert res['changed'] and res['restored'] and res['removed']
    assert [(r['restored'], r['removed']) for r in res['dropins']] == [(True, False), (False, True)]
    assert content_and_mode(paths['dropin']) == (SITE, 0o640) and not os.path.exists(own)
