# -*- coding: utf-8 -*-
"""as_list: survey strings (JSON list, comma- or newline-separated) give the same list as a real list."""

import re

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.nodeguard.containerd.plugins.filter.as_list import FilterModule, as_list


@pytest.mark.parametrize('given', [
    ['runc', 'nvidia'],
    ('runc', 'nvidia'),
    '["runc", "nvidia"]',
    '  ["runc", "nvidia"]\n',
    'runc, nvidia',
    'runc,nvidia',
    'runc\nnvidia',
    'runc\r\nnvidia\n',
    ' runc ,\n nvidia ,',
])
def test_every_form_gives_the_same_list(given):
    assert as_list(given) == ['runc', 'nvidia']


@pytest.mark.parametrize('given', [None, '', '   ', '\n', ',', '[]'])
def test_nothing_gives_an_empty_list(given):
    assert as_list(given) == []


def test_a_json_list_keeps_its_mappings():
    assert as_list('[{"name": "nvidia", "probe": false}, "runc"]') == [{'name': 'nvidia', 'probe': False}, 'runc']


def test_a_list_is_returned_as_it_is():
    given = [{'name': 'kata-qemu'}, 'kata-clh']
    assert as_list(given) == given


def test_a_single_name_is_a_list_of_one():
    assert as_list('kata-qemu') == ['kata-qemu']


@pytest.mark.parametrize('given, says', [
    ({'name': 'nvidia'}, 'got a mapping'),
    (3, 'got int'),
    ('[runc, nvidia]', 'starts with [ but is not a JSON list'),
])
def test_what_is_no_list_is_refused_naming_it(given, says):
    with pytest.raises(AnsibleFilterError, match=re.escape(says)):
        as_list(given)


def test_the_filter_is_registered_under_its_name():
    assert FilterModule().filters() == {'as_list': as_list}
