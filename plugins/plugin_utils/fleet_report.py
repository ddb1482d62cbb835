# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report, built on the controller: the job's events per node, the
rows, and the report as JSON, HTML and printed lines.

Controller side only (the action fleet_report_files). Every step is one
pass over its input, so the report grows linearly with the job's events and
the fleet.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import numbers
import os
import time

from collections.abc import Mapping

from markupsafe import escape

from ansible.module_utils.parsing.convert_bool import boolean

RESULT_EVENTS = frozenset(('runner_on_ok', 'runner_on_failed', 'runner_on_skipped', 'runner_on_unreachable'))
RESULT_EVENT_BYTES = tuple(('"%s"' % kind).encode('ascii') for kind in sorted(RESULT_EVENTS))
COLUMNS = ['node', 'status', 'containerd', 'config_version', 'runtimes', 'readiness', 'restarts', 'drift',
           'changed', 'seconds']


class ListError(ValueError):
    pass


def as_list(value, name):
    """A list option as AWX may send it: a list, a JSON list, or text with one item per line or comma.

    A survey answer is always a string (a textarea's too), so "[\"a\", \"b\"]", "a,b" and "a\\nb" all mean
    ['a', 'b']; blanks around items and empty items are dropped.
    """
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        text = value.strip()
        if text.startswith('['):
            try:
                parsed = json.loads(text)
            except ValueError as exc:
                raise ListError('%s: %r looks like a JSON list but is not one (%s): give a JSON list such as '
                                '["a", "b"], or the items separated by commas or newlines' % (name, value, exc))
            if not isinstance(parsed, list):
                raise ListError('%s: %r is not a list' % (name, value))
            return [item if isinstance(item, str) else str(item) for item in parsed]
        return [item.strip() for item in text.replace('\n', ',').split(',') if item.strip()]
    raise ListError('%s must be a list, a JSON list or text with one item per line or comma, not %s'
                    % (name, type(value).__name__))


def _bool(value):
    return boolean(value, strict=False)


def _int(value):
    """Jinja's int filter: the number, else 0."""
    try:
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _float(value):
    """Jinja's float filter: the number, else 0.0."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _text(value):
    """Jinja's string of a value (None as 'None', as `~` and `string` give it)."""
    return value if isinstance(value, str) else str(value)


def _unique(items):
    """Jinja's unique filter: first of each, strings compared without case."""
    seen, out = set(), []
    for item in items:
        key = item.lower() if isinstance(item, str) else item
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def read_events(events_dir, play_name):
    """Per node, from the ansible-runner events under events_dir/job_events: seconds spent on its tasks (sum of the
    runner's per-task durations), tasks, changed tasks, failed tasks, whether its last result was a failure (a
    node that failed gets no more tasks; a rescued one does: rescued counts failures with tasks after them), and
    whether it was unreachable.

    Each event once (by uuid: the runner may hold a partial and a full file of one event), in the runner's order
    (counter); the report's own tasks (its role's, and those of the play it runs in) are left out.
    """
    hosts = {}
    if not events_dir:
        return {'available': False, 'hosts': hosts}
    events = []
    for path in glob.glob(os.path.join(events_dir, 'job_events', '*.json')):
        if not os.path.isfile(path):
            continue
        with open(path, 'rb') as f:
            raw = f.read()
        # only task results count: the other events (task starts, runner_on_start of each node, output) are
        # most of a job's and are not parsed
        if any(kind in raw for kind in RESULT_EVENT_BYTES):
            events.append(json.loads(raw.decode('utf-8')))
    events.sort(key=lambda e: e.get('counter', 0))
    seen = set()
    for e in events:
        d = e.get('event_data') or {}
        kind = e.get('event') or ''
        uuid = e.get('uuid')
        host = d.get('host')
        if (uuid is None or uuid in seen or not host or kind not in RESULT_EVENTS
                or _text(d.get('role') or '').endswith('fleet_report') or d.get('play', '') == play_name):
            continue
        seen.add(uuid)
        h = hosts.get(host)
        if h is None:
            h = hosts[host] = {'seconds': 0.0, 'tasks': 0, 'changed': 0, 'failed': [], 'last_failed': False,
                               'rescued': 0, 'unreachable': False}
        failure = kind == 'runner_on_failed' and not d.get('ignore_errors', False)
        change = kind == 'runner_on_ok' and _bool((d.get('res') or {}).get('changed', False))
        h['seconds'] = h['seconds'] + _float(d.get('duration') or 0)
        h['tasks'] += 1
        h['changed'] += 1 if change else 0
        if failure:
            h['failed'].append(d.get('task', '?'))
        h['rescued'] += 1 if h['last_failed'] else 0
        h['last_failed'] = failure
        h['unreachable'] = h['unreachable'] or kind == 'runner_on_unreachable'
    return {'available': True, 'hosts': hosts}


