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


class Served:
    """The live workers folded into sets, so that whether any of them takes a (queue, kind)
    costs a few set lookups instead of a pass over every worker: the kinds served in any
    queue, the queues served for any kind, and per queue the kinds the other workers take
    there (the last built only for the queues asked about)."""

    def __init__(self, live: Iterable[WorkerSeen]) -> None:
        beats = [w.beat for w in live]
        self.everything = any(b.kinds is None and b.queues is None for b in beats)
        self.anywhere = {
            k for b in beats if b.queues is None and b.kinds is not None for k in b.kinds
        }
        self.any_kind = {
            q for b in beats if b.kinds is None and b.queues is not None for q in b.queues
        }
        self._narrow: dict[str, list[frozenset[str]]] = {}  # queue -> each worker's kinds
        for b in beats:
            if b.kinds is not None and b.queues is not None:
                kinds = frozenset(b.kinds)
                for queue in b.queues:
                    self._narrow.setdefault(queue, []).append(kinds)
        self._served_in: dict[str, frozenset[str]] = {}

    def broadly(self, queue: str, kind: str) -> bool:
        """Served by a worker that takes everything, the kind anywhere, or the queue whole."""
        return self.everything or kind in self.anywhere or queue in self.any_kind

    def __call__(self, queue: str, kind: str) -> bool:
        """Whether some live worker takes jobs of ``kind`` from ``queue``."""
        if self.broadly(queue, kind):
            return True
        if queue not in self._served_in:
            self._served_in[queue] = frozenset().union(*self._narrow.get(queue, ()))
        return kind in self._served_in[queue]


def unserved(
    queued: Mapping[tuple[str, str], int],
    live: Iterable[WorkerSeen],
    limit: int = UNSERVED_LIMIT,
) -> list[Unserved]:
    """The ``limit`` largest (queue, kind) pairs with queued jobs and no live worker serving
    them, by queue and kind.

    Its cost is bounded whatever the inputs (caps allow 100,000 queued pairs, and workers
    each declaring 100 kinds and 100 queues): the workers are folded first (``Served``), so
    each pair costs a few set lookups.

    A worker that never sends heartbeats (a client of the HTTP protocol of its own) is not
    known here: its kinds are reported as unserved even while it leases them.
    """
    served = Served(live)
    if served.everything:
        return []  # a worker takes anything
    candidates = [
        (n, queue, kind)
        for (queue, kind), n in queued.items()
        if n > 0 and not served.broadly(queue, kind)
    ]
    found: list[Unserved] = []
    for n, queue, kind in sorted(candidates, reverse=True):
        if len(found) == limit:
            break
        if not served(queue, kind):
            found.append(Unserved(queue, kind, n))
    return sorted(found, key=lambda u: (u.queue, u.kind))
