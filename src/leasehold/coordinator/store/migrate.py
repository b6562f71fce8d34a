"""The schema's operations, once for every backend (DESIGN.md §24).

``open_schema`` runs at every open, in the driver's migration transaction (one migrator
at a time): it refuses a schema newer than this release, applies each migration not yet
applied, in order, each recorded in the same transaction as its change, moves the floor,
and raises the lease-token sequence to the time-derived floor (DESIGN.md §4). ``read``
only looks.
"""

from __future__ import annotations

from leasehold.coordinator.store.driver import Tx
from leasehold.coordinator.store.migrations import migrations
from leasehold.coordinator.store.schema import Floor, SchemaReport, SchemaState, token_floor
from leasehold.errors import SchemaTooNew


def knows(dialect: str) -> int:
    """The highest schema version this release knows."""
    return max(m.version for m in migrations(dialect))


async def read(tx: Tx, dialect: str) -> SchemaState:
    """The database's schema against this release's migrations; changes nothing."""
    return SchemaState(tuple(migrations(dialect)), await tx.schema_read())


async def open_schema(tx: Tx, dialect: str) -> SchemaReport:
    state = await read(tx, dialect)
    problem = state.too_new()
    if problem is not None:
        raise SchemaTooNew(problem)
    await tx.schema_prepare()
    for migration in state.pending:
        await tx.migration_apply(migration)
    now = await tx.now()
    version, raised = state.floor_after(state.pending)
    previous = state.record.floor
    floor = Floor(version, now if raised else previous.raised_at if previous else None)
    if floor != previous:
        await tx.schema_floor_set(floor)
    tokens_from = token_floor(now)
    await tx.tokens_raise(tokens_from)
    return SchemaReport(
        version=max(state.version, state.knows),
        knows=state.knows,
        applied=tuple(m.label for m in state.pending),
        floor=floor,
        now=now,
        tokens_from=tokens_from,
    )
