"""PostgreSQL's schema statements (``driver.Tx``'s schema part): the record of
migrations applied, the floor, and the lease-token sequence's floor."""

from __future__ import annotations

import asyncpg

from leasehold.coordinator.store.migrations import Migration
from leasehold.coordinator.store.schema import Applied, Floor, SchemaRecord

_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY,"
    " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    # One row: the lowest version a coordinator must know to serve this database.
    "CREATE TABLE IF NOT EXISTS schema_floor (id integer PRIMARY KEY CHECK (id = 1),"
    " version integer NOT NULL, raised_at timestamptz)",
)


def session_name(version: str, knows: int) -> str:
    """The ``application_name`` of a coordinator's sessions: its release, and the schema
    version it knows, so that a newer one sees who must go first (and an operator, in
    ``pg_stat_activity``, which release holds which connection)."""
    return f"leasehold {version} schema {knows}"


class PgSchema:
    """The schema's statements of ``PgTx`` (a mixin: it needs only ``conn``)."""

    conn: asyncpg.Connection

    async def schema_read(self) -> SchemaRecord:
        exists = await self.conn.fetchrow(
            "SELECT to_regclass('schema_migrations') IS NOT NULL AS applied,"
            " to_regclass('schema_floor') IS NOT NULL AS floor"
        )
        applied: tuple[Applied, ...] = ()
        if exists["applied"]:
            rows = await self.conn.fetch(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            )
            applied = tuple(Applied(r["version"], r["name"], r["applied_at"]) for r in rows)
        floor = None
        if exists["floor"]:
            row = await self.conn.fetchrow("SELECT version, raised_at FROM schema_floor")
            floor = Floor(row["version"], row["raised_at"]) if row else None
        return SchemaRecord(applied, floor)

    async def schema_prepare(self) -> None:
        for statement in _TABLES:
            await self.conn.execute(statement)

    async def migration_apply(self, migration: Migration) -> None:
        await self.conn.execute(migration.sql)  # no arguments: run as one script
        await self.conn.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            migration.version,
            migration.name,
        )

    async def schema_floor_set(self, floor: Floor) -> None:
        await self.conn.execute(
            "INSERT INTO schema_floor (id, version, raised_at) VALUES (1, $1, $2)"
            " ON CONFLICT (id) DO UPDATE SET version = excluded.version,"
            " raised_at = excluded.raised_at",
            floor.version,
            floor.raised_at,
        )

    async def coordinators_below(self, version: int) -> int:
        count: int = await self.conn.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND application_name ~ '^leasehold .* schema [0-9]+$'"
            " AND substring(application_name from ' schema ([0-9]+)$')::integer < $1",
            version,
        )
        return count

    async def tokens_raise(self, first: int) -> None:
        # Only ever up: a sequence already past the floor (another coordinator's start, a
        # burst of leases) keeps its place. setval(..., false): the next nextval is `first`.
        # Another coordinator's nextval between the read and the setval could only get a
        # token below `first` while the sequence is within those few of it, which takes a
        # million leases a second (DESIGN.md §4).
        await self.conn.execute(
            "SELECT setval('lease_tokens', $1, false) FROM lease_tokens WHERE last_value < $1",
            first,
        )
