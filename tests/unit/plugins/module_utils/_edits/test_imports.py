# -*- coding: utf-8 -*-
"""The imports array editor and the containerd_imports edit, called directly (no subprocess)."""

import os
import random

import pytest
import tomlkit
from hypothesis import given, settings, strategies as st

from helpers.common import fixture_text

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import (
    apply_imports,
    clean_imports,
    insert_raw,
    plugin_overrides,
    remove_raw,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from helpers.context import FakeContext


def params(imports, owner='nodeguard', **kw):
    p = dict(imports=imports, owner=owner, state='present', position='append', require_exists=True,
             prune_missing=False, allow_plugin_override=False)
    p.update(kw)
    return p


def parse_array(raw):
    return tomlkit.parse('a = ' + raw + '\n').unwrap()['a']


# ------------------------------------------------------------- array text
@st.composite
def arrays(draw):
    n = draw(st.integers(0, 4))
    items = ['/etc/containerd/conf.d/%d.toml' % i for i in range(n)]
    quote = draw(st.sampled_from(['"', "'"]))
    rendered = [quote + x + quote for x in items]
    trailing = draw(st.booleans()) and n > 0
    if n == 0:
        return draw(st.sampled_from(['[]', '[  # drop-ins\n]', '[\n  # none yet\n]'])), items
    if draw(st.booleans()):
        indent = draw(st.sampled_from(['  ', '    ', '\t']))
        lines = []
        for i, r in enumerate(rendered):
            comma = ',' if i < n - 1 or trailing else ''
            comment = draw(st.sampled_from(['', '  # why']))
            lines.append(indent + r + comma + comment + '\n')
        head = draw(st.sampled_from(['[\n', '[  # drop-ins\n']))
        raw = head + ''.join(lines) + ']'
    else:
        sep = draw(st.sampled_from([', ', ',', ' , ']))
        pad = draw(st.sampled_from(['', ' ']))
        raw = '[' + pad + sep.join(rendered) + (',' if trailing else '') + pad + ']'
    return raw, items


@settings(max_examples=300, deadline=None)
@given(arrays(), st.integers(0, 5), st.sampled_from(['"/new.toml"', "'/new.toml'"]))
def test_insert_then_remove_gives_back_the_text(arr, where, rendered):
    raw, items = arr
    index = min(where, len(items))
    new = insert_raw(raw, index, rendered)
    assert parse_array(new) == items[:index] + ['/new.toml'] + items[index:]
    assert remove_raw(new, index) == raw


@settings(max_examples=300, deadline=None)
@given(arrays(), st.integers(0, 5))
def test_remove_any_element_leaves_a_valid_array(arr, where):
    raw, items = arr
    if not items:
        return
    index = min(where, len(items) - 1)
    new = remove_raw(raw, index)
    assert parse_array(new) == items[:index] + items[index + 1:]
    if len(items) > 1 and '\n' in raw:
        assert '\n' in new  # a multi-line array stays multi-line


def test_multiline_append_keeps_indent_and_comments():
    raw = '[  # ours\n    "/a.toml",  # nydus\n    "/b.toml"\n]'
    new = insert_raw(raw, 2, '"/c.toml"')
    assert new == '[  # ours\n    "/a.toml",  # nydus\n    "/b.toml",\n    "/c.toml"\n]'
    new = insert_raw(raw, 0, '"/z.toml"')
    assert new == '[  # ours\n    "/z.toml",\n    "/a.toml",  # nydus\n    "/b.toml"\n]'


def test_a_crlf_array_loses_an_element_with_its_whole_line():
    raw = '[  # ours\r\n    "/a.toml",  # nydus\r\n    "/b.toml", \r\n    "/c.toml"\r\n]'
    assert remove_raw(raw, 0) == '[  # ours\r\n    "/b.toml", \r\n    "/c.toml"\r\n]'
    assert remove_raw(raw, 1) == '[  # ours\r\n    "/a.toml",  # nydus\r\n    "/c.toml"\r\n]'
    # each line keeps its own indent: the line goes, not the text up to the next element
    uneven = '[\r\n  "/a.toml",\r\n      "/b.toml",\r\n  "/c.toml"\r\n]'
    assert remove_raw(uneven, 0) == '[\r\n      "/b.toml",\r\n  "/c.toml"\r\n]'
    # an element that shares its line with another is cut out of the line, not the line
    shared = '[\r\n    "/a.toml", "/b.toml",\r\n]'
    assert remove_raw(shared, 0) == '[\r\n    "/b.toml",\r\n]'
    for index in range(3):
        assert parse_array(remove_raw(raw, index)) == [p for i, p in enumerate(['/a.toml', '/b.toml', '/c.toml'])
                                                       if i != index]


# --------------------------------------------------------- clean_imports
def doc_with(text, folder):
    return ConfigDocument(os.path.join(folder, 'config.toml'), text)


def test_clean_imports_seed_states(tmp_path):
    folder = str(tmp_path)
    nydus = os.path.join(folder, 'nydus.toml')
    kata = os.path.join(folder, 'kata.toml')
    open(kata, 'w').write('version = 2\n')
    text = ('version = 2\nimports = ["%s", "%s", "%s", "%s"]  # operator\n\n[grpc]\n  address = "/x"\n'
            % (nydus, nydus, nydus, kata))
    doc = doc_with(text, folder)
    out = clean_imports(doc)
    assert out == dict(duplicates_removed=[nydus, nydus], removed_missing=[nydus])
    assert doc.text == 'version = 2\nimports = ["%s"]  # operator\n\n[grpc]\n  address = "/x"\n' % kata
    doc.verify()
    # keep dangling entries when asked; globs never count as dangling
    doc = doc_with('version = 2\nimports = ["%s", "conf.d/*.toml", "%s"]\n' % (nydus, nydus), folder)
    assert clean_imports(doc, drop_missing=False) == dict(duplicates_removed=[nydus], removed_missing=[])
    assert doc.data['imports'] == [nydus, 'conf.d/*.toml']
    assert clean_imports(doc) == dict(duplicates_removed=[], removed_missing=[nydus])
    assert doc.text == 'version = 2\nimports = ["conf.d/*.toml"]\n'
    # relative and absolute spellings are one entry; the array may end empty
    doc = doc_with('version = 2\nimports = ["nydus.toml", "%s", "./nydus.toml"]\n' % nydus, folder)
    assert clean_imports(doc) == dict(duplicates_removed=[nydus, './nydus.toml'], removed_missing=['nydus.toml'])
    assert doc.text == 'version = 2\nimports = []\n'
    # nothing to do, no key: no change
    doc = doc_with('version = 2\n', folder)
    assert clean_imports(doc) == dict(duplicates_removed=[], removed_missing=[]) and not doc.changed
    with pytest.raises(ConfigError):
        clean_imports(doc_with('version = 2\nimports = [1]\n', folder))


# ------------------------------------------------------------ apply_imports
def test_plugin_overrides_by_containerd_version(tmp_path):
    folder = str(tmp_path)
    kata = os.path.join(folder, 'kata.toml')
    open(kata, 'w').write('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
                          '  runtime_type = "io.containerd.kata.v2"\n')
    doc = doc_with(fixture_text('v2_flat.toml'), folder)
    found = plugin_overrides(doc, kata, (1, 7))
    assert found == [(kata, 'io.containerd.grpc.v1.cri', ["runtime 'runc'"])]
    assert plugin_overrides(doc, kata, None) == found   # unknown binary, version 2 file: assume 1.x
    assert plugin_overrides(doc, kata, (2, 1)) == []
    ledger = Ledger(str(tmp_path / 'state'), doc.path)
    with pytest.raises(ConfigError) as err:
        apply_imports(doc, ledger, FakeContext(path=doc.path, containerd_version=(1, 6)), params([kata]))
    msg = str(err.value)
    assert kata in msg and 'plugins."io.containerd.grpc.v1.cri"' in msg and "runtime 'runc' would be lost" in msg
    assert "default runtime's table ('runc')" in msg
    out = apply_imports(doc, ledger, FakeContext(path=doc.path, containerd_version=(1, 6)), params([kata], allow_plugin_override=True))
    assert out['added'] == [kata]


def test_duplicates_of_others_fold_only_when_writing(tmp_path):
    folder = str(tmp_path)
    a, b = os.path.join(folder, 'a.toml'), os.path.join(folder, 'b.toml')
    for f in (a, b):
        open(f, 'w').write('version = 2\n')
    text = 'version = 2\nimports = ["%s", "%s", "%s"]\n' % (a, b, a)
    doc = doc_with(text, folder)
    ctx = FakeContext(path=doc.path, containerd_version=(1, 6))
    ledger = Ledger(str(tmp_path / 'state'), doc.path)
    out = apply_imports(doc, ledger, ctx, params([b], owner='x'))
    assert not doc.changed and out['duplicates_removed'] == []
    assert any('more than once' in w for w in ctx.warnings)
    # as if x had added b (it found it there, so its record says not added, and absent would keep it)
    for rec in ledger.select(owner='x', kind='import'):
        rec['added'] = True
    out = apply_imports(doc, ledger, ctx, params([b], owner='x', state='absent'))
    # b is held by nobody else: removed, and a's copy is folded on the same write
    assert out['removed'] == [b] and out['duplicates_removed'] == [a]
    assert doc.data['imports'] == [a]


def _make_pool(folder):
    os.makedirs(os.path.join(folder, 'conf.d'))
    pool = []
    for i in range(4):
        name = os.path.join(folder, 'conf.d', '%d.toml' % i)
        with open(name, 'w') as f:
            f.write('version = 2\n')
        pool.append(name)
    pool.append('conf.d/rel.toml')
    with open(os.path.join(folder, 'conf.d', 'rel.toml'), 'w') as f:
        f.write('version = 2\n')
    pool.append(os.path.join(folder, 'drop', '*.toml'))        # a glob that matches nothing
    pool.append('./conf.d/0.toml')                              # a second spelling of pool[0]
    return pool


START = {
    'no imports key (kubeadm)': ('v2_kubeadm.toml', (1, 6)),
    'imports = [] (containerd 2.1 default)': ('v3_default.toml', (2, 1)),
    'multi-line with a foreign entry': (None, (1, 7)),
}


@pytest.mark.parametrize('start', sorted(START))
def test_200_add_remove_iterations_end_byte_identical(tmp_path, start):
    fixture, version = START[start]
    folder = str(tmp_path / 'etc')
    os.makedirs(folder)
    pool = _make_pool(folder)
    if fixture:
        original = fixture_text(fixture)
    else:
        foreign = os.path.join(folder, 'foreign.toml')
        with open(foreign, 'w') as f:
            f.write('version = 2\n')
        original = fixture_text('v2_flat.toml').replace(
            'version = 2\n', "version = 2\nimports = [  # site drop-ins\n  '%s',\n]\n" % foreign)
    path = os.path.join(folder, 'config.toml')
    ledger = Ledger(str(tmp_path / 'state'), path)
    rnd = random.Random(start)
    # two owners whose entries overlap in pool[3] (and pool[0], spelled twice)
    owned = {'coco': pool[:4], 'kata': pool[3:]}
    owners = sorted(owned)
    text = original
    writes = kept = 0
    for step in range(200):
        owner = rnd.choice(owners)
        entries = rnd.sample(owned[owner], rnd.randint(1, 2))
        state = rnd.choice(['present', 'absent'])
        doc = ConfigDocument(path, text)
        ctx = FakeContext(path=path, containerd_version=version)
        out = apply_imports(doc, ledger, ctx, params(entries, owner=owner, state=state,
                                                     position=rnd.choice(['append', 'prepend'])))
        if doc.changed:
            doc.verify()
            writes += 1
        kept += len(out['kept'])
        text = doc.text
        final = tomlkit.parse(text).unwrap().get('imports', [])
        assert final == out['imports']
        resolved = [os.path.normpath(os.path.join(folder, e)) for e in final]
        assert len(set(resolved)) == len(resolved), (step, final)
        for rec in ledger.select(kind='import'):
            assert rec['resource'][len('import:'):] in resolved, (step, rec, final)
        # the next run with the same arguments changes nothing
        doc2 = ConfigDocument(path, text)
        apply_imports(doc2, ledger, FakeContext(path=path, containerd_version=version), params(entries, owner=owner, state=state))
        assert not doc2.changed, step
    assert writes >= 80 and kept >= 5, (writes, kept)   # the loop did exercise adds, removals and sharing
    # every owner uninstalls everything: the original bytes come back
    for owner in owners:
        doc = ConfigDocument(path, text)
        apply_imports(doc, ledger, FakeContext(path=path, containerd_version=version), params(pool, owner=owner, state='absent'))
        text = doc.text
    assert text == original
    assert ledger.select(kind='import') == []


# --------------------------------------------------------- where a new entry goes
class Keys(object):
    def __init__(self, keys):
        self._keys = list(keys)

    def keys(self):
        return list(self._keys)


@pytest.mark.parametrize('current, k, position, where', [
    # prepend: right after the last earlier wanted entry already there, else first
    (['x', 'a', 'y'], 1, 'prepend', 2),
    (['a', 'x', 'a', 'y'], 1, 'prepend', 3),
    (['x', 'y'], 1, 'prepend', 0),
    (['x', 'a', 'y', 'c'], 2, 'prepend', 2),
    # append: right before the first later wanted entry already there, else last
    (['x', 'c', 'y'], 1, 'append', 1),
    (['c', 'x', 'c'], 1, 'append', 0),
    (['x', 'y'], 1, 'append', 2),
    (['d', 'x', 'c'], 1, 'append', 0),  # before the first of the later ones, whichever is wanted first
    (['b', 'x', 'a'], 2, 'prepend', 3),
])
def test_a_new_entry_keeps_the_order_of_the_wanted_entries(current, k, position, where):
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import _insert_position
    assert _insert_position(Keys(current), ['a', 'b', 'c', 'd'], k, position) == where
