"""What the coordinator's connections hold together, and who makes room when it is full.

Each connection's own limits (``connections.py``) bound what one socket takes; this table
bounds what they take together: how many are open (``max_connections``), how many one peer
holds (``max_per_peer``; a peer is an IPv4 address or an IPv6 /64, what one host is usually
given), and how many bytes of request heads still arriving they hold (``max_head_bytes``).

When a limit is reached, the table closes the connections that wait longest for a request
(accepted and silent, a head still trickling in, or idle after an answer), oldest first: a
client that means to be served sends its request as soon as it connects, so the newest
connection is nearly always one, and a socket held open without a request is nearly always
not. A new connection is refused (``admit`` says False) only when every connection in its
way has a request in progress. Thus silent sockets that reconnect as fast as they are
closed cannot keep other clients out, as they did under a 1,024-file limit, and the file
limit itself is never reached by connections: libuv then drops new ones unseen.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Final, Protocol

import structlog

log = structlog.get_logger("leasehold")

# Connections shed or refused are logged at most this often, with their numbers by reason
# since the last line: a flood of silent sockets must not become a flood of log lines.
_LOG_EVERY_SECONDS: Final = 1.0


class Connection(Hashable, Protocol):
    """What the table asks of a connection."""

    def shed(self) -> None:
        """Close at once, without an answer: the table needs the room."""

    def check_sending(self, now: float) -> None:
        """Close the connection if its client has taken none of its answer for too long."""


def peer_of(peername: object) -> Hashable:
    """Whose a connection is: its IPv4 address, or its IPv6 address's /64 (an IPv4 address
    mapped into IPv6 is the IPv4 address); anything else (a Unix socket) is one peer."""
    if not isinstance(peername, tuple) or not peername or not isinstance(peername[0], str):
        return None
    try:
        address = ipaddress.ip_address(peername[0].split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        return ipaddress.IPv6Network((address, 64), strict=False)
    return address


@dataclass(slots=True)
class _Peer:
    key: Hashable
    open: int = 0
    waiting: dict[Connection, None] = field(default_factory=dict)  # oldest wait first


class ConnectionTable:
    """The shared state of one server's connections (see the module docstring). Its
    methods are called by each connection, on the event loop, as its state changes."""

    def __init__(self, max_connections: int, max_per_peer: int, max_head_bytes: int) -> None:
        self.max_connections = max_connections
        self.max_per_peer = max_per_peer  # 0: no cap
        self.max_head_bytes = max_head_bytes
        self.open = 0
        self.head_bytes = 0
        self._peers: dict[Hashable, _Peer] = {}
        self._peer_of: dict[Connection, _Peer] = {}
        self._waiting: dict[Connection, None] = {}  # oldest wait first
        self._heads: dict[Connection, int] = {}  # oldest head first
        self._shed: dict[str, int] = {}
        self._logged_at = float("-inf")

    def admit(self, conn: Connection, peer: Hashable) -> bool:
        """Count a new connection in, closing older waiting ones to make room; False: no
        room could be made (every connection in the way has a request in progress), and
        ``conn`` is not counted."""
        state = self._peers.get(peer) or _Peer(peer)
        if (
            self.max_per_peer
            and state.open >= self.max_per_peer
            and not self._shed_oldest(state.waiting, "connections_per_peer")
        ) or (
            self.open >= self.max_connections
            and not self._shed_oldest(self._waiting, "connections")
        ):
            self._count("refused")
            return False
        self._peers[peer] = state  # again: shedding its last connection took it out
        state.open += 1
        self.open += 1
        self._peer_of[conn] = state
        return True

    def waiting(self, conn: Connection) -> None:
        """``conn`` now waits for a request (it is the newest to)."""
        state = self._peer_of.get(conn)
        if state is not None:
            self._waiting.pop(conn, None)
            self._waiting[conn] = None
            state.waiting.pop(conn, None)
            state.waiting[conn] = None

    def serving(self, conn: Connection) -> None:
        """``conn``'s request has arrived whole: it is being served."""
        self._waiting.pop(conn, None)
        state = self._peer_of.get(conn)
        if state is not None:
            state.waiting.pop(conn, None)

    def head_grew(self, conn: Connection, size: int) -> bool:
        """``conn`` holds ``size`` more bytes of a head not yet whole; past the total, the
        oldest heads are shed until it is under again. False: ``conn`` itself was."""
        if conn not in self._peer_of:
            return True
        self._heads[conn] = self._heads.get(conn, 0) + size
        self.head_bytes += size
        while self.head_bytes > self.max_head_bytes:
            oldest = next(iter(self._heads))
            self._drop(oldest, "header_bytes")
            if oldest is conn:
                return False
        return True

    def head_done(self, conn: Connection) -> None:
        """``conn``'s head is whole, or was refused: its bytes no longer count."""
        self.head_bytes -= self._heads.pop(conn, 0)

    def gone(self, conn: Connection) -> None:
        """``conn`` is closed (whoever closed it)."""
        self.head_done(conn)
        self.serving(conn)
        state = self._peer_of.pop(conn, None)
        if state is not None:
            state.open -= 1
            self.open -= 1
            if not state.open:
                self._peers.pop(state.key, None)

    def sweep(self, now: float) -> None:
        """Look at what each connection has not sent yet (the send timeout)."""
        for conn in list(self._peer_of):
            conn.check_sending(now)

    def _shed_oldest(self, waiting: dict[Connection, None], reason: str) -> bool:
        if not waiting:
            return False
        self._drop(next(iter(waiting)), reason)
        return True

    def _drop(self, conn: Connection, reason: str) -> None:
        """Close ``conn`` for ``reason``, and count it out at once: it may be a while
        before its transport reports it lost."""
        self.gone(conn)
        conn.shed()
        self._count(reason)

    def _count(self, reason: str) -> None:
        self._shed[reason] = self._shed.get(reason, 0) + 1
        now = time.monotonic()
        if now - self._logged_at >= _LOG_EVERY_SECONDS:
            self._logged_at = now
            log.info("http.connections_shed", open=self.open, **self._shed)
            self._shed = {}
