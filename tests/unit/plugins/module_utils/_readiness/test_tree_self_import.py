# -*- coding: utf-8 -*-
"""The readiness tree names a config that imports itself (NVIDIA's toolkit before 1.18 writes one)."""

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness.tree import Tree

CRI = '[plugins."io.containerd.grpc.v1.cri".containerd]\ndefault_runtime_name = "runc"\n'


def write(tmp_path, imports):
    path = tmp_path / 'config.toml'
    path.write_text('version = 2\nimports = [%s]\n%s' % (', '.join('"%s"' % i for i in imports), CRI))
    return str(path)


def test_an_entry_naming_the_file_itself_is_a_warning_that_names_it(tmp_path):
    path = write(tmp_path, [str(tmp_path / 'config.toml')])
    tree = Tree(path, (1, 6))
    assert tree.self_imports == [path]
    (warning,) = tree.warnings
    assert warning.startswith('%s imports itself' % path) and 'Fix:' in warning
    assert tree.missing == [] and tree.errors == []   # it loads: a warning, not a failure


def test_a_glob_that_matches_the_file_itself_is_one_too(tmp_path):
    path = write(tmp_path, [str(tmp_path / '*.toml')])
    assert Tree(path, (1, 7)).self_imports == [path]


def test_other_imports_are_no_warning(tmp_path):
    (tmp_path / 'conf.d').mkdir()
    (tmp_path / 'conf.d' / '99-nvidia.toml').write_text('version = 2\n')
    path = write(tmp_path, [str(tmp_path / 'conf.d' / '*.toml')])
    tree = Tree(path, (2, 1))
    assert tree.self_imports == [] and tree.warnings == []
    assert Tree(str(tmp_path / 'absent.toml'), (1, 6)).warnings == []
