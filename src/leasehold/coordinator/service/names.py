"""Caps on how many distinct kinds and queues the coordinator accepts (DESIGN.md §10).

Every distinct kind or queue costs for good: rows of counts and rollups, entries in /stats,
Prometheus series, a probe in limited leases. Kinds built from tenant or user ids would
grow them without bound, without any malice. So a job whose kind (or queue) would be one
more than the cap allows is refused (422 ``too_many_names``); names already known are
always accepted.

Known means: the name of a job in the database when the coordinator last read them, or
accepted since. A name whose jobs are all gone (deleted, or pruned by retention) frees its
place: a name that would pass a cap makes the coordinator read the names again first (at
most once a second, so refusals cost no query each), so a cap used up by one producer's
burst does not stay used up once its jobs are gone. Several coordinators may each accept a
few new names at the same moment, so the cap can be passed by a handful; it bounds growth,
it is not a quota.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from leasehold.errors import TooManyNames
from leasehold.model import MAX_GROUPS, MAX_KINDS, MAX_QUEUES

RELOAD_SECONDS: Final = 1.0
"""At most one read of the names from the database this often, when a cap is reached."""


class NameCaps:
    """The known kinds and queues, and the caps on how many there may be."""

    def __init__(
        self,
        load: Callable[[], Awaitable[tuple[set[str], set[str]]]],
        max_kinds: int = MAX_KINDS,
        max_queues: int = MAX_QUEUES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._load = load
        self.max_kinds = max_kinds
        self.max_queues = max_queues
        self._clock = clock
        self._kinds: set[str] | None = None
        self._queues: set[str] = set()
        self._loaded_at = float("-inf")
        self._loading = asyncio.Lock()

    async def admit(self, kinds: Sequence[str], queues: Sequence[str]) -> None:
        """Accept these names, or raise TooManyNames (then none of them is added)."""
        if self._over(*await self._known(), kinds, queues) is not None:
            # Names may have freed their places since the last read: read them again.
            await self._reload()
        known_kinds, known_queues = await self._known()
        if refusal := self._over(known_kinds, known_queues, kinds, queues):
            raise refusal
        known_kinds.update(kinds)
        known_queues.update(queues)

    def _over(
        self,
        known_kinds: set[str],
        known_queues: set[str],
        kinds: Sequence[str],
        queues: Sequence[str],
    ) -> TooManyNames | None:
        """The refusal, if these names would pass a cap."""
        new_kinds = set(kinds) - known_kinds
        new_queues = set(queues) - known_queues
        if new_kinds and len(known_kinds) + len(new_kinds) > self.max_kinds:
            return TooManyNames(
                f"the coordinator has {len(known_kinds)} distinct kinds and accepts at most"
                f" {self.max_kinds} (--max-kinds): use a known kind, or put the variable part"
                " in the payload"
            )
        if new_queues and len(known_queues) + len(new_queues) > self.max_queues:
            return TooManyNames(
                f"the coordinator has {len(known_queues)} distinct queues and accepts at most"
                f" {self.max_queues} (--max-queues): use a known queue"
            )
        return None

    async def _known(self) -> tuple[set[str], set[str]]:
        if self._kinds is None:
            await self._reload()
        assert self._kinds is not None
        return self._kinds, self._queues

    async def _reload(self) -> None:
        async with self._loading:
            if self._clock() - self._loaded_at < RELOAD_SECONDS:
                return  # read a moment ago (by this caller or another)
            self._kinds, self._queues = await self._load()
            self._loaded_at = self._clock()


class GroupCap:
    """The cap on distinct group keys (DESIGN.md §19): a job of a group the database does
    not know, past ``max_groups`` of them, is refused (422 ``too_many_names``).

    Group keys are as many as a producer's tenants, so they are not held in memory: the
    number known is read at most once a second, and only an admission that would pass the
    cap asks which of its groups are new. Like the names' caps, it bounds growth (several
    coordinators may each add a few at the same moment), it is not a quota.
    """

    def __init__(
        self,
        count: Callable[[], Awaitable[int]],
        known: Callable[[Sequence[tuple[str, str]]], Awaitable[set[tuple[str, str]]]],
        max_groups: int = MAX_GROUPS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._count = count
        self._known = known
        self.max_groups = max_groups
        self._clock = clock
        self._counted: int | None = None
        self._counted_at = float("-inf")

    async def admit(self, groups: Sequence[tuple[str, str]]) -> None:
        """Accept jobs of these (kind, group key) pairs, or raise TooManyNames."""
        if not groups:
            return
        wanted = set(groups)
        if self._counted is None or self._clock() - self._counted_at >= RELOAD_SECONDS:
            self._counted, self._counted_at = await self._count(), self._clock()
        if self._counted + len(wanted) <= self.max_groups:
            return
        new = wanted - await self._known(sorted(wanted))
        if new and self._counted + len(new) > self.max_groups:
            raise TooManyNames(
                f"the coordinator has {self._counted} distinct group keys and accepts at most"
                f" {self.max_groups} (--max-groups)"
            )
        self._counted += len(new)
