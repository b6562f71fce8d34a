"""Plain sockets against a coordinator process, and what that process holds (from /proc):
for the tests of the HTTP protocol's limits."""

from __future__ import annotations

import contextlib
import os
import socket
from pathlib import Path

from tests.process import Coordinator


def connect(c: Coordinator, receive_buffer: int | None = None) -> socket.socket:
    """A connection to ``c``; ``receive_buffer``: a small receive window, set before
    connecting, so that an answer the test does not read stays on the coordinator's side."""
    s = socket.socket()
    if receive_buffer is not None:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    s.settimeout(5)
    s.connect(("127.0.0.1", c.port))
    return s


def read_all(s: socket.socket) -> bytes:
    """Everything the coordinator sends until it closes (a reset ends it too)."""
    chunks = []
    try:
        while chunk := s.recv(65536):
            chunks.append(chunk)
    except ConnectionResetError:
        pass
    return b"".join(chunks)


def get(c: Coordinator, path: str) -> bytes:
    """``GET path`` on a connection of its own: the whole answer."""
    with connect(c) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n".encode())
        return read_all(s)


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sockets_held(pid: int) -> int:
    """How many sockets the process holds open (its connections, and a few of its own)."""
    held = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):  # closed while we looked
            held += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return held
