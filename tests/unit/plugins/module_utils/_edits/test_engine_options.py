# -*- coding: utf-8 -*-
"""The options every config-editing module shares (COMMON_ARGUMENT_SPEC) are
the ones the nodeguard.containerd.common and .common.secrets doc fragments
(which every editing module extends) document, with the same type, default
and aliases: a user reads the defaults in the docs.
"""

import yaml

from ansible_collections.nodeguard.containerd.plugins.doc_fragments.common import ModuleDocFragment
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import (
    COMMON_ARGUMENT_SPEC,
    _parse_version_option,
)
import pytest
from helpers.engine import context
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigError


def test_the_shared_options_are_the_documented_ones():
    documented = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options'])
    documented.update(yaml.safe_load(ModuleDocFragment.SECRETS)['options'])
    assert sorted(documented) == sorted(COMMON_ARGUMENT_SPEC)
    for name, spec in COMMON_ARGUMENT_SPEC.items():
        doc = documented[name]
        assert (spec.get('type'), spec.get('default'), spec.get('aliases')) == (
            doc.get('type'), doc.get('default'), doc.get('aliases')), name


# ------------------------------------------------------------------ the containerd_version option
@pytest.mark.parametrize('given, version', [('1.7', (1, 7)), ('v2.1.4', (2, 1)), ('2', (2, 0)), (' 1.6 ', (1, 6))])
def test_the_version_option_is_major_and_minor(given, version):
    assert _parse_version_option(given) == version


@pytest.mark.parametrize('given', ['latest', '1.x', ''])
def test_a_version_option_that_is_no_version_is_refused_naming_the_option(given):
    with pytest.raises(ConfigError) as err:
        _parse_version_option(given)
    assert str(err.value) == 'containerd_version must look like 1.7 or 2.1, got %r' % given
    assert err.value.given_details() == dict(key='containerd_version')


# ------------------------------------------------------------------ containerd_bin
def test_a_containerd_bin_that_is_not_an_executable_file_is_refused(tmp_path):
    plain = tmp_path / 'containerd'
    plain.write_text('#!/bin/sh\n')
    folder = tmp_path / 'bin'
    folder.mkdir()  # executable (searchable), but not a file
    for given in (str(plain), str(folder), str(tmp_path / 'missing')):
        with pytest.raises(ConfigError) as err:
            context(containerd_bin=given).containerd_bin
        assert str(err.value).startswith('containerd_bin: %s is not an executable file. Nothing was written.' % given)
        assert err.value.given_details() == dict(key='containerd_bin')
    plain.chmod(0o755)
    assert context(containerd_bin=str(plain)).containerd_bin == str(plain)


# ------------------------------------------------------------------ the documented defaults, and the imports an edit allows to be missing
def documented_defaults():
    """{option: default} of the common doc fragments (every editing module extends both)."""
    options = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options'])
    options.update(yaml.safe_load(ModuleDocFragment.SECRETS)['options'])
    return dict((name, doc['default']) for name, doc in options.items() if 'default' in doc)


def test_the_documented_defaults_are_the_argument_specs():
    documented = documented_defaults()
    for name, spec in COMMON_ARGUMENT_SPEC.items():
        if 'default' in spec:
            assert documented.get(name) == spec['default'], name
    assert documented['lock_timeout'] == 30


def test_the_imports_an_edit_allows_to_be_missing_are_a_set_renewed_for_each_edit():
    ctx = context()
    ctx.allow_missing_import('/etc/containerd/conf.d/99-gpu.toml')
    assert ctx.missing_imports_allowed == frozenset(['/etc/containerd/conf.d/99-gpu.toml'])
    ctx._begin_edit()
    assert ctx.missing_imports_allowed == frozenset()
