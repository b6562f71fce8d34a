"""SQLite's schema statements (``driver.Tx``'s schema part): the record of migrations
applied, the floor, and the lease-token counter's floor."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from leasehold.coordinator.store.migrations import Migration
from leasehold.coordinator.store.schema import Applied, Floor, SchemaRecord

_TABLES = (
    "CREATE TABLE IF NOT EXISTS schema_migrations"
    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)",
    # One row: the lowest version a coordinator must know to serve this database.
    "CREATE TABLE IF NOT EXISTS schema_floor"
    " (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL, raised_at REAL)",
)


def _time(stamp: float | None) -> datetime | None:
    return None if stamp is None else datetime.fromtimestamp(float(stamp), UTC)


class SqliteSchema:
    """The schema's statements of ``SqliteTx`` (a mixin: it needs only ``conn``)."""

    conn: sqlite3.Connection

    async def schema_read(self) -> SchemaRecord:
        tables = {
            name
            for (name,) in self.conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
                " AND name IN ('schema_migrations', 'schema_floor')"
            )
        }
        applied: tuple[Applied, ...] = ()
        if "schema_migrations" in tables:
            rows = self.conn.execute(
                "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
            )
            applied = tuple(Applied(v, name, _time(at)) for v, name, at in rows)
        floor = None
        if "schema_floor" in tables:
            row = self.conn.execute("SELECT version, raised_at FROM schema_floor").fetchone()
            floor = Floor(row[0], _time(row[1])) if row else None
        return SchemaRecord(applied, floor)

    async def schema_prepare(self) -> None:
        for statement in _TABLES:
            self.conn.execute(statement)

    async def migration_apply(self, migration: Migration) -> None:
        for statement in statements(migration.sql):
            self.conn.execute(statement)
        self.conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, strftime('%s', 'now'))",
            (migration.version, migration.name),
        )

    async def schema_floor_set(self, floor: Floor) -> None:
        raised = None if floor.raised_at is None else floor.raised_at.timestamp()
        self.conn.execute(
            "INSERT INTO schema_floor (id, version, raised_at) VALUES (1, ?, ?)"
            " ON CONFLICT (id) DO UPDATE SET version = excluded.version,"
            " raised_at = excluded.raised_at",
            (floor.version, raised),
        )

    async def coordinators_below(self, version: int) -> int:
        return 0  # one coordinator per file, and this is it

    async def tokens_raise(self, first: int) -> None:
        # `last` is the last token handed out; the lease reads it at every grant.
        self.conn.execute("UPDATE lease_tokens SET last = ?1 WHERE last < ?1", (first - 1,))


def statements(script: str) -> list[str]:
    """Split a script into statements the way SQLite's own parser would (triggers hold
    semicolons of their own)."""
    found, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                found.append(pending.strip())
            pending = ""
    if pending.strip():
        found.append(pending.strip())
    return found
