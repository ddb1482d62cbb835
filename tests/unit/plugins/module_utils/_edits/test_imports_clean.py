# -*- coding: utf-8 -*-
"""clean_imports (containerd_baseline's repair) with several dangling entries:
each is named once, in the order of the file, and the rest keep their order.
"""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.config_model import ConfigDocument
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.imports import clean_imports


def test_dangling_entries_are_reported_in_file_order(tmp_path):
    folder = str(tmp_path)
    kept = os.path.join(folder, 'kata.toml')
    with open(kept, 'w') as f:
        f.write('version = 2\n')
    gone = [os.path.join(folder, name) for name in ('nydus.toml', 'gpu.toml', 'a.toml')]
    text = 'version = 2\nimports = [\n  "%s",\n  "%s",\n  "%s",\n  "%s",\n]\n' % (gone[0], kept, gone[1], gone[2])
    doc = ConfigDocument(os.path.join(folder, 'config.toml'), text)
    assert clean_imports(doc) == dict(duplicates_removed=[], removed_missing=gone)
    assert doc.text == 'version = 2\nimports = [\n  "%s",\n]\n' % kept
