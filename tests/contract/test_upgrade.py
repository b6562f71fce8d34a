"""Upgrading a database in use: what a coordinator of the previous release recorded is
still honoured after the new one migrates it."""

from __future__ import annotations

import sqlite3

from leasehold.coordinator.store.contract import LeaseRequest, NewJob
from leasehold.coordinator.store.migrations import migrations
from leasehold.coordinator.store.open import open_store


def _old_lease_requests(dialect: str) -> str:
    """The per-job lease_requests table of migration 006, as the previous release left it."""
    (old,) = [m for m in migrations(dialect) if m.version == 6]
    return old.sql


async def test_lease_request_ids_survive_the_upgrade_to_one_row_per_request(
    database_url: str,
) -> None:
    """A lease retried across the upgrade of migration 009 gets the same leases back."""
    store = open_store(database_url)
    await store.open()
    await store.job_insert_many([NewJob("k", None, 3, None, None, "h") for _ in range(3)])
    ask = LeaseRequest("w1", 60.0, None, 2, request_id="r1")
    first = await store.job_lease(ask)
    await store.close()
    rows = [(j.id, j.lease_token) for j in first]
    assert len(rows) == 2
    await _back_to_migration_8(database_url, rows)

    upgraded = open_store(database_url)
    await upgraded.open()
    try:
        again = await upgraded.job_lease(ask)
        assert sorted((j.id, j.lease_token) for j in again) == sorted(rows)
        assert [j.id for j in await upgraded.job_lease(LeaseRequest("w1", 60.0, None, 5))] == [3]
    finally:
        await upgraded.close()


async def _back_to_migration_8(database_url: str, rows: list[tuple[int, int]]) -> None:
    """Put the lease_requests table back as migration 006 made it, holding ``rows`` for
    (w1, r1), and forget that 009 ran."""
    if database_url.startswith("sqlite"):
        conn = sqlite3.connect(database_url.removeprefix("sqlite:///"))
        with conn:
            conn.execute("DROP TABLE lease_requests")
            conn.executescript(_old_lease_requests("sqlite"))
            conn.executemany(
                "INSERT INTO lease_requests VALUES ('w1', 'r1', ?, ?, strftime('%s', 'now'))",
                rows,
            )
            conn.execute("DELETE FROM schema_migrations WHERE version = 9")
        conn.close()
        return
    import asyncpg

    pg = await asyncpg.connect(database_url)
    try:
        async with pg.transaction():
            await pg.execute("DROP TABLE lease_requests")
            await pg.execute(_old_lease_requests("postgres"))
            await pg.executemany(
                "INSERT INTO lease_requests (worker_id, request_id, job_id, token)"
                " VALUES ('w1', 'r1', $1, $2)",
                rows,
            )
            await pg.execute("DELETE FROM schema_migrations WHERE version = 9")
    finally:
        await pg.close()
