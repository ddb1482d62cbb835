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


def test_a_secret_keys_value_is_never_logged_by_the_module():
    with patch_module_args(dict(key=PASSWORD_KEY, value='setting-pw-1')):
        spec = secrets.mark_secret_options(copy.deepcopy(SPEC))
        module = AnsibleModule(argument_spec=spec)
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
