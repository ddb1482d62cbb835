# -*- coding: utf-8 -*-
"""Servers on Unix sockets for the proxy plugin checks: one that answers a single reply, and a stand-in gRPC
service in its own process under the program name the check expects (containerd-nydus-grpc)."""

import contextlib
import os
import socket
import subprocess
import sys
import threading

from helpers.readiness import socket_folder

# an empty HTTP/2 SETTINGS frame: the first thing a gRPC server sends
SETTINGS = b'\x00\x00\x00\x04\x00\x00\x00\x00\x00'

# the stand-in service: binds argv[1] (relative to its working folder when it is relative), says ready, and
# answers each connection's preface with a SETTINGS frame
STANDIN = r'''
import socket, sys
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(4)
sys.stdout.write('ready\n')
sys.stdout.flush()
while True:
    conn = srv.accept()[0]
    conn.recv(64)
    conn.sendall(%r)
    conn.close()
''' % SETTINGS


@contextlib.contextmanager
def short_folder():
    """A new folder for sockets (a Unix socket's path must be short), removed with what is left in it."""
    path = socket_folder('ng-proxy-')
    try:
        yield path
    finally:
        subprocess.run(['rm', '-rf', path], check=False)


def answering(path, reply):
    """A Unix socket server in this process: reads what one client sends, answers reply and hangs up."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def answer():
        conn = srv.accept()[0]
        conn.recv(64)
        conn.sendall(reply)
        conn.close()
    threading.Thread(target=answer, daemon=True).start()
    return srv


@contextlib.contextmanager
def grpc_standin(path, program='containerd-nydus-grpc', cwd=None):
    """The stand-in service as its own process, argv[0] program, listening on path; yields the process."""
    proc = subprocess.Popen([program, '-c', STANDIN, path], executable=sys.executable, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if proc.stdout.readline() != b'ready\n':
            proc.wait(10)
            raise AssertionError('the stand-in did not start: %s' % proc.stderr.read().decode('utf-8', 'replace'))
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
        target = os.path.join(cwd or '', path)
        if os.path.exists(target):
            os.unlink(target)
