# -*- coding: utf-8 -*-
"""exclusive's release when only some of its kinds are at work: a default change with a single entry to undo
still runs as two parts, a default the call puts back itself is skipped without ending the
others, a release whose files held no import records reports no imports, and an install
that named no imports takes the release's result without an import view of its own.
"""

from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.edit_set import (
    EditSet,
    OwnedRelease,
    entries_of,
    join_release,
)
from ansible_collections.nodeguard.containerd.plugins.module_utils._edits.runtime import runtime_present
from helpers.context import FakeContext, doc_and_ledger

GPU_TOML = '/etc/containerd/conf.d/gpu.toml'
NVIDIA_DEFAULT = dict(name='nvidia', default=None)


def undo_of(names, imports=()):
    settings, runtimes = entries_of(dict(state='absent', owner='gpu', settings=[],
                                         runtimes=[dict(name=n, force=False) for n in names]))
    return EditSet(list(imports), settings, runtimes, 'gpu', 'absent', dict(position='append'))


def test_a_default_change_and_one_entry_to_undo_are_two_parts():
    """The default goes back in its own step before the single runtime is removed."""
    undo = undo_of(['nvidia-cdi'])
    assert undo.parts is None
    edit = OwnedRelease([NVIDIA_DEFAULT], undo, 'gpu')
    assert len(edit.parts) == 2
    assert edit.parts[0].defaults == [NVIDIA_DEFAULT] and edit.parts[0].undo is None
    assert edit.parts[1] is undo


def test_a_release_whose_steps_held_no_import_record_reports_no_imports():
    """Every file visited held only the default change: the imports to undo were never edited here."""
    edit = OwnedRelease([NVIDIA_DEFAULT], undo_of([], imports=[GPU_TOML]), 'gpu')
    combined = edit.combine({}, [dict(defaults_undone=['nvidia'], default_runtime_name='runc')])
    assert combined == dict(defaults_undone=['nvidia'])


def test_an_install_without_imports_joins_a_release_that_removed_one():
    install = dict(changed=True, file='/etc/containerd/config.toml', effects=[1], default_runtime_name='nvidia')
    release = dict(changed=True, file='/etc/containerd/conf.d/cdi.toml', effects=[2], default_runtime_name='runc',
                   imports=dict(imports=[], missing=[], removed=[GPU_TOML]))
    join_release(install, release)
    assert install['files'] == ['/etc/containerd/config.toml', '/etc/containerd/conf.d/cdi.toml']
    assert install['effects'] == [1, 2] and install['default_runtime_name'] == 'runc'
    assert install['file'] == '/etc/containerd/config.toml'


TEXT = ('version = 2\n\n[plugins."io.containerd.grpc.v1.cri".containerd]\n  default_runtime_name = "runc"\n\n'
        '[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]\n  runtime_type = "io.containerd.runc.v2"\n')
BINARY = {'BinaryName': '/usr/bin/nvidia-container-runtime'}


def test_a_default_left_to_the_call_does_not_stop_the_next_one_being_undone(tmp_path):
    """gpu made nvidia, then nvidia-cdi the default; the call keeps nvidia-cdi (default: false puts it back
    itself), so only nvidia's change of the default is undone here."""
    doc, ledger = doc_and_ledger(tmp_path, TEXT)
    runtime_present(doc, ledger, FakeContext(), dict(name='nvidia', owner='gpu', options=BINARY, default=True))
    runtime_present(doc, ledger, FakeContext(), dict(name='nvidia-cdi', owner='gpu', options=BINARY, default=True))
    assert doc.default_runtime() == 'nvidia-cdi'
    edit = OwnedRelease([dict(name='nvidia-cdi', default=False), NVIDIA_DEFAULT], None, 'gpu')
    out = edit(doc, ledger, FakeContext())
    assert out['defaults_undone'] == ['nvidia']
    assert not ledger.select(owner='gpu', resource='runtime:nvidia', path=doc.layout.default_runtime_name)
    assert ledger.select(owner='gpu', resource='runtime:nvidia-cdi', path=doc.layout.default_runtime_name)
