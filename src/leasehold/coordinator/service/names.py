"""Caps on how many distinct kinds and queues the coordinator accepts (DESIGN.md §10).

Every distinct kind or queue costs for good: rows of counts and rollups, entries in /stats,
Prometheus series, a probe in limited leases. Kinds built from tenant or user ids would
grow them without bound, without any malice. So a job whose kind (or queue) would be one
more than the cap allows is refused (422 ``too_many_names``); names already known are
always accepted.

Known means: present in the database's job counts when the coordinator first needed to
know (counts are kept at zero, so every name ever used), or accepted since. Several
coordinators may each accept a few new names at the same moment, so the cap can be passed
by a handful; it bounds growth, it is not a quota.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from leasehold.errors import TooManyNames
from leasehold.model import MAX_KINDS, MAX_QUEUES


class NameCaps:
    """The known kinds and queues, and the caps on how many there may be."""

    def __init__(
        self,
        load: Callable[[], Awaitable[tuple[set[str], set[str]]]],
        max_kinds: int = MAX_KINDS,
        max_queues: int = MAX_QUEUES,
    ) -> None:
        self._load = load
        self.max_kinds = max_kinds
        self.max_queues = max_queues
        self._kinds: set[str] | None = None
        self._queues: set[str] = set()
        self._loading = asyncio.Lock()

    async def admit(self, kinds: Sequence[str], queues: Sequence[str]) -> None:
        """Accept these names, or raise TooManyNames (then none of them is added)."""
        known_kinds, known_queues = await self._known()
        new_kinds = set(kinds) - known_kinds
        new_queues = set(queues) - known_queues
        if new_kinds and len(known_kinds) + len(new_kinds) > self.max_kinds:
            raise TooManyNames(
                f"the coordinator has {len(known_kinds)} distinct kinds and accepts at most"
                f" {self.max_kinds} (--max-kinds): use a known kind, or put the variable part"
                " in the payload"
            )
        if new_queues and len(known_queues) + len(new_queues) > self.max_queues:
            raise TooManyNames(
                f"the coordinator has {len(known_queues)} distinct queues and accepts at most"
                f" {self.max_queues} (--max-queues): use a known queue"
            )
        known_kinds |= new_kinds
        known_queues |= new_queues

    async def _known(self) -> tuple[set[str], set[str]]:
        if self._kinds is not None:
            return self._kinds, self._queues
        async with self._loading:
            if self._kinds is None:
                self._kinds, self._queues = await self._load()
        return self._kinds, self._queues
