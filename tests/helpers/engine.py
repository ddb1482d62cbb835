# -*- coding: utf-8 -*-
"""The engine run in this process: containerd_setting on a config tree (real containerd 2.1 judges it),
run_transaction with an edit of the test's, a load test that answers what the test says, and the Context a
module's params make."""

import json
import os
from types import SimpleNamespace

import pytest

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.testing import patch_module_args

from helpers.common import CONTAINERD_1, CONTAINERD_2, fixture_text
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits import engine as _engine
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.engine import Context
from ansible_collections.nodeguard.containerd.plugins.module_utils._node import preflight as _preflight
from ansible_collections.nodeguard.containerd.plugins.modules import containerd_setting

RUNTIME = "[plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
IMAGES = "[plugins.'io.containerd.cri.v1.images']\n"
SNAPSHOTTER = ('plugins', 'io.containerd.grpc.v1.cri', 'containerd', 'snapshotter')


def make_node(tmp_path):
    """config.toml (2.1's default) importing conf.d/10-site.toml, which sets the snapshotter and default runtime."""
    assert CONTAINERD_2, 'containerd 2.1 is needed (make deps)'
    etc = tmp_path / 'etc'
    (etc / 'conf.d').mkdir(parents=True)
    dropin = etc / 'conf.d' / '10-site.toml'
    dropin.write_text("version = 3\n%s  snapshotter = 'overlayfs'\n%s  default_runtime_name = 'runc'\n"
                      % (IMAGES, RUNTIME))
    path = etc / 'config.toml'
    path.write_text(fixture_text('v3_default.toml').replace('imports = []', 'imports = ["%s"]' % dropin, 1))
    return dict(path=str(path), dropin=str(dropin), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def node_from_fixture(tmp_path, name, text=None):
    """etc/config.toml under tmp_path with a fixture's text (or text made from it), and a state folder."""
    path = tmp_path / 'etc' / 'config.toml'
    path.parent.mkdir()
    path.write_text(fixture_text(name) if text is None else text(fixture_text(name), str(path)))
    return dict(path=str(path), state=str(tmp_path / 'state'), tmp=str(tmp_path))


def import_later_dropin(node, text):
    """conf.d/20-late.toml with text, imported after the node's drop-in (make_node); its path."""
    later = os.path.join(os.path.dirname(node['dropin']), '20-late.toml')
    with open(later, 'w') as f:
        f.write(text)
    with open(node['path']) as f:
        main = f.read().replace('imports = ["%s"]' % node['dropin'], 'imports = ["%s", "%s"]' % (node['dropin'], later))
    with open(node['path'], 'w') as f:
        f.write(main)
    return later


def setting(node, capsys, diff=False, module=containerd_setting, **args):
    params = dict(path=node['path'], state_dir=node['state'], owner='coco', containerd_bin=CONTAINERD_2,
                  _ansible_diff=diff, _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])
    params.update(args)
    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):  # each run reports only its own
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()
    with patch_module_args(params):
        with pytest.raises(SystemExit):
            module.main()
    result = json.loads(capsys.readouterr().out)
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return result


def set_snapshotter_native(doc, ledger, ctx):
    """An edit that sets config version 2's snapshotter and declares nothing it wants."""
    doc.toml.set_value(SNAPSHOTTER, 'native')
    return {}


def edit_run(node, capsys, load_test=None, edit=set_snapshotter_native, **args):
    """run_transaction of edit (by default setting the snapshotter to native), in this process."""
    params = dict(path=node['path'], state_dir=node['state'], owner='coco', containerd_bin=CONTAINERD_1,
                  _ansible_tmpdir=node['tmp'], _ansible_remote_tmp=node['tmp'])
    params.update(args)

    from ansible.module_utils.common import warnings
    for name in ('_global_warnings', '_global_deprecations'):  # each run reports only its own
        store = getattr(warnings, name, None)
        if hasattr(store, 'clear'):
            store.clear()
    with patch_module_args(params):
        module = AnsibleModule(argument_spec=dict(_engine.COMMON_ARGUMENT_SPEC, state=dict(type='str')),
                               supports_check_mode=True)
        with pytest.raises(SystemExit):
            _engine.run_transaction(module, edit, load_test=load_test)
    result = json.loads(capsys.readouterr().out)
    result['warnings'] = [w['event']['msg'] if isinstance(w, dict) else w for w in result.get('warnings', [])]
    return result


def started(monkeypatch, status, skipped=()):
    """_preflight.load_test answering status; the calls are kept."""
    calls = []

    def load_test(binary, candidate, **kw):
        calls.append(dict(kw, binary=binary, candidate=candidate))
        return SimpleNamespace(status=status, ok=status == _preflight.STATUS_OK, seconds=0.5, required=['cri'],
                               errors=[] if status == _preflight.STATUS_OK else ['cri: failed to load'],
                               skipped=list(skipped), containerd_version='1.6.20',
                               message=lambda: 'containerd did not start: cri: failed to load',
                               as_dict=lambda: dict(status=status))
    monkeypatch.setattr(_preflight, 'load_test', load_test)
    return calls


def context(**params):
    module = SimpleNamespace(params=dict(dict(owner='gpu', containerd_bin=None), **params), check_mode=False,
                             get_bin_path=lambda name: None)
    return Context(module, '/etc/containerd/config.toml')
