# -*- coding: utf-8 -*-
"""_readiness_report in process: each check of the readiness report and the
verdict, with config dump, the wait, ctr, the probes and kubectl answered by
the test.  The same report through the module and real containerd is in
tests/module/test_containerd_readiness.py."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import report as rep
from ansible_collections.nodeguard.containerd.plugins.module_utils._node.preflight import CRI_V2
from helpers.report_node import DUMP, WAIT_OK, Node, dump_context


@pytest.fixture
def node(monkeypatch, tmp_path):
    return Node(monkeypatch, tmp_path)


def by_name(report):
    return dict((c['name'], c) for c in report['checks'])


# ---------------------------------------------------------------- the verdict

def test_a_working_node_passes_every_check_in_order(node):
    r = node.report()
    assert r['ok'] and r['failed'] == [] and r['warnings'] == []
    assert [c['name'] for c in r['checks']] == ['containerd_active', 'config_dump', 'imports_exist', 'imports_unique',
                                                'cri_plugin', 'handler:runc', 'probe:runc', 'baseline_drift',
                                                'kubernetes_node_ready']
    c = by_name(r)
    assert c['containerd_active'] == dict(name='containerd_active', status='pass', required=True,
                                          reason='containerd.service active (containerd 1.7.22)')
    assert c['config_dump']['reason'] == 'containerd config dump of %s succeeded (version 2)' % node.p['path']
    assert c['imports_exist']['reason'] == '0 import entries, every non-glob one exists'
    assert c['imports_unique']['reason'] == 'no file imported twice'
    assert c['cri_plugin']['reason'] == 'io.containerd.grpc.v1.cri ok'
    assert c['handler:runc']['reason'] == ('runtime runc in the effective config (io.containerd.runc.v2 '
                                           'BinaryName=/usr/bin/runc)')
    assert c['probe:runc']['reason'] == 'probe container (img) exited 0 in 1.25 s through runc'
    assert c['baseline_drift'] == dict(name='baseline_drift', status='skip', required=False,
                                       reason='disabled (node_readiness_check_drift: false)')
    assert c['kubernetes_node_ready'] == dict(name='kubernetes_node_ready', status='skip', required=False,
                                              reason='kubectl not found on the node')
    assert r['summary'] == '7 passed, 0 failed, 2 skipped'
    assert r['containerd']['runtimes'] == ['kata', 'runc'] and r['containerd']['default_runtime_name'] == 'runc'
    assert r['containerd']['config_version'] == 2 and r['containerd']['cri_plugins'] == {CRI_V2: 'ok'}


def test_the_wait_uses_the_socket_the_config_names(node):
    node.report()
    (args, kw), = node.calls['wait_ready']
    assert args == ('containerd.service', '/usr/bin/ctr', '/run/k3s/containerd.sock', (1, 7), 5, 0.1)
    assert kw == dict(reset_failed=True)
    node.report(address='/run/given.sock')
    assert node.calls['wait_ready'][-1][0][2] == '/run/given.sock'
    node.report(ctx=dump_context((0, 'version = 2\n', '')))
    assert node.calls['wait_ready'][-1][0][2] == '/run/containerd/containerd.sock'


def test_check_mode_never_clears_start_limit_hit(node):
    node.report(check_mode=True)
    assert node.calls['wait_ready'][-1][1] == dict(reset_failed=False)
    node.report(reset_failed=False)
    assert node.calls['wait_ready'][-1][1] == dict(reset_failed=False)


def test_an_optional_check_that_fails_is_a_warning(node):
    node.p['handlers'] = ['runc', 'nvidia']
    r = node.report(optional_checks=['handler:nvidia', 'probe:nvidia'])
    assert r['ok'] and r['failed'] == [] and r['warnings'] == ['handler:nvidia', 'probe:nvidia']
    c = by_name(r)
    assert c['handler:nvidia'] == dict(name='handler:nvidia', status='fail', required=False,
                                       reason='no runtime nvidia in the effective config (has: kata, runc)')
    assert c['probe:nvidia']['reason'] == 'handler nvidia not in the effective config'
    r = node.report()
    assert not r['ok'] and r['failed'] == ['handler:nvidia', 'probe:nvidia'] and r['warnings'] == []
    assert r['summary'] == '7 passed, 2 failed, 2 skipped'


# ---------------------------------------------------------------- config side

def test_a_refused_config_dump_quotes_containerds_last_line(node):
    r = node.report(ctx=dump_context((1, '', 'line one\nline two\ncontainerd: failed to load TOML: (2, 1): bad\n\n')))
    assert by_name(r)['config_dump']['reason'] == ('containerd --config %s config dump failed: containerd: failed to '
                                                   'load TOML: (2, 1): bad' % node.p['path'])
    assert not r['ok'] and 'config_dump' in r['failed']
    r = node.report(ctx=dump_context((1, 'stdout ' + 'x' * 500, '')))
    assert by_name(r)['config_dump']['reason'].endswith('failed: ' + ('stdout ' + 'x' * 500)[-400:])
    r = node.report(ctx=dump_context((3, '', '')))
    assert by_name(r)['config_dump']['reason'].endswith('config dump failed: 3')


def test_a_dump_that_is_not_toml_is_a_failed_dump(node):
    r = node.report(ctx=dump_context((0, 'version = = 2', '')))
    reason = by_name(r)['config_dump']['reason']
    assert reason.startswith('containerd --config %s config dump failed: config dump output is not valid TOML'
                             % node.p['path'])
    assert r['containerd']['runtimes'] == [] and r['containerd']['default_runtime_name'] is None


def test_imports_missing_and_twice_are_named(node, tmp_path):
    drop = tmp_path / 'a.toml'
    drop.write_text('version = 2\n')
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\nimports = ["%s", "%s", "%s"]\n' % (drop, drop, tmp_path / 'none.toml'))
    c = by_name(node.report())
    assert c['imports_exist']['status'] == 'fail'
    assert c['imports_exist']['reason'] == 'missing import(s): %s' % (tmp_path / 'none.toml')
    assert c['imports_unique']['status'] == 'fail' and str(drop) in c['imports_unique']['reason']
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % drop)
    assert by_name(node.report())['imports_exist']['reason'] == '1 import entry, every non-glob one exists'


def test_a_config_that_imports_itself_is_a_warning_that_names_it(node):
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % node.p['path'])
    report = node.report()
    check = by_name(report)['imports_self']
    assert check['status'] == 'fail' and not check['required'] and node.p['path'] in check['reason']
    assert 'imports_self' in report['warnings'] and 'imports_self' not in report['failed']
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\n')
    assert 'imports_self' not in by_name(node.report())


def test_an_import_that_cannot_be_read_fails_imports_exist(node, tmp_path):
    bad = tmp_path / 'bad.toml'
    bad.write_text('version = = 2\n')
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\nimports = ["%s"]\n' % bad)
    c = by_name(node.report())
    assert c['imports_exist']['status'] == 'fail' and str(bad) in c['imports_exist']['reason']
    assert c['imports_unique']['status'] == 'pass'


def test_a_main_file_that_cannot_be_read_fails_both_import_checks(node):
    with open(node.p['path'], 'w') as f:
        f.write('version = = 2\n')
    c = by_name(node.report())
    assert c['imports_exist']['status'] == c['imports_unique']['status'] == 'fail'
    assert c['imports_exist']['reason'].startswith('cannot read imports: ')
    assert c['imports_unique']['reason'] == c['imports_exist']['reason']


def test_the_probe_files_of_the_drift_check_are_the_tree_once_each(node, tmp_path):
    (tmp_path / 'd').mkdir()
    (tmp_path / 'd' / '1.toml').write_text('version = 2\n')
    one = tmp_path / 'one.toml'
    one.write_text('version = 2\n')
    with open(node.p['path'], 'w') as f:
        f.write('version = 2\nimports = ["%s/d/*.toml", "%s", "%s"]\n' % (tmp_path, one, one))
    tree = rep.Tree(node.p['path'], (1, 7))
    assert rep._tree_files(tree) == [node.p['path'], str(tmp_path / 'd' / '1.toml'), str(one)]


# ---------------------------------------------------------------- CRI

def test_cri_not_ok_names_the_plugins_from_the_live_list(node):
    node.wait = dict(WAIT_OK, ok=False, msg='not ready', cri_plugins={})
    node.rows = [dict(type='io.containerd.grpc.v1', id='cri', status='error', plugin=CRI_V2)]
    c = by_name(node.report())
    assert c['cri_plugin']['reason'] == 'CRI plugin not ok: io.containerd.grpc.v1.cri=error'
    assert c['containerd_active']['status'] == 'pass'  # active, but not ready


def test_without_a_plugin_list_the_reason_is_ctrs(node):
    node.wait = dict(WAIT_OK, ok=False, msg='not ready', cri_plugins={})
    node.rows, node.plugins_error = None, 'ctr: connection refused'
    r = node.report()
    assert by_name(r)['cri_plugin']['reason'] == 'CRI plugin not ok: io.containerd.grpc.v1.cri=unknown'
    assert r['containerd']['cri_plugins'] == {CRI_V2: 'unknown'}
    node.rows = []
    node.plugins_error = 'empty'
    assert by_name(node.report())['cri_plugin']['reason'] == 'CRI plugin not ok: io.containerd.grpc.v1.cri=missing'


def test_the_waits_plugin_status_wins_when_it_was_ready(node):
    node.rows = [dict(type='io.containerd.grpc.v1', id='cri', status='error', plugin=CRI_V2)]
    assert by_name(node.report())['cri_plugin']['status'] == 'pass'   # seen ok by the wait
    node.wait = dict(WAIT_OK, cri_plugins={})
    assert by_name(node.report())['cri_plugin']['reason'] == 'CRI plugin not ok: no plugin list'


def test_containerd_down_fails_with_the_waits_words(node):
    node.wait = dict(WAIT_OK, ok=False, active_state='failed', msg='containerd not active within 5 s', cri_plugins={})
    r = node.report()
    c = by_name(r)
    assert c['containerd_active'] == dict(name='containerd_active', status='fail', required=True,
                                          reason='containerd.service: containerd not active within 5 s')
    assert c['probe:runc']['reason'] == 'containerd not ready: containerd not active within 5 s'
    assert node.calls['run_probes'][-1][0][0] == []     # nothing probed on a containerd that is down
    # nor its image looked for: each ctr call on a socket nobody listens on waits 10 s
    assert node.calls.get('probe_image', []) == [] and r['probe_image']['images'] == {}


# ---------------------------------------------------------------- handlers and probes

def test_a_handlers_description_names_its_path_and_binary(node):
    node.p['handlers'] = ['kata']
    c = by_name(node.report())
    assert c['handler:kata']['reason'] == ('runtime kata in the effective config (io.containerd.kata.v2 via '
                                           '/opt/kata/bin/containerd-shim-kata-v2)')
    dump = 'version = 2\n[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.bare]\n  privileged = true\n'
    c = by_name(node.report(ctx=dump_context((0, dump, '')), handlers=['bare', 'other']))
    assert c['handler:bare']['reason'] == 'runtime bare in the effective config (?)'
    assert c['handler:other']['reason'] == 'no runtime other in the effective config (has: bare)'
    c = by_name(node.report(ctx=dump_context((0, 'version = 2\n', '')), handlers=['x']))
    assert c['handler:x']['reason'] == 'no runtime x in the effective config (has: none)'


def test_a_failed_probe_quotes_its_last_line_and_notes(node):
    node.p['handlers'] = ['runc', 'kata']
    node.probe_results = {'kata': dict(ok=False, rc=1, seconds=2.0, stdout='out line\n',
                                       stderr='first\nctr: failed to create shim task: boom\n\n')}
    r = node.report(pass_config_path=False)
    c = by_name(r)
    assert c['probe:kata'] == dict(name='probe:kata', status='fail', required=True,
                                   reason='probe container (img) through kata: rc=1 ctr: failed to create shim task: boom')
    assert c['probe:runc']['status'] == 'pass'
    assert r['failed'] == ['probe:kata']
    (probes, timeout), _kw = node.calls['run_probes'][-1]
    assert [p[0] for p in probes] == ['runc', 'kata'] and timeout == 30
    node.probe_results = {'kata': dict(ok=False, rc=124, seconds=30.0, stdout='last of stdout\n', stderr='')}
    assert by_name(node.report())['probe:kata']['reason'] == 'probe container (img) through kata: rc=124 last of stdout'
    node.probe_results = {'kata': dict(ok=False, rc=2, seconds=0.1, stdout='', stderr='')}
    assert by_name(node.report())['probe:kata']['reason'] == 'probe container (img) through kata: rc=2 '


def test_probe_notes_are_added_to_the_verdict(node):
    dump = DUMP.replace('  runtime_type = "io.containerd.runc.v2"\n',
                        '  runtime_type = "io.containerd.runc.v2"\n  runtime_path = "/x/runc"\n  snapshotter = "zfs"\n')
    c = by_name(node.report(ctx=dump_context((0, dump, ''))))
    assert c['probe:runc']['reason'] == (
        'probe container (img) exited 0 in 1.25 s through runc; runtime_path /x/runc not used by ctr for a runc-type '
        'runtime; handler snapshotter zfs not used: the probe runs on the default snapshotter')
    node.probe_results = {'runc': dict(ok=False, rc=1, seconds=0.1, stdout='', stderr='no\n')}
    assert by_name(node.report(ctx=dump_context((0, dump, ''))))['probe:runc']['reason'].startswith(
        'probe container (img) through runc: rc=1 no; runtime_path /x/runc')


def test_a_handler_not_probed_says_why(node):
    c = by_name(node.report(handlers=[dict(name='runc', probe=False)]))
    assert c['probe:runc'] == dict(name='probe:runc', status='skip', required=False,
                                   reason='probe disabled for this handler')
    assert node.calls['run_probes'][-1][0][0] == []
    assert 'probe_image' not in node.calls          # nothing to probe: the image is not looked up


def test_a_missing_probe_image_fails_or_skips_as_asked(node):
    node.image = dict(probe_image='img', probe_image_present=False)
    c = by_name(node.report())
    assert c['probe:runc'] == dict(name='probe:runc', status='fail', required=True,
                                   reason='probe image img is not in containerd namespace nodeguard; not pulled '
                                          '(probe_pull is false)')
    c = by_name(node.report(probe_image_required=False))
    assert c['probe:runc'] == dict(name='probe:runc', status='skip', required=False,
                                   reason='probe image img is not in containerd namespace nodeguard; not pulled '
                                          '(probe_pull is false) (probe_image_required is false)')
    node.image = dict(probe_image='img', probe_image_present=False, probe_image_import_error='ctr: bad archive')
    assert by_name(node.report(probe_archive='/a.tar'))['probe:runc']['reason'] == (
        'probe image img is not in containerd namespace nodeguard; import of /a.tar failed: ctr: bad archive; '
        'not pulled (probe_pull is false)')
    node.image = dict(probe_image='img', probe_image_present=False, probe_image_pull_error='dial tcp: no route')
    assert by_name(node.report(probe_pull=True))['probe:runc']['reason'] == (
        'probe image img is not in containerd namespace nodeguard; pull failed: dial tcp: no route')
    node.image = dict(probe_image='img', probe_image_present=False, probe_image_import_skipped=True)
    assert by_name(node.report(probe_archive='/a.tar'))['probe:runc']['reason'] == (
        'probe image img is not in containerd namespace nodeguard (not imported or pulled in check mode)')


def test_the_probe_image_is_imported_only_outside_check_mode_and_with_ctr(node):
    node.report(probe_archive='/a.tar')
    assert node.calls['probe_image'][-1][1] == dict(may_import=True)
    node.report(probe_archive='/a.tar', check_mode=True)
    assert node.calls['probe_image'][-1][1] == dict(may_import=False)
    n = len(node.calls['probe_image'])
    r = node.report(ctr=None)
    assert len(node.calls['probe_image']) == n
    assert by_name(r)['probe:runc']['reason'] == 'probe image img is not in containerd namespace nodeguard (no ctr binary to look)'
    node.report(handlers=['absent'])
    assert len(node.calls['probe_image']) == n       # no present handler to probe


# ---------------------------------------------------------------- drift and kubernetes

def test_drift_given_is_judged_and_not_recomputed(node):
    r = node.report(check_drift=True, drift_result={'protected_drift': []})
    assert by_name(r)['baseline_drift'] == dict(name='baseline_drift', status='pass', required=True,
                                                reason="no unaccounted drift of protected keys against baseline "
                                                       "'pre-gpu'")
    assert 'baseline_check' not in node.calls
    r = node.report(check_drift=True, drift_result={'msg': 'there is no baseline pre-gpu'})
    assert by_name(r)['baseline_drift']['status'] == 'skip' and not by_name(r)['baseline_drift']['required']
    r = node.report(check_drift=True, drift_result={'msg': 'lock timeout'})
    assert by_name(r)['baseline_drift'] == dict(name='baseline_drift', status='fail', required=True,
                                                reason='lock timeout')


def test_drift_not_given_is_computed_here(node):
    r = node.report(check_drift=True)
    assert len(node.calls['baseline_check']) == 1 and by_name(r)['baseline_drift']['status'] == 'pass'
    r = node.report(check_drift=True, drift_result={})
    assert by_name(r)['baseline_drift']['reason'] == 'drift check enabled but no containerd_baseline result was given'
    assert len(node.calls['baseline_check']) == 1


def test_kubernetes_checks(node):
    node.kube = dict(ran=True, node='n1', ready=True, reason='Ready=True (KubeletReady)',
                     static_pods={'kube-apiserver': dict(ok=True, reason='phase=Running ready=True'),
                                  'etcd': dict(ok=False, reason='phase=Pending ready=False')})
    r = node.report(static_pods=['etcd', 'kube-apiserver'])
    c = by_name(r)
    assert c['kubernetes_node_ready'] == dict(name='kubernetes_node_ready', status='pass', required=True,
                                              reason='node n1: Ready=True (KubeletReady)')
    assert [n for n in c if n.startswith('static_pod:')] == ['static_pod:etcd', 'static_pod:kube-apiserver']
    assert c['static_pod:etcd']['status'] == 'fail' and c['static_pod:kube-apiserver']['status'] == 'pass'
    assert r['failed'] == ['static_pod:etcd'] and r['kubernetes'] == node.kube
    node.kube = dict(node.kube, ready=False, static_pods={})
    assert by_name(node.report())['kubernetes_node_ready']['status'] == 'fail'


def test_kubernetes_that_cannot_run_fails_only_when_required(node):
    c = by_name(node.report(kubernetes='true'))
    assert c['kubernetes_node_ready'] == dict(name='kubernetes_node_ready', status='fail', required=True,
                                              reason='kubectl not found on the node')
    r = node.report(kubernetes='false')
    assert by_name(r)['kubernetes_node_ready'] == dict(name='kubernetes_node_ready', status='skip', required=False,
                                                       reason='disabled (node_readiness_kubernetes: false)')
    assert r['kubernetes'] is None and len(node.calls['kubernetes']) == 1


def test_checks_count_by_status():
    checks = rep.Checks(None)
    checks.add('a', 'pass', 'x')
    checks.add('b', 'fail', 'y', required=0)
    checks.add('c', 'fail', 'z')
    assert (checks.count('pass'), checks.count('fail'), checks.count('skip')) == (1, 2, 0)
    assert [c['required'] for c in checks.items] == [True, False, True]


def test_report_timings_come_from_the_wait(node):
    r = node.report()
    assert (r['containerd']['came_back_seconds'], r['containerd']['startup_seconds'],
            r['containerd']['waited_seconds']) == (1.0, 0.5, 0.1)
    assert (r['containerd']['start_limit_hit'], r['containerd']['reset_failed_done']) == (False, False)


def test_the_journal_of_a_wait_that_failed_is_in_the_report(node):
    node.wait = dict(WAIT_OK, ok=False, active_state='failed', msg='containerd not active within 5 s', cri_plugins={},
                     journal=['sh[412]: site-check: /dev/nvidia0 is missing'])
    assert node.report()['containerd']['journal'] == ['sh[412]: site-check: /dev/nvidia0 is missing']
    assert node.report(ctx=dump_context((1, '', 'bad')))['containerd']['journal'] == [
        'sh[412]: site-check: /dev/nvidia0 is missing']
    node.wait = dict(WAIT_OK)   # a wait that was ready reads no journal
    assert node.report()['containerd']['journal'] == []


# ---------------------------------------------------------------- proxy plugins

def test_a_proxy_plugins_socket_is_checked_after_the_probes(node, tmp_path):
    sock = tmp_path / 'nydus.sock'
    dump = DUMP + '[proxy_plugins.nydus]\n  type = "snapshot"\n  address = "%s"\n' % sock
    r = node.report(ctx=dump_context((0, dump, '')))
    names = [c['name'] for c in r['checks']]
    assert names[names.index('probe:runc') + 1:] == ['proxy_plugin:nydus', 'baseline_drift', 'kubernetes_node_ready']
    assert by_name(r)['proxy_plugin:nydus'] == dict(
        name='proxy_plugin:nydus', status='fail', required=False,
        reason='containerd-nydus-grpc does not answer for proxy plugin nydus (type snapshot): socket %s does not exist '
               '(No such file or directory); used by no runtime handler nor the CRI default' % sock)
    assert r['ok'] and r['warnings'] == ['proxy_plugin:nydus']
    assert 'proxy_plugin:nydus' not in by_name(node.report())
