"""Worker presence: when a worker counts as live, and which queued work no live worker
serves. Pure rules; the heartbeats themselves are stored by the Store."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from leasehold.coordinator.store.contract import WorkerBeat, WorkerSeen
from leasehold.model import BEAT_SECONDS

LIVE_SECONDS = 3 * BEAT_SECONDS
"""A worker seen within this long is live: two lost beats in a row are not a death."""
KEEP_GONE_SECONDS = 3600.0
"""A worker not seen for this long is forgotten (until then it is listed as gone)."""


@dataclass(frozen=True, slots=True)
class Unserved:
    """Queued jobs of a kind in a queue that no live worker takes."""

    queue: str
    kind: str
    queued: int


def serves(beat: WorkerBeat, queue: str, kind: str) -> bool:
    """Whether the worker leases jobs of this kind from this queue (None: any)."""
    return (beat.kinds is None or kind in beat.kinds) and (
        beat.queues is None or queue in beat.queues
    )


def unserved(queued: Mapping[tuple[str, str], int], live: Iterable[WorkerSeen]) -> list[Unserved]:
    """Every (queue, kind) with queued jobs and no live worker serving it, by queue and kind.

    A worker that never sends heartbeats (a client of the HTTP protocol of its own) is not
    known here: its kinds are reported as unserved even while it leases them.
    """
    beats = [w.beat for w in live]
    return [
        Unserved(queue, kind, n)
        for (queue, kind), n in sorted(queued.items())
        if n > 0 and not any(serves(b, queue, kind) for b in beats)
    ]
