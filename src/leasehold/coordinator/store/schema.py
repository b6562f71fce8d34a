"""The schema's state: what the database records, what this release knows, and what
follows from the two (DESIGN.md §24).

- The **version** of a database is its highest migration applied. A coordinator refuses a
  database whose version is newer than the migrations it knows (``too_new``).
- The **floor** is the lowest version a coordinator must know to serve the database. It
  rises with each migration applied that does not declare itself compatible with older
  coordinators (``migrations.COMPATIBLE_MARK``); a running coordinator that finds it above
  what it knows stops taking work (``maintenance/schema_watch.py``).
- The **token floor**: at every open the lease-token sequence is raised to at least the
  current time in microseconds since the epoch, so that a database restored from a backup
  never hands out a token it handed out before (DESIGN.md §4).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from leasehold.coordinator.store.migrations import Migration

WATCH_SECONDS: Final = 1.0
"""How often a serving coordinator reads the floor (``maintenance/schema_watch.py``)."""
SETTLE_SECONDS: Final = 3 * WATCH_SECONDS
"""How long after raising the floor a coordinator waits before it serves: by then every
older coordinator has seen it and stopped taking work."""

TOKENS_PER_SECOND: Final = 1_000_000
"""The token floor's unit: a microsecond. Tokens stay below it while fewer leases than
this are granted per second, and below 2^53 (exact in a JSON double) until the year 2255."""


def token_floor(now: datetime) -> int:
    """The lowest lease token a coordinator opening the database at ``now`` may hand out."""
    return int(now.timestamp() * TOKENS_PER_SECOND)


@dataclass(frozen=True, slots=True)
class Applied:
    """A migration the database records as applied."""

    version: int
    name: str
    applied_at: datetime | None

    @property
    def label(self) -> str:
        return f"{self.version:03d}_{self.name}"


@dataclass(frozen=True, slots=True)
class Floor:
    """The lowest schema version a coordinator must know to serve the database, and when a
    migration last raised it (None: never, since it was first recorded)."""

    version: int
    raised_at: datetime | None


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    """What the database records about its schema (nothing, for a new database)."""

    applied: tuple[Applied, ...]
    floor: Floor | None


@dataclass(frozen=True, slots=True)
class SchemaState:
    """A database's record set against the migrations this release knows."""

    known: tuple[Migration, ...]
    record: SchemaRecord

    @property
    def version(self) -> int:
        """The database's version: its highest migration applied (0 for a new one)."""
        return max((a.version for a in self.record.applied), default=0)

    @property
    def knows(self) -> int:
        """The highest version this release knows."""
        return max((m.version for m in self.known), default=0)

    @property
    def pending(self) -> tuple[Migration, ...]:
        done = {a.version for a in self.record.applied}
        return tuple(m for m in self.known if m.version not in done)

    @property
    def unknown(self) -> tuple[Applied, ...]:
        """Migrations applied that this release does not know (a newer release's)."""
        known = {m.version for m in self.known}
        return tuple(a for a in self.record.applied if a.version not in known)

    def too_new(self) -> str | None:
        """Why this release must not serve the database, or None."""
        if self.version <= self.knows:
            return None
        newer = ", ".join(a.label for a in self.unknown if a.version > self.knows)
        return (
            f"the database's schema is at version {self.version}, newer than this release"
            f" knows ({self.knows}; not known: {newer}): run a release that knows it"
        )

    def floor_after(self, applying: Sequence[Migration]) -> tuple[int, bool]:
        """The floor once ``applying`` is applied, and whether that raises a floor already
        recorded. A database that records none (made before floors were kept) counts every
        migration it has as one an older coordinator cannot serve."""
        current = self.record.floor
        floor = current.version if current is not None else self.version
        for migration in applying:
            if not migration.compatible:
                floor = max(floor, migration.version)
        return floor, current is not None and floor > current.version

    def superseded(self) -> str | None:
        """Why a running coordinator of this release must stop serving, or None."""
        floor = self.record.floor
        if floor is None or floor.version <= self.knows:
            return None
        return (
            f"a newer release migrated the database to schema version {self.version}, which"
            f" coordinators must know up to {floor.version} to serve; this release knows"
            f" {self.knows}: upgrade it"
        )


@dataclass(frozen=True, slots=True)
class SchemaReport:
    """What opening the database did: the version it is at, the migrations this open
    applied, the floor, and the first lease token it may hand out."""

    version: int
    knows: int
    applied: tuple[str, ...]
    floor: Floor
    now: datetime
    tokens_from: int

    def settle_seconds(self, grace: float) -> float:
        """How much longer to wait before serving, so that coordinators of older releases
        have seen a floor raised less than ``grace`` seconds ago and stopped."""
        if self.floor.raised_at is None:
            return 0.0
        return max(0.0, grace - (self.now - self.floor.raised_at).total_seconds())