def counted_nodes(hosts, hostvars, failed_hosts, since, service, event_hosts):
    """The nodes whose readiness check counted containerd's starts up to the report: the check of this run counted
    them since the report's own moment (nodeguard_readiness.service_starts) for the same unit, the node was in the
    rollout's last batch (its check ran just before the report, not batches ago) and its run did not fail after the
    check. The report takes their count and asks only the others."""
    last_batch = None
    for h in hosts:
        b = hostvars(h).get('nodeguard_batch')
        if b is not None:
            number = _int(b.get('number')) if isinstance(b, Mapping) else 0
            last_batch = number if last_batch is None else max(last_batch, number)
    failed = set(failed_hosts)
    counted = []
    for h in hosts:
        hv = hostvars(h)
        rd = hv.get('nodeguard_readiness')
        st = rd.get('service_starts') if isinstance(rd, Mapping) else None
        bt = hv.get('nodeguard_batch')
        if (isinstance(st, Mapping) and st.get('count') is not None and st.get('since') is not None
                and float(st['since']) == float(since) and st.get('unit', '') == service
                and isinstance(bt, Mapping) and _int(bt.get('number')) == last_batch
                and 'nodeguard_failure' not in hv and h not in failed
                and not (event_hosts[h]['last_failed'] if h in event_hosts else False)):
            counted.append(h)
    return counted


def _drift(dr):
    unaccounted = dr.get('unaccounted', [])
    accounted = dr.get('accounted', [])
    if unaccounted:
        text = 'unaccounted: ' + ', '.join(_text(k) for k in unaccounted)
    elif accounted:
        text = 'accounted (%d owned change(s))' % len(accounted)
    else:
        text = 'none'
    status = dr.get('status', 'pass')
    return text if status in ('pass', 'fail') else status


def _mapping(value):
    return value if isinstance(value, Mapping) else None


def _rollout(hosts, hostvars):
    """(the nodes the rollout's batches reached, the batch that stopped it or None)."""
    reached, stopped = set(), None
    for h in hosts:
        b = hostvars(h).get('nodeguard_batch')
        if isinstance(b, Mapping):
            reached.add(h)
            if stopped is None and _bool(b.get('stop', False)):
                stopped = b
    return reached, stopped


def _node_status(h, unreachable, fl, bt, rd, ev, failed, available, reached):
    if unreachable:
        return 'unreachable'
    if fl:
        return 'rolled back' if _bool(fl.get('rolled_back', False)) else 'failed'
    if h in failed or (ev and ev['last_failed']):
        return 'failed'
    if (available and not ev) or (reached and h not in reached):
        return 'not reached'
    if bt:
        return 'rolled out'
    if ev and ev['failed']:
        return 'recovered'
    if rd is None:
        return 'not checked'
    return 'ok'


def _node_detail(status, hv, fl, rs, ev, stopped):
    """The row's detail: the failure's reason, failed tasks, rescue, why a node was not reached, the last
    restart decision."""
    failed_tasks = ev['failed'] if ev else []
    rescued = 'ansible_failed_task' in hv or ((ev.get('rescued', 0) > 0) if ev else False)
    detail = []
    if fl:
        detail.append('reason: ' + _text(fl.get('msg', 'failed')).strip())
    if failed_tasks:
        detail.append('failed task(s): ' + '; '.join(_text(t) for t in _unique(failed_tasks)))
    if rescued and status == 'failed' and not fl:
        detail.append('rescue ran (rolled back to the baseline)')
    if status == 'not reached' and stopped is not None:
        detail.append('untouched: the rollout stopped at batch %s (%s failed) before this node; nothing ran on it'
                      % (_text(stopped.get('number')), ', '.join(_text(n) for n in stopped.get('failed', []))))
    elif status == 'not reached':
        detail.append('the run did not reach this node (rollout stopped, or not targeted)')
    if rs is not None and rs.get('reason', ''):
        detail.append('last restart decision: ' + _text(rs['reason']))
    return '. '.join(detail)


