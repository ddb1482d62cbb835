# -*- coding: utf-8 -*-
"""What _baseline_repair.put_back writes, and repair going on past a key that did not change.

The baseline's own block where it can (its comments and the blank line before a sub-table too),
rendered sections where part of the table is written elsewhere, the file's own indentation, a value
the baseline's text does not hold, and a table where a value is now (and back).  Each result is
checked as the engine checks it: the text parses to exactly the data promised."""

import tomlkit

from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.drift import lookup
from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.repair import put_back
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument

CRI2 = 'io.containerd.grpc.v1.cri'
CTD = ('plugins', CRI2, 'containerd')
RUNC = CTD + ('runtimes', 'runc')
HEAD = '[plugins."io.containerd.grpc.v1.cri".containerd'


def doc_of(text):
    return ConfigDocument('/etc/containerd/config.toml', text)


def finish(doc):
    doc.verify()
    assert tomlkit.parse(doc.text).unwrap() == doc.data
    return doc.text


def put_runc_back(base_text, cur_text):
    doc, base = doc_of(cur_text), doc_of(base_text)
    put_back(doc, base, RUNC, lookup(base.data, RUNC), lookup(doc.data, RUNC))
    text = finish(doc)
    assert lookup(tomlkit.parse(text).unwrap(), RUNC) == lookup(base.data, RUNC)
    return text


INDENTED = ('version = 2\n\n%s]\n  default_runtime_name = "runc"\n\n'
            '  %s.runtimes.runc]\n    # etcd and the API server run through it\n'
            '    runtime_type = "io.containerd.runc.v2"\n\n'
            '    %s.runtimes.runc.options]\n      SystemdCgroup = true\n' % (HEAD, HEAD, HEAD))
CURRENT = 'version = 2\n\n%s]\n  default_runtime_name = "runc"\n' % HEAD


def test_the_baselines_own_block_comes_back_with_its_comment_and_the_blank_line_before_its_sub_table():
    text = put_runc_back(INDENTED, CURRENT)
    assert text == CURRENT + INDENTED[INDENTED.index('\n  %s.runtimes.runc]' % HEAD):]


def test_an_indented_file_gets_the_block_with_its_indentation():
    text = put_runc_back(INDENTED, CURRENT)
    assert '\n    runtime_type = "io.containerd.runc.v2"\n' in text and '\n      SystemdCgroup = true\n' in text


def test_a_table_partly_written_as_dotted_keys_of_its_parent_is_rendered_as_sections():
    # runc.runtime_type lives in the runtimes section as a dotted key: the baseline's sections alone
    # would lose it, so the table is written afresh
    base_text = ('version = 2\n\n%s.runtimes]\n  runc.runtime_type = "io.containerd.runc.v2"\n\n'
                 '%s.runtimes.runc.options]\n  SystemdCgroup = true\n' % (HEAD, HEAD))
    text = put_runc_back(base_text, CURRENT)
    assert 'runc.runtime_type' not in text
    assert '%s.runtimes.runc]' % HEAD in text and '%s.runtimes.runc.options]' % HEAD in text


def test_a_table_of_tables_is_rendered_by_its_sub_tables_only():
    base_text = 'version = 2\n\n%s.runtimes]\n  runc = { options = { SystemdCgroup = true } }\n' % HEAD
    text = put_runc_back(base_text, CURRENT)
    assert '%s.runtimes.runc.options]' % HEAD in text
    assert '%s.runtimes.runc]' % HEAD not in text


def test_a_value_the_baselines_text_does_not_hold_is_written_fresh():
    doc = doc_of(CURRENT.replace('"runc"', '"crun"'))
    put_back(doc, doc_of('version = 2\n'), CTD + ('default_runtime_name',), 'runc', 'crun')
    assert 'default_runtime_name = "runc"' in finish(doc)


def test_a_table_comes_back_where_a_value_is_now():
    cur = CURRENT + '\n%s.runtimes]\n  runc = "gone"\n' % HEAD
    put_runc_back(INDENTED, cur)


def test_a_value_comes_back_where_a_table_is_now():
    base = doc_of(CURRENT)
    doc = doc_of('version = 2\n\n%s.default_runtime_name]\n  x = 1\n' % HEAD)
    path = CTD + ('default_runtime_name',)
    put_back(doc, base, path, 'runc', lookup(doc.data, path))
    assert lookup(tomlkit.parse(finish(doc)).unwrap(), path) == 'runc'


