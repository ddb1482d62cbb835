# -*- coding: utf-8 -*-
"""The fleet report (roles/fleet_report, playbooks/report.yml), rendered from
hostvars as AWX runs it (ansible-runner: private data dir, inventory, extra
vars only), without a node: the hosts are inventory names whose facts come
from the inventory (fleet_report_collect: false, so no node is asked).

A small play before the import makes one node fail (it leaves the run) and
one fail inside a block whose rescue recovers it, as a rolled-back node does.
The report must say so per node, count nothing it cannot know, escape what
it prints, land in the job's artifacts folder, and open in a real browser
(headless Chromium: a screenshot that is not blank, the table in the DOM).
"""

import datetime
import glob
import json
import os
import shutil
import struct
import subprocess
import sys
import zlib

import ansible_runner
import pytest

from conftest import COLLECTIONS_ROOT, REPO

NODES = ['node-a', 'node-b', 'node-c', 'node-d']
CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')

WRAPPER = '''
- name: Something goes wrong on two nodes
  hosts: "{{ target }}"
  gather_facts: false
  tasks:
    - name: node-b fails and leaves the run
      ansible.builtin.fail:
        msg: poisoned
      when: inventory_hostname == 'node-b'

    - name: node-c fails inside a block, its rescue recovers it
      when: inventory_hostname == 'node-c'
      block:
        - name: Fail
          ansible.builtin.fail:
            msg: readiness failed
      rescue:
        - name: Roll back
          ansible.builtin.debug:
            msg: rolled back

- name: Fleet report
  ansible.builtin.import_playbook: report.yml
'''

STOPPED = '''
- name: A rollout one node per batch that stops at the first failure
  hosts: "{{ target }}"
  gather_facts: false
  serial: 1
  max_fail_percentage: 0
  tasks:
    - name: The second node fails
      ansible.builtin.fail:
        msg: poisoned
      when: inventory_hostname == 'node-b'

- name: Fleet report
  ansible.builtin.import_playbook: report.yml
'''


def readiness(ok, version, config_version, runtimes, failed=(), drift=None):
    checks = [{'name': 'containerd_active', 'status': 'pass', 'required': True, 'reason': 'active'}]
    checks += [{'name': f, 'status': 'fail', 'required': True, 'reason': 'x'} for f in failed]
    return {'ok': ok, 'failed': list(failed), 'warnings': [], 'checks': checks,
            'summary': '%d passed, %d failed, 0 skipped' % (1, len(failed)),
            'containerd': {'version': version, 'config_version': config_version, 'runtimes': runtimes,
                           'config_path': '/etc/containerd/config.toml'},
            'drift': drift}


HOSTVARS = {
    'node-a': {'nodeguard_readiness': readiness(True, '1.6.20~ds1', 2, ['nvidia', 'runc'],
                                                drift={'status': 'pass', 'unaccounted': [], 'accounted': ['x']}),
               'nodeguard_restart': {'restarted': True, 'needed': True, 'refused': False, 'cri_ok': True,
                                     'seconds': 1.2, 'reason': 'effective config changed'}},
    'node-b': {'nodeguard_readiness': readiness(False, '1.7.24~ds1', 2, ['nvidia', 'runc'],
                                                failed=['probe:nvidia<script>alert(1)</script>'],
                                                drift={'status': 'pass', 'unaccounted': [], 'accounted': []})},
    'node-c': {'nodeguard_readiness': readiness(True, '2.1.4~ds1', 3, ['runc'],
                                                drift={'status': 'fail', 'unaccounted': ['cri.default_runtime_name'],
                                                       'accounted': []})},
    'node-d': {},
}


