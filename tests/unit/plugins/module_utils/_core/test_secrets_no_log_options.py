# -*- coding: utf-8 -*-
"""_secrets.mark_secret_options: the options that carry a secret in this task become no_log before
AnsibleModule logs its arguments; the others stay logged as given."""

import copy

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from ansible_collections.nodeguard.containerd.plugins.module_utils._core import secrets

PASSWORD_KEY = 'plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example.com".auth.password'
SECRET_DROPIN = ("[plugins.'io.containerd.cri.v1.images'.registry.configs.'reg.example.com'.auth]\n"
                 "  password = 'dropin-pw-3'\n")
# the shapes of containerd_setting's, containerd_config's and containerd_dropin's options
SPEC = dict(
    key=dict(type='str', no_log=False),
    value=dict(type='raw'),
    settings=dict(type='list', elements='dict', options=dict(
        key=dict(type='str', no_log=False),
        value=dict(type='raw'),
    )),
    content=dict(type='str'),
    dropins=dict(type='list', elements='dict', options=dict(
        path=dict(type='path'),
        content=dict(type='str'),
    )),
    secret_keys=dict(type='list', elements='str', no_log=False),
)


def marked(**params):
    with patch_module_args(params):
        return secrets.mark_secret_options(copy.deepcopy(SPEC))


def marked_module(params):
    """The spec mark_secret_options gives for params, and the AnsibleModule made on it with them."""
    with patch_module_args(params):
        spec = secrets.mark_secret_options(copy.deepcopy(SPEC))
        return spec, AnsibleModule(argument_spec=spec)


def test_a_secret_keys_value_is_never_logged_by_the_module():
    spec, module = marked_module(dict(key=PASSWORD_KEY, value='setting-pw-1'))
    assert spec['value']['no_log'] is True
    # what AnsibleModule logs and returns as a placeholder, before nodeguard noted anything
    assert 'setting-pw-1' in module.no_log_values


def test_one_secret_setting_makes_every_settings_value_no_log():
    spec = marked(settings=[dict(key='plugins."io.containerd.grpc.v1.cri".enable_cdi', value=True),
                            dict(key=PASSWORD_KEY, value='setting-pw-2')])
    assert spec['settings']['options']['value']['no_log'] is True
    assert spec['settings']['options']['key'] == SPEC['settings']['options']['key']
    assert spec['value'] == SPEC['value']


def test_a_dropin_whose_content_holds_a_secret_makes_dropins_content_no_log():
    spec = marked(dropins=[dict(path='/etc/containerd/conf.d/10-a.toml', content='version = 3\n'),
                           dict(path='/etc/containerd/conf.d/20-reg.toml', content=SECRET_DROPIN)])
    assert spec['dropins']['options']['content']['no_log'] is True
    assert spec['dropins']['options']['path'] == SPEC['dropins']['options']['path']


def test_a_content_holding_a_secret_is_no_log():
    assert marked(content=SECRET_DROPIN)['content']['no_log'] is True


@pytest.mark.parametrize('params', [
    pytest.param(dict(key='plugins."io.containerd.grpc.v1.cri".enable_cdi', value=True), id='key-no-secret'),
    pytest.param(dict(value='overlayfs-1'), id='value-without-key'),
    pytest.param(dict(key='plugins."io.containerd.grpc.v1.cri', value='unterminated-1'), id='key-not-dotted'),
    pytest.param(dict(settings=[dict(value='no-key-1')]), id='setting-without-key'),
    pytest.param(dict(key=PASSWORD_KEY, state='absent'), id='content-not-given'),
    pytest.param(dict(content='[plugins\npassword = "not-toml-1"'), id='content-not-toml'),
    pytest.param(dict(dropins=[dict(path='/etc/containerd/conf.d/10-a.toml', content='= nothing')]),
                 id='dropin-content-not-toml'),
])
def test_a_task_without_a_secret_keeps_every_option_logged(params):
    """Nothing that is no secret is hidden: the task's arguments stay readable in the node's log and the result."""
    assert marked(**params) == SPEC


AUTH_TABLE = 'plugins."io.containerd.cri.v1.images".registry.configs."reg.example.com".auth'
TOKEN_KEY = 'plugins.*.containerd.runtimes.*.options.Token'
# containerd_runtime's and containerd_config's runtime options: a runtime's own, and those of each runtimes entry
RUNTIME = dict(name=dict(type='str'), options=dict(type='dict'), settings=dict(type='dict'))
RUNTIME_SPEC = dict(RUNTIME, runtimes=dict(type='list', elements='dict', options=copy.deepcopy(RUNTIME)),
                    secret_keys=dict(type='list', elements='str', no_log=False))


