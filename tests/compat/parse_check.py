"""Run by a node interpreter: nodeguard's parse_toml of each file as JSON
(datetimes as ISO text), for tests/compat/run.py to compare with tomllib; and
the same for the node-side helpers the roles ship (the readiness helper's
load_toml, coco_node's imports_of), which run on the node's Python too.

    python parse_check.py COLLECTIONS_ROOT FILE...
"""
import datetime
import importlib.util
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import parse_toml  # noqa: E402


def default(value):
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError('not plain data: %s' % type(value).__name__)


def helper(name, rel):
    spec = importlib.util.spec_from_file_location(name, os.path.join(sys.argv[1], 'ansible_collections', 'nodeguard',
                                                                     'containerd', rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


readiness = helper('nodeguard_readiness', 'roles/node_readiness/files/nodeguard_readiness.py')
coco_node = helper('coco_node', 'roles/coco/files/coco_node.py')
out = {}
for path in sys.argv[2:]:
    with open(path) as f:
        text = f.read()
    out[path] = parse_toml(text)
    out['readiness:' + path] = readiness.load_toml(text)
    out['coco_node:' + path] = coco_node.imports_of(text)
print(json.dumps(out, default=default, sort_keys=True))
