# -*- coding: utf-8 -*-
"""Registry credentials are masked however config.toml spells them.

TOML spells one string in many ways (``\\u`` and ``\\U`` escapes, an escaped
quote, a literal string, a multi-line string with a line-ending backslash);
the real containerd reads each as the credential. A diff, a message or a
fetched baseline shows the file's text, so neither the value nor its spelling
may appear there, while the node's config and its node-side baseline keep the
file exactly as written.
"""

import json
import os
import subprocess

import pytest

from helpers.common import COLLECTIONS_ROOT, CONTAINERD_1, CONTAINERD_2, assert_containerd_accepts, fixture_text, \
    module_result, read
from helpers.modules import NODE_PYTHON

# (the spelling in the file, what containerd reads)
PASSWORD = ('"hunter2-\\u0041cme-51d0"', 'hunter2-Acme-51d0')
TOKEN = ('"\\U00000054ok-77ab\\"q"', 'Tok-77ab"q')
AUTH = ("'bGl0\\ZXJhbA-lit'", 'bGl0\\ZXJhbA-lit')
MULTI = ('"""\nml-pw-\\\n    9f3e"""', 'ml-pw-9f3e')
INLINE = ('"in\\u006cine-pw-42"', 'inline-pw-42')
SPELLED = (PASSWORD, TOKEN, AUTH, MULTI, INLINE)

CREDS = '''
[plugins.IMAGES.registry.configs."reg.example.com".auth]
  username = "robot"
  password = %s
  identitytoken = %s
[plugins.IMAGES.registry.configs."other.example.com".auth]
  auth = %s
[plugins.IMAGES.registry.configs."multi.example.com".auth]
  password = %s
[plugins.IMAGES.registry.configs."inline.example.com"]
  auth = { password = %s }
''' % tuple(written for written, _value in SPELLED)
IMAGES = {2: '"io.containerd.grpc.v1.cri"', 3: '"io.containerd.cri.v1.images"'}

VERSIONS = [
    pytest.param(2, 'v2_kubeadm.toml', CONTAINERD_1, id='v2-containerd-1.6'),
    pytest.param(3, 'v3_default.toml', CONTAINERD_2, id='v3-containerd-2.1'),
]


def strings(value):
    """Every string in a result (keys too)."""
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


def leaks(texts):
    """The spellings and values found in any of texts (the spelling without its quotes, as the file holds it)."""
    needles = [n for written, value in SPELLED for n in (written.strip('\'"').lstrip('\n'), value)]
    return sorted(set(n for t in texts for n in needles if n in t))


def run_export(runner, **args):
    """containerd_baseline_export as Ansible runs it (it takes no state_dir, which the runner adds)."""
    argfile = os.path.join(runner.tmpdir, 'export.json')
    with open(argfile, 'w') as f:
        json.dump({'ANSIBLE_MODULE_ARGS': dict(args, _ansible_tmpdir=runner.tmpdir)}, f)
    env = dict(os.environ, PYTHONPATH=COLLECTIONS_ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([NODE_PYTHON, '-m', 'ansible_collections.nodeguard.containerd.plugins.modules.'
                           'containerd_baseline_export', argfile], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    result = module_result('containerd_baseline_export', proc)
    assert not result.get('failed'), result
    return result


@pytest.fixture
def spelled_config(config):
    def make(version, fixture, binary):
        assert binary, 'run make deps'
        path = config(fixture_text(fixture) + CREDS.replace('IMAGES', IMAGES[version]))
        dump = assert_containerd_accepts(path, binary)
        # containerd reads each spelling as the credential: the dump writes the value in its own spelling
        assert all(json.dumps(value)[1:-1] in dump.replace("'", '"') or value in dump for _w, value in SPELLED), dump
        return path
    return make


@pytest.mark.parametrize('version,fixture,binary', VERSIONS)
def test_a_diff_masks_every_spelling_of_a_credential(run_module, spelled_config, version, fixture, binary):
    path = spelled_config(version, fixture, binary)
    original = read(path)
    outputs = []
    for check in (True, False):
        res = run_module('containerd_setting', path=path, containerd_bin=binary, key='images.snapshotter',
                         value='native', owner='gpu', check=check, diff=True)
        assert res['changed']
        outputs.append(res)
    res = run_module('containerd_setting', path=path, containerd_bin=binary, key='images.snapshotter', owner='gpu',
                     state='absent', diff=True)
    outputs.append(res)
    assert read(path) == original  # the file keeps every spelling to the byte
    assert not leaks(s for o in outputs for s in strings(o)), leaks(s for o in outputs for s in strings(o))
    before = outputs[0]['diff']['before']
    assert 'password = "********"' in before and "auth = '********'" in before
    assert 'password = """\n********"""' in before and 'auth = { password = "********" }' in before


@pytest.mark.parametrize('version,fixture,binary', VERSIONS)
def test_an_exported_baseline_masks_every_spelling_of_a_credential(run_module, spelled_config, workdir, version,
                                                                   fixture, binary):
    path = spelled_config(version, fixture, binary)
    store, dest = os.path.join(workdir, 'baselines'), os.path.join(workdir, 'export')
    snap = run_module('containerd_baseline', path=path, containerd_bin=binary, store=store)
    stored = os.path.join(snap['snapshot'], 'files', '000-config.toml')
    assert read(stored) == read(path)  # the node-side copy is exact: restore needs the real values
    res = run_export(run_module, store=store, dest=dest)
    exported = [os.path.join(root, name) for root, _dirs, names in os.walk(dest) for name in names]
    assert os.path.join(dest, os.path.relpath(stored, os.path.dirname(snap['snapshot']))) in exported
    texts = [read(f) for f in exported]
    assert not leaks(texts + strings(res)), leaks(texts + strings(res))
    config_copy = read(os.path.join(dest, os.path.relpath(stored, os.path.dirname(snap['snapshot']))))
    assert config_copy.count('********') == len(SPELLED) and 'username = "robot"' in config_copy
