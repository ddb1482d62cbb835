# -*- coding: utf-8 -*-
"""coco puts its runtime class names and coco_owner into Kubernetes (the RuntimeClass handler, the label
nodeguard.io/owner): an install with a name Kubernetes would reject is refused before any write, naming the
variable, the value and the fix; names at the limits pass; an uninstall still takes what an earlier install may have
recorded under another name or owner.

The role runs through ansible-playbook (local connection) on a real config with containerd 1.6 in PATH.
"""

import pytest

from coco_play import run_coco, tree

LONGEST = 'kata-' + 'q' * 58  # 63 characters, a DNS label's most


@pytest.mark.parametrize('role_vars, said', [
    (dict(coco_runtime_classes=['kata-qemu', 'Kata-QEMU', 'kata_qemu', 'kata.qemu', LONGEST + 'u']),
     'coco_runtime_classes names "Kata-QEMU", "kata_qemu", "kata.qemu", "%s": a RuntimeClass handler must be a DNS '
     "label (RFC 1123) - 1 to 63 characters, lowercase letters, digits and '-', starting and ending with a letter or "
     'digit - or Kubernetes rejects the RuntimeClass and no pod can use the handler. Nothing was changed. Fix: rename '
     'the classes, for example "kata-qemu", "kata-qemu", "kata-qemu", "%s".' % (LONGEST + 'u', LONGEST)),
    (dict(coco_owner='team/ops'),
     'coco_owner "team/ops" cannot be used: it names coco\'s changes in nodeguard\'s ledger and is the value of the '
     'label nodeguard.io/owner on the RuntimeClasses coco creates, so it must be a Kubernetes label value - 1 to 63 '
     "characters, letters, digits, '-', '_' and '.', starting and ending with a letter or digit. Nothing was changed. "
     'Fix: set coco_owner to such a name (the default is coco); to remove what an earlier run installed under another '
     'owner, run coco_state=absent with that owner.'),
])
def test_an_install_with_a_name_kubernetes_rejects_is_refused_before_any_write(workdir, config, role_vars, said):
    path = config('v2_debian_stock.toml')
    before = tree(workdir)
    # everything else would pass the role's checks up to the payload (not managed here, and missing)
    res = run_coco(workdir, path, dict(coco_state='present', coco_check_node=False, coco_payload_manage=False,
                                       coco_snapshot=False, **role_vars))
    assert ' '.join(res['failure'].split()) == said
    assert tree(workdir) == before


def test_names_at_kubernetes_limits_pass_the_check(workdir, config):
    """Past the names: the next check (the payload coco does not manage is missing) is what stops the run."""
    path = config('v2_debian_stock.toml')
    res = run_coco(workdir, path, dict(coco_state='present', coco_check_node=False, coco_payload_manage=False,
                                       coco_snapshot=False, coco_readiness=False,
                                       coco_runtime_classes=[LONGEST, 'kata-qemu-0'],
                                       coco_owner='Team.ops_1' + 'x' * 53))
    assert 'the kata payload is incomplete on localhost' in res['failure'], res['failure']


def test_an_uninstall_takes_names_an_earlier_install_may_have_used(workdir, config):
    path = config('v2_debian_stock.toml')
    res = run_coco(workdir, path, dict(coco_runtime_classes=['Kata_QEMU'], coco_owner='team/ops'))
    assert res['failure'] == '', res['failure']
