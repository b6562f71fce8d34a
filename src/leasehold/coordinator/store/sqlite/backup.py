"""Backing up a SQLite database while its coordinator serves it, and restoring one.

A backup is SQLite's online backup API in one step: one read transaction, so one
committed state, the WAL's commits included (a copy of the file alone misses every commit
not yet checkpointed into it). WAL lets the coordinator go on writing meanwhile. The copy
is written beside its destination, checked, synced, and renamed into place, so a backup
that is there is whole.

A restore copies the backup the same way beside the database, opens it as the coordinator
would (migrating it and raising the lease tokens to their time floor, DESIGN.md §4), and
only then renames it over the database, holding the database's coordinator lock, so it
never replaces a database a coordinator serves. The old database's ``-wal`` and ``-shm``
files go first: left beside the restored file, SQLite would apply the old WAL to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from leasehold.coordinator.store.sqlite.driver import SqliteStore, hold_file

_BUSY_MS: Final = 10_000
_SIDECARS: Final = ("-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Summary:
    """What a backup holds, for the line the command prints."""

    version: int
    jobs: int
    last_token: int
    size: int


class NotABackup(ValueError):
    """The file is not a leasehold SQLite database."""


def backup(source: Path, dest: Path) -> Summary:
    """Copy the database at ``source`` (served or not) to ``dest``, which must not exist."""
    if not source.is_file():
        raise FileNotFoundError(f"no database at {source}")
    partial = dest.with_name(dest.name + ".partial")
    _remove(partial)  # left by a backup that was stopped
    _copy(source, partial)
    try:
        summary = _check(partial)
        _sync(partial)
        os.replace(partial, dest)
        _sync(dest.parent)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return summary


def restore(backup_file: Path, target: Path) -> tuple[Summary, int]:
    """Replace the database at ``target`` with ``backup_file``: what it holds, and the
    first lease token the restored database hands out."""
    if not backup_file.is_file():
        raise FileNotFoundError(f"no backup at {backup_file}")
    _check(backup_file)
    restoring = target.with_name(target.name + ".restoring")
    with _held(target):
        _remove(restoring)
        try:
            _copy(backup_file, restoring)
            tokens_from = asyncio.run(_open_and_close(restoring))
            summary = _check(restoring)
            _sync(restoring)
            for suffix in _SIDECARS:
                Path(f"{target}{suffix}").unlink(missing_ok=True)
            os.replace(restoring, target)
            _sync(target.parent)
        finally:
            _remove(restoring)
    return summary, tokens_from


def _copy(source: Path, dest: Path) -> None:
    src = sqlite3.connect(source)
    try:
        src.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")
        out = sqlite3.connect(dest)
        try:
            src.backup(out)  # every page in one step: one read transaction, one state
            out.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        finally:
            out.close()
    finally:
        src.close()


def _check(path: Path) -> Summary:
    conn = sqlite3.connect(path)  # reads only; the last to close a WAL file tidies it
    try:
        (verdict,) = conn.execute("PRAGMA quick_check").fetchone()
        if verdict != "ok":
            raise NotABackup(f"{path} is damaged: {verdict}")
        tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master")}
        if not {"schema_migrations", "jobs", "lease_tokens"} <= tables:
            raise NotABackup(f"{path} is not a leasehold database")
        (version,) = conn.execute("SELECT max(version) FROM schema_migrations").fetchone()
        (jobs,) = conn.execute("SELECT count(*) FROM jobs").fetchone()
        (last,) = conn.execute("SELECT last FROM lease_tokens").fetchone()
    except sqlite3.DatabaseError as exc:
        raise NotABackup(f"{path} is not a usable SQLite database: {exc}") from None
    finally:
        conn.close()
    return Summary(version, jobs, last, path.stat().st_size)


async def _open_and_close(path: Path) -> int:
    store = SqliteStore(str(path))
    report = await store.open()
    await store.close()
    return report.tokens_from


@contextlib.contextmanager
def _held(target: Path) -> Iterator[None]:
    """The database's coordinator lock, if it exists: none serves it while it is replaced."""
    if not target.exists():
        yield
        return
    fd = hold_file(str(target))
    try:
        yield
    finally:
        os.close(fd)


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove(path: Path) -> None:
    for suffix in ("", *_SIDECARS):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