def run_job(tmp_path, playbook, text=None, extravars=None, name='job', hostvars=None):
    pdd = tmp_path / name
    shutil.copytree(os.path.join(REPO, 'playbooks'), str(pdd / 'project'))
    if text:
        (pdd / 'project' / playbook).write_text(text)
    (pdd / 'inventory').mkdir()
    hostvars = HOSTVARS if hostvars is None else hostvars
    inventory = {'all': {'hosts': {n: dict(hostvars.get(n, {}), ansible_connection='local',
                                           ansible_python_interpreter=sys.executable) for n in NODES}}}
    (pdd / 'inventory' / 'hosts.json').write_text(json.dumps(inventory))
    (pdd / 'env').mkdir()
    extra = {'target': 'all', 'fleet_report_collect': False}
    extra.update(extravars or {})
    runner = ansible_runner.run(private_data_dir=str(pdd), playbook=playbook, extravars=extra,
                                envvars={'ANSIBLE_COLLECTIONS_PATH': COLLECTIONS_ROOT, 'ANSIBLE_NOCOLOR': '1'},
                                quiet=True, timeout=600)
    artifacts = os.path.join(str(pdd), 'artifacts', runner.config.ident)
    return runner, runner.stdout.read(), artifacts


@pytest.fixture(autouse=True)
def venv_on_path(monkeypatch):
    # the runner finds ansible-playbook on PATH, as in an execution environment; nothing of the checkout's
    # ansible.cfg or ANSIBLE_* settings reaches the job
    monkeypatch.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
    for name in [n for n in os.environ if n.startswith('ANSIBLE_')]:
        monkeypatch.delenv(name)


