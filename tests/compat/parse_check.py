"""Run by a node interpreter: nodeguard's parse_toml of each file as JSON
(datetimes as ISO text) and the engine's import walk of it (the entries the
file imports, as containerd_info and the coco role read them), for
tests/compat/run.py to compare with tomllib. Every module_utils file is
imported first: all node-side code is modules on them, so each
must load on the node's Python and tomlkit.

    python parse_check.py COLLECTIONS_ROOT FILE...
"""
import datetime
import glob
import importlib
import json
import os
import sys

sys.path.insert(0, sys.argv[1])
PACKAGE = 'ansible_collections.nodeguard.containerd.plugins.module_utils'
UTILS = os.path.join(sys.argv[1], *PACKAGE.split('.'))
loaded = [importlib.import_module(PACKAGE + '.' + os.path.basename(p)[:-3])
          for p in sorted(glob.glob(os.path.join(UTILS, '_*.py')))]
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import parse_toml  # noqa: E402
from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective  # noqa: E402
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import imports_facts  # noqa: E402


def default(value):
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError('not plain data: %s' % type(value).__name__)


out = {'module_utils': sorted(m.__name__.rsplit('.', 1)[1] for m in loaded)}
for path in sys.argv[2:]:
    with open(path) as f:
        data = parse_toml(f.read())
    out[path] = data
    view = load_effective(path, data, None)
    out['imports:' + path] = [e['entry'] for e in imports_facts(view, None)['entries'] if e['imported_by'] == path]
print(json.dumps(out, default=default, sort_keys=True))
