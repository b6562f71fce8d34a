"""One SQLite file, one coordinator, and a coordinator that never blocks its event loop on
another process's lock, nor answers a write to a file that is gone (DESIGN.md §16)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
import time
from pathlib import Path

import pytest

from leasehold.coordinator.startup import StartupError, prepare_database
from leasehold.coordinator.store.contract import NewJob
from leasehold.coordinator.store.sqlite.driver import SqliteStore
from leasehold.errors import StoreInUse, Unavailable


def job() -> NewJob:
    return NewJob("k", None, 3, None, None, "h")


async def test_a_second_store_on_one_file_is_refused(tmp_path: Path) -> None:
    """The second opener of a file fails at once, saying why; closing the first frees it."""
    path = str(tmp_path / "one.db")
    first = SqliteStore(path)
    await first.open()
    second = SqliteStore(path)
    with pytest.raises(StoreInUse, match="one SQLite file has one coordinator"):
        await second.open()
    await first.close()
    await second.open()
    await second.close()


def test_serve_on_a_file_another_coordinator_serves_exits_with_one_line(tmp_path: Path) -> None:
    """The start-up check reports the held file at once (no 30 s of retries)."""
    path = tmp_path / "held.db"
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        started = time.monotonic()
        with pytest.raises(StartupError, match="another coordinator is serving"):
            prepare_database(f"sqlite:///{path}", synchronous="FULL", wait_seconds=30)
        assert time.monotonic() - started < 5
    finally:
        os.close(fd)


async def test_another_process_holding_the_write_lock_does_not_block_the_loop(
    tmp_path: Path,
) -> None:
    """While a backup tool (here a second connection) holds the write lock, a lone write
    waits on the writer thread; the event loop keeps turning, and the write commits once
    the lock is let go."""
    path = str(tmp_path / "locked.db")
    store = SqliteStore(path)
    await store.open()
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        insert = asyncio.ensure_future(store.job_insert_many([job()]))
        loop = asyncio.get_running_loop()
        worst = 0.0
        for _ in range(20):
            before = loop.time()
            await asyncio.sleep(0.01)
            worst = max(worst, loop.time() - before)
        assert worst < 1.0, f"the loop stalled {worst:.2f} s"
        assert not insert.done()
        other.execute("ROLLBACK")
        (inserted,) = await asyncio.wait_for(insert, 15)
        assert inserted.created
    finally:
        other.close()
        await store.close()


async def test_a_write_to_a_deleted_file_is_refused(tmp_path: Path) -> None:
    """A file deleted under the coordinator: writes and the readiness check answer
    Unavailable instead of committing to a file the next start will not find."""
    path = tmp_path / "gone.db"
    store = SqliteStore(str(path))
    await store.open()
    try:
        await store.job_insert_many([job()])
        path.unlink()
        with pytest.raises(Unavailable, match="gone or was replaced"):
            await store.job_insert_many([job()])
        with pytest.raises(Unavailable, match="gone or was replaced"):
            await store.ping()
    finally:
        await store.close()


async def test_a_full_disk_makes_the_coordinator_not_ready(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Readiness fails while the database's disk has less than MIN_FREE_BYTES free."""
    store = SqliteStore(str(tmp_path / "full.db"))
    await store.open()
    try:
        await store.ping()
        real = os.statvfs

        def nearly_full(path: str) -> os.statvfs_result:
            disk = real(path)
            return os.statvfs_result((*disk[:4], 1, *disk[5:]))  # one free block

        monkeypatch.setattr(os, "statvfs", nearly_full)
        with pytest.raises(Unavailable, match="KiB free"):
            await store.ping()
    finally:
        await store.close()