@pytest.fixture(scope='module')
def job(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv('PATH', os.path.dirname(sys.executable) + os.pathsep + os.environ.get('PATH', ''))
        for name in [n for n in os.environ if n.startswith('ANSIBLE_')]:
            mp.delenv(name)
        runner, out, artifacts = run_job(tmp_path_factory.mktemp('fleet'), 'wrapper.yml', WRAPPER)
    with open(os.path.join(artifacts, 'nodeguard-fleet-report.json')) as f:
        report = json.load(f)
    return dict(runner=runner, out=out, artifacts=artifacts, report=report,
                rows={r['node']: r for r in report['rows']})


def test_the_report_lands_in_the_jobs_artifacts_folder(job):
    # node-b failed: the job fails, and the report still ran at its end
    assert job['runner'].status == 'failed', job['out'][-3000:]
    assert os.path.isfile(os.path.join(job['artifacts'], 'nodeguard-fleet-report.html'))
    assert [r['node'] for r in job['report']['rows']] == NODES
    # restarts count from the job's first event (its start: the lowest counter, playbook_on_start or a warning
    # the interpreter printed before it, such as cryptography's DSA deprecation), not from some later process
    start = min((e for e in job['runner'].events if e.get('created')), key=lambda e: e['counter'])['created']
    epoch = (datetime.datetime.strptime(start[:26], '%Y-%m-%dT%H:%M:%S.%f') - datetime.datetime(1970, 1, 1)).total_seconds()
    assert abs(job['report']['since'] - epoch) < 0.01, (job['report']['since'], start)
    assert job['report']['summary'] == {'nodes': 4, 'ready': 2, 'rolled_out': 0, 'failed': 1, 'rolled_back': 0,
                                        'not_reached': 0, 'unreachable': 0, 'restarts': 0}
    assert job['report']['stopped'] is None


def test_each_row_says_what_the_run_left_on_that_node(job):
    rows = job['rows']
    a, b, c, d = (rows[n] for n in NODES)
    assert (a['status'], a['containerd'], a['config_version'], a['runtimes'], a['readiness']) == \
        ('ok', '1.6.20~ds1', 2, ['nvidia', 'runc'], 'ready')
    assert a['drift'] == 'accounted (1 owned change(s))'
    assert a['restart_seconds'] == 1.2 and 'effective config changed' in a['detail']
    # failed and out of the run; its readiness names the failed check
    assert (b['status'], b['readiness']) == ('failed', 'NOT ready')
    assert 'probe:nvidia' in b['readiness_detail'] and 'node-b fails and leaves the run' in b['detail']
    # failed in a block and rescued: recovered, with the failed task named
    assert c['status'] == 'recovered' and 'Fail' in c['detail'], c
    assert 'rescue ran' not in c['detail']   # said only of a failed node
    assert c['drift'] == 'unaccounted: cri.default_runtime_name' and c['config_version'] == 3
    # no facts: nothing invented
    assert (d['status'], d['readiness'], d['containerd'], d['runtimes'], d['drift']) == \
        ('not checked', 'not checked', None, [], 'not checked')
    # not asked (fleet_report_collect: false): restarts unknown, not zero
    assert all(r['restarts'] is None for r in rows.values())
    # the runner's events give the time and the changed count of every node the run reached
    assert all(isinstance(r['seconds'], float) and r['changed'] == 0 for r in rows.values()), rows


def test_the_table_is_printed_on_the_controller(job):
    out = job['out']
    assert 'nodeguard fleet report: 4 node(s), 2 ready, 1 failed (0 rolled back), 0 not reached' in out
    header = [line for line in out.splitlines() if 'NODE' in line and 'CONTAINERD' in line and 'RESTARTS' in line]
    assert header, out[-3000:]
    for node in NODES:
        assert any(line.lstrip(' "').startswith(node + ' ') for line in out.splitlines()), node


def test_the_rows_are_the_jobs_artifact_data(job):
    stats = [e for e in job['runner'].events if e.get('event') == 'playbook_on_stats']
    data = stats[-1]['event_data'].get('artifact_data', {})
    assert [r['node'] for r in data['nodeguard_fleet_report']] == NODES


def test_the_html_is_self_contained_and_escaped(job):
    with open(os.path.join(job['artifacts'], 'nodeguard-fleet-report.html')) as f:
        html = f.read()
    assert '<script>' not in html and '&lt;script&gt;' in html
    for ref in ('src=', 'href=', '@import', 'url('):
        assert ref not in html, ref
    assert html.count('<tr data-node=') == len(NODES)


def png_pixels(path):
    """(width, height, rows of RGB(A) tuples) of an 8-bit RGB/RGBA PNG, decoded with zlib alone."""
    with open(path, 'rb') as f:
        data = f.read()
    assert data[:8] == b'\x89PNG\r\n\x1a\n'
    pos, idat, width = 8, b'', None
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, colour = struct.unpack('>IIBB', body[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            bpp = 3 if colour == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if kind == 1:
                line[i] = (line[i] + left) & 0xff
            elif kind == 2:
                line[i] = (line[i] + up) & 0xff
            elif kind == 3:
                line[i] = (line[i] + ((left + up) >> 1)) & 0xff
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
                line[i] = (line[i] + pred) & 0xff
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def chromium(*args):
    return subprocess.run([CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
                           '--no-first-run', '--disable-dev-shm-usage'] + list(args),
                          capture_output=True, text=True, timeout=180, check=False)


@pytest.mark.skipif(CHROMIUM is None, reason='chromium is not installed (Makefile APT_PACKAGES)')
def test_the_html_opens_in_a_real_browser_with_the_table_visible(job, tmp_path):
    page = os.path.join(job['artifacts'], 'nodeguard-fleet-report.html')
    shot = os.path.join(REPO, 'build', 'fleet-report', 'test_fleet_report.png')
    os.makedirs(os.path.dirname(shot), exist_ok=True)
    if os.path.exists(shot):
        os.unlink(shot)
    proc = chromium('--screenshot=' + shot, '--window-size=1400,700', 'file://' + page)
    assert os.path.isfile(shot), proc.stderr[-2000:]
    print('\nfleet report screenshot: %s (page %s)' % (shot, page))
    width, height, rows = png_pixels(shot)
    assert (width, height) == (1400, 700)
    colours = set()
    header = 0   # the table header's dark background (#24292f)
    for row in rows:
        colours.update(row)
        header += sum(1 for px in row if px == (0x24, 0x29, 0x2f))
    assert len(colours) > 20, 'blank screenshot: %d colours' % len(colours)
    assert header > 1400 * 10, 'table header not visible: %d header pixels' % header
    dom = chromium('--dump-dom', 'file://' + page)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert '<table id="fleet">' in dom.stdout
    for node in NODES:
        assert '<tr data-node="%s"' % node in dom.stdout, node
    assert '&lt;script&gt;' in dom.stdout and '<script>' not in dom.stdout


def with_starts(ready, since, count, unit='containerd'):
    return dict(ready, service_starts={'unit': unit, 'since': since, 'count': count, 'error': None})


def batch(number):
    return {'play': 'rollout', 'number': number, 'hosts': [], 'failed': [], 'max_fail_percentage': 0, 'stop': False}


def asked_nodes(runner):
    """The nodes the fleet report's containerd_info calls asked: each node of the play in a task of its own (the
    play's forks run them side by side), the nodes out of the play (failed earlier) in a loop."""
    events = list(runner.events)
    own = [e['event_data']['host'] for e in events
           if e.get('event') in ('runner_on_ok', 'runner_on_failed', 'runner_on_unreachable')
           and e['event_data'].get('task', '').startswith('Ask each node readiness did not count')]
    outside = [e['event_data']['res']['item'] for e in events
               if e.get('event') in ('runner_item_on_ok', 'runner_item_on_failed', 'runner_item_on_unreachable')
               and e['event_data'].get('task', '').startswith("Ask the report's nodes outside this play")]
    assert not set(own) & set(outside), (own, outside)
    return sorted(own + outside)


def test_restarts_readiness_counted_since_the_same_moment_need_no_call(tmp_path):
    """A node of the rollout's last batch whose readiness check counted containerd's starts since the report's own
    moment, for the same unit, and whose run did not fail after it, gets that count and no containerd_info call;
    the others are asked (here on the controller itself, where containerd_info runs as on a node): a node that
    failed, one of an earlier batch (its check ran batches before the report: restarts since then would be
    lost), one counted for another unit."""
    since = 1796488000.5
    ready = dict((n, HOSTVARS[n]['nodeguard_readiness']) for n in ('node-a', 'node-b', 'node-c'))
    hostvars = {
        'node-a': dict(HOSTVARS['node-a'], nodeguard_readiness=with_starts(ready['node-a'], since, 3),
                       nodeguard_batch=batch(2)),
        'node-b': {'nodeguard_readiness': with_starts(ready['node-b'], since, 4), 'nodeguard_batch': batch(2)},
        'node-c': {'nodeguard_readiness': with_starts(ready['node-c'], since, 9), 'nodeguard_batch': batch(1)},
        'node-d': {'nodeguard_readiness': with_starts(ready['node-a'], since, 5, unit='k3s'),
                   'nodeguard_batch': batch(2)},
    }
    extra = {'fleet_report_since': str(since), 'fleet_report_collect': True, 'nodeguard_become': False}
    runner, out, artifacts = run_job(tmp_path, 'wrapper.yml', WRAPPER, hostvars=hostvars, name='counted',
                                     extravars=extra)
    report, rows = report_of(artifacts)
    assert report['since'] == since
    assert rows['node-a']['restarts'] == 3
    assert asked_nodes(runner) == ['node-b', 'node-c', 'node-d'], out[-3000:]
    assert (rows['node-b']['restarts'], rows['node-c']['restarts'], rows['node-d']['restarts']) != (4, 9, 5)
    assert report['summary']['restarts'] == 3 + sum(rows[n]['restarts'] or 0 for n in ('node-b', 'node-c', 'node-d'))
    # a count since another moment than the report's is not taken either
    hostvars['node-a']['nodeguard_readiness'] = with_starts(ready['node-a'], since - 60, 3)
    runner, out, artifacts = run_job(tmp_path, 'wrapper.yml', WRAPPER, hostvars=hostvars, name='other-moment',
                                     extravars=extra)
    assert asked_nodes(runner) == ['node-a', 'node-b', 'node-c', 'node-d'], out[-3000:]


def test_a_play_that_ansible_core_stops_gets_its_report_from_the_next_job(tmp_path):
    """A play left to ansible-core's max_fail_percentage (not one of the collection's playbooks, which stop
    their rollout themselves) ends the whole playbook: the imported report does not run. report.yml as the
    next job, pointed at the stopped job's events, says who was reached."""
    runner, out, artifacts = run_job(tmp_path, 'stopped.yml', STOPPED, name='stopped')
    assert runner.status == 'failed'
    assert not os.path.exists(os.path.join(artifacts, 'nodeguard-fleet-report.json'))
    assert 'Render the fleet report' not in out
    started = min(e['created'] for e in runner.events if e.get('created'))
    assert started
    report_job, report_out, report_artifacts = run_job(
        tmp_path, 'report.yml', extravars={'fleet_report_events_dir': artifacts}, name='report')
    assert report_job.status == 'successful', report_out[-3000:]
    with open(os.path.join(report_artifacts, 'nodeguard-fleet-report.json')) as f:
        rows = {r['node']: r for r in json.load(f)['rows']}
    assert rows['node-a']['status'] == 'ok'
    assert rows['node-b']['status'] == 'failed' and 'The second node fails' in rows['node-b']['detail']
    assert 'rescue ran' not in rows['node-b']['detail']
    # node-c's facts (from the inventory here, as from a readiness check of the report job) do not make it
    # reached: the stopped job's events say who was
    assert rows['node-c']['status'] == 'not reached' and rows['node-c']['readiness'] == 'ready', rows['node-c']
    assert rows['node-d']['status'] == 'not reached', rows['node-d']
    assert rows['node-c']['seconds'] is None and rows['node-d']['seconds'] is None
    assert glob.glob(os.path.join(report_artifacts, 'nodeguard-fleet-report.html'))


# A rollout shaped as the collection's playbooks are (playbooks/site.yml and the others): each node's work in a
# block whose rescue keeps the failure (tasks/node_failed.yml), the batch gate last (tasks/batch_gate.yml), the
# report imported at the end. node-b fails as a role does after its rollback ("Rolled back: ...").
GATED = """
- name: A rollout that keeps its failures and stops itself
  hosts: "{{ target }}"
  gather_facts: false
  serial: "{{ test_serial }}"
  tasks:
    - name: Converge the node, its failure kept for the fleet report
      block:
        - name: The node fails after its rollback
          ansible.builtin.fail:
            msg: "test converge failed on node-b: readiness failed. Rolled back: baseline put back; node ready."
          when: inventory_hostname == 'node-b'
      rescue:
        - name: Keep the failure
          ansible.builtin.include_tasks: tasks/node_failed.yml

    - name: Stop the rollout when too many nodes of this batch failed
      ansible.builtin.include_tasks: tasks/batch_gate.yml
      vars:
        nodeguard_batch_max_fail_percentage: "{{ test_max_fail }}"

- name: Fleet report
  ansible.builtin.import_playbook: report.yml
"""


def report_of(artifacts):
    with open(os.path.join(artifacts, 'nodeguard-fleet-report.json')) as f:
        report = json.load(f)
    assert os.path.isfile(os.path.join(artifacts, 'nodeguard-fleet-report.html'))
    return report, {r['node']: r for r in report['rows']}


def recap(runner):
    (stats,) = [e['event_data'] for e in runner.events if e.get('event') == 'playbook_on_stats']
    return stats


def test_a_real_rollout_stopped_by_its_first_node_still_writes_the_report(tmp_path):
    """playbooks/gpu_toolkit.yml as an AWX job, serial 1, max_fail_percentage 0, on three inventory hosts whose
    first node fails at once (an invalid runtime list: the role's first check, on the controller, before it
    touches anything). ansible-core used to end the playbook there (every host of the batch failed), so no
    report; now the report is written with the failed node, the reason, and the two nodes never reached, and
    the run still fails that node."""
    runner, out, artifacts = run_job(
        tmp_path, 'gpu_toolkit.yml', hostvars={}, name='gpu',
        extravars={'gpu_toolkit_runtimes': ['bad name!'], 'gpu_toolkit_serial': 1, 'nodeguard_become': False})
    assert runner.status == 'failed' and runner.rc == 2, (runner.status, runner.rc, out[-3000:])
    assert os.path.isfile(os.path.join(artifacts, 'nodeguard-fleet-report.json')), out[-3000:]
    report, rows = report_of(artifacts)
    assert [r['node'] for r in report['rows']] == NODES
    a = rows['node-a']
    assert a['status'] == 'failed' and 'gpu_toolkit_runtimes must list' in a['reason'], a
    for n in ('node-b', 'node-c', 'node-d'):
        assert rows[n]['status'] == 'not reached' and 'untouched' in rows[n]['detail'], rows[n]
        assert rows[n]['seconds'] is None and rows[n]['changed'] is None, rows[n]
    assert report['stopped']['batch'] == 1 and report['stopped']['failed'] == ['node-a'], report['stopped']
    # the run fails the node after the report, with the reason; the others never ran a task of the rollout
    assert set(recap(runner)['failures']) == {'node-a'}, recap(runner)
    rollout = [e for e in runner.events if str(e.get('event', '')).startswith('runner_on_')
               and e['event_data'].get('play') == 'NVIDIA container runtime in containerd']
    assert {e['event_data']['host'] for e in rollout} == {'node-a'}
    assert out.index('Render the fleet report') < out.rindex('gpu_toolkit_runtimes must list')


@pytest.mark.parametrize('serial, max_fail, stopped', [
    (1, 0, True), (2, 0, True), (2, 50, False), (2, '50%', False), (2, '49.5', True)])
def test_the_report_shows_rolled_out_rolled_back_and_not_reached(tmp_path, serial, max_fail, stopped):
    """The gate stops the rollout when MORE than max_fail_percentage of a batch failed, as ansible-core would
    (1 of 2 at 50 % goes on, given as a number or as "50%" as ansible-core takes it); the report runs either way
    and names every node's outcome."""
    runner, out, artifacts = run_job(tmp_path, 'gated.yml', GATED, hostvars={}, name='gated',
                                     extravars={'test_serial': serial, 'test_max_fail': max_fail})
    assert runner.status == 'failed' and runner.rc == 2, (runner.status, out[-3000:])
    report, rows = report_of(artifacts)
    assert rows['node-a']['status'] == 'rolled out' and rows['node-a']['batch'] == 1, rows['node-a']
    b = rows['node-b']
    assert b['status'] == 'rolled back' and b['reason'].startswith('test converge failed on node-b'), b
    assert 'reason: test converge failed' in b['detail'], b
    later = ['node-c', 'node-d']
    if stopped:
        assert [rows[n]['status'] for n in later] == ['not reached', 'not reached'], rows
        assert report['stopped']['batch'] == (2 if serial == 1 else 1), report['stopped']
        assert report['summary']['not_reached'] == 2
    else:
        assert [rows[n]['status'] for n in later] == ['rolled out', 'rolled out'], rows
        assert [rows[n]['batch'] for n in later] == [2, 2]
        assert report['stopped'] is None
    assert report['summary']['rolled_back'] == 1 and report['summary']['failed'] == 1
    assert set(recap(runner)['failures']) == {'node-b'}, recap(runner)
    assert 'nodeguard fleet report: 4 node(s)' in out


def test_every_playbook_keeps_its_failures_and_gates_its_batches():
    """The shape the report relies on, in every playbook of the collection: the node's work in a block whose
    rescue keeps the failure; a rollout (serial) ends with the batch gate; report.yml is imported last."""
    import yaml
    for path in sorted(glob.glob(os.path.join(REPO, 'playbooks', '*.yml'))):
        name = os.path.basename(path)
        if name == 'report.yml':
            continue
        with open(path) as f:
            plays = yaml.safe_load(f)
        assert plays[-1].get('ansible.builtin.import_playbook') == 'report.yml', name
        (play,) = [p for p in plays if 'hosts' in p]
        assert 'roles' not in play, name
        blocks = [t for t in play['tasks'] if 'block' in t]
        assert len(blocks) == 1 and play['tasks'].index(blocks[0]) <= 1, name
        rescue = blocks[0]['rescue']
        assert rescue[-1].get('ansible.builtin.include_tasks') == 'tasks/node_failed.yml', name
        if 'serial' in play:
            # imported (static): one task fewer per batch than an include
            assert play['tasks'][-1].get('ansible.builtin.import_tasks') == 'tasks/batch_gate.yml', name


def test_every_playbook_that_restarts_containerd_rolls_out_in_batches():
    """Only the read-only playbooks (readiness report, baseline, fleet report) reach every targeted node at once;
    every other one restarts containerd and so works one batch at a time (serial, default 1), its batch gate
    stopping the rollout, and names its own knobs for both."""
    import yaml
    read_only = {'report.yml', 'snapshot.yml', 'verify.yml'}
    batched = {}
    for path in sorted(glob.glob(os.path.join(REPO, 'playbooks', '*.yml'))):
        with open(path) as f:
            play = [p for p in yaml.safe_load(f) if 'hosts' in p][0]
        batched[os.path.basename(path)] = play.get('serial'), play.get('max_fail_percentage')
    assert sorted(n for n, (serial, _max_fail) in batched.items() if serial is None) == sorted(read_only), batched
    for name, (serial, max_fail) in batched.items():
        if name not in read_only:
            assert serial.endswith('| default(1) }}') and max_fail.endswith('| default(0) }}'), (name, serial, max_fail)


def test_the_files_land_in_fleet_report_dir_a_folder_that_lasts(tmp_path):
    """AWX deletes the job's artifacts folder with the job: fleet_report_dir (a mounted volume) keeps the files."""
    keep = tmp_path / 'volume' / 'nodeguard'
    (tmp_path / 'volume').mkdir()
    runner, out, artifacts = run_job(tmp_path, 'report.yml', name='kept', extravars={'fleet_report_dir': str(keep)})
    assert runner.status == 'successful', out[-3000:]
    assert sorted(os.listdir(str(keep))) == ['nodeguard-fleet-report.html', 'nodeguard-fleet-report.json']
    assert not os.path.exists(os.path.join(artifacts, 'nodeguard-fleet-report.json'))
    report, rows = report_of(str(keep))
    assert list(rows) == NODES
    # the rows stay with the job (set_stats) wherever the files go
    stats = [e for e in runner.events if e.get('event') == 'playbook_on_stats'][-1]['event_data']
    assert [r['node'] for r in stats['artifact_data']['nodeguard_fleet_report']] == NODES


def test_a_fleet_report_dir_on_a_volume_that_is_not_there_fails_naming_it(tmp_path):
    missing = tmp_path / 'not-mounted' / 'nodeguard'
    runner, out, _artifacts = run_job(tmp_path, 'report.yml', name='missing',
                                      extravars={'fleet_report_dir': str(missing)})
    assert runner.status == 'failed', out[-3000:]
    assert 'cannot write the fleet report into %s on the controller: %s does not exist' % (missing, missing.parent) \
        in out, out[-3000:]
    assert 'mount a persistent volume there' in out
    assert not missing.parent.exists()


@pytest.mark.parametrize('hosts, failed', [
    ('["node-c", "node-a"]', 'node-a'),
    ('node-c\nnode-a\n', '["node-a"]'),
    ('node-c, node-a', 'node-a\n'),
])
def test_list_options_as_an_awx_survey_sends_them(tmp_path, hosts, failed):
    """A survey answer is a string: a JSON list, or names separated by commas or newlines (a textarea)."""
    runner, out, artifacts = run_job(tmp_path, 'report.yml', name='survey',
                                     extravars={'fleet_report_hosts': hosts, 'fleet_report_failed_hosts': failed})
    assert runner.status == 'successful', out[-3000:]
    report, rows = report_of(artifacts)
    assert list(rows) == ['node-c', 'node-a']
    # node-a named failed; node-c: no event of this job but the report's own
    assert (rows['node-a']['status'], rows['node-c']['status']) == ('failed', 'not reached'), rows


def test_a_blank_survey_answer_reports_the_plays_hosts(tmp_path):
    runner, out, artifacts = run_job(tmp_path, 'report.yml', name='blank', extravars={'fleet_report_hosts': ' '})
    assert runner.status == 'successful', out[-3000:]
    assert [r['node'] for r in report_of(artifacts)[0]['rows']] == NODES
