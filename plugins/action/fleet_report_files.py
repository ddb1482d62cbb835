# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_report_files: the fleet report's files on the controller.

An action plugin, not a module: the report is the controller's, so building
and writing it needs no module run (three module runs on localhost cost
about a second per playbook run). Each file goes through the collection's
one atomic write. build=events reads the job's events and when the run
began; build=report makes the rows and writes them as JSON and HTML (both in
plugins/plugin_utils/fleet_report.py, linear in the events and the nodes).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.action import ActionBase
from ansible.plugins.loader import lookup_loader

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import atomic_write, read_bytes
from ansible_collections.nodeguard.containerd.plugins.plugin_utils import fleet_report

WHERE_TO = ('under AWX the controller is the job\'s execution environment container: mount a persistent volume '
            'there (an execution environment volume mount, or a PVC in the container group\'s pod spec), writable by '
            'the job\'s user, or give a folder that exists')


def check_folder(folder):
    """The report's folder: made when only the folder itself is missing (its parent exists), else refused, since a
    folder whose parent is missing is most often a volume that is not mounted, where the report would be lost."""
    if os.path.isdir(folder):
        if not os.access(folder, os.W_OK | os.X_OK):
            raise AnsibleActionFail('cannot write the fleet report into %s on the controller: the folder is not '
                                    'writable by this user (uid %d): %s' % (folder, os.getuid(), WHERE_TO))
        return
    parent = os.path.dirname(os.path.abspath(folder))
    if os.path.exists(folder) or not os.path.isdir(parent):
        raise AnsibleActionFail('cannot write the fleet report into %s on the controller: %s: %s' % (
            folder, 'it is not a folder' if os.path.exists(folder) else '%s does not exist' % parent, WHERE_TO))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise AnsibleActionFail('cannot write the fleet report into %s on the controller: it does not exist and %s '
                                'is not writable by this user (uid %d): %s' % (folder, parent, os.getuid(), WHERE_TO))


