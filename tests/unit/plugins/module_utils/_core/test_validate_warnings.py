# -*- coding: utf-8 -*-
"""check_warnings on the shims' env: containerd 2.3.4 resets io.containerd.shim.v1.manager when it migrates a
version 2 or 3 file with an io.containerd.runtime.v2.task table to version 4, so a tree with such a table and a
shim env (or version 2's sched_core) is warned of, naming the file with the table and the file with the env."""

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.validate import check_warnings

V23 = (2, 3)
TASK = "[plugins.'io.containerd.runtime.v2.task']\n  platforms = ['linux/amd64']\n"
ENV = "[plugins.'io.containerd.shim.v1.manager']\n  env = ['HTTP_PROXY=http://proxy:3128']\n"


def tree(tmp_path, main_body, dropin_body):
    """A version 3 config.toml (with main_body) importing one version 3 drop-in (with dropin_body)."""
    dropin = tmp_path / 'conf.d' / '10-task.toml'
    dropin.parent.mkdir()
    dropin.write_text('version = 3\n' + dropin_body)
    main = tmp_path / 'config.toml'
    main.write_text("version = 3\nimports = ['%s']\n%s" % (dropin, main_body))
    return str(main), parse_toml(main.read_text()), str(dropin)


def test_the_warning_names_the_file_with_the_task_table_and_the_file_with_the_env(tmp_path):
    main, data, dropin = tree(tmp_path, ENV, TASK)
    (warning,) = check_warnings(main, data, V23)
    assert warning.startswith('%s has a plugins."io.containerd.runtime.v2.task" table and %s sets the shims\' env '
                              '(plugins."io.containerd.shim.v1.manager".env or sched_core): containerd 2.3.4 resets '
                              'io.containerd.shim.v1.manager' % (dropin, main))


@pytest.mark.parametrize('main_body', ['', "[plugins.'io.containerd.shim.v1.manager']\n"])
def test_a_task_table_without_a_shim_env_or_sched_core_is_no_warning(tmp_path, main_body):
    main, data, _dropin = tree(tmp_path, main_body, TASK)
    assert check_warnings(main, data, V23) == []


def test_sched_core_in_the_task_table_is_an_env_the_migration_drops(tmp_path):
    main, data, dropin = tree(tmp_path, '', TASK + '  sched_core = true\n')
    (warning,) = check_warnings(main, data, V23)
    assert warning.startswith('%s has a plugins."io.containerd.runtime.v2.task" table and %s sets the shims\' env'
                              % (dropin, dropin))
