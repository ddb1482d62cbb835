# -*- coding: utf-8 -*-
"""apply_imports called directly, on the paths the 200-step walk of
test_imports.py rarely takes: an entry nobody recorded, a recorded entry
that was removed by hand, prune_missing, entries whose file is missing (or
will exist), and the warnings and refusals each gives, word for word.
"""

import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import (
    ConfigDocument,
    ConfigError,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import apply_imports
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.ledger import Ledger
from helpers.context import FakeContext


class Node(object):
    """config.toml and its ledger in tmp_path, edited by successive apply_imports calls."""

    def __init__(self, tmp_path, text, version=(1, 7)):
        self.folder = str(tmp_path)
        self.path = os.path.join(self.folder, 'config.toml')
        self.text = text
        self.version = version
        self.ledger = Ledger(os.path.join(self.folder, 'state'), self.path)

    def file(self, name, content='version = 2\n'):
        full = os.path.join(self.folder, name)
        with open(full, 'w') as f:
            f.write(content)
        return full

    def missing(self, name):
        return os.path.join(self.folder, name)

    def run(self, entries, owner='coco', state='present', **kw):
        params = dict(imports=entries, owner=owner, state=state, position='append', require_exists=True,
                      prune_missing=False, allow_plugin_override=False)
        params.update(kw)
        doc = ConfigDocument(self.path, self.text)
        self.ctx = FakeContext(containerd_version=self.version)
        out = apply_imports(doc, self.ledger, self.ctx, params)
        self.text = doc.text
        return out

    def records(self, owner=None):
        return [(r['owner'], r['entry'], r['added'], r['created_key'])
                for r in self.ledger.select(owner=owner, kind='import')]


# ------------------------------------------------------------------ entries nobody recorded
def test_uninstall_keeps_an_entry_nobody_recorded_and_removes_the_owner_s_next_one(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    site, mine = node.file('site.toml'), node.file('mine.toml')
    node.text = 'version = 2\nimports = ["%s"]\n' % site   # put there by hand
    node.run([mine])
    out = node.run([site, mine], state='absent')
    assert out['kept'] == [site] and out['removed'] == [mine]
    assert node.text == 'version = 2\nimports = ["%s"]\n' % site
    assert node.ctx.warnings == [
        '%s: %s is kept: owner coco did not add it (no ledger record). A dangling entry (its file is gone) is '
        'removed whoever added it, since containerd cannot start with it.' % (node.path, site)]


def test_uninstall_keeps_an_entry_the_owner_found_already_there(tmp_path):
    # install then uninstall gives back the bytes: the site's import was there before coco asked for it
    node = Node(tmp_path, 'version = 2\n')
    site = node.file('site.toml')
    before = 'version = 2\nimports = ["%s"]\n' % site
    node.text = before
    assert node.run([site])['added'] == []
    assert node.records() == [('coco', site, False, False)]
    out = node.run([site], state='absent')
    assert out['removed'] == [] and out['kept'] == [site]
    assert node.text == before and node.records() == []


def test_uninstall_keeps_the_found_entry_and_still_removes_the_owner_s_next_one(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    site, mine = node.file('site.toml'), node.file('mine.toml')
    before = 'version = 2\nimports = ["%s"]\n' % site
    node.text = before
    assert node.run([site, mine])['added'] == [mine]
    out = node.run([site, mine], state='absent')
    assert out['kept'] == [site] and out['removed'] == [mine]
    assert node.text == before and node.records() == []


# ------------------------------------------------------------------ an owned entry removed by hand
def test_an_entry_removed_by_hand_is_added_again_and_its_key_goes_with_the_uninstall(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    nydus = node.file('nydus.toml')
    node.text = 'version = 2\nimports = ["%s"]\n' % nydus
    node.run([nydus])            # already there: recorded, not added
    assert node.records() == [('coco', nydus, False, False)]
    node.text = 'version = 2\n'  # the operator deletes the imports line
    out = node.run([nydus])
    assert out['added'] == [nydus] and node.text == 'version = 2\nimports = ["%s"]\n' % nydus
    # the one record now says coco added the entry and created the key
    assert node.records() == [('coco', nydus, True, True)]
    node.run([nydus], state='absent')
    assert node.text == 'version = 2\n' and node.records() == []


def test_an_entry_added_again_leaves_the_key_to_the_owner_that_made_it(tmp_path):
    # kata made the key; coco's record of an entry it had found is marked added, the key stays kata's
    node = Node(tmp_path, 'version = 2\n')
    a, b = node.file('a.toml'), node.file('b.toml')
    node.run([a], owner='kata')
    node.text = 'version = 2\nimports = ["%s", "%s"]\n' % (a, b)
    node.run([b])
    node.text = 'version = 2\nimports = ["%s"]\n' % a
    node.run([b])
    assert node.records('coco') == [('coco', b, True, False)]
    node.run([b], state='absent')
    assert node.text == 'version = 2\nimports = ["%s"]\n' % a
    node.run([a], owner='kata', state='absent')
    assert node.text == 'version = 2\n'


def test_when_the_owner_that_added_an_entry_leaves_the_next_holder_counts_as_its_adder(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    a = node.file('a.toml')
    node.run([a], owner='kata')
    node.run([a], owner='coco')
    node.run([a], owner='ops')
    assert node.records() == [('kata', a, True, True), ('coco', a, False, False), ('ops', a, False, False)]
    out = node.run([a], owner='kata', state='absent')
    assert out['kept'] == [a] and node.text == 'version = 2\nimports = ["%s"]\n' % a
    # coco, the oldest holder left, now owns the entry and the key it lives in
    assert node.records() == [('coco', a, True, True), ('ops', a, False, False)]
    node.run([a], owner='ops', state='absent')
    node.run([a], owner='coco', state='absent')
    assert node.text == 'version = 2\n' and node.records() == []


# ------------------------------------------------------------------ prune_missing
@pytest.mark.parametrize('state', ['present', 'absent'])
def test_prune_missing_drops_every_copy_of_a_dangling_entry_but_never_one_being_added(tmp_path, state):
    node = Node(tmp_path, 'version = 2\n')
    site = node.file('site.toml')
    gone, later = node.missing('gone.toml'), node.missing('later.toml')
    node.text = 'version = 2\nimports = ["%s", "%s", "%s", "./gone.toml", "%s"]\n' % (site, gone, later, site)
    # kata holds the dangling entry
    node.ledger.add({'owner': 'kata', 'resource': 'import:' + gone, 'kind': 'import', 'entry': gone, 'added': True,
                     'created_key': False})
    out = node.run([later], state=state, prune_missing=True, require_exists=False)
    # both spellings of gone.toml go; later.toml stays (in place) only when this call adds it
    if state == 'present':
        assert out['pruned'] == out['removed'] == [gone] and out['imports'] == [site, later]
        assert node.ctx.missing_allowed == [gone, './gone.toml']   # what the engine's missing-import check lets pass
    else:
        assert out['pruned'] == out['removed'] == [gone, later] and out['imports'] == [site]
        assert node.ctx.missing_allowed == [gone, './gone.toml', later]
    assert node.records('kata') == []   # the dangling entry's record goes with it
    assert out['duplicates_removed'] == [site]


# ------------------------------------------------------------------ a missing file
def test_a_missing_file_is_refused_naming_the_fix(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    gone = node.missing('conf.d/gpu.toml')
    with pytest.raises(ConfigError) as err:
        node.run(['conf.d/gpu.toml'])
    assert str(err.value) == (
        '%s: cannot import conf.d/gpu.toml: %s does not exist, and containerd refuses to start when an imported '
        'file is missing. Nothing was written. Fix: create the file first (e.g. ansible.builtin.copy before this '
        'task), or set require_exists: false if it will exist before containerd restarts.' % (node.path, gone))
    assert err.value.given_details() == dict(key='imports')
    assert node.text == 'version = 2\n' and node.records() == []


def test_a_missing_file_the_same_call_writes_first_is_added_without_a_word(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    gpu = node.missing('gpu.toml')
    out = node.run([gpu], will_exist=[node.missing('other.toml'), gpu])
    assert out['added'] == [gpu] and node.ctx.missing_allowed == [gpu]
    # it is still missing now: the closing warning says so, nothing else does
    assert node.ctx.warnings == [
        '%s imports %s, which do(es) not exist: containerd refuses to start with this config. Fix: '
        'prune_missing: true, or state: absent for those entries.' % (node.path, gpu)]


def test_require_exists_false_adds_a_missing_file_with_warnings(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    gpu = node.missing('gpu.toml')
    out = node.run(['gpu.toml'], require_exists=False)
    assert out['added'] == ['gpu.toml'] and out['missing'] == ['gpu.toml'] and node.ctx.missing_allowed == ['gpu.toml']
    assert node.ctx.warnings == [
        '%s: gpu.toml imports %s, which does not exist yet: containerd will refuse to start until it does'
        % (node.path, gpu),
        '%s imports gpu.toml, which do(es) not exist: containerd refuses to start with this config. Fix: '
        'prune_missing: true, or state: absent for those entries.' % node.path]
    out = node.run(['gpu.toml'], require_exists=False, prune_missing=True)
    assert out['pruned'] == [] and out['missing'] == ['gpu.toml']   # being added: never pruned
    assert node.ctx.warnings == []   # prune_missing is on: no closing warning


# ------------------------------------------------------------------ what containerd would not apply
def test_a_version_2_cri_drop_in_under_a_version_3_config_is_added_with_a_warning(tmp_path):
    # measured on 2.1: a version 3 file read after the version 2 one stops its migration, and a version 3
    # file's plugins."io.containerd.grpc.v1.cri" is the gRPC plugin's ("Ignoring unknown key")
    node = Node(tmp_path, 'version = 3\n\n[plugins."io.containerd.cri.v1.runtime"]\n  enable_cdi = true\n',
                version=(2, 1))
    old = node.file('gpu.toml', 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n')
    new = node.file('new.toml', 'version = 3\n[plugins."io.containerd.cri.v1.runtime"]\n  enable_cdi = true\n')
    mixed = node.file('mixed.toml', 'version = 3\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n')
    out = node.run([old, new])
    assert out['added'] == [old, new]
    fix = ('Fix: write the drop-in with version = 3 and the version 3 plugin ids (plugins."io.containerd.cri.v1.'
           'runtime", plugins."io.containerd.cri.v1.images").')
    key = 'plugins."io.containerd.cri.v1.runtime".enable_cdi'
    assert node.ctx.warnings == [
        '%s: containerd 2.1 would not read these of its version 2 CRI keys: %s (a version 3 file is read after it, '
        'and containerd 2.x then migrates no version 2 CRI table). %s' % (old, key, fix)]
    del node.ctx.warnings[:]
    assert node.run([mixed])['added'] == [mixed]
    assert node.ctx.warnings == [
        '%s: containerd 2.1 would not read these of its version 2 CRI keys: %s (%s is version 3, so containerd 2.x '
        'reads its plugins."io.containerd.grpc.v1.cri" as the gRPC plugin\'s, which has no such key). %s'
        % (mixed, key, mixed, fix)]


def test_a_version_2_cri_drop_in_that_2x_reads_whole_is_added_without_a_warning(tmp_path):
    # the last file with a version line says version 2 and the version 3 runtime table lacks the key: migrated
    node = Node(tmp_path, 'version = 3\n', version=(2, 1))
    old = node.file('gpu.toml', 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = false\n')
    assert node.run([old])['added'] == [old] and node.ctx.warnings == []


def test_an_override_refusal_on_an_unknown_containerd_says_1_x_is_assumed(tmp_path):
    node = Node(tmp_path, 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n',
                version=None)
    gpu = node.file('gpu.toml', 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "p"\n')
    with pytest.raises(ConfigError) as err:
        node.run([gpu])
    assert ('%s: refusing to import %s: on containerd 1.x (assumed: the version is unknown and %s is config '
            'version 2) an imported file\'s plugins.<id> table replaces' % (node.path, gpu, node.path)) \
        in str(err.value)
    assert 'so enable_cdi would be lost' in str(err.value)


def test_a_drop_in_for_plugins_config_toml_does_not_configure_replaces_nothing(tmp_path):
    # containerd 1.7: only a plugin table config.toml has too is replaced whole
    node = Node(tmp_path, 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n')
    nydus = node.file('nydus.toml', 'version = 2\n[plugins."io.containerd.snapshotter.v1.nydus"]\n  root = "/n"\n')
    out = node.run([nydus])
    assert out['added'] == [nydus] and node.ctx.warnings == []


def test_a_path_with_a_space_is_a_plain_path(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    gpu = node.file('gpu drivers.toml')
    assert node.run([gpu])['added'] == [gpu]
    assert node.text == 'version = 2\nimports = ["%s"]\n' % gpu


def test_a_new_entry_goes_last_unless_prepend_is_asked(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    a, b, c = node.file('a.toml'), node.file('b.toml'), node.file('c.toml')
    node.text = 'version = 2\nimports = ["%s"]\n' % a
    node.run([b], position=None)
    node.run([c], position='prepend')
    assert node.text == 'version = 2\nimports = ["%s", "%s", "%s"]\n' % (c, a, b)


def test_entries_found_in_another_order_are_left_where_they_are_with_a_warning(tmp_path):
    node = Node(tmp_path, 'version = 2\n')
    a, b, c = node.file('a.toml'), node.file('b.toml'), node.file('c.toml')
    node.text = 'version = 2\nimports = ["%s", "%s"]\n' % (b, a)
    out = node.run([a, c, b])
    # c goes right before b, the first later wanted entry; a and b stay as they are
    assert out['imports'] == [c, b, a] and out['added'] == [c]
    assert node.ctx.warnings == [
        '%s: the imports %s are in the file in another order than listed; they were left where they are (later '
        'files win when containerd merges them). Remove them with state: absent and add them again to reorder.'
        % (node.path, ', '.join([a, c, b]))]


@pytest.mark.parametrize('config', [
    # version 2: the drop-in is read like the file itself
    'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n',
    # version 3 without its own CRI runtime table: nothing shadows the drop-in's
    'version = 3\n\n[plugins."io.containerd.cri.v1.images"]\n  snapshotter = "overlayfs"\n',
])
def test_a_version_2_cri_drop_in_is_added_quietly_where_nothing_shadows_it(tmp_path, config):
    node = Node(tmp_path, config, version=(2, 1))
    old = node.file('gpu.toml', 'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n  enable_cdi = true\n')
    assert node.run([old])['added'] == [old]
    assert node.ctx.warnings == []