def test_a_protected_key_that_did_not_change_does_not_stop_the_repair_of_the_next():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.repair import repair
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import clean_imports
    doc = doc_of(CURRENT)
    out = repair(doc, doc_of(INDENTED), ['cri.default_runtime_name', 'cri.runtimes.runc'], clean_imports)
    assert out['restored'] == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    assert lookup(tomlkit.parse(finish(doc)).unwrap(), RUNC) == lookup(doc_of(INDENTED).data, RUNC)


def test_a_table_put_back_into_a_flat_file_is_written_flat():
    flat = 'version = 2\n\n%s]\ndefault_runtime_name = "runc"\n' % HEAD
    text = put_runc_back(INDENTED, flat)
    assert '\nruntime_type = "io.containerd.runc.v2"\n' in text and '\nSystemdCgroup = true\n' in text
    assert '%s.runtimes.runc.options]' % HEAD in text and '  %s' % HEAD not in text


def test_a_key_left_because_another_file_hides_it_does_not_stop_the_next():
    from ansible_collections.nodeguard.containerd.plugins.module_utils._baseline.repair import repair
    from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import clean_imports
    name = CTD + ('default_runtime_name',)

    def shadowed(before, after):
        # the default is decided by a drop-in; runc is config.toml's
        if lookup(before, name) != lookup(after, name):
            return dict(file='/etc/containerd/conf.d/99.toml', why='99.toml sets it later')
        return None

    doc = doc_of(CURRENT.replace('"runc"', '"crun"'))
    out = repair(doc, doc_of(INDENTED), ['cri.default_runtime_name', 'cri.runtimes.runc'], clean_imports, shadowed)
    assert [x['key'] for x in out['left']] == ['cri.default_runtime_name']
    assert out['left'][0]['shadowed_by'] == '/etc/containerd/conf.d/99.toml'
    assert out['restored'] == ['plugins."%s".containerd.runtimes.runc' % CRI2]
    assert 'default_runtime_name = "crun"' in finish(doc)


def test_comments_before_a_sub_table_and_after_a_sections_last_key_come_back_with_the_block():
    base_text = ('version = 2\n\n%s]\n  default_runtime_name = "runc"\n\n'
                 '  %s.runtimes.runc]\n    runtime_type = "io.containerd.runc.v2"\n    # kept for the next upgrade\n\n'
                 '    # the kubelet expects the systemd cgroup driver\n'
                 '    %s.runtimes.runc.options]\n      SystemdCgroup = true\n' % (HEAD, HEAD, HEAD))
    text = put_runc_back(base_text, CURRENT)
    assert text == CURRENT + base_text[base_text.index('\n  %s.runtimes.runc]' % HEAD):]


def _put_key_back(base_text, cur_text, path):
    doc, base = doc_of(cur_text), doc_of(base_text)
    put_back(doc, base, path, lookup(base.data, path), lookup(doc.data, path))
    return finish(doc)


RUNC_KEYS = ('version = 2\n\n%s.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n'
             '  privileged_without_host_devices = false  # kubelet default\n  base_runtime_spec = ""\n' % HEAD)


def test_a_key_lost_from_the_middle_of_a_section_comes_back_in_its_place_with_its_comment():
    cur = RUNC_KEYS.replace('  privileged_without_host_devices = false  # kubelet default\n', '')
    assert _put_key_back(RUNC_KEYS, cur, RUNC + ('privileged_without_host_devices',)) == RUNC_KEYS


def test_a_lost_first_key_goes_back_before_the_key_that_followed_it():
    cur = RUNC_KEYS.replace('  runtime_type = "io.containerd.runc.v2"\n', '')
    assert _put_key_back(RUNC_KEYS, cur, RUNC + ('runtime_type',)) == RUNC_KEYS


def test_a_lost_key_takes_the_indentation_of_the_file_it_goes_back_to():
    cur = RUNC_KEYS.replace('  privileged_without_host_devices = false  # kubelet default\n', '').replace('\n  ', '\n')
    text = _put_key_back(RUNC_KEYS, cur, RUNC + ('privileged_without_host_devices',))
    assert text == RUNC_KEYS.replace('\n  ', '\n')


def test_a_lost_key_whose_neighbours_are_gone_too_goes_to_the_end_of_its_section():
    cur = 'version = 2\n\n%s.runtimes.runc]\n  SystemdCgroup = true\n' % HEAD
    text = _put_key_back(RUNC_KEYS, cur, RUNC + ('base_runtime_spec',))
    assert text == cur + '  base_runtime_spec = ""\n'
