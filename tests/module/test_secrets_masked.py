# -*- coding: utf-8 -*-
"""Registry credentials in config.toml never leave the node through a module's output.

A config with registry credentials (version 2 on containerd 1.6, version 3 on
containerd 2.1) goes through every module that reads a config, with --check
and --diff and for real: the secret strings must appear in no result (diffs,
messages, warnings, return values, the invocation's arguments), while the
node's config, its backups and the node-side baseline keep them exactly, and
install then uninstall gives the original bytes back.
"""

import glob
import json
import os
import stat
import subprocess
import sys

import pytest

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_2, fixture_text, module_result, read

PW = 'S3cr3t-pw-4f9d1e77'
TOKEN = 'idTok-8c2b77a1-secret'
AUTH = 'cm9ib3Q6UzNjcjN0LXB3LTRmOWQxZTc3'
NEW_PW = 'N3w-S3cret-91ab33cd'
DROP_PW = 'Dr0pin-S3cret-6e6e21'
SECRETS = (PW, TOKEN, AUTH, NEW_PW, DROP_PW)

V2_CREDS = '''
[plugins."io.containerd.grpc.v1.cri".registry.configs."reg.example.com".auth]
  username = "robot"
  password = "%s"
  identitytoken = "%s"
[plugins."io.containerd.grpc.v1.cri".registry.configs."other.example.com".auth]
  auth = "%s"
''' % (PW, TOKEN, AUTH)
V3_CREDS = V2_CREDS.replace('"io.containerd.grpc.v1.cri"', "'io.containerd.cri.v1.images'")
IMAGES = {2: 'plugins."io.containerd.grpc.v1.cri"', 3: 'plugins."io.containerd.cri.v1.images"'}
DROPIN_V3 = '''[plugins.'io.containerd.cri.v1.images'.registry.configs."mirror.example.com".auth]
  username = "robot2"
  password = "%s"
''' % DROP_PW

VERSIONS = [
    pytest.param(2, 'v2_kubeadm.toml', CONTAINERD_1, id='v2-containerd-1.6'),
    pytest.param(3, 'v3_default.toml', CONTAINERD_2, id='v3-containerd-2.1'),
]


def leaks(outputs):
    """The secret strings found in any of the outputs (each a module result)."""
    return [(s, i, json.dumps(o)[max(0, json.dumps(o).find(s) - 100):json.dumps(o).find(s) + 50])
            for i, o in enumerate(outputs) for s in SECRETS if s in json.dumps(o)]


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def node(workdir, config):
    def make(version, fixture, binary):
        assert binary, 'run make deps'
        path = config(fixture_text(fixture) + (V2_CREDS if version == 2 else V3_CREDS))
        os.chmod(path, 0o600)
        return dict(path=path, binary=binary, version=version, state=os.path.join(workdir, 'state'),
                    store=os.path.join(workdir, 'baselines'), etc=os.path.dirname(path))
    return make


def run_bare(runner, module, **args):
    """A module as Ansible runs it, without the state_dir the runner adds for the editing modules."""
    args.update(_ansible_check_mode=False, _ansible_diff=True, _ansible_tmpdir=runner.tmpdir,
                _ansible_remote_tmp=runner.tmpdir, _ansible_keep_remote_files=False)
    argfile = os.path.join(runner.tmpdir, 'bare-%s.json' % module)
    with open(argfile, 'w') as f:
        json.dump({'ANSIBLE_MODULE_ARGS': args}, f)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.' + module,
                           argfile], capture_output=True, text=True, env=env, timeout=300, check=False)
    return dict(module_result(module, proc), stdout=proc.stdout, stderr=proc.stderr)


def run_all(run_module, n, outputs, check, **args):
    """One call with --diff, its result kept for the leak check."""
    args.setdefault('path', n['path'])
    args.setdefault('containerd_bin', n['binary'])
    res = run_module(args.pop('module'), check=check, diff=True, **args)
    outputs.append(res)
    return res