def marked_runtime(**params):
    with patch_module_args(params):
        return secrets.mark_secret_options(copy.deepcopy(RUNTIME_SPEC))


@pytest.mark.parametrize('key', [
    pytest.param(AUTH_TABLE, id='auth-table'),
    pytest.param('plugins."io.containerd.cri.v1.images".registry', id='registry-table'),
    pytest.param('plugins', id='plugins-table'),
])
def test_a_value_for_a_table_that_holds_a_secret_path_is_never_logged_by_the_module(key):
    spec, module = marked_module(dict(key=key, value=dict(username='robot', password='table-pw-1')))
    assert spec['value']['no_log'] is True
    assert 'table-pw-1' in module.no_log_values


def test_a_settings_entry_for_a_table_that_holds_a_secret_path_makes_every_settings_value_no_log():
    spec = marked(settings=[dict(key='plugins."io.containerd.grpc.v1.cri".enable_cdi', value=True),
                            dict(key=AUTH_TABLE, value=dict(password='table-pw-2'))])
    assert spec['settings']['options']['value']['no_log'] is True


def test_a_user_path_under_the_key_makes_its_value_no_log():
    spec = marked(key='plugins.x.headers', value={'Token': 'hdr-token-3'}, secret_keys=['plugins.x.headers.Token'])
    assert spec['value']['no_log'] is True


def test_a_logical_key_is_checked_at_its_path_in_every_config_version():
    """images.snapshotter is plugins."io.containerd.cri.v1.images".snapshotter in versions 3 and 4."""
    spec = marked(key='images.snapshotter', value='snap-secret-4',
                  secret_keys=['plugins."io.containerd.cri.v1.images".snapshotter'])
    assert spec['value']['no_log'] is True


@pytest.mark.parametrize('key', [
    pytest.param('plugins."io.containerd.cri.v1.images".registry.mirrors', id='beside-the-secrets'),
    pytest.param(AUTH_TABLE + '.username', id='under-the-table-no-secret'),
    pytest.param('images.snapshotter', id='logical-no-secret'),
])
def test_a_table_or_key_that_holds_no_secret_path_keeps_its_value_logged(key):
    assert marked(key=key, value={'endpoint': ['https://m.example.com']}) == SPEC


def test_a_runtimes_entry_whose_options_hold_a_secret_makes_runtimes_options_no_log():
    spec = marked_runtime(secret_keys=[TOKEN_KEY], runtimes=[
        dict(name='runc', options=dict(SystemdCgroup=True)),
        dict(name='kata', options=dict(ConfigPath='/etc/kata.toml', Token='rt-token-5'))])
    assert spec['runtimes']['options']['options']['no_log'] is True
    assert spec['runtimes']['options']['settings'] == RUNTIME['settings']
    assert spec['options'] == RUNTIME['options']


def test_a_runtimes_settings_holding_a_secret_make_that_option_no_log():
    spec = marked_runtime(name='kata', settings=dict(sandboxer='podsandbox', Token='rt-token-6'),
                          secret_keys=['plugins.*.containerd.runtimes.kata.Token'])
    assert spec['settings']['no_log'] is True
    assert spec['options'] == RUNTIME['options']


def test_a_runtimes_own_options_holding_a_secret_are_never_logged_by_the_module():
    with patch_module_args(dict(name='kata', options=dict(Token='rt-token-7'), secret_keys=[TOKEN_KEY])):
        spec = secrets.mark_secret_options(copy.deepcopy(RUNTIME_SPEC))
        module = AnsibleModule(argument_spec=spec)
    assert spec['options']['no_log'] is True
    assert 'rt-token-7' in module.no_log_values


@pytest.mark.parametrize('params', [
    pytest.param(dict(name='kata', options=dict(Token='rt-token-8')), id='no-secret-keys'),
    pytest.param(dict(name='kata', options=dict(ConfigPath='/etc/kata.toml'), secret_keys=[TOKEN_KEY]),
                 id='options-without-the-secret'),
    pytest.param(dict(runtimes=[dict(options=dict(Token='rt-token-9'))], secret_keys=[TOKEN_KEY]), id='no-name'),
])
def test_a_runtime_without_a_secret_keeps_its_options_logged(params):
    assert marked_runtime(**params) == RUNTIME_SPEC
