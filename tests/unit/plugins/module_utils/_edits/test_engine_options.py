# -*- coding: utf-8 -*-
"""The options every config-editing module shares (COMMON_ARGUMENT_SPEC) are
the ones the nodeguard.containerd.common and .common.secrets doc fragments
(which every editing module extends) document, with the same type, default
and aliases: a user reads the defaults in the docs.
"""

import yaml

from ansible_collections.nodeguard.containerd.plugins.doc_fragments.common import ModuleDocFragment
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import COMMON_ARGUMENT_SPEC


def test_the_shared_options_are_the_documented_ones():
    documented = dict(yaml.safe_load(ModuleDocFragment.DOCUMENTATION)['options'])
    documented.update(yaml.safe_load(ModuleDocFragment.SECRETS)['options'])
    assert sorted(documented) == sorted(COMMON_ARGUMENT_SPEC)
    for name, spec in COMMON_ARGUMENT_SPEC.items():
        doc = documented[name]
        assert (spec.get('type'), spec.get('default'), spec.get('aliases')) == (
            doc.get('type'), doc.get('default'), doc.get('aliases')), name
