# -*- coding: utf-8 -*-
"""A proxy plugin without an address fails its check at once (nothing to ask), and the plugins after it are
still checked."""

import os

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy

from helpers.grpc_sockets import grpc_standin, short_folder


def test_a_plugin_without_an_address_fails_and_the_next_is_still_checked():
    with short_folder() as folder:
        address = os.path.join(folder, 'nydus.sock')
        dump = {'version': 2, 'proxy_plugins': {'blockfile': {'type': 'snapshot', 'address': ''},
                                                'nydus': {'type': 'snapshot', 'address': address}}}
        with grpc_standin(address) as service:
            checks = proxy.proxy_checks(dump, {'kata': {'snapshotter': 'blockfile'}})
    assert checks == [
        ('proxy_plugin:blockfile', 'fail', 'proxy plugin blockfile has no address (used by runtime kata)', True),
        ('proxy_plugin:nydus', 'pass', 'containerd-nydus-grpc answers for proxy plugin nydus (type snapshot): '
         'a gRPC server answers on %s: containerd-nydus-grpc, pid %s; used by no runtime handler nor the CRI default'
         % (address, service.pid), False)]
