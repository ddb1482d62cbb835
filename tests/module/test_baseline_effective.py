# -*- coding: utf-8 -*-
"""containerd_baseline judged on what containerd runs.

Real NVIDIA toolkit files (tests/fixtures/nvidia-ctk, written by the toolkit's
own installer, d34b304 = v1.20.0-27) and the real containerd binaries: 1.6
and 1.7 read the version 2 tree (the drop-in REPLACES config.toml's CRI table),
2.1 the version 3 tree (the drop-in deep-merges, the later file wins).  Every
outcome is read back with the binary's own ``config dump``.
"""

import json
import os

import pytest
import tomlkit

from helpers.common import CONTAINERD_1, CONTAINERD_17, CONTAINERD_2, config_dump, fixture_text, read

MOD = 'containerd_baseline'
CRI2 = 'io.containerd.grpc.v1.cri'
CRI3 = 'io.containerd.cri.v1.runtime'
CTK = 'nvidia-ctk/ctk-head-d34b304-installer-%s-systemd-default.after-setup.%s'

# (id, binary, fixture input, CRI plugin id)
BINARIES = [
    pytest.param('1.6', CONTAINERD_1, 'c16', CRI2, id='containerd-1.6'),
    pytest.param('1.7', CONTAINERD_17, 'c16', CRI2, id='containerd-1.7'),
    pytest.param('2.1', CONTAINERD_2, 'c2', CRI3, id='containerd-2.1'),
]
V2_BINARIES = BINARIES[:2]


def need(binary):
    if binary is None:
        pytest.fail('containerd binary missing: run `make deps`')
    return binary


def dump_of(path, binary):
    rc, out, err = config_dump(path, binary)
    assert rc == 0, err
    return tomlkit.parse(out).unwrap()


def default_runtime(dump, cri):
    return dump['plugins'][cri]['containerd']['default_runtime_name']


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'w') as f:
        f.write(text)
    return path


class Node(object):
    """config.toml and conf.d/ under a temp dir, as the toolkit leaves /etc/containerd."""

    def __init__(self, workdir, variant):
        self.etc = os.path.join(workdir, 'etc', 'containerd')
        self.confd = os.path.join(self.etc, 'conf.d')
        self.path = os.path.join(self.etc, 'config.toml')
        self.dropin = os.path.join(self.confd, '99-nvidia.toml')
        self.variant = variant
        self.after_setup = fixture_text(CTK % (variant, 'config.toml')).replace('/etc/containerd/conf.d', self.confd)
        assert 'imports = ["%s/*.toml"]' % self.confd in self.after_setup
        self.dropin_text = fixture_text(CTK % (variant, 'conf.d-99-nvidia.toml'))
        os.makedirs(self.confd)

    def before_toolkit(self):
        """The node before the toolkit: the same config.toml with no imports (as containerd config default)."""
        return write(self.path, self.after_setup.replace('imports = ["%s/*.toml"]' % self.confd, 'imports = []'))

    def toolkit_setup(self):
        """What the toolkit's installer writes: the imports line and the drop-in with default_runtime_name = nvidia."""
        write(self.path, self.after_setup)
        return write(self.dropin, self.dropin_text)


@pytest.fixture
def base(workdir):
    return dict(store=os.path.join(workdir, 'baselines'))


def manifest_of(result):
    return json.loads(read(os.path.join(result['snapshot'], 'manifest.json')))


def by_key(entries):
    return dict((e['key'], e) for e in entries)