@pytest.mark.parametrize('version,fixture,binary', VERSIONS)
def test_every_module_masks_the_credentials(run_module, node, version, fixture, binary):
    n = node(version, fixture, binary)
    original = read(n['path'], 'rb')
    outputs = []
    run_all(run_module, n, outputs, False, module='containerd_info')
    snap = run_all(run_module, n, outputs, False, module='containerd_baseline', store=n['store'])
    # the node-side baseline is exact (restore needs it) and private
    stored = glob.glob(os.path.join(snap['snapshot'], '**'), recursive=True)
    assert any(PW in read(f) for f in stored if os.path.isfile(f))
    assert all(mode(f) == (0o700 if os.path.isdir(f) else 0o600) for f in stored), [(f, oct(mode(f))) for f in stored]
    outputs.append(run_bare(run_module, 'containerd_preflight', path=n['path'], containerd_bin=n['binary']))
    for check in (True, False):
        res = run_all(run_module, n, outputs, check, module='containerd_runtime', name='nvidia', owner='gpu',
                      options={'BinaryName': '/usr/bin/nvidia-container-runtime'}, backup=True)
        assert res['changed'] and '********' in json.dumps(res['diff'])
        res = run_all(run_module, n, outputs, check, module='containerd_setting', key='images.snapshotter',
                      value='native', owner='gpu')
        assert res['changed']
    # a backup keeps the config's own mode; the ledger and state_dir are private
    backup = [o for o in outputs if o.get('backup_file')][0]['backup_file']
    assert PW in read(backup) and mode(backup) == 0o600
    assert mode(n['state']) == 0o700 and mode(os.path.join(n['state'], 'ledger')) == 0o700
    assert all(mode(f) == 0o600 for f in glob.glob(os.path.join(n['state'], 'ledger', '*.json')))
    # a setting whose key is a secret path: masked in the arguments and the result, the change named
    secret_key = IMAGES[version] + '.registry.configs."reg.example.com".auth.password'
    res = run_all(run_module, n, outputs, True, module='containerd_setting', key=secret_key, raw=True,
                  value=NEW_PW, owner='gpu')
    assert res['changed'] and res['secrets_changed'] == [secret_key]
    assert any('secret value' in w and 'would change' in w for w in res['warnings'])
    # a no_log option: also the journal line AnsibleModule writes on start has a placeholder
    assert res['invocation']['module_args']['value'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    res = run_all(run_module, n, outputs, True, module='containerd_config', owner='coco',
                  settings=[dict(key=secret_key, raw=True, value=NEW_PW)],
                  runtimes=[dict(name='kata', runtime_type='io.containerd.kata.v2')])
    assert res['changed'] and NEW_PW not in json.dumps(res)
    # the journal line on start too: a settings entry whose key is a secret path makes every entry's value no_log
    assert res['invocation']['module_args']['settings'][0]['value'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
    extra = os.path.join(n['etc'], 'extra.toml')
    with open(extra, 'w') as f:
        f.write('version = %d\n' % version)
    run_all(run_module, n, outputs, True, module='containerd_imports', imports=[extra], owner='gpu')
    if version == 3:
        dropin = os.path.join(n['etc'], 'conf.d', 'mirror.toml')
        for check in (True, False):
            res = run_all(run_module, n, outputs, check, module='containerd_dropin', dropin=dropin,
                          content='version = 3\n' + DROPIN_V3, owner='coco')
            # a content that holds a secret is a no_log option: the journal line on start has a placeholder
            assert res['invocation']['module_args']['content'] == 'VALUE_SPECIFIED_IN_NO_LOG_PARAMETER'
        run_all(run_module, n, outputs, True, module='containerd_dropin', dropin=dropin, content='version = 3\n',
                owner='coco')
        run_all(run_module, n, outputs, False, module='containerd_dropin', dropin=dropin, state='absent',
                owner='coco')
    # the baseline against the changed config: check, a restore preview and a repair preview
    run_all(run_module, n, outputs, False, module='containerd_baseline', state='check', store=n['store'])
    run_all(run_module, n, outputs, True, module='containerd_baseline', state='restore', store=n['store'])
    run_all(run_module, n, outputs, True, module='containerd_baseline', state='repair', store=n['store'])
    # uninstall: the original bytes, credentials untouched
    for check in (True, False):
        run_all(run_module, n, outputs, check, module='containerd_setting', key='images.snapshotter', owner='gpu',
                state='absent')
        run_all(run_module, n, outputs, check, module='containerd_runtime', name='nvidia', owner='gpu',
                state='absent')
    assert read(n['path'], 'rb') == original
    assert not leaks(outputs), leaks(outputs)
    # the masking really ran: the diffs show the mask where the password stood
    assert any('password = "********"' in json.dumps(o.get('diff')).replace('\\"', '"') for o in outputs)


def test_user_secret_keys_mask_other_values(run_module, node):
    n = node(2, 'v2_kubeadm.toml', CONTAINERD_1)
    with open(n['path'], 'a') as f:
        f.write('[plugins."io.containerd.grpc.v1.cri".registry.headers]\n  X-Api-Key = ["%s"]\n' % NEW_PW)
    args = dict(path=n['path'], containerd_bin=n['binary'], name='nvidia', owner='gpu', check=True, diff=True)
    plain = run_module('containerd_runtime', **args)
    assert NEW_PW in json.dumps(plain['diff'])
    masked = run_module('containerd_runtime', secret_keys=['plugins."io.containerd.grpc.v1.cri".registry.headers'],
                        **args)
    assert NEW_PW not in json.dumps(masked) and PW not in json.dumps(masked)
    # a user name is no secret: it stays readable
    assert 'username = \\"robot\\"' in json.dumps(masked['diff'])
    bad = run_module('containerd_runtime', secret_keys=['plugins..x'], expect_fail=True, **args)
    assert 'secret_keys' in bad['msg']
