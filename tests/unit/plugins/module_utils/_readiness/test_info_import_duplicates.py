# -*- coding: utf-8 -*-
"""containerd_info's duplicate imports: two entries are one only where the node's containerd resolves them alike."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._core.effective import load_effective
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.info import imports_facts


def test_a_relative_glob_repeats_its_absolute_spelling_only_where_containerd_expands_both_alike(tmp_path):
    folder = tmp_path / 'conf.d'
    folder.mkdir()
    (folder / 'nydus.toml').write_text('version = 2\n')
    absolute = os.path.join(str(folder), '*.toml')
    path = str(tmp_path / 'config.toml')
    data = {'version': 2, 'imports': [absolute, 'conf.d/*.toml']}
    # 1.6 expands the relative glob against its working folder: another entry, loading nothing
    assert imports_facts(load_effective(path, data, (1, 6)), (1, 6))['duplicates'] == []
    assert imports_facts(load_effective(path, data, (1, 7)), (1, 7))['duplicates'] == [
        dict(entry='conf.d/*.toml', resolved=absolute, imported_by=path)]
