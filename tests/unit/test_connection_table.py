"""The connection table: the connections waiting longest make room, per peer and in all,
and heads still arriving are bounded in total (issue 26, items 8 and 15)."""

from __future__ import annotations

import ipaddress

from leasehold.coordinator.server.table import ConnectionTable, peer_of


class Conn:
    """A connection as the table sees it: it can be shed, and its sending looked at."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.shed_count = 0
        self.looked_at: list[float] = []

    def shed(self) -> None:
        self.shed_count += 1

    def check_sending(self, now: float) -> None:
        self.looked_at.append(now)

    def __repr__(self) -> str:
        return self.name


def opened(table: ConnectionTable, peer: object, *names: str, waiting: bool = True) -> list[Conn]:
    conns = []
    for name in names:
        conn = Conn(name)
        assert table.admit(conn, peer)
        if waiting:
            table.waiting(conn)
        conns.append(conn)
    return conns


def test_the_connection_waiting_longest_makes_room() -> None:
    """Past the cap, the oldest waiting connection is shed; one being served is not, and
    once every connection is being served, a new one is refused."""
    table = ConnectionTable(max_connections=3, max_per_peer=0, max_head_bytes=1 << 20)
    a, b, c = opened(table, "p", "a", "b", "c")
    table.serving(a)  # a request arrived on a: it is no longer a candidate
    (d,) = opened(table, "q", "d")
    assert (a.shed_count, b.shed_count, c.shed_count) == (0, 1, 0)
    table.waiting(a)  # answered: a waits again, now the newest to
    opened(table, "q", "e")
    assert c.shed_count == 1 and a.shed_count == 0
    for conn in (a, d):
        table.serving(conn)
    table.gone(c)  # already counted out: a second report changes nothing
    assert table.open == 3
    (f,) = opened(table, "q", "f")  # sheds e, the last one waiting
    for conn in (f,):
        table.serving(conn)
    assert not table.admit(Conn("g"), "q")
    assert table.open == 3


def test_one_peer_makes_room_among_its_own_connections() -> None:
    """Past the cap per peer, that peer's oldest waiting connection is shed, not anyone
    else's; a peer whose connections are all being served is refused."""
    table = ConnectionTable(max_connections=100, max_per_peer=2, max_head_bytes=1 << 20)
    (other,) = opened(table, "other", "other")
    a, b = opened(table, "p", "a", "b")
    opened(table, "p", "c")
    assert (other.shed_count, a.shed_count, b.shed_count) == (0, 1, 0)
    assert table.open == 3
    table.serving(b)
    c_busy = opened(table, "p", "d")  # sheds c, the last one of p waiting
    table.serving(c_busy[0])
    assert not table.admit(Conn("e"), "p")
    assert opened(table, "new", "f")  # another peer has room


def test_a_peer_that_loses_its_only_connection_is_counted_afresh() -> None:
    """With a cap of one per peer, each new connection replaces the peer's last one."""
    table = ConnectionTable(max_connections=100, max_per_peer=1, max_head_bytes=1 << 20)
    conns = opened(table, "p", "a", "b", "c")
    assert [c.shed_count for c in conns] == [1, 1, 0]
    assert table.open == 1
    table.gone(conns[2])
    assert table.open == 0


def test_heads_past_the_total_shed_the_oldest_head() -> None:
    """Bytes of heads still arriving are bounded in total: the connection whose head began
    first is shed, and the one that grew is told when it is itself."""
    table = ConnectionTable(max_connections=100, max_per_peer=0, max_head_bytes=100)
    a, b, c = opened(table, "p", "a", "b", "c")
    assert table.head_grew(a, 40)
    assert table.head_grew(b, 40)
    table.head_done(b)  # b's head is whole: its bytes no longer count
    assert table.head_grew(c, 50)
    assert table.head_grew(c, 20)  # 40 + 70 > 100: a goes
    assert (a.shed_count, b.shed_count, c.shed_count) == (1, 0, 0)
    assert table.head_bytes == 70
    assert not table.head_grew(c, 40)  # c alone is over: c goes
    assert c.shed_count == 1 and table.head_bytes == 0 and table.open == 1


def test_a_sweep_looks_at_every_open_connection_once() -> None:
    """The send timeout is looked at on each connection counted in, not on one shed."""
    table = ConnectionTable(max_connections=2, max_per_peer=0, max_head_bytes=100)
    a, b, c = opened(table, "p", "a", "b", "c")  # a is shed for c
    table.sweep(7.0)
    assert (a.looked_at, b.looked_at, c.looked_at) == ([], [7.0], [7.0])


def test_peers_are_addresses_and_ipv6_slash_64s() -> None:
    """One host is one peer: an IPv4 address (also mapped into IPv6), an IPv6 /64."""
    v4 = peer_of(("192.0.2.7", 1234))
    assert v4 == ipaddress.ip_address("192.0.2.7")
    assert peer_of(("::ffff:192.0.2.7", 1, 0, 0)) == v4
    assert peer_of(("2001:db8:1:2::1", 1, 0, 0)) == peer_of(("2001:db8:1:2:ffff::9%eth0", 2, 0, 0))
    assert peer_of(("2001:db8:1:2::1", 1, 0, 0)) != peer_of(("2001:db8:1:3::1", 1, 0, 0))
    assert peer_of(None) is None and peer_of("/tmp/socket") is None