def _readiness_of(rd):
    """(readiness, its detail, drift) from the node's readiness report (None: not checked)."""
    if rd is None:
        return 'not checked', 'no readiness check ran on this node in this run', 'not checked'
    failed_checks = rd.get('failed', [])
    detail = _text(rd.get('summary', '')) + ((': ' + ', '.join(_text(c) for c in failed_checks))
                                             if failed_checks else '')
    dr = rd.get('drift')
    drift = _drift(dr) if isinstance(dr, Mapping) and dr else 'not checked'
    return ('ready' if rd.get('ok') else 'NOT ready'), detail, drift


def _containerd_of(rd, ci):
    """(containerd version, config version, runtimes, config sha256) from readiness, else containerd_info."""
    ctd = _mapping(rd.get('containerd') if rd is not None else None) or {}
    ci_ok = 'containerd' in ci and not ci.get('failed', False)
    ci_config = (ci.get('config') or {}) if ci_ok else {}
    version = ctd.get('version') or ((ci['containerd'] or {}).get('version') if ci_ok else None)
    config_version = ctd.get('config_version') or (ci_config.get('version') if ci_ok else None)
    if 'runtimes' in ctd:
        runtimes = list(ctd['runtimes'])
    else:
        runtimes = sorted(ci.get('runtimes') or {}) if ci_ok else []
    return version, config_version, runtimes, (ci_config.get('sha256') if ci_ok else None)


def _restarts_of(h, counted, rd, ci):
    """systemd's Started entries of the unit in its journal since the run began, counted by this run's
    readiness check (counted) or by containerd_info now (None when unread)."""
    if h in counted:
        return rd['service_starts']['count']
    if 'containerd' in ci and not ci.get('failed', False) and 'service_starts' in ci:
        return (ci['service_starts'] or {}).get('count')
    return None


def build_rows(hosts, hostvars, failed_hosts, events, info):
    """One row per node of hosts. What this run left in hostvars (nodeguard_readiness, nodeguard_restart; the
    playbooks' nodeguard_failure and nodeguard_batch) comes first, with the restarts readiness counted in the
    node's journal; info (containerd_info's result per node) fills in the nodes the run did not check and counts
    the restarts of each node readiness did not count; the job's events give the time.

    Returns (rows, the batch that stopped the rollout or None)."""
    counted = set(events.get('counted') or [])
    event_hosts = events.get('hosts') or {}
    available = events.get('available', False)
    failed = set(failed_hosts)
    reached, stopped = _rollout(hosts, hostvars)
    rows = []
    for h in hosts:
        hv = hostvars(h)
        rd = _mapping(hv.get('nodeguard_readiness'))
        rs = _mapping(hv.get('nodeguard_restart'))
        fl = _mapping(hv.get('nodeguard_failure'))
        bt = _mapping(hv.get('nodeguard_batch'))
        ci = info.get(h) or {}
        ev = event_hosts.get(h)
        version, config_version, runtimes, config_sha = _containerd_of(rd, ci)
        unreachable = _bool(ci.get('unreachable', False)) or (ev['unreachable'] if ev else False)
        readiness, readiness_detail, drift = _readiness_of(rd)
        status = _node_status(h, unreachable, fl, bt, rd, ev, failed, available, reached)
        rows.append({
            'node': h,
            'status': status,
            'reason': _text(fl.get('msg', 'failed')).strip() if fl else None,
            'batch': _int(bt.get('number')) if bt else None,
            'detail': _node_detail(status, hv, fl, rs, ev, stopped),
            'containerd': _text(version) if version else None,
            'config_version': config_version,
            'config_sha256': config_sha,
            'runtimes': runtimes,
            'readiness': readiness,
            'readiness_detail': readiness_detail,
            'restarts': _restarts_of(h, counted, rd, ci),
            'restart_seconds': rs.get('seconds') if rs is not None else None,
            'drift': drift,
            'changed': ev['changed'] if ev else None,
            'seconds': round(ev['seconds'], 1) if ev else None,
        })
    return rows, stopped


def _utc(seconds, fmt='%Y-%m-%dT%H:%M:%SZ'):
    return time.strftime(fmt, time.gmtime(seconds))


