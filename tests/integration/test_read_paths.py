"""Reads do not wait behind writes on SQLite: they have connections of their own (§11)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from leasehold.coordinator.store.contract import JobFilter, NewJob
from leasehold.coordinator.store.open import open_store
from leasehold.coordinator.store.sqlite import tx as sqlite_tx
from leasehold.coordinator.store.sqlite.driver import SqliteDriver, SqliteStore
from leasehold.coordinator.store.sqlite.readers import Readers
from leasehold.errors import Unavailable


def new_job(kind: str = "k") -> NewJob:
    return NewJob(kind, {"n": 1}, 3, None, None, "h")


async def test_a_slow_read_does_not_delay_an_enqueue(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a job list is held up (its rows decoded slowly), an enqueue commits at once:
    the list runs on a reader connection, not on the writer thread."""
    store = open_store(sqlite_url)
    await store.open()
    try:
        await store.job_insert_many([new_job()])
        reading, release = threading.Event(), threading.Event()
        decode = sqlite_tx._job

        def slow_decode(row: tuple[Any, ...]) -> Any:
            reading.set()
            release.wait(10)
            return decode(row)

        monkeypatch.setattr(sqlite_tx, "_job", slow_decode)
        listing = asyncio.create_task(store.job_list(JobFilter(None, None, None, 10)))
        try:
            assert await asyncio.to_thread(reading.wait, 10)
            (inserted,) = await asyncio.wait_for(store.job_insert_many([new_job()]), 5)
            assert inserted.created and not listing.done()
        finally:
            release.set()
        # The list began before the insert committed: it sees the state it began in.
        assert [j.id for j in await listing] == [1]
    finally:
        await store.close()


async def test_a_runaway_read_is_stopped(sqlite_url: str) -> None:
    """A read past its step budget ends with Unavailable instead of holding a reader."""
    store = open_store(sqlite_url)
    await store.open()
    await store.close()  # migrated
    readers = Readers(sqlite_url.removeprefix("sqlite:///"), max_steps=100_000)
    try:
        endless = (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT max(i) FROM n"
        )
        with pytest.raises(Unavailable, match="took too long"):
            await readers.read(lambda conn: conn.execute(endless).fetchone())
        assert await readers.read(lambda conn: conn.execute("SELECT 1").fetchone()) == (1,)
    finally:
        readers.close()


async def test_a_job_by_its_id_is_read_on_the_loop_while_the_writer_is_idle(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point read skips the hop to a reader thread when the writer has nothing to do, and
    takes it while the writer is busy; both see the committed job."""
    store = open_store(sqlite_url)
    await store.open()
    try:
        (inserted,) = await store.job_insert_many([new_job()])
        threads: list[str] = []
        readers_read = Readers.read

        async def counted(self: Readers, op: Any) -> Any:
            threads.append("reader")
            return await readers_read(self, op)

        monkeypatch.setattr(Readers, "read", counted)
        job = await store.job_get(inserted.job.id)
        assert job is not None and job.id == inserted.job.id
        assert threads == []  # read on the loop
        # The writer busy with a transaction of its own: the read goes to a reader thread.
        busy, release = threading.Event(), threading.Event()

        def hold(conn: Any) -> None:
            busy.set()
            release.wait(10)

        assert isinstance(store, SqliteStore) and isinstance(store.driver, SqliteDriver)
        holding = asyncio.ensure_future(store.driver._call(hold))
        try:
            assert await asyncio.to_thread(busy.wait, 10)
            job = await asyncio.wait_for(store.job_get(inserted.job.id), 5)
            assert job is not None and threads == ["reader"]
        finally:
            release.set()
            await holding
    finally:
        await store.close()
