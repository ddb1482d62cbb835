# -*- coding: utf-8 -*-
"""The process that listens on a proxy plugin's socket, as /proc shows it: its pid and program (the basename of
its argv[0]), named in the check's reason and compared with the service the plugin expects. A real containerd,
a stand-in containerd-nydus-grpc in its own process, and sockets of this test process are the listeners."""

import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy

from helpers.common import COLLECTIONS_ROOT
from helpers.grpc_sockets import grpc_standin, short_folder

# a version 2 containerd without its CRI plugin: a gRPC server on its socket, up in a moment
BARE_CONTAINERD = 'version = 2\ndisabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
USED = 'used by no runtime handler nor the CRI default'


@pytest.fixture
def folder():
    with short_folder() as path:
        yield path


def dump_with(name, address):
    """A config dump with one snapshot proxy plugin."""
    return {'version': 2, 'proxy_plugins': {name: {'type': 'snapshot', 'address': address}}}


def listening(path):
    """A listening Unix socket of this process; (socket, its inode as /proc/net/unix writes it)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(path)
    sock.listen(1)
    return sock, str(os.fstat(sock.fileno()).st_ino)


# ---------------------------------------------------------------- the program named
def test_containerd_is_named_as_the_program_on_its_socket(tmp_path, containerd_daemon):
    config = tmp_path / 'config.toml'
    config.write_text(BARE_CONTAINERD)
    daemon = containerd_daemon(str(config))
    assert daemon.up, daemon.log_text()
    pid = daemon.proc.pid
    assert proxy.socket_owner(daemon.address) == (pid, 'containerd')
    # a plugin that names no program of its own passes with whatever gRPC server answers
    assert proxy.proxy_checks(dump_with('stargz', daemon.address), {}) == [(
        'proxy_plugin:stargz', 'pass', 'the stargz service answers for proxy plugin stargz (type snapshot): '
        'a gRPC server answers on %s: containerd, pid %s; %s' % (daemon.address, pid, USED), False)]
    (check,) = proxy.proxy_checks(dump_with('nydus', daemon.address), {})
    assert check[1] == 'fail' and ('the process listening there is containerd (pid %s), not containerd-nydus-grpc'
                                   % pid) in check[2]


def test_the_nydus_service_on_the_socket_passes(folder):
    address = os.path.join(folder, 'nydus.sock')
    with grpc_standin(address) as service:
        checks = proxy.proxy_checks(dump_with('nydus', address), {'kata': {'snapshotter': 'nydus'}})
    assert checks == [(
        'proxy_plugin:nydus', 'pass', 'containerd-nydus-grpc answers for proxy plugin nydus (type snapshot): '
        'a gRPC server answers on %s: containerd-nydus-grpc, pid %s; used by runtime kata' % (address, service.pid),
        True)]


def test_a_server_bound_by_a_relative_path_answers_though_its_process_does_not_show(folder):
    # /proc/net/unix writes the path as it was bound: 'nydus.sock', which names no folder
    address = os.path.join(folder, 'nydus.sock')
    with grpc_standin('nydus.sock', cwd=folder):
        assert proxy.socket_owner(address) == (None, None)
        checks = proxy.proxy_checks(dump_with('nydus', address), {})
    assert checks == [(
        'proxy_plugin:nydus', 'pass', 'containerd-nydus-grpc answers for proxy plugin nydus (type snapshot): '
        'a gRPC server answers on %s (its process is not visible from here); %s' % (address, USED), False)]


def test_an_address_through_a_symlinked_folder_finds_the_process_bound_at_the_real_path(folder):
    real = os.path.join(folder, 'real')
    os.mkdir(real)
    os.symlink(real, os.path.join(folder, 'link'))
    with grpc_standin(os.path.join(real, 'nydus.sock')) as service:
        assert proxy.socket_owner(os.path.join(folder, 'link', 'nydus.sock')) == (service.pid, 'containerd-nydus-grpc')


def test_an_address_through_a_symlink_finds_the_process_bound_at_the_same_link(folder):
    real = os.path.join(folder, 'real')
    os.mkdir(real)
    os.symlink(real, os.path.join(folder, 'link'))
    address = os.path.join(folder, 'link', 'nydus.sock')
    with grpc_standin(address) as service:
        assert proxy.socket_owner(address) == (service.pid, 'containerd-nydus-grpc')


# ---------------------------------------------------------------- which sockets of /proc/net/unix count
def test_only_the_listening_socket_bound_to_the_address_counts(folder):
    wanted, inode = listening(os.path.join(folder, 'nydus.sock'))
    other, _other_inode = listening(os.path.join(folder, 'stargz.sock'))
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(os.path.join(folder, 'bound.sock'))  # bound, never listening: no server
    try:
        assert proxy._listening_inodes(os.path.join(folder, 'nydus.sock')) == {inode}
        assert proxy._listening_inodes(os.path.join(folder, 'bound.sock')) == set()
    finally:
        for sock in (wanted, other, bound):
            sock.close()


def test_a_socket_path_with_spaces_is_found(folder):
    os.mkdir(os.path.join(folder, 'with space'))
    address = os.path.join(folder, 'with space', 'nydus.sock')
    with grpc_standin(address) as service:
        assert proxy.socket_owner(address) == (service.pid, 'containerd-nydus-grpc')


def test_a_socket_name_that_is_not_utf_8_hides_no_other_socket(folder):
    odd, _odd_inode = listening(os.path.join(folder.encode(), b'odd-\xff.sock'))
    wanted, inode = listening(os.path.join(folder, 'nydus.sock'))
    try:
        assert proxy._listening_inodes(os.path.join(folder, 'nydus.sock')) == {inode}
    finally:
        odd.close()
        wanted.close()


# the one socket of a new network namespace is the first row below /proc/net/unix's header
FIRST_ROW = r'''
import json, os, socket, sys
sys.path.insert(0, sys.argv[2])
from ansible_collections.nodeguard.containerd.plugins.module_utils._readiness import proxy
sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
sock.bind(sys.argv[1])
sock.listen(1)
print(json.dumps([sorted(proxy._listening_inodes(sys.argv[1])), str(os.fstat(sock.fileno()).st_ino),
                  proxy.socket_owner(sys.argv[1])[0] == os.getpid()]))
'''


def test_the_first_socket_below_the_header_is_found(folder):
    address = os.path.join(folder, 'nydus.sock')
    argv = ['unshare', '--net'] + ([] if os.geteuid() == 0 else ['--map-root-user'])
    proc = subprocess.run(argv + [sys.executable, '-c', FIRST_ROW, address, COLLECTIONS_ROOT],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    inodes, inode, own = json.loads(proc.stdout)
    assert inodes == [inode] and own is True


# ---------------------------------------------------------------- a /proc that changes while it is read
def test_a_file_closed_while_the_fds_are_read_is_passed_over(folder):
    # os.listdir of /proc/<this pid>/fd lists the folder's own fd, gone when it is read: free the lowest fd
    # below the socket's, so that the transient entry comes before the socket
    hole = os.open(os.devnull, os.O_RDONLY)
    sock, _inode = listening(os.path.join(folder, 'nydus.sock'))
    os.close(hole)
    try:
        assert sock.fileno() > hole
        assert proxy.socket_owner(os.path.join(folder, 'nydus.sock'))[0] == os.getpid()
    finally:
        sock.close()


def test_a_holder_that_exits_before_its_command_line_is_read_is_passed_over(folder, monkeypatch):
    # two processes hold the listening socket (a child inherited it); the first one found exits between the
    # look at its fds and the read of its command line, a race no real setup gives on demand
    sock, _inode = listening(os.path.join(folder, 'nydus.sock'))
    child = subprocess.Popen(['sleep', '60'], pass_fds=[sock.fileno()])
    gone = []

    def open_after_exit(path, *args):
        if path.endswith('/cmdline') and not gone:
            gone.append(int(path.split('/')[2]))
            raise FileNotFoundError(2, 'No such file or directory', path)
        return open(path, *args)
    monkeypatch.setattr(proxy, 'open', open_after_exit, raising=False)
    try:
        owner = proxy.socket_owner(os.path.join(folder, 'nydus.sock'))
    finally:
        child.kill()
        child.wait()
        sock.close()
    assert gone and gone[0] in (os.getpid(), child.pid)
    left = child.pid if gone[0] == os.getpid() else os.getpid()
    assert owner[0] == left
    if left == child.pid:
        assert owner[1] == 'sleep'