def build_report(title, play_name, hosts, hostvars, failed_hosts, events, info, generated=None):
    """The report: title, when and since when, the stopped rollout, the summary and the rows."""
    rows, stopped = build_rows(hosts, hostvars, failed_hosts, events, info)
    since = events.get('since')
    statuses = [r['status'] for r in rows]
    return {
        'title': title,
        'generated': generated if generated is not None else _utc(time.time()),
        'since': since,
        'since_utc': _utc(float(since)) if since is not None else None,
        'playbook': play_name,
        'timing': ('per-node seconds from the job events' if events.get('available')
                   else 'no job events (run under ansible-runner or AWX for per-node times)'),
        'stopped': ({'play': stopped.get('play'), 'batch': _int(stopped.get('number')), 'hosts': stopped.get('hosts'),
                     'failed': stopped.get('failed'), 'max_fail_percentage': _int(stopped.get('max_fail_percentage'))}
                    if stopped is not None else None),
        'columns': list(COLUMNS),
        'summary': {'nodes': len(rows),
                    'ready': sum(1 for r in rows if r['readiness'] == 'ready'),
                    'rolled_out': statuses.count('rolled out'),
                    'failed': statuses.count('failed') + statuses.count('rolled back'),
                    'rolled_back': statuses.count('rolled back'),
                    'not_reached': statuses.count('not reached'),
                    'unreachable': statuses.count('unreachable'),
                    'restarts': sum(r['restarts'] for r in rows if isinstance(r['restarts'], numbers.Number))},
        'rows': rows,
    }


def to_json_text(report):
    """The JSON file: sorted keys, four spaces, as to_nice_json writes it, and a final newline."""
    return json.dumps(report, indent=4, sort_keys=True, separators=(',', ': ')) + '\n'


def _or(value, fallback):
    return value if value else fallback


def _seconds(value):
    return ('%.1f s' % value) if value is not None else '-'


def text_lines(r):
    """The table as printed on the controller: one line per node."""
    fmt = '%-18s %-12s %-12s %-4s %-34s %-11s %-8s %-22s %-7s %s'
    s = r['summary']
    out = ['%s: %s node(s), %s ready, %s failed (%s rolled back), %s not reached, %s containerd restart(s) since %s'
           % (r['title'], s['nodes'], s['ready'], s['failed'], s['rolled_back'], s['not_reached'], s['restarts'],
              _or(r.get('since_utc'), '?'))]
    st = r['stopped']
    if st:
        out.append("rollout stopped at batch %s of play '%s': %s failed of %s (more than %s %%)"
                   % (st['batch'], st['play'], ', '.join(_text(n) for n in st['failed']),
                      ', '.join(_text(n) for n in st['hosts']), st['max_fail_percentage']))
    out.append(fmt % ('NODE', 'STATUS', 'CONTAINERD', 'CFG', 'RUNTIMES', 'READINESS', 'RESTARTS', 'DRIFT', 'CHANGED',
                      'TIME'))
    for row in r['rows']:
        out.append(fmt % (row['node'], row['status'], _or(row['containerd'], '?'), _or(row['config_version'], '?'),
                          _or(','.join(_text(x) for x in row['runtimes']), '-'), row['readiness'],
                          row['restarts'] if row['restarts'] is not None else '?', row['drift'],
                          row['changed'] if row['changed'] is not None else '-', _seconds(row['seconds'])))
    for row in r['rows']:
        if row['detail']:
            out.append('%s: %s' % (row['node'], row['detail']))
    out.append('time: ' + _text(r['timing']))
    return '\n'.join(out).strip().split('\n')


# the page as the role's template gave it (its first tag line ends in a comment that eats the line end)
HTML_HEAD = '''<!DOCTYPE html><html lang="en">
<head>
<meta charset="utf-8">
<title>%(title)s</title>
<style>
  body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2em; color: #1b1f24; \
background: #ffffff; }
  h1 { font-size: 1.4em; margin-bottom: 0.2em; }
  p.meta { color: #57606a; margin-top: 0; }
  table { border-collapse: collapse; width: 100%%; font-size: 0.95em; }
  th, td { border: 1px solid #d0d7de; padding: 6px 10px; text-align: left; vertical-align: top; }
  th { background: #24292f; color: #ffffff; }
  tr:nth-child(even) td { background: #f6f8fa; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  .s-ok { color: #116329; font-weight: 600; }
  .s-recovered { color: #7d4e00; font-weight: 600; }
  .s-rolled-out { color: #116329; font-weight: 600; }
  .s-failed, .s-rolled-back, .s-unreachable, .r-NOT { color: #cf222e; font-weight: 700; }
  .s-not-reached, .s-not-checked { color: #57606a; font-style: italic; }
  p.stopped { color: #cf222e; font-weight: 600; }
  .summary span { display: inline-block; margin-right: 1.5em; padding: 4px 10px; border-radius: 12px; \
background: #eaeef2; }
  ul.details { color: #57606a; }
  code { font-size: 0.9em; }
</style>
</head>
<body>
<h1>%(title)s</h1>
'''

