# -*- coding: utf-8 -*-
"""refuse_overrides_first called directly: containerd_config's check, before any
drop-in is written, that a drop-in of the call which config.toml is to import
would not replace one of config.toml's plugin tables on containerd 1.x.

tests/module/test_containerd_config.py has the refusal itself; here the cases
it leaves to a later step (content that does not parse, a config.toml that is
missing or unreadable, an import already listed) are pinned to pass quietly.
"""

import os

import pytest

from helpers.common import fixture_text

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import refuse_overrides_first
from helpers.context import FakeContext

KATA = ('version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata]\n'
        '  runtime_type = "io.containerd.kata.v2"\n')


def call(tmp_path, config=None, dropins=(), imports=None, raw=None):
    """The check for a call writing dropins {name: content} and importing imports (names in tmp_path)."""
    path = os.path.join(str(tmp_path), 'config.toml')
    if config is not None or raw is not None:
        with open(path, 'wb') as f:
            f.write(raw if raw is not None else config.encode('utf-8'))

    def full(name):
        return os.path.join(str(tmp_path), name)

    params = dict(path=path, imports=None if imports is None else [full(n) for n in imports])
    refuse_overrides_first(FakeContext(containerd_version=(1, 7)), params, [dict(dropin=full(n), content=c) for n, c in dropins])
    return path


def test_a_drop_in_that_would_replace_the_cri_table_is_refused_before_it_is_written(tmp_path):
    with pytest.raises(ConfigError) as err:
        call(tmp_path, fixture_text('v2_flat.toml'), [('kata.toml', KATA)], ['kata.toml'])
    assert "refusing to import %s" % os.path.join(str(tmp_path), 'kata.toml') in str(err.value)
    assert "runtime 'runc' would be lost" in str(err.value)
    assert not os.path.exists(os.path.join(str(tmp_path), 'kata.toml'))


def test_a_drop_in_that_does_not_parse_is_left_to_its_write_and_the_others_are_still_checked(tmp_path):
    broken = ('broken.toml', 'version = 2\n[plugins\n')
    call(tmp_path, fixture_text('v2_flat.toml'), [broken], ['broken.toml'])
    with pytest.raises(ConfigError):
        call(tmp_path, fixture_text('v2_flat.toml'), [broken, ('kata.toml', KATA)], ['broken.toml', 'kata.toml'])


@pytest.mark.parametrize('case', [
    'the import is listed already',   # the imports edit adds nothing, so nothing new replaces a table
    'no drop-ins in the call',        # an import of a file on disk is the imports edit's own check
    'no imports in the call',
    'no config.toml yet',
    'config.toml is not TOML',
    'config.toml is not UTF-8',
])
def test_what_the_check_leaves_to_a_later_step_passes_quietly(tmp_path, case):
    kata = os.path.join(str(tmp_path), 'kata.toml')
    flat = fixture_text('v2_flat.toml')
    if case == 'the import is listed already':
        call(tmp_path, flat.replace('version = 2\n', 'version = 2\nimports = ["%s"]\n' % kata),
             [('kata.toml', KATA)], ['kata.toml'])
    elif case == 'no drop-ins in the call':
        with open(kata, 'w') as f:
            f.write(KATA)
        call(tmp_path, flat, [], ['kata.toml'])
    elif case == 'no imports in the call':
        call(tmp_path, flat, [('kata.toml', KATA)], None)
    elif case == 'no config.toml yet':
        call(tmp_path, None, [('kata.toml', KATA)], ['kata.toml'])
    elif case == 'config.toml is not TOML':
        call(tmp_path, 'version = 2\n[plugins\n', [('kata.toml', KATA)], ['kata.toml'])
    else:
        call(tmp_path, raw=b'version = 2\n# \xff\n', dropins=[('kata.toml', KATA)], imports=['kata.toml'])
