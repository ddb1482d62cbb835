# -*- coding: utf-8 -*-
"""The fleet report's output, pinned: on realistic inputs (fleet_report_input.py)
the events, rows, JSON file, HTML page and printed lines are byte for byte
those the role's Jinja templates gave (fixtures/fleet_report/, rendered by
them before the report was built in Python); and the list options as AWX
surveys send them."""

import json
import os

import pytest

from ansible_collections.nodeguard.containerd.plugins.plugin_utils import fleet_report as fr

import fleet_report_input

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'fixtures', 'fleet_report')
CASES = {
    'stopped': dict(size=14, events=700, serial=3, stop_batch=2, seed=4),
    'not-a-rollout': dict(size=16, events=2000, seed=7, rollout=False),
}


def pinned(name, file_name):
    with open(os.path.join(FIXTURES, name, file_name)) as f:
        return f.read()


def build(c):
    hv = c['hostvars']
    events = fr.read_events(c['events_dir'], c['play'])
    events['since'] = c['since']
    events['counted'] = fr.counted_nodes(c['hosts'], lambda h: hv.get(h, {}), c['failed_hosts'], c['since'],
                                         c['service'], events['hosts'])
    results = fleet_report_input.info_of(c['hosts'], events['counted'])['results']
    info = dict((r['item'], r) for r in results if 'item' in r)
    return events, info


@pytest.mark.parametrize('name', sorted(CASES))
def test_the_report_is_the_one_the_templates_gave(tmp_path, name):
    c = fleet_report_input.case(str(tmp_path / 'job'), **CASES[name])
    events, info = build(c)
    expected = pinned(name, 'report.json')
    report = fr.build_report(c['title'], c['play'], c['hosts'], lambda h: c['hostvars'].get(h, {}), c['failed_hosts'],
                             events, info, generated=json.loads(expected)['generated'])
    assert fr.to_json_text(report) == expected
    assert fr.html_page(report) == pinned(name, 'report.html')
    assert fr.text_lines(report) == json.loads(pinned(name, 'lines.json'))


def test_events_once_each_in_the_runners_order_without_the_reports_own(tmp_path):
    """A partial copy of an event counts once; the report's play and role do not count; a failure with tasks
    after it is a rescue; an ignored failure is no failure."""
    folder = tmp_path / 'job_events'
    folder.mkdir()

    def event(counter, kind, host, task, play='rollout', uuid=None, **data):
        uuid = uuid or '00000000-0000-4000-8000-%012d' % counter
        body = {'uuid': uuid, 'counter': counter, 'event': kind,
                'event_data': dict(data, host=host, task=task, play=play)}
        (folder / ('%d-%s.json' % (counter, uuid))).write_text(json.dumps(body))
        return uuid

    event(1, 'playbook_on_start', '', '')
    event(2, 'runner_on_ok', 'a', 'Write', duration=1.25, res={'changed': True})
    uuid = event(3, 'runner_on_failed', 'a', 'Probe', duration=2.0)
    (folder / ('%s-partial.json' % uuid)).write_text((folder / ('3-%s.json' % uuid)).read_text())
    event(4, 'runner_on_ok', 'a', 'Roll back', duration=0.5)
    event(5, 'runner_on_failed', 'b', 'Probe', duration=1.0, ignore_errors=True)
    event(6, 'runner_on_failed', 'b', 'Probe', duration=1.0)
    event(7, 'runner_on_ok', 'a', 'Check readiness', play='Fleet report', duration=9.0)
    event(8, 'runner_on_ok', 'b', 'Build', role='nodeguard.containerd.fleet_report', duration=9.0)
    event(9, 'runner_on_unreachable', 'c', 'Read', duration=None)
    event(10, 'runner_on_start', 'a', 'Write', duration=5.0)   # not a result
    event(11, 'verbose', '', '', stdout='"runner_on_ok"')      # names a result, is none
    hosts = fr.read_events(str(tmp_path), 'Fleet report')['hosts']
    assert hosts['a'] == {'seconds': 3.75, 'tasks': 3, 'changed': 1, 'failed': ['Probe'], 'last_failed': False,
                          'rescued': 1, 'unreachable': False}
    assert hosts['b'] == {'seconds': 2.0, 'tasks': 2, 'changed': 0, 'failed': ['Probe'], 'last_failed': True,
                          'rescued': 0, 'unreachable': False}
    assert hosts['c']['unreachable'] is True and hosts['c']['seconds'] == 0.0
    assert fr.read_events('', 'Fleet report') == {'available': False, 'hosts': {}}


@pytest.mark.parametrize('value', [
    ['node-a', 'node-b'],
    '["node-a", "node-b"]',
    'node-a,node-b',
    'node-a, node-b,',
    'node-a\nnode-b\n',
    ' node-a\r\n node-b ',
    '  [ "node-a" ,"node-b" ]  ',
])
def test_a_list_option_as_a_survey_sends_it(value):
    assert fr.as_list(value, 'fleet_report_hosts') == ['node-a', 'node-b']


def test_an_empty_answer_is_an_empty_list_and_a_bad_one_is_refused():
    assert fr.as_list('', 'fleet_report_failed_hosts') == []
    assert fr.as_list(None, 'fleet_report_failed_hosts') == []
    assert fr.as_list('[]', 'fleet_report_failed_hosts') == []
    with pytest.raises(fr.ListError, match=r'fleet_report_hosts: .* looks like a JSON list but is not one'):
        fr.as_list('["node-a", ', 'fleet_report_hosts')
    with pytest.raises(fr.ListError, match='fleet_report_hosts must be a list'):
        fr.as_list({'node-a': 1}, 'fleet_report_hosts')
