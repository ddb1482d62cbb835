# -*- coding: utf-8 -*-
# Copyright: nodeguard maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_report_files: write the fleet report's files on the controller.

An action plugin, not a module: the report is the controller's, so writing
it needs no module run (three module runs on localhost cost about a second
per playbook run). Each file goes through the collection's one atomic write.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_bytes, to_native
from ansible.plugins.action import ActionBase

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.atomic import atomic_write, read_bytes


class ActionModule(ActionBase):

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(('dir', 'files', 'mode'))

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        _args, spec = self.validate_argument_spec(argument_spec=dict(
            dir=dict(type='path', required=True),
            files=dict(type='dict', required=True),
            mode=dict(type='raw', default='0644'),
        ))
        folder = spec['dir']
        mode = spec['mode']
        try:
            mode = int(mode, 8) if isinstance(mode, str) else int(mode)
        except ValueError:
            raise AnsibleActionFail('mode must be an octal number such as 0644, not %r' % (spec['mode'],))
        for name in spec['files']:
            if not name or os.path.basename(name) != name or name in ('.', '..'):
                raise AnsibleActionFail('files: %r is not a file name (no folder part): the files go into dir %s'
                                        % (name, folder))
        written, unchanged = [], []
        try:
            if not os.path.isdir(folder):
                os.makedirs(folder, 0o755)
            for name in sorted(spec['files']):
                path = os.path.join(folder, name)
                data = to_bytes(spec['files'][name], errors='surrogate_or_strict')
                if os.path.isfile(path) and read_bytes(path) == data and (os.stat(path).st_mode & 0o7777) == mode:
                    unchanged.append(path)
                    continue
                atomic_write(path, data, mode=mode)
                written.append(path)
        except (IOError, OSError) as exc:
            raise AnsibleActionFail('cannot write the fleet report into %s on the controller: %s'
                                    % (folder, to_native(exc)))
        # the report changes no node: never counted as a change of the run
        result.update(changed=False, written=written, unchanged=unchanged,
                      files=sorted(os.path.join(folder, n) for n in spec['files']))
        return result