def write_files(folder, files, mode):
    """Each file of files (name: text) into folder, atomically; the ones with the same bytes and mode left alone."""
    written, unchanged = [], []
    check_folder(folder)
    try:
        if not os.path.isdir(folder):
            os.mkdir(folder, 0o755)
        for name in sorted(files):
            path = os.path.join(folder, name)
            data = to_bytes(files[name], errors='surrogate_or_strict')
            if os.path.isfile(path) and read_bytes(path) == data and (os.stat(path).st_mode & 0o7777) == mode:
                unchanged.append(path)
                continue
            atomic_write(path, data, mode=mode)
            written.append(path)
    except (IOError, OSError) as exc:
        raise AnsibleActionFail('cannot write the fleet report into %s on the controller: %s: %s'
                                % (folder, to_native(exc), WHERE_TO))
    return written, unchanged


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('dir', 'files', 'mode', 'build', 'hosts', 'failed_hosts', 'events_dir', 'since',
                             'service', 'events', 'info', 'info_var', 'title', 'name'))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _args, spec = self.validate_argument_spec(argument_spec=dict(
            dir=dict(type='path'),
            files=dict(type='dict'),
            mode=dict(type='raw', default='0644'),
            build=dict(type='str', choices=['events', 'report']),
            hosts=dict(type='raw'),
            failed_hosts=dict(type='raw'),
            events_dir=dict(type='str', default=''),
            since=dict(type='str', default=''),
            service=dict(type='str', default='containerd'),
            events=dict(type='dict'),
            info=dict(type='raw'),
            info_var=dict(type='str'),
            title=dict(type='str', default='nodeguard fleet report'),
            name=dict(type='str', default='nodeguard-fleet-report'),
        ), required_if=[('build', 'events', ('hosts',)), ('build', 'report', ('dir', 'hosts', 'events'))])
        task_vars = task_vars or {}
        # the report changes no node: never counted as a change of the run
        result['changed'] = False
        if spec['build'] == 'events':
            result.update(self._events(spec, task_vars))
            return result
        mode = spec['mode']
        try:
            mode = int(mode, 8) if isinstance(mode, str) else int(mode)
        except ValueError:
            raise AnsibleActionFail('mode must be an octal number such as 0644, not %r' % (spec['mode'],))
        folder = spec['dir']
        if folder is None:
            raise AnsibleActionFail('dir is required: the folder of the files on the controller')
        if spec['build'] == 'report':
            report = self._report(spec, task_vars)
            files = {spec['name'] + '.json': fleet_report.to_json_text(report),
                     spec['name'] + '.html': fleet_report.html_page(report)}
            result.update(report=report, lines=fleet_report.text_lines(report))
        elif spec['files'] is None:
            raise AnsibleActionFail('files is required (or build): the file names and their text')
        else:
            files = spec['files']
        for name in files:
            if not name or os.path.basename(name) != name or name in ('.', '..'):
                raise AnsibleActionFail('files: %r is not a file name (no folder part): the files go into dir %s'
                                        % (name, folder))
        written, unchanged = write_files(folder, files, mode)
        result.update(written=written, unchanged=unchanged, files=sorted(os.path.join(folder, n) for n in files))
        return result

    @staticmethod
    def _lists(spec, task_vars):
        hosts = spec['hosts']
        # a survey question left blank: the play's hosts, as when the option is not given
        if isinstance(hosts, str) and not hosts.strip():
            hosts = task_vars.get('ansible_play_hosts_all') or []
        try:
            return (fleet_report.as_list(hosts, 'fleet_report_hosts'),
                    fleet_report.as_list(spec['failed_hosts'], 'fleet_report_failed_hosts'))
        except fleet_report.ListError as exc:
            raise AnsibleActionFail(to_native(exc))

    def _hostvars(self, task_vars):
        """hostvars of a node as a mapping ({} for a name the inventory does not have).

        Untemplated (raw_get): what the report reads are facts and registered results, data that was templated
        when it was set; templating each node's vars again costs five times more than reading them.
        """
        hostvars = task_vars.get('hostvars') or {}
        raw_get = getattr(hostvars, 'raw_get', None)
        cache = {}

        def get(host):
            if host not in cache:
                found = (raw_get(host) if raw_get else hostvars[host]) if host in hostvars else {}
                cache[host] = found if isinstance(found, Mapping) else {}
            return cache[host]
        return get

    def _events(self, spec, task_vars):
        hosts, failed_hosts = self._lists(spec, task_vars)
        events = fleet_report.read_events(spec['events_dir'], task_vars.get('ansible_play_name'))
        # when this run began: the lookup's rule, which node_readiness's count uses too
        run_since = lookup_loader.get('nodeguard.containerd.run_since', loader=self._loader, templar=self._templar)
        since = run_since.run([], variables=task_vars, since=spec['since'], events_dir=spec['events_dir'])[0]
        counted = fleet_report.counted_nodes(hosts, self._hostvars(task_vars), failed_hosts, since, spec['service'],
                                             events['hosts'])
        events.update(since=since, counted=counted)
        return dict(events=events, hosts=hosts, failed_hosts=failed_hosts, since=since, counted=counted)

    def _report(self, spec, task_vars):
        hosts, failed_hosts = self._lists(spec, task_vars)
        hostvars = self._hostvars(task_vars)
        info = {}
        # containerd_info's answers: the per-node task's (registered as info_var on each node), and a loop's
        # (info: its results, item = the node) for the nodes outside the play
        if spec['info_var']:
            for h in hosts:
                res = hostvars(h).get(spec['info_var'])
                if isinstance(res, Mapping) and not res.get('skipped'):
                    info[h] = res
        loop = spec['info']
        results = loop.get('results', []) if isinstance(loop, Mapping) else (loop or [])
        for res in results:
            if isinstance(res, Mapping) and 'item' in res and not res.get('skipped'):
                info[res['item']] = res
        return fleet_report.build_report(spec['title'], task_vars.get('ansible_play_name'), hosts, hostvars,
                                         failed_hosts, spec['events'], info)