HTML_ROW = '''<tr data-node="%(node)s" data-status="%(status)s">
<td><strong>%(node)s</strong></td>
<td class="s-%(status_class)s">%(status)s</td>
<td>%(containerd)s</td>
<td class="num">%(config_version)s</td>
<td>%(runtimes)s</td>
<td class="r-%(readiness_class)s" title="%(readiness_detail)s">%(readiness)s</td>
<td class="num">%(restarts)s</td>
<td>%(drift)s</td>
<td class="num">%(changed)s</td>
<td class="num">%(seconds)s</td>
</tr>
'''


def _e(value):
    return str(escape(value))


def html_page(r):
    """The report as a self-contained page: inline style, no script, no external resource, so it opens from the
    artifacts folder (AWX, a mail, a file share) as it is."""
    out = [HTML_HEAD % {'title': _e(r['title'])}]
    out.append('<p class="meta">Generated %s%s; restarts counted from each node\'s journal since %s; %s.</p>\n' % (
        _e(r['generated']), (' by play <code>%s</code>' % _e(r['playbook'])) if r['playbook'] else '',
        _e(_or(r.get('since_utc'), '?')), _e(r['timing'])))
    s = r['summary']
    out.append('<p class="summary">\n'
               '  <span>%s nodes</span>\n'
               '  <span>%s ready</span>\n'
               '  <span>%s failed (%s rolled back)</span>\n'
               '  <span>%s not reached</span>\n'
               '  <span>%s restarts</span>\n'
               '</p>\n' % (s['nodes'], s['ready'], s['failed'], s['rolled_back'], s['not_reached'], s['restarts']))
    st = r['stopped']
    if st:
        out.append('<p class="stopped">Rollout stopped at batch %s of play <code>%s</code>: %s failed of %s (more than '
                   '%s %%); the nodes after it were not reached.</p>\n' % (
                       st['batch'], _e(st['play']), _e(', '.join(_text(n) for n in st['failed'])),
                       _e(', '.join(_text(n) for n in st['hosts'])), st['max_fail_percentage']))
    out.append('<table id="fleet">\n<thead>\n<tr><th>Node</th><th>Status</th><th>containerd</th>'
               '<th>Config version</th><th>Runtimes</th><th>Readiness</th><th>Restarts</th><th>Drift</th>'
               '<th>Changed</th><th>Time spent</th></tr>\n</thead>\n<tbody>\n')
    for row in r['rows']:
        out.append(HTML_ROW % {
            'node': _e(row['node']), 'status': _e(row['status']), 'status_class': _e(row['status'].replace(' ', '-')),
            'containerd': _e(_or(row['containerd'], '?')), 'config_version': _e(_or(row['config_version'], '?')),
            'runtimes': _e(_or(', '.join(_text(x) for x in row['runtimes']), '-')),
            'readiness_class': _e(row['readiness'].split(' ')[0]), 'readiness_detail': _e(row['readiness_detail']),
            'readiness': _e(row['readiness']),
            'restarts': row['restarts'] if row['restarts'] is not None else '?', 'drift': _e(row['drift']),
            'changed': row['changed'] if row['changed'] is not None else '-', 'seconds': _seconds(row['seconds'])})
    out.append('</tbody>\n</table>\n')
    notes = [row for row in r['rows'] if row['detail']]
    if notes:
        out.append('<ul class="details">\n')
        for row in notes:
            out.append('<li><strong>%s</strong>: %s</li>\n' % (_e(row['node']), _e(row['detail'])))
        out.append('</ul>\n')
    out.append('</body>\n</html>\n')
    return ''.join(out)
