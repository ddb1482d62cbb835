# -*- coding: utf-8 -*-
"""_runtime_edit's install called directly: what a new runtime's table holds
(copied, or started from nothing), the built-in runc written out on containerd
1.x, a runtime that lives in a drop-in, and each install undone to the bytes
it started from.

tests/module/test_containerd_runtime.py runs these through the module on
real files and containerd; here each path is taken on its own, with the
exact table and warnings.
"""

import os

import pytest

from helpers.common import fixture_text
from helpers.context import RUNTIMES_V2_PATH as RT, doc_and_ledger

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import EditElsewhere
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import apply_runtime
from helpers.context import FakeContext

CRI2 = 'plugins."io.containerd.grpc.v1.cri"'
CRI3 = 'plugins."io.containerd.cri.v1.runtime"'
RUNC = ('\n[%s.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
        '  [%s.containerd.runtimes.runc.options]\n    SystemdCgroup = true\n' % (CRI2, CRI2))
TEXT = 'version = 2\n\n[%s.containerd]\n  default_runtime_name = "runc"\n%s' % (CRI2, RUNC)


def present(doc, ledger, ctx=None, **params):
    return apply_runtime(doc, ledger, ctx or FakeContext(containerd_version=(1, 7)), dict(dict(owner='gpu', state='present'), **params))


def absent(doc, ledger, ctx=None, **params):
    return apply_runtime(doc, ledger, ctx or FakeContext(containerd_version=(1, 7)), dict(dict(owner='gpu', state='absent'), **params))