# ------------------------------------------------------------------ the toolkit's drop-in changes the default
@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_dropin_default_runtime_is_effective_drift_and_repair_fixes_it_in_the_dropin(
        ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    path = node.before_toolkit()
    args = dict(base, path=path, containerd_bin=binary)

    snap = run_module(MOD, **args)
    assert snap['changed'] and snap['problems'] == []
    assert snap['validated']['checked'] == ['built-in checks', 'config dump', 'load test']
    rec = by_key(snap['effective'])['cri.default_runtime_name']
    assert rec['value'] == 'runc' and rec['dumped'] == 'runc' and rec['file'] == path
    m = manifest_of(snap)
    assert m['effective']['containerd'] == [int(x) for x in ver.split('.')]
    assert by_key(m['effective']['values'])['cri.runtimes.runc']['dumped']['options']['SystemdCgroup'] is True
    stored_dump = tomlkit.parse(read(os.path.join(snap['snapshot'], 'effective.toml'))).unwrap()
    assert default_runtime(stored_dump, cri) == 'runc'

    clean = run_module(MOD, state='check', **args)
    assert clean['effective_drift'] == [] and clean['protected_drift'] == [] and clean['problems'] == []

    node.toolkit_setup()
    assert default_runtime(dump_of(path, binary), cri) == 'nvidia'     # what containerd runs now

    failed = run_module(MOD, state='check', expect_fail=True, **args)
    # config.toml's own protected keys did not change: only the merged view shows it
    assert failed['protected_drift'] == []
    (d,) = failed['effective_drift']
    assert d['key'] == 'cri.default_runtime_name' and d['change'] == 'changed'
    assert (d['before'], d['after']) == ('runc', 'nvidia')
    assert d['file'] == node.dropin and d['before_file'] == path and d['compared'] == 'config dump'
    assert '99-nvidia.toml' in failed['msg'] and 'state: repair' in failed['msg']
    assert by_key(failed['effective'])['cri.default_runtime_name']['file'] == node.dropin
    assert failed['drift']['files']['added'] == [node.dropin]

    # check mode: says what it would do, writes nothing
    before_bytes = (read(path), read(node.dropin))
    dry = run_module(MOD, state='repair', check=True, diff=True, **args)
    assert dry['changed'] and (read(path), read(node.dropin)) == before_bytes
    assert [(r['key'], r['file']) for r in dry['repaired']] == [('cri.default_runtime_name', node.dropin)]
    assert dry['effective_drift'] == [] and dry['left'] == []

    fixed = run_module(MOD, state='repair', diff=True, **args)
    assert fixed['changed'] and fixed['written'] == [node.dropin]
    (r,) = fixed['repaired']
    assert r['key'] == 'cri.default_runtime_name' and r['file'] == node.dropin
    assert (r['before'], r['after']) == ('nvidia', 'runc')
    assert fixed['effective_drift'] == [] and fixed['left'] == []
    # the repaired drop-in was judged by a real start of containerd on the tree before it was written
    (judged,) = fixed['load_test']
    assert 'load test' in judged['checked'] and judged['load_test']['ok'] is True
    assert any('99-nvidia.toml' in w and 'may write it again' in w for w in fixed['warnings'])
    assert read(path) == node.after_setup                             # config.toml untouched
    # the drop-in changed in that one line only
    assert read(node.dropin) == node.dropin_text.replace('default_runtime_name = "nvidia"',
                                                         'default_runtime_name = "runc"')
    dump = dump_of(path, binary)
    assert default_runtime(dump, cri) == 'runc'
    rts = dump['plugins'][cri]['containerd']['runtimes']
    assert {'nvidia', 'nvidia-cdi', 'nvidia-legacy', 'runc'} <= set(rts)
    assert rts['runc']['options']['SystemdCgroup'] is True

    after = run_module(MOD, state='check', **args)
    assert after['effective_drift'] == [] and after['problems'] == []
    assert by_key(after['effective'])['cri.default_runtime_name']['file'] == node.dropin
    assert not run_module(MOD, state='repair', **args)['changed']


@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_edit_in_config_leaves_dropin_drift_and_says_why(ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    path = node.before_toolkit()
    args = dict(base, path=path, containerd_bin=binary)
    run_module(MOD, **args)
    node.toolkit_setup()
    before_bytes = (read(path), read(node.dropin))
    r = run_module(MOD, state='repair', edit_in='config', **args)
    assert not r['changed'] and (read(path), read(node.dropin)) == before_bytes
    assert r['repaired'] == []
    (left,) = r['left']
    assert left['key'] == 'cri.default_runtime_name' and left['file'] == node.dropin
    assert 'edit_in: auto' in left['why'] and node.dropin in left['why']
    assert [d['key'] for d in r['effective_drift']] == ['cri.default_runtime_name']
    assert any('repair left cri.default_runtime_name' in w for w in r['warnings'])
    assert default_runtime(dump_of(path, binary), cri) == 'nvidia'
    run_module(MOD, state='check', expect_fail=True, **args)


# ------------------------------------------------------------------ a clean tree, with the drop-in in it
@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_baseline_with_the_dropin_records_where_values_come_from_and_has_no_drift(
        ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    node.toolkit_setup()
    path = node.path
    args = dict(base, path=path, containerd_bin=binary)
    snap = run_module(MOD, **args)
    assert [f['path'] for f in snap['files']] == [path, node.dropin]
    recs = by_key(manifest_of(snap)['effective']['values'])
    assert recs['cri.default_runtime_name']['value'] == 'nvidia'
    assert recs['cri.default_runtime_name']['file'] == node.dropin
    assert recs['cri.default_runtime_name']['dumped'] == 'nvidia'
    r = run_module(MOD, state='check', **args)
    assert not r['drifted'] and r['effective_drift'] == [] and r['protected_drift'] == [] and r['problems'] == []
    assert not run_module(MOD, state='repair', **args)['changed']


@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_dropin_gone_since_the_baseline_is_left_with_the_reason(ver, binary, variant, cri, workdir, run_module, base):
    """The toolkit's uninstall deletes its drop-in: the default it set is gone; repair cannot invent it."""
    binary = need(binary)
    node = Node(workdir, variant)
    node.toolkit_setup()
    args = dict(base, path=node.path, containerd_bin=binary)
    run_module(MOD, **args)
    os.unlink(node.dropin)
    failed = run_module(MOD, state='check', expect_fail=True, **args)
    d = by_key(failed['effective_drift'])['cri.default_runtime_name']
    assert (d['before'], d['after'], d['before_file']) == ('nvidia', 'runc', node.dropin)
    r = run_module(MOD, state='repair', **args)
    assert not r['changed']
    left = by_key(r['left'])['cri.default_runtime_name']
    assert 'no longer loads' in left['why'] and 'state: restore' in left['why'] and node.dropin in left['why']
    done = run_module(MOD, state='restore', **args)
    assert done['restored'] == [node.dropin] and read(node.dropin) == node.dropin_text
    assert default_runtime(dump_of(node.path, binary), cri) == 'nvidia'


# ------------------------------------------------------------------ 1.x: the drop-in owns the CRI table
@pytest.mark.parametrize('ver,binary,variant,cri', V2_BINARIES)
def test_v1x_runc_deleted_from_config_toml_under_the_dropin_is_put_back(
        ver, binary, variant, cri, workdir, run_module, base):
    """The drop-in's copy of runc is what runs; config.toml's copy is put back too (the same values: in effect)."""
    binary = need(binary)
    node = Node(workdir, variant)
    node.toolkit_setup()
    path = node.path
    args = dict(base, path=path, containerd_bin=binary)
    run_module(MOD, **args)
    data = tomlkit.parse(read(path))
    del data['plugins'][CRI2]['containerd']['runtimes']['runc']
    write(path, tomlkit.dumps(data))
    assert dump_of(path, binary)['plugins'][CRI2]['containerd']['runtimes']['runc']['options']['SystemdCgroup']

    failed = run_module(MOD, state='check', expect_fail=True, **args)
    assert failed['effective_drift'] == []
    (pd,) = failed['protected_drift']
    assert pd['key'] == 'cri.runtimes.runc' and pd['in_effect'] is False and pd['shadowed_by'] == node.dropin
    assert 'not what containerd runs now' in failed['msg']
    fixed = run_module(MOD, state='repair', **args)
    assert fixed['changed'] and fixed['written'] == [path] and fixed['left'] == []
    assert [(r['key'], r['file']) for r in fixed['repaired']] == [('cri.runtimes.runc', path)]
    # without the drop-in, config.toml alone runs runc with SystemdCgroup again
    os.unlink(node.dropin)
    rts = dump_of(path, binary)['plugins'][CRI2]['containerd']['runtimes']
    assert rts['runc']['options']['SystemdCgroup'] is True


@pytest.mark.parametrize('ver,binary,variant,cri', V2_BINARIES)
def test_v1x_config_toml_change_hidden_by_the_dropin_is_left_with_the_reason(
        ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    node.toolkit_setup()
    path = node.path
    args = dict(base, path=path, containerd_bin=binary)
    run_module(MOD, **args)
    write(path, read(path).replace('default_runtime_name = "runc"', 'default_runtime_name = "crun"'))
    assert default_runtime(dump_of(path, binary), cri) == 'nvidia'    # the drop-in's CRI table is what runs

    failed = run_module(MOD, state='check', expect_fail=True, **args)
    assert failed['effective_drift'] == []
    (pd,) = failed['protected_drift']
    assert (pd['key'], pd['in_effect'], pd['shadowed_by']) == ('cri.default_runtime_name', False, node.dropin)

    held = read(path)
    r = run_module(MOD, state='repair', **args)
    assert not r['changed'] and read(path) == held          # a write with no effect is refused by the engine
    (left,) = r['left']
    assert left['key'] == 'cri.default_runtime_name' and left['shadowed_by'] == node.dropin
    assert 'would have no effect' in left['why'] and node.dropin in left['why']
    assert any('repair left cri.default_runtime_name' in w for w in r['warnings'])

    # the toolkit uninstalls: its drop-in goes, and config.toml's "crun" (no such runtime) is what would run
    os.unlink(node.dropin)
    failed = run_module(MOD, state='check', expect_fail=True, **args)
    d = by_key(failed['effective_drift'])['cri.default_runtime_name']
    assert (d['before'], d['after'], d['file'], d['before_file']) == ('nvidia', 'crun', path, node.dropin)
    assert any("'crun'" in p for p in failed['problems'])
    fixed = run_module(MOD, state='repair', **args)
    # config.toml's own value is put back (in effect now); the baseline's "nvidia" came from the gone drop-in
    assert fixed['changed'] and fixed['written'] == [path]
    assert [(x['key'], x['file']) for x in fixed['repaired']] == [('cri.default_runtime_name', path)]
    assert default_runtime(dump_of(path, binary), cri) == 'runc'
    left = by_key(fixed['left'])['cri.default_runtime_name']
    assert 'no longer loads' in left['why'] and 'state: restore' in left['why']


# ------------------------------------------------------------------ a type containerd 1.x refuses
def _pause_threshold_int(text):
    assert 'pause_threshold = 0.02' in text
    return text.replace('pause_threshold = 0.02', 'pause_threshold = 1')


@pytest.mark.parametrize('ver,binary,variant,cri', V2_BINARIES)
def test_integer_where_containerd_wants_a_float_is_refused_as_a_baseline(
        ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    path = write(node.path, _pause_threshold_int(read(node.before_toolkit())))
    rc, _out, err = config_dump(path, binary)
    assert rc != 0 and "Can't convert 1(int64) to float64" in err

    args = dict(base, path=path, containerd_bin=binary)
    refused = run_module(MOD, expect_fail=True, **args)
    assert 'no snapshot was taken' in refused['msg'] and "Can't convert 1(int64) to float64" in refused['msg']
    assert 'allow_broken: true' in refused['msg']
    assert not os.path.exists(os.path.join(base['store'], 'default', 'current'))
    assert 'there is no baseline' in run_module(MOD, state='check', expect_fail=True, **args)['msg']

    # recorded anyway, loudly, when asked
    loud = run_module(MOD, allow_broken=True, **args)
    assert loud['changed'] and any("Can't convert" in w for w in loud['warnings'])
    assert manifest_of(loud)['broken'] is True
    # and such a baseline is never put back
    node.before_toolkit()
    good = read(path)
    refused = run_module(MOD, state='restore', expect_fail=True, **args)
    assert 'baseline itself is broken' in refused['msg'] and "Can't convert" in refused['msg']
    assert read(path) == good


@pytest.mark.parametrize('ver,binary,variant,cri', V2_BINARIES)
def test_check_reports_the_type_error_and_restore_puts_back_a_validated_baseline(
        ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    path = node.before_toolkit()
    good = read(path)
    args = dict(base, path=path, containerd_bin=binary)
    run_module(MOD, **args)
    # a jq/tomlq-based installer writes 1.0 as 1, and the toolkit adds its drop-in
    node.toolkit_setup()
    write(path, _pause_threshold_int(read(path)))
    failed = run_module(MOD, state='check', expect_fail=True, **args)
    assert any("Can't convert 1(int64) to float64" in p for p in failed['problems'])
    assert 'would not load' in failed['msg']

    done = run_module(MOD, state='restore', **args)
    assert done['changed'] and done['restored'] == [path] and read(path) == good
    assert 'config dump' in done['validated']['checked']
    assert done['validated']['checked'][0] == 'built-in checks'
    # the drop-in matched the glob but was not in the baseline: left, and the restored config.toml does not import it
    assert os.path.exists(node.dropin)
    assert default_runtime(dump_of(path, binary), cri) == 'runc'
    assert run_module(MOD, state='check', **args)['effective_drift'] == []


def test_containerd_2_reads_the_integer_and_the_baseline_is_taken(workdir, run_module, base):
    """The same integer on 2.1 is converted, not refused: the node's own containerd decides."""
    binary = need(CONTAINERD_2)
    node = Node(workdir, 'c2')
    path = write(node.path, _pause_threshold_int(read(node.before_toolkit())))
    assert config_dump(path, binary)[0] == 0
    snap = run_module(MOD, path=path, containerd_bin=binary, **base)
    assert snap['changed'] and snap['problems'] == []
    assert 'config dump' in snap['validated']['checked']


# ------------------------------------------------------------------ restore over a broken tree, validated
@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_restore_over_a_tree_broken_by_the_dropin_is_validated(ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    node.toolkit_setup()
    args = dict(base, path=node.path, containerd_bin=binary)
    run_module(MOD, **args)
    good_dropin = read(node.dropin)
    # the drop-in is cut short (a writer killed mid-write): not TOML any more
    write(node.dropin, good_dropin[:good_dropin.index('[plugins.') + 30])
    assert config_dump(node.path, binary)[0] != 0                   # containerd refuses the tree
    failed = run_module(MOD, state='check', expect_fail=True, **args)
    assert any('99-nvidia.toml' in p for p in failed['problems'])
    done = run_module(MOD, state='restore', **args)
    assert done['restored'] == [node.dropin] and read(node.dropin) == good_dropin
    assert 'config dump' in done['validated']['checked']
    assert default_runtime(dump_of(node.path, binary), cri) == 'nvidia'
    assert run_module(MOD, state='check', **args)['effective_drift'] == []


# ------------------------------------------------------------------ what only a real start shows
def _unknown_snapshotter(text, cri):
    """The CRI snapshotter set to nydus with no nydus proxy plugin: config dump accepts it, the CRI plugin fails."""
    if cri == CRI2:
        assert text.count('snapshotter = "overlayfs"') == 1
        return text.replace('snapshotter = "overlayfs"', 'snapshotter = "nydus"')
    assert text.count('    snapshotter = "overlayfs"\n') == 1
    return text.replace('    snapshotter = "overlayfs"\n', '    snapshotter = "nydus"\n')


@pytest.mark.parametrize('ver,binary,variant,cri', BINARIES)
def test_load_test_refuses_what_config_dump_accepts(ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    good = read(node.before_toolkit())
    path = write(node.path, _unknown_snapshotter(good, cri))
    assert config_dump(path, binary)[0] == 0                       # config dump says yes
    args = dict(base, path=path, containerd_bin=binary)

    refused = run_module(MOD, expect_fail=True, **args)
    assert 'no snapshot was taken' in refused['msg'] and 'failed to find snapshotter' in refused['msg']
    assert refused['validated']['load_test']['status'] == 'failed'
    assert not os.path.exists(os.path.join(base['store'], 'default', 'current'))
    # the load test is what refused it: without it the same tree is taken
    off = run_module(MOD, load_test=False, **args)
    assert off['changed'] and off['problems'] == [] and 'load test' not in off['validated']['checked']
    assert any('load_test: false' in n for n in off['validated']['notes'])

    # a good baseline; then the tree breaks in a way only a start shows
    write(path, good)
    snap = run_module(MOD, overwrite=True, **args)
    assert snap['validated']['checked'] == ['built-in checks', 'config dump', 'load test']
    assert snap['validated']['load_test']['ok'] is True
    write(path, _unknown_snapshotter(good, cri))
    failed = run_module(MOD, state='check', expect_fail=True, **args)
    assert failed['effective_drift'] == [] and failed['protected_drift'] == []
    assert any('failed to find snapshotter' in p for p in failed['problems'])

    # repair would keep the unknown snapshotter (not protected): its result fails the load test, nothing is written
    data = tomlkit.parse(read(path))
    del data['plugins'][cri]['containerd']['runtimes']['runc']
    write(path, tomlkit.dumps(data))
    held = read(path)
    refused = run_module(MOD, state='repair', expect_fail=True, **args)
    assert 'refusing to write' in refused['msg'] and 'failed to find snapshotter' in refused['msg']
    assert read(path) == held
    # restore puts back the whole good tree, judged by a real start
    done = run_module(MOD, state='restore', **args)
    assert read(path) == good and 'load test' in done['validated']['checked']


@pytest.mark.parametrize('ver,binary,variant,cri', V2_BINARIES)
def test_restore_refuses_a_baseline_that_fails_the_load_test(ver, binary, variant, cri, workdir, run_module, base):
    binary = need(binary)
    node = Node(workdir, variant)
    good = read(node.before_toolkit())
    path = write(node.path, _unknown_snapshotter(good, cri))
    args = dict(base, path=path, containerd_bin=binary)
    loud = run_module(MOD, allow_broken=True, **args)
    assert any('failed to find snapshotter' in w for w in loud['warnings'])
    write(path, good)
    refused = run_module(MOD, state='restore', expect_fail=True, **args)
    assert 'baseline itself is broken' in refused['msg'] and 'failed to find snapshotter' in refused['msg']
    assert read(path) == good
    # validate: none turns containerd's judgement off (the built-in checks still run)
    write(path, 'version = 2\n')
    done = run_module(MOD, state='restore', validate='none', **args)
    assert done['validated']['checked'] == ['built-in checks'] and read(path) == _unknown_snapshotter(good, cri)


def test_validate_load_requires_the_load_test_and_the_engine_runs_it_on_repair(workdir, run_module, base):
    binary = need(CONTAINERD_1)
    node = Node(workdir, 'c16')
    good = read(node.before_toolkit())
    args = dict(base, path=node.path, containerd_bin=binary, validate='load')
    # load_test: false does not turn off what validate: load asks for
    refused = run_module(MOD, load_test=False, expect_fail=True,
                         **dict(args, path=write(node.path, _unknown_snapshotter(good, CRI2))))
    assert 'failed to find snapshotter' in refused['msg'] and 'no snapshot was taken' in refused['msg']
    write(node.path, good)
    snap = run_module(MOD, **args)
    assert snap['validated']['checked'] == ['built-in checks', 'config dump', 'load test']
    data = tomlkit.parse(_unknown_snapshotter(good, CRI2))
    del data['plugins'][CRI2]['containerd']['runtimes']['runc']
    held = write(node.path, tomlkit.dumps(data)) and read(node.path)
    refused = run_module(MOD, state='repair', expect_fail=True, **args)
    # refused by the engine's own load test of the candidate (validate: load), nothing written
    assert 'validate: load' in refused['msg'] and 'failed to find snapshotter' in refused['msg']
    assert read(node.path) == held
