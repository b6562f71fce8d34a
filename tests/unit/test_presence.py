"""Which queued work no live worker serves: right, and bounded whatever the inputs."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from leasehold.coordinator.rules.presence import UNSERVED_LIMIT, unserved
from leasehold.coordinator.store.contract import WorkerBeat, WorkerSeen

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def worker(n: int, kinds: tuple[str, ...] | None, queues: tuple[str, ...] | None) -> WorkerSeen:
    return WorkerSeen(WorkerBeat(f"w{n}", "h", n, "1", kinds, queues, 1, NOW), NOW)


def test_the_largest_unserved_pairs_are_named_whoever_serves_the_rest() -> None:
    queued = {("q", f"k{i}"): i for i in range(1, 301)} | {("p", "k1"): 5}
    live = [
        worker(1, ("k300", "k299"), None),  # these two in any queue
        worker(2, None, ("p",)),  # anything in p
        worker(3, ("k298",), ("q",)),  # one kind in one queue
    ]
    found = unserved(queued, live)
    assert len(found) == UNSERVED_LIMIT
    assert {u.kind for u in found} == {f"k{i}" for i in range(198, 298)}
    assert unserved(queued, [*live, worker(4, None, None)]) == []


def test_the_cost_is_bounded_at_the_caps() -> None:
    """100,000 queued pairs and 1,000 live workers each naming 100 kinds and 100 queues
    (none of them the queued ones): a bounded pass, where checking each pair against each
    worker took minutes. The bound below is generous: it only tells the two apart."""
    queued = {(f"q{q}", f"k{k}"): 1 + (q * 1000 + k) % 97 for q in range(100) for k in range(1000)}
    queues = tuple(f"q{q}" for q in range(100))
    live = [worker(n, tuple(f"x{n}-{k}" for k in range(100)), queues) for n in range(1000)]
    started = time.process_time()
    found = unserved(queued, live)
    assert len(found) == UNSERVED_LIMIT
    assert time.process_time() - started < 10
