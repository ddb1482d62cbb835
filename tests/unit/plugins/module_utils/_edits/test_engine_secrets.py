# -*- coding: utf-8 -*-
"""The secrets an editing run knows before it reads anything: the
secret_keys option (paths, shown as given; one that is no path fails the
task by name) and the values of config.toml and its drop-ins as they are
when the run starts (a file over the size limit is left to the write's own
refusal).
"""

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    MAX_CONFIG_BYTES,
    note_tree_secrets,
)
from helpers.common import read
from helpers.engine import setting
# fresh_secrets_state is an autouse fixture: imported, it runs for every test here
from helpers.secrets import FakeModule, fresh_secrets_state  # noqa: F401 pylint: disable=unused-import

TOKEN_KEY = 'plugins."io.containerd.cri.v1.images".registry.headers.X-Token'
DROPIN_AUTH = ("version = 2\n[plugins.'io.containerd.grpc.v1.cri'.registry.configs.'reg.example.com'.auth]\n"
               "  password = '%s'\n")


def noted_at_start(path):
    """The no_log values a run bound before reading the tree at path has for it."""
    module = FakeModule()
    secrets.bind(module)
    note_tree_secrets(path)
    return module.no_log_values


# ------------------------------------------------------------------ the secret_keys option
def test_the_secret_keys_paths_are_shown_as_given(main_only, capsys):
    # a path names where secrets are, it is none: masking it would mangle every message that names the key
    res = setting(main_only, capsys, key='images.snapshotter', value='native', secret_keys=[TOKEN_KEY])
    assert res['changed'] and "snapshotter = 'native'" in read(main_only['path'])
    assert res['invocation']['module_args']['secret_keys'] == [TOKEN_KEY]


def test_a_secret_key_that_is_no_dotted_path_fails_the_task_naming_it(main_only, capsys):
    before = read(main_only['path'])
    res = setting(main_only, capsys, key='images.snapshotter', value='native', secret_keys=['plugins..x'])
    assert res['failed'] and res['msg'].startswith("secret_keys: 'plugins..x' is not a dotted TOML path")
    assert read(main_only['path']) == before


# ------------------------------------------------------------------ the tree's secrets as the run starts
def test_the_secrets_of_config_toml_and_its_drop_ins_are_masked_from_the_start(tmp_path):
    dropin = tmp_path / '10-registry.toml'
    dropin.write_text(DROPIN_AUTH % 'dropin-pw-41')
    path = tmp_path / 'config.toml'
    path.write_text('version = 2\nimports = ["%s"]\n%s' % (dropin, (DROPIN_AUTH % 'main-pw-42').split('\n', 1)[1]))
    assert noted_at_start(str(path)) == {'dropin-pw-41', 'main-pw-42'}


def sized_config(tmp_path, size, password):
    """A version 2 config.toml of exactly size bytes holding one registry password."""
    text = DROPIN_AUTH % password + '# '
    path = tmp_path / 'config.toml'
    path.write_text(text + 'x' * (size - len(text) - 1) + '\n')
    assert path.stat().st_size == size
    return str(path)


def test_a_config_toml_at_the_size_limit_has_its_secrets_masked_from_the_start(tmp_path):
    assert noted_at_start(sized_config(tmp_path, MAX_CONFIG_BYTES, 'limit-pw-43')) == {'limit-pw-43'}


def test_a_config_toml_over_the_size_limit_is_not_read_at_the_start(tmp_path):
    # the write refuses it, naming its size, before anything could quote it
    assert noted_at_start(sized_config(tmp_path, MAX_CONFIG_BYTES + 1, 'over-pw-44')) == set()
