# -*- coding: utf-8 -*-
"""containerd_readiness and containerd_info on a running containerd whose config carries registry credentials.

The readiness report (the result and the file report_path writes, which
Ansible's masking never sees) and containerd_info's facts carry no secret.
"""

import json
import os

import pytest

from helpers.common import CONTAINERD_1, CONTAINERD_2, read
from helpers.readiness import check

# the running containerd of the readiness tests (a fixture)

PW = 'Rd-S3cret-pw-19c4e2aa'
TOKEN = 'Rd-idTok-5d5d7e01'


@pytest.mark.parametrize('binary,version,plugin', [
    pytest.param(CONTAINERD_1, 2, 'io.containerd.grpc.v1.cri', id='containerd-1.6'),
    pytest.param(CONTAINERD_2, 3, 'io.containerd.cri.v1.images', id='containerd-2.1'),
])
def test_reports_and_facts_carry_no_secret(run_module, readiness_node, workdir, binary, version, plugin):
    creds = ('[plugins."%s".registry.configs."reg.example.com".auth]\n  username = "robot"\n  password = "%s"\n'
             '  identitytoken = "%s"\n' % (plugin, PW, TOKEN))
    n = readiness_node(binary, extra=creds, version=version)
    assert PW in read(n['config'])
    report_path = os.path.join(workdir, 'readiness.json')
    res, report = check(run_module, n, report_path=report_path)
    assert report['by_name']['cri_plugin']['status'] == 'pass', report['checks']
    info = run_module('containerd_info', path=n['config'], containerd_bin=n['binary'], dump=True, env=n['env'])
    assert info['config']['path'] == n['config']
    outputs = json.dumps([res, info]) + read(report_path)
    assert PW not in outputs and TOKEN not in outputs
