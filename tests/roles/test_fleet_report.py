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


def run_job(tmp_path, playbook, text=None, extravars=None, name='job'):
    pdd = tmp_path / name
    shutil.copytree(os.path.join(REPO, 'playbooks'), str(pdd / 'project'))
    if text:
        (pdd / 'project' / playbook).write_text(text)
    (pdd / 'inventory').mkdir()
    inventory = {'all': {'hosts': {n: dict(HOSTVARS[n], ansible_connection='local',
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
    # restarts count from the job's first event (its start), not from some later process
    (start,) = [e['created'] for e in job['runner'].events if e.get('event') == 'playbook_on_start']
    epoch = (datetime.datetime.strptime(start[:26], '%Y-%m-%dT%H:%M:%S.%f') - datetime.datetime(1970, 1, 1)).total_seconds()
    assert abs(job['report']['since'] - epoch) < 0.01, (job['report']['since'], start)
    assert job['report']['summary'] == {'nodes': 4, 'ready': 2, 'failed': 1, 'not_reached': 0, 'unreachable': 0,
                                        'restarts': 0}


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
    assert 'nodeguard fleet report: 4 node(s), 2 ready, 1 failed, 0 not reached' in out
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


def test_a_stopped_rollout_never_reaches_an_imported_report_run_it_as_the_next_job(tmp_path):
    """ansible-core ends the whole playbook when max_fail_percentage stops a play: the imported report does
    not run. report.yml as the next job, pointed at the stopped job's events, says who was reached."""
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
