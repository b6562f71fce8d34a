"""The schema at open, on each backend: migrations applied and recorded, a newer schema
refused, the floor a newer release raises, and lease tokens that never go backwards."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from leasehold.coordinator.store import migrate
from leasehold.coordinator.store.contract import LeaseRequest, NewJob, Store
from leasehold.coordinator.store.migrations import COMPATIBLE_MARK, Migration, migrations
from leasehold.coordinator.store.open import open_store
from leasehold.coordinator.store.schema import SchemaReport, token_floor
from leasehold.errors import SchemaTooNew


async def execute(database_url: str, statement: str) -> None:
    """One statement on the database, outside any store (as an operator's tool would)."""
    if database_url.startswith("sqlite"):
        conn = sqlite3.connect(database_url.removeprefix("sqlite:///"))
        with conn:
            conn.execute(statement)
        conn.close()
        return
    import asyncpg

    pg = await asyncpg.connect(database_url)
    try:
        await pg.execute(statement)
    finally:
        await pg.close()


def dialect_of(database_url: str) -> str:
    return "sqlite" if database_url.startswith("sqlite") else "postgres"


async def lease_one(store: Store) -> int:
    await store.job_insert_many([NewJob("k", None, 3, None, None, "h")])
    (job,) = await store.job_lease(LeaseRequest("w", 60.0, None))
    return job.lease_token


async def test_a_new_database_is_migrated_and_its_first_token_is_the_time_floor(
    unmigrated_url: str,
) -> None:
    store = open_store(unmigrated_url)
    report = await store.open()
    try:
        await _the_first_open(store, report, unmigrated_url)
    finally:
        await store.close()


async def _the_first_open(store: Store, report: SchemaReport, database_url: str) -> None:
    known = migrations(dialect_of(database_url))
    assert report.applied == tuple(m.label for m in known)
    assert report.version == report.knows == known[-1].version
    # Every migration before floors were kept counts as one an older release cannot serve.
    assert report.floor.version == max(m.version for m in known if not m.compatible)
    assert report.floor.raised_at is None
    assert abs(report.tokens_from - time.time() * 1_000_000) < 60 * 1_000_000
    assert await lease_one(store) == report.tokens_from
    state = await store.schema_state()
    assert (state.version, state.pending, state.unknown, state.superseded()) == (
        report.version,
        (),
        (),
        None,
    )
    assert [a.label for a in state.record.applied] == list(report.applied)


async def test_a_reopen_applies_nothing_and_keeps_tokens_going_up(database_url: str) -> None:
    first = open_store(database_url)
    await first.open()
    before = [await lease_one(first) for _ in range(3)]
    await first.close()
    again = open_store(database_url)
    report = await again.open()
    try:
        assert report.applied == ()
        after = await lease_one(again)
        assert after > max(before) and after >= report.tokens_from
    finally:
        await again.close()


async def test_a_sequence_set_back_by_a_restore_starts_above_every_token_issued(
    database_url: str,
) -> None:
    """What a restore does to the sequence (it goes back to the backup's value) is undone
    at the next open: the sequence starts at the time floor, above every token issued."""
    store = open_store(database_url)
    await store.open()
    issued = [await lease_one(store) for _ in range(5)]
    await store.close()
    if database_url.startswith("sqlite"):
        await execute(database_url, "UPDATE lease_tokens SET last = 3")
    else:
        await execute(database_url, "SELECT setval('lease_tokens', 3)")
    restored = open_store(database_url)
    report = await restored.open()
    try:
        token = await lease_one(restored)
        assert token >= report.tokens_from > max(issued)
    finally:
        await restored.close()


async def test_a_sequence_past_the_floor_keeps_its_place(database_url: str) -> None:
    """A burst of leases faster than a million a second runs ahead of the clock: the floor
    then leaves the sequence where it is, never lower."""
    store = open_store(database_url)
    await store.open()
    ahead = token_floor(await store.now()) + 10**12
    await store.close()
    if database_url.startswith("sqlite"):
        await execute(database_url, f"UPDATE lease_tokens SET last = {ahead}")
    else:
        await execute(database_url, f"SELECT setval('lease_tokens', {ahead})")
    reopened = open_store(database_url)
    await reopened.open()
    try:
        assert await lease_one(reopened) == ahead + 1
    finally:
        await reopened.close()


async def test_a_schema_newer_than_this_release_is_refused_and_left_alone(
    database_url: str,
) -> None:
    store = open_store(database_url)
    await store.open()
    await store.close()
    await execute(
        database_url,
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (900, 'later', "
        + ("0)" if database_url.startswith("sqlite") else "now())"),
    )
    newer = open_store(database_url)
    with pytest.raises(SchemaTooNew, match=r"version 900, newer than this release knows"):
        await newer.open()
    state = await open_store(database_url).schema_inspect()
    assert (state.version, [a.label for a in state.unknown]) == (900, ["900_later"])
    assert "900_later" in (state.too_new() or "")


@pytest.mark.parametrize("compatible", [False, True])
async def test_a_newer_release_raises_the_floor_unless_its_migration_is_compatible(
    database_url: str, monkeypatch: pytest.MonkeyPatch, compatible: bool
) -> None:
    """What an older coordinator's schema watch sees: a migration it does not know raises
    the floor above it, so it must stop; one marked compatible lets it go on."""
    older = open_store(database_url)
    await older.open()
    await older.close()
    dialect = dialect_of(database_url)
    known = migrations(dialect)
    mark = f"{COMPATIBLE_MARK} a table nobody reads\n" if compatible else ""
    later = Migration(known[-1].version + 1, "later", f"{mark}CREATE TABLE later (a integer);")
    monkeypatch.setattr(migrate, "migrations", lambda _dialect: [*known, later])
    newer = open_store(database_url)
    report = await newer.open()
    await newer.close()
    assert report.applied == (later.label,)
    assert report.floor.version == (known[-1].version if compatible else later.version)
    assert (report.floor.raised_at is None) is compatible
    if not compatible:
        assert 0 < report.settle_seconds(3.0) <= 3.0
    monkeypatch.setattr(migrate, "migrations", lambda _dialect: known)
    seen = await open_store(database_url).schema_inspect()
    assert seen.version == later.version
    assert (seen.superseded() is None) is compatible


async def test_inspecting_a_missing_sqlite_file_makes_none(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    with pytest.raises(sqlite3.OperationalError):
        await open_store(f"sqlite:///{missing}").schema_inspect()
    assert not missing.exists()


async def test_a_newer_coordinator_sees_the_sessions_of_older_ones(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL every coordinator's sessions carry the schema version it knows, so one
    that raised the floor can wait until those of older coordinators are gone; on SQLite
    there is never another coordinator."""
    older = open_store(database_url)
    await older.open()
    try:
        known = migrations(dialect_of(database_url))
        later = Migration(known[-1].version + 1, "later", "CREATE TABLE later (a integer);")
        monkeypatch.setattr(migrate, "migrations", lambda _dialect: [*known, later])
        if database_url.startswith("sqlite"):
            assert await older.coordinators_below(later.version) == 0
            return
        newer = open_store(database_url)
        await newer.open()
        try:
            assert await newer.coordinators_below(later.version) >= 1  # the older's pool
            assert await newer.coordinators_below(known[-1].version) == 0
        finally:
            await newer.close()
    finally:
        await older.close()
