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


UNSERVED_LIMIT = 100
"""The queued (queue, kind) pairs /stats names as unserved, at most: the largest."""


def serves(beat: WorkerBeat, queue: str, kind: str) -> bool:
    """Whether the worker leases jobs of this kind from this queue (None: any)."""
    return (beat.kinds is None or kind in beat.kinds) and (
        beat.queues is None or queue in beat.queues
    )


def unserved(
    queued: Mapping[tuple[str, str], int],
    live: Iterable[WorkerSeen],
    limit: int = UNSERVED_LIMIT,
) -> list[Unserved]:
    """The ``limit`` largest (queue, kind) pairs with queued jobs and no live worker serving
    them, by queue and kind.

    Its cost is bounded whatever the inputs (caps allow 100,000 queued pairs, and workers
    each declaring 100 kinds and 100 queues): the workers are folded into sets first (the
    kinds served in any queue, the queues served for any kind, and per queue the kinds the
    other workers take there, built only for the queues asked about), so each pair costs a
    few set lookups instead of a pass over every worker.

    A worker that never sends heartbeats (a client of the HTTP protocol of its own) is not
    known here: its kinds are reported as unserved even while it leases them.
    """
    beats = [w.beat for w in live]
    if any(b.kinds is None and b.queues is None for b in beats):
        return []  # a worker takes anything
    anywhere = {k for b in beats if b.queues is None and b.kinds is not None for k in b.kinds}
    any_kind = {q for b in beats if b.kinds is None and b.queues is not None for q in b.queues}
    narrow: dict[str, list[frozenset[str]]] = {}  # queue -> the kinds each worker takes there
    for b in beats:
        if b.kinds is not None and b.queues is not None:
            kinds = frozenset(b.kinds)
            for queue in b.queues:
                narrow.setdefault(queue, []).append(kinds)
    served_in: dict[str, frozenset[str]] = {}

    def served(queue: str, kind: str) -> bool:
        if queue not in served_in:
            served_in[queue] = frozenset().union(*narrow.get(queue, ()))
        return kind in served_in[queue]

    candidates = [
        (n, queue, kind)
        for (queue, kind), n in queued.items()
        if n > 0 and kind not in anywhere and queue not in any_kind
    ]
    found: list[Unserved] = []
    for n, queue, kind in sorted(candidates, reverse=True):
        if len(found) == limit:
            break
        if not served(queue, kind):
            found.append(Unserved(queue, kind, n))
    return sorted(found, key=lambda u: (u.queue, u.kind))
