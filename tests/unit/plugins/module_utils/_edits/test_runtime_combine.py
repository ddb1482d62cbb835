# -*- coding: utf-8 -*-
"""RuntimeBatch.combine: one result from the steps of a split edit (an
uninstall over config.toml and its drop-ins, or one part per runtime): each
runtime once, in the order given, with what every step did to it.
"""

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import RuntimeBatch


def entries(*names):
    return [dict(name=n, state='absent', owner='coco', index=i) for i, n in enumerate(names)]


def test_a_runtime_seen_by_several_steps_is_merged_into_one_entry():
    # kata's table went from the drop-in, its options were put back in config.toml; crun only in the drop-in
    steps = [
        dict(runtimes=[dict(name='crun', state='absent', removed=True, restored=[], kept=['x.crun'], runtime=None),
                       dict(name='kata', state='absent', removed=False, restored=['k.b', 'k.a'], kept=['k.z'],
                            runtime={'runtime_type': 'io.containerd.kata.v2'})]),
        dict(files=['/etc/containerd/config.toml']),
        dict(runtimes=[dict(name='kata', state='absent', removed=True, restored=['k.a', 'k.c'], kept=None,
                            runtime=None)]),
    ]
    result = RuntimeBatch(entries('kata', 'nydus', 'crun'), 'coco').combine(dict(changed=True), steps)
    assert result['runtimes'] == [
        dict(name='kata', state='absent', removed=True, restored=['k.a', 'k.b', 'k.c'], kept=['k.z'], runtime=None),
        dict(name='crun', state='absent', removed=True, restored=[], kept=['x.crun'], runtime=None)]
    # the single-runtime keys: true when true of any runtime, the union of the lists
    assert (result['removed'], result['restored'], result['kept']) == (True, ['k.a', 'k.b', 'k.c'], ['k.z', 'x.crun'])
    assert result['changed'] is True


def test_an_install_split_in_parts_reports_created_when_any_part_created():
    steps = [dict(runtimes=[dict(name='kata', state='present', created=False)], default_runtime_name='runc'),
             dict(runtimes=[dict(name='kata', state='present', created=True)], default_runtime_name='runc')]
    result = RuntimeBatch(entries('kata'), 'coco').combine({}, steps)
    assert result['runtimes'][0]['created'] is True and result['created'] is True
    assert 'removed' not in result and 'restored' not in result


def test_the_default_of_a_split_batch_is_the_one_the_last_step_left():
    batch = RuntimeBatch(entries('a', 'b', 'c'), 'coco')
    steps = [dict(runtimes=[dict(name=n, created=True)], default_runtime_name=d)
             for n, d in (('a', 'a'), ('b', 'b'), ('c', 'runc'))]
    assert batch.combine({}, steps)['default_runtime_name'] == 'runc'


def test_a_batch_that_ran_as_one_step_or_one_runtime_keeps_the_engine_s_default():
    # one step: the engine's result already says the default; a single runtime over two files: so does it
    many = RuntimeBatch(entries('a', 'b'), 'coco')
    one_step = [dict(runtimes=[dict(name='a', created=True), dict(name='b', created=True)])]
    assert many.combine(dict(default_runtime_name='b'), one_step)['default_runtime_name'] == 'b'
    single = RuntimeBatch(entries('a'), 'coco')
    two_files = [dict(runtimes=[dict(name='a', removed=True)], default_runtime_name='x'),
                 dict(runtimes=[dict(name='a', removed=False)], default_runtime_name='y')]
    assert single.combine(dict(default_runtime_name='runc'), two_files)['default_runtime_name'] == 'runc'
