"""The send timeout's rule: a client that took some of its answer gets the time again, one
that took none is aborted (issue 26, item 7; the real thing in test_connection_room.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from leasehold.coordinator.server.connections import ConnectionLimits, GuardedHttpToolsProtocol


@dataclass
class Transport:
    unsent: list[int]  # what get_write_buffer_size answers, in turn
    aborted: bool = False

    def get_write_buffer_size(self) -> int:
        return self.unsent.pop(0)

    def abort(self) -> None:
        self.aborted = True


@dataclass
class Loop:
    timers: list[tuple[float, Callable[[], None]]] = field(default_factory=list)

    def call_later(self, delay: float, callback: Callable[[], None]) -> object:
        self.timers.append((delay, callback))
        return object()


class Connection:
    """The parts of the protocol the send timer reads, around its own methods."""

    limits = ConnectionLimits(send_timeout=2.0)

    def __init__(self, *unsent: int) -> None:
        self.transport = Transport(list(unsent))
        self.loop = Loop()
        self._send_timer: Any = None
        self._unsent = 0

    def _on_send_timeout(self) -> None:
        GuardedHttpToolsProtocol._on_send_timeout(self)  # type: ignore[arg-type]

    def pause_writing_started(self) -> None:
        # What pause_writing does after uvicorn's flow control has paused.
        self._unsent = self.transport.get_write_buffer_size()
        self._send_timer = self.loop.call_later(self.limits.send_timeout, self._on_send_timeout)

    def fire(self) -> None:
        _, callback = self.loop.timers[-1]
        callback()


def test_progress_restarts_the_time_and_none_aborts() -> None:
    """1,000 bytes unsent, then 600 (some taken: 2 s more), then 600 (none): aborted."""
    conn = Connection(1000, 600, 600)
    conn.pause_writing_started()
    conn.fire()
    assert not conn.transport.aborted
    assert [delay for delay, _ in conn.loop.timers] == [2.0, 2.0]
    conn.fire()
    assert conn.transport.aborted
    assert conn._send_timer is None


def test_an_answer_taken_whole_meanwhile_is_left_alone() -> None:
    """Nothing unsent when the time is up: nothing to do (writing resumes by itself)."""
    conn = Connection(1000, 0)
    conn.pause_writing_started()
    conn.fire()
    assert not conn.transport.aborted
    assert len(conn.loop.timers) == 1
