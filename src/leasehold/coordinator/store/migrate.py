"""Running the schema's migrations, once for every backend: in the driver's migration
transaction (one migrator at a time), each version not yet applied, in order, recorded in
the same transaction as its change."""

from __future__ import annotations

from leasehold.coordinator.store.driver import Tx
from leasehold.coordinator.store.migrations import migrations


async def migrate(tx: Tx, dialect: str) -> None:
    applied = await tx.migrations_applied()
    for migration in migrations(dialect):
        if migration.version not in applied:
            await tx.migration_apply(migration)
