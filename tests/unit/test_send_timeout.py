"""The send timeout's rule: a client whose unsent answer changes keeps its time, one whose
answer has not moved for the timeout is aborted (issue 26, item 7; the real thing in
test_connection_room.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leasehold.coordinator.server.connections import ConnectionLimits, GuardedHttpToolsProtocol


@dataclass
class Transport:
    unsent: int = 0  # what get_write_buffer_size answers
    aborted: bool = False

    def get_write_buffer_size(self) -> int:
        return self.unsent

    def abort(self) -> None:
        self.aborted = True


class Connection:
    """The parts of the protocol the send timeout reads, around its own method."""

    limits = ConnectionLimits(send_timeout=2.0)

    def __init__(self) -> None:
        self.transport = Transport()
        self._unsent = 0
        self._unsent_since: Any = None

    def at(self, now: float, unsent: int) -> bool:
        """Look at ``now`` with ``unsent`` bytes waiting; whether it was aborted."""
        self.transport.unsent = unsent
        GuardedHttpToolsProtocol.check_sending(self, now)  # type: ignore[arg-type]
        return self.transport.aborted


def test_an_answer_that_does_not_move_for_the_timeout_is_aborted() -> None:
    conn = Connection()
    assert not conn.at(0.0, 0)  # nothing unsent: nothing to time
    assert not conn.at(1.0, 5000)  # the time starts
    assert not conn.at(2.5, 5000)
    assert conn.at(3.0, 5000)


def test_a_client_that_takes_some_keeps_its_time() -> None:
    """4,000 then 3,000 bytes unsent: the client took some, so 2 s more from then; an
    answer taken whole meanwhile stops the clock."""
    conn = Connection()
    assert not conn.at(0.0, 4000)
    assert not conn.at(1.9, 3000)
    assert not conn.at(3.5, 3000)
    assert not conn.at(3.8, 0)
    assert not conn.at(4.0, 3000)  # a new answer, its own time
    assert not conn.at(5.9, 3000)
    assert conn.at(6.0, 3000)
