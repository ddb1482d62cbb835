"""Run by a node interpreter: nodeguard's parse_toml of each file as JSON
(datetimes as ISO text), for tests/compat/run.py to compare with tomllib.

    python parse_check.py COLLECTIONS_ROOT FILE...
"""
import datetime
import json
import sys

sys.path.insert(0, sys.argv[1])
from ansible_collections.nodeguard.containerd.plugins.module_utils._config_model import parse_toml  # noqa: E402


def default(value):
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    raise TypeError('not plain data: %s' % type(value).__name__)


out = {}
for path in sys.argv[2:]:
    with open(path) as f:
        out[path] = parse_toml(f.read())
print(json.dumps(out, default=default, sort_keys=True))
