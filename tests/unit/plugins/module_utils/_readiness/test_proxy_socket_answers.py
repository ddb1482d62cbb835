# -*- coding: utf-8 -*-
"""Whether a gRPC server answers on a proxy plugin's socket, and why not: the socket is missing, is no socket,
refuses, stays silent, or answers as no gRPC server would. A real containerd is the gRPC server that answers (its
SETTINGS frame carries a payload, as any gRPC server's does)."""

import os
import socket

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy

from helpers.grpc_sockets import answering, short_folder

# a version 2 containerd without its CRI plugin: a gRPC server on its socket, up in a moment
BARE_CONTAINERD = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'


@pytest.fixture
def folder():
    with short_folder() as path:
        yield path


def test_a_missing_socket_is_named_with_the_system_error(folder):
    address = os.path.join(folder, 'nydus.sock')
    assert proxy.socket_answers(address) == (False, 'socket %s does not exist (No such file or directory)' % address)


def test_a_file_that_is_no_socket_is_named(folder):
    address = os.path.join(folder, 'nydus.sock')
    with open(address, 'w') as f:
        f.write('not a socket\n')
    assert proxy.socket_answers(address) == (False, '%s is not a socket' % address)


def test_a_socket_file_nothing_listens_on_any_more_refuses(folder):
    address = os.path.join(folder, 'nydus.sock')
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(address)
    stale.close()  # the file stays, as a crashed server leaves it
    assert proxy.socket_answers(address) == (False, 'cannot talk to %s: Connection refused' % address)


def test_a_server_that_never_answers_is_given_three_seconds(folder):
    address = os.path.join(folder, 'nydus.sock')
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(address)
    silent.listen(1)  # the connection waits in the backlog: nobody reads the preface
    try:
        assert proxy.socket_answers(address) == (False, 'nothing answered on %s within 3 s' % address)
    finally:
        silent.close()


def test_an_http_1_server_answers_but_not_as_grpc(folder):
    address = os.path.join(folder, 'nydus.sock')
    # nine bytes of its answer are as many as a frame header, but no SETTINGS frame
    srv = answering(address, b'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n')
    try:
        assert proxy.socket_answers(address) == (False, '%s answered, but not as a gRPC server would' % address)
    finally:
        srv.close()


def test_containerd_answers_as_a_grpc_server(tmp_path, containerd_daemon):
    config = tmp_path / 'config.toml'
    config.write_text(BARE_CONTAINERD)
    daemon = containerd_daemon(str(config))
    assert daemon.up, daemon.log_text()
    assert proxy.socket_answers(daemon.address) == (True, 'a gRPC server answers on %s' % daemon.address)