# ------------------------------------------------------------------ a new runtime's table
def test_a_new_runtime_copies_the_default_and_takes_every_asked_key_and_goes_whole(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    out = present(doc, ledger, name='nvidia', runtime_path='/usr/bin/nvidia-shim',
                  settings={'sandbox_mode': 'podsandbox'}, options={'BinaryName': '/usr/bin/nvidia-container-runtime'})
    assert out['created'] is True
    assert out['runtime'] == {'runtime_type': 'io.containerd.runc.v2', 'runtime_path': '/usr/bin/nvidia-shim',
                              'sandbox_mode': 'podsandbox',
                              'options': {'SystemdCgroup': True, 'BinaryName': '/usr/bin/nvidia-container-runtime'}}
    # the table is the owner's: no per-key records, the uninstall deletes it whole
    assert [r['kind'] for r in ledger.records] == ['table']
    out = absent(doc, ledger, name='nvidia')
    assert out['removed'] is True and doc.text == TEXT and ledger.records == []


def test_a_copied_runtime_s_own_type_is_part_of_its_table_not_a_change_to_undo(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    out = present(doc, ledger, name='gvisor', runtime_type='io.containerd.runsc.v1')
    assert out['runtime'] == {'runtime_type': 'io.containerd.runsc.v1', 'options': {'SystemdCgroup': True}}
    assert [r['kind'] for r in ledger.records] == ['table']
    out = absent(doc, ledger, name='gvisor')
    assert out == dict(removed=True, restored=[], kept=[], runtime=None, default_runtime_name='runc', owner='gpu')
    assert doc.text == TEXT


@pytest.mark.parametrize('runtime_type', [None, 'io.containerd.kata.v2'])
def test_a_runtime_with_nothing_to_inherit_starts_from_its_type_alone(tmp_path, runtime_type):
    text = 'version = 2\n\n[%s.containerd]\n  snapshotter = "overlayfs"\n' % CRI2
    doc, ledger = doc_and_ledger(tmp_path, text)
    ctx = FakeContext(containerd_version=(2, 1))
    out = present(doc, ledger, ctx, name='kata', runtime_type=runtime_type)
    assert out['runtime'] == {'runtime_type': runtime_type or 'io.containerd.runc.v2'} and out['created'] is True
    assert ctx.warnings == ["%s: no runtime 'runc' to inherit settings from; kata starts empty" % doc.path]
    assert [r['kind'] for r in ledger.records] == ['table']
    absent(doc, ledger, name='kata')
    assert doc.text == text and ledger.records == []


def test_a_runtime_already_there_is_changed_key_by_key_and_given_back(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    out = present(doc, ledger, name='runc', runtime_type='io.containerd.runsc.v1', options={'SystemdCgroup': False})
    assert out['created'] is False
    assert out['runtime'] == {'runtime_type': 'io.containerd.runsc.v1', 'options': {'SystemdCgroup': False}}
    out = absent(doc, ledger, name='runc')
    assert out['removed'] is False and doc.text == TEXT
    assert sorted(out['restored']) == ['%s.containerd.runtimes.runc.options.SystemdCgroup' % CRI2,
                                       '%s.containerd.runtimes.runc.runtime_type' % CRI2]


# ------------------------------------------------------------------ the built-in runc (containerd 1.x)
STOCK = fixture_text('v2_debian_stock.toml')   # no runtimes table: containerd's own runc is the default


def test_on_1_x_the_first_runtime_writes_out_the_built_in_runc_and_takes_it_away_again(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, STOCK)
    present(doc, ledger, name='kata', runtime_type='io.containerd.kata.v2')
    assert sorted(doc.runtimes()) == ['kata', 'runc']
    assert doc.toml.get(RT + ('runc',)) == {'runtime_type': 'io.containerd.runc.v2'}
    absent(doc, ledger, name='kata')
    assert doc.text == STOCK and ledger.records == []


@pytest.mark.parametrize('version, text, name', [
    ((2, 1), STOCK, 'kata'),   # 2.x merges: its runc stays without a table
    ((1, 7), STOCK, 'runc'),   # runc itself is the one being written
    ((1, 7), STOCK.replace('[plugins."io.containerd.grpc.v1.cri"]\n',
                           '[plugins."io.containerd.grpc.v1.cri"]\n'
                           '    [plugins."io.containerd.grpc.v1.cri".containerd]\n'
                           '      default_runtime_name = "crun"\n'), 'kata'),   # runc is not the default
])
def test_no_built_in_runc_is_written_when_nothing_would_lose_it(tmp_path, version, text, name):
    doc, ledger = doc_and_ledger(tmp_path, text)
    present(doc, ledger, FakeContext(containerd_version=version), name=name, runtime_type='io.containerd.kata.v2', inherit='none')
    assert sorted(doc.runtimes()) == [name]
    assert [r['kind'] for r in ledger.records] == ['table']


# ------------------------------------------------------------------ a runtime defined in a drop-in
def tree(tmp_path, main_version, dropin_version, runtimes_path):
    """config.toml importing a drop-in without runtimes, then one of dropin_version that defines runtime kata."""
    other = os.path.join(str(tmp_path), 'cdi.toml')
    with open(other, 'w') as f:
        f.write('version = %d\n[%s]\n  enable_cdi = true\n' % (main_version, CRI2 if main_version == 2 else CRI3))
    dropin = os.path.join(str(tmp_path), 'kata.toml')
    body = '[%s]\n  runtime_type = "io.containerd.kata.v2"\n' % '.'.join(
        p if '.' not in p else '"%s"' % p for p in runtimes_path + ('kata',))
    with open(dropin, 'w') as f:
        f.write(('version = %d\n' % dropin_version if dropin_version else '') + body)
    cri = CRI2 if main_version == 2 else CRI3
    text = ('version = %d\nimports = ["%s", "%s"]\n\n[%s.containerd]\n  default_runtime_name = "runc"\n\n'
            '[%s.containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
            % (main_version, other, dropin, cri, cri))
    return dropin, text


V3_RUNTIMES = ('plugins', 'io.containerd.cri.v1.runtime', 'containerd', 'runtimes')


@pytest.mark.parametrize('main_version, dropin_version, runtimes_path', [
    (2, 2, RT), (3, 3, V3_RUNTIMES), (3, 4, V3_RUNTIMES)])
def test_a_change_to_a_runtime_a_drop_in_defines_goes_to_the_drop_in(
        tmp_path, main_version, dropin_version, runtimes_path):
    dropin, text = tree(tmp_path, main_version, dropin_version, runtimes_path)
    doc, ledger = doc_and_ledger(tmp_path, text)
    for params in (dict(options={'ConfigPath': '/etc/kata.toml'}), dict(inherit='runc')):
        with pytest.raises(EditElsewhere) as err:
            present(doc, ledger, FakeContext(containerd_version=(2, 1)), name='kata', **params)
        assert str(err.value) == ('%s: runtime kata is defined in the drop-in %s, which %s imports.'
                                  % (doc.path, dropin, doc.path))
        assert err.value.path == dropin
    assert doc.text == text and ledger.records == []


def test_a_drop_in_s_runtime_made_the_default_changes_only_config_toml(tmp_path):
    dropin, text = tree(tmp_path, 2, 2, RT)
    doc, ledger = doc_and_ledger(tmp_path, text)
    out = present(doc, ledger, FakeContext(containerd_version=(2, 1)), name='kata')
    assert out['created'] is False and doc.text == text        # nothing asked: nothing to do
    out = present(doc, ledger, FakeContext(containerd_version=(2, 1)), name='kata', default=True)
    assert out['created'] is False and out['default_runtime_name'] == 'kata'
    assert doc.text == text.replace('default_runtime_name = "runc"', 'default_runtime_name = "kata"')
    assert doc.toml.get(RT + ('kata',)) is None


def test_a_drop_in_the_engine_is_about_to_write_counts_too(tmp_path):
    # ctx.tree_files: the tree as the engine holds it, with a drop-in not on disk yet
    dropin, text = tree(tmp_path, 2, 2, RT)
    os.unlink(dropin)
    doc, ledger = doc_and_ledger(tmp_path, text)
    files = [(doc.path, doc.data), (dropin, {'version': 2, 'plugins': {'io.containerd.grpc.v1.cri': {
        'containerd': {'runtimes': {'kata': {'runtime_type': 'io.containerd.kata.v2'}}}}}})]
    with pytest.raises(EditElsewhere) as err:
        present(doc, ledger, FakeContext(containerd_version=(2, 1), tree_files=files), name='kata', options={'ConfigPath': '/x'})
    assert err.value.path == dropin
    # without it, kata is new to the tree and goes to config.toml
    present(doc, ledger, FakeContext(containerd_version=(2, 1), tree_files=[(doc.path, doc.data)]), name='kata')
    assert doc.toml.get(RT + ('kata',)) == {'runtime_type': 'io.containerd.runc.v2'}


def test_a_version_1_drop_in_s_runtime_is_not_the_one_containerd_uses(tmp_path):
    # containerd ignores a version 1 file's plugins."io.containerd.grpc.v1.cri": kata is new here
    dropin, text = tree(tmp_path, 2, None, RT)
    doc, ledger = doc_and_ledger(tmp_path, text)
    out = present(doc, ledger, FakeContext(containerd_version=(2, 1)), name='kata', options={'ConfigPath': '/etc/kata.toml'})
    assert out['created'] is True and out['runtime']['options'] == {'ConfigPath': '/etc/kata.toml'}


# ------------------------------------------------------------------ installing again after an uninstall
def test_an_install_after_an_uninstall_makes_the_next_uninstall_judge_afresh(tmp_path):
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    present(doc, ledger, name='runc', settings={'sandbox_mode': 'podsandbox'})
    absent(doc, ledger, name='runc')
    assert doc.text == TEXT
    # the operator writes the same value by hand; the owner's install finds it there and records nothing
    with_key = TEXT.replace('runtime_type = "io.containerd.runc.v2"\n',
                            'runtime_type = "io.containerd.runc.v2"\n  sandbox_mode = "podsandbox"\n')
    doc, _unused = doc_and_ledger(tmp_path, with_key)
    present(doc, ledger, name='runc', settings={'sandbox_mode': 'podsandbox'})
    ctx = FakeContext(containerd_version=(1, 7))
    out = absent(doc, ledger, ctx, name='runc')
    # no record of this owner: the runtime is kept, and the owner is told so
    assert out['kept'] == ['%s.containerd.runtimes.runc' % CRI2] and len(ctx.warnings) == 1
    assert doc.text == with_key
