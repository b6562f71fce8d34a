"""Binding the coordinator's address before anything else starts.

uvicorn binds its own sockets and, when the address is taken, logs one of its own lines and
exits 3 ("the application did not start"). The coordinator binds them itself, the way
asyncio's ``create_server`` does (every address the host name resolves to), and hands them
to uvicorn: a port in use is then one line of ours and exit 1, as ``--help`` says, before
the database is opened or migrated.
"""

from __future__ import annotations

import errno
import socket
from typing import Final

from leasehold.coordinator.startup import EXIT_LISTEN_FAILED, StartupError


def bind(host: str, port: int) -> list[socket.socket]:
    """Sockets bound (not yet listening) to every address of ``host`` on ``port``; a
    ``StartupError`` (exit 1) naming the address and the reason when one cannot be."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError as exc:  # an unknown host name
        raise _cannot_listen(where, exc) from None
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):  # each address once
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:  # as asyncio: "::" does not take IPv4's port too
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
    except OSError as exc:
        for sock in bound:
            sock.close()
        raise _cannot_listen(where, exc) from None
    return bound


_HINTS: Final = {
    errno.EADDRINUSE: "another process listens there: stop it, or choose another --port",
    errno.EACCES: "ports below 1024 need privileges: choose another --port",
    errno.EADDRNOTAVAIL: "no interface of this machine has that address: check --host",
}


def _cannot_listen(where: str, exc: OSError) -> StartupError:
    reason = (exc.strerror or str(exc)).lower()
    hint = _HINTS.get(exc.errno or 0)
    more = f" ({hint})" if hint else ""
    return StartupError(f"could not listen on {where}: {reason}{more}", EXIT_LISTEN_FAILED)
