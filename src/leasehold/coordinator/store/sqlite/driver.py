"""The embedded SQLite driver, the default: one writer thread, group commit, readers.

One thread owns the one writing connection, so two transactions can never interleave on
it. It commits in groups: every operation waiting when a transaction starts joins it, each
inside its own SAVEPOINT (one failing operation never undoes the others), and all are
answered after the single COMMIT. Under load the cost of a commit (an fsync with
``synchronous=FULL``) is shared by many requests; an operation is still answered only
after its change is durable.

When the writer thread is idle, a small operation (one job: an enqueue, a lease, a report,
a read by id) commits on the event loop instead, together with the small ones submitted in
the same turn of the loop: that spares the two thread hops of a lone request. Larger
operations always go to the writer thread, where SQLite's work runs beside the event
loop's; while the writer works, everything queues for it, so group commit under load is
unchanged. One lock keeps the two from ever using the connection at once. Other reads run
on reader connections (``readers``).

An operation is a shared algorithm (an ``async`` function of a ``Tx``): this driver steps
its coroutine to the end on the thread that holds the connection (``step``), since a
SQLite ``Tx`` never waits for anything but its connection.
"""

from __future__ import annotations

import asyncio
import fcntl
import functools
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar
from urllib.parse import quote

from leasehold.coordinator.clock import Clock, SystemClock
from leasehold.coordinator.store.contract import StoreRules
from leasehold.coordinator.store.driver import Op, Write
from leasehold.coordinator.store.sqlite.readers import Readers
from leasehold.coordinator.store.sqlite.tx import SqliteTx, TokenCounter
from leasehold.coordinator.store.store import DriverStore
from leasehold.errors import StoreInUse, Unavailable

T = TypeVar("T")
Call = Callable[[sqlite3.Connection], Any]
Answer = tuple["asyncio.Future[Any]", Any, BaseException | None]

SYNCHRONOUS_MODES: Final = ("FULL", "NORMAL", "OFF")
_BATCH_LIMIT: Final = 512  # operations sharing one commit, at most
# How long a statement waits for a lock another process holds (a backup tool, a second
# connection): the writer thread waits; the event loop never does (it hands the work over).
_WRITER_BUSY_MS: Final = 10_000
# Below this much free space on the database's disk the readiness check fails: a write may
# still fit, but the next checkpoint or a batch may not (DESIGN.md §16).
MIN_FREE_BYTES: Final = 32 * 1024 * 1024
_STOP: Final = object()


def step(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends to its end, here and now."""
    try:
        coro.send(None)
    except StopIteration as done:
        result: T = done.value
        return result
    coro.close()
    raise RuntimeError("a SQLite transaction waited for something other than its connection")


class SqliteDriver:
    """A ``driver.Driver`` on one SQLite file in WAL mode (see the module docstring)."""

    dialect = "sqlite"

    def __init__(self, path: str, *, clock: Clock | None = None, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in SYNCHRONOUS_MODES:
            raise ValueError(f"synchronous must be one of {SYNCHRONOUS_MODES}")
        self._path = path
        self._clock = clock or SystemClock()
        self._synchronous = synchronous.upper()
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._conn: sqlite3.Connection | None = None
        # Held while a transaction runs, by the writer thread or the event loop.
        self._busy = threading.Lock()
        self._inline: list[tuple[Call, asyncio.Future[Any]]] | None = None  # for this turn
        self._tokens = TokenCounter()
        self._readers: Readers | None = None
        self._lock_fd: int | None = None
        self._inode: int | None = None  # of the file when opened (a deleted file is refused)
        self._busy_ms: int | None = None  # the busy timeout the connection has now

    # -- the writer thread ----------------------------------------------------------------

    async def open(self, migrate: Op[T]) -> T:
        self._hold_the_file()
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[T] = self._loop.create_future()
        self._thread = threading.Thread(
            target=self._run, args=(ready, migrate), name="leasehold-sqlite", daemon=True
        )
        self._thread.start()
        try:
            migrated = await ready
        except BaseException:
            self._let_go_of_the_file()
            raise
        if self._path not in ("", ":memory:") and not self._path.startswith("file:"):
            self._readers = Readers(self._path)  # after the writer has migrated the file
        return migrated

    async def inspect(self, op: Op[T]) -> T:
        return await asyncio.to_thread(self._inspect, op)

    def _inspect(self, op: Op[T]) -> T:
        if self._path.startswith("file:"):
            conn = sqlite3.connect(self._path, uri=True)
        else:  # read-only: a missing file is an error, not a new database
            conn = sqlite3.connect(f"file:{quote(self._path)}?mode=ro", uri=True)
        try:
            conn.execute("BEGIN")
            return step(op(SqliteTx(conn, self._clock.now(), TokenCounter())))
        finally:
            conn.close()

    async def close(self) -> None:
        if self._readers is not None:
            await asyncio.to_thread(self._readers.close)
            self._readers = None
        if self._thread is not None:
            self._queue.put(_STOP)
            await asyncio.to_thread(self._thread.join)
            self._thread = None
        self._let_go_of_the_file()

    def _on_disk(self) -> bool:
        return self._path not in ("", ":memory:") and not self._path.startswith("file:")

    def _hold_the_file(self) -> None:
        if self._on_disk():
            self._lock_fd = hold_file(self._path)
            self._inode = os.fstat(self._lock_fd).st_ino

    def _let_go_of_the_file(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the flock
            self._lock_fd = None

    def subscribe(
        self,
        on_available: Callable[[], None],
        on_finished: Callable[[Sequence[int] | None], None] | None,
    ) -> None:
        """Nothing to do: this process is the only one writing to the file."""

    def _connect(self, migrate: Op[T]) -> tuple[sqlite3.Connection, T]:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        self._wait_for_locks(conn, _WRITER_BUSY_MS)
        conn.create_function("next_lease_token", 0, self._tokens.next)
        conn.execute("BEGIN IMMEDIATE")  # one migrator at a time, even across processes
        try:
            migrated = self._transact(conn, migrate)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            conn.close()
            raise
        return conn, migrated

    def _run(self, ready: asyncio.Future[Any], migrate: Op[Any]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            conn, migrated = self._connect(migrate)
        except Exception as exc:
            loop.call_soon_threadsafe(ready.set_exception, exc)
            return
        self._conn = conn
        loop.call_soon_threadsafe(ready.set_result, migrated)
        stopping = False
        while not stopping:
            first = self._queue.get()
            if first is _STOP:
                break
            batch = list(first)  # a queue item is a group of operations, committed together
            while len(batch) < _BATCH_LIMIT:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stopping = True
                    break
                batch.extend(item)
            with self._busy:
                self._wait_for_locks(conn, _WRITER_BUSY_MS)
                answers = self._execute(conn, batch)
            loop.call_soon_threadsafe(_deliver, answers)
        with self._busy:  # not while the event loop runs a transaction on it
            self._conn = None
            conn.close()

    def _wait_for_locks(self, conn: sqlite3.Connection, ms: int) -> None:
        """Set how long a statement waits for another process's lock (only when it changes:
        the writer thread and the event loop take turns on the connection)."""
        if self._busy_ms != ms:
            conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms = ms

    def _check_the_file(self) -> None:
        """A write to a file that was deleted (or replaced) under the coordinator would be
        answered and then lost at the next start: refuse it instead."""
        if self._inode is None:
            return
        try:
            same = os.stat(self._path).st_ino == self._inode
        except OSError:
            same = False
        if not same:
            raise Unavailable(f"the database file {self._path} is gone or was replaced")

    def _execute(
        self, conn: sqlite3.Connection, batch: list[tuple[Call, asyncio.Future[Any]]]
    ) -> list[Answer]:
        try:
            self._check_the_file()
        except Unavailable as gone:
            return [(future, None, gone) for _, future in batch]
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            failure = Unavailable(f"database error: {exc}")
            return [(future, None, failure) for _, future in batch]
        return self._run_batch(conn, batch)

    @staticmethod
    def _run_batch(
        conn: sqlite3.Connection, batch: list[tuple[Call, asyncio.Future[Any]]]
    ) -> list[Answer]:
        """The batch's operations in the transaction just begun, then the commit."""
        answers: list[Answer] = []
        # A lone operation needs no savepoint: its failure rolls back the whole
        # transaction, which holds nothing else (two statements fewer per lone request).
        alone = len(batch) == 1
        try:
            for call, future in batch:
                if not alone:
                    conn.execute("SAVEPOINT op")
                try:
                    answers.append((future, call(conn), None))
                    if not alone:
                        conn.execute("RELEASE op")
                except Exception as exc:
                    conn.execute("ROLLBACK" if alone else "ROLLBACK TO op")
                    if not alone:
                        conn.execute("RELEASE op")
                    answers.append((future, None, exc))
            if conn.in_transaction:
                conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            failure = Unavailable(f"database error: {exc}")
            return [(future, None, failure) for _, future in batch]
        return answers

    def _transact(self, conn: sqlite3.Connection, op: Op[T]) -> T:
        """One operation on the connection, inside the transaction the caller holds: the
        shared algorithm, then what it counted."""
        tx = SqliteTx(conn, self._clock.now(), self._tokens)
        result = step(op(tx))
        tx.flush()
        return result

    # -- submitting operations ---------------------------------------------------------------

    def _inline_open(self) -> bool:
        """Whether a small operation submitted now would run on the event loop (see
        ``_submit``): a commit there is due this turn with room, or the writer is idle."""
        if self._inline is not None:
            return len(self._inline) < _BATCH_LIMIT
        return self._queue.empty() and not self._busy.locked()

    async def _call(self, call: Callable[[sqlite3.Connection], T], *, small: bool = False) -> T:
        (future,) = self._submit([call], small=small)
        result: T = await future
        return result

    def _submit(self, calls: Sequence[Call], *, small: bool = False) -> list[asyncio.Future[Any]]:
        """Queue operations that will share one transaction (each in its own savepoint)."""
        if self._thread is None or self._loop is None:
            raise Unavailable("the store is not open")
        futures = [self._loop.create_future() for _ in calls]
        items = list(zip(calls, futures, strict=True))
        if not small or not self._inline_open():
            self._queue.put(items)
        elif self._inline is not None:
            self._inline.extend(items)  # a commit on the loop is due this turn: join it
        else:
            # The writer is idle: commit on the loop once this turn's callbacks (other
            # requests' operations among them) have run.
            self._inline = items
            self._loop.call_soon(self._commit_inline)
        return futures

    def _commit_inline(self) -> None:
        batch, self._inline = self._inline or [], None
        conn = self._conn
        if conn is None:
            _deliver([(future, None, Unavailable("the store is closed")) for _, future in batch])
            return
        if not self._busy.acquire(blocking=False):
            self._queue.put(batch)  # the writer took a transaction meanwhile
            return
        try:
            self._wait_for_locks(conn, 0)  # the event loop never waits for a lock
            try:
                self._check_the_file()
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:
                # Another process holds the database's write lock: the writer thread waits
                # for it (up to its busy timeout) while the loop goes on serving.
                self._queue.put(batch)
                return
            except Unavailable as gone:
                _deliver([(future, None, gone) for _, future in batch])
                return
            answers = self._run_batch(conn, batch)
        finally:
            self._busy.release()
        _deliver(answers)

    # -- the Driver protocol ---------------------------------------------------------------

    async def now(self) -> datetime:
        return self._clock.now()

    async def ping(self) -> None:
        # On the writer thread, inside its write transaction: it answers only when a write
        # could be made (the database not locked by another process, the disk answering).
        await self._call(self._ready)

    def _ready(self, conn: sqlite3.Connection) -> None:
        conn.execute("SELECT 1 FROM schema_migrations").fetchone()
        if self._on_disk():
            disk = os.statvfs(os.path.dirname(os.path.abspath(self._path)))
            free = disk.f_bavail * disk.f_frsize
            if free < MIN_FREE_BYTES:
                raise Unavailable(f"the database's disk has {free // 1024} KiB free")

    async def write(self, op: Op[T], *, small: bool = False, single: bool = False) -> T:
        return await self._call(functools.partial(self._transact, op=op), small=small)

    async def write_each(self, writes: Sequence[Write], *, small: bool = False) -> list[Any]:
        calls = [functools.partial(self._transact, op=w.op) for w in writes]
        return await asyncio.gather(*self._submit(calls, small=small), return_exceptions=True)

    async def read(self, op: Op[T], *, point: bool = False) -> T:
        """On a reader connection, off the writer thread (an in-memory database has no
        other connection to read it from). A ``point`` read while the writer is idle runs
        on the event loop instead, as a small write does: the hop to a reader thread and
        back costs more than such a read."""
        call = functools.partial(self._transact, op=op)
        if self._readers is None:
            return await self._call(call)
        if point and self._inline_open():
            return await self._call(call, small=True)
        return await self._readers.read(call)


def hold_file(path: str) -> int:
    """Take the file's coordinator lock; the descriptor holding it (closing it lets go).

    One coordinator per file: the writer thread's group commit, the inline commits and the
    counts all rest on being the file's only writer. An exclusive ``flock`` (which SQLite's
    own POSIX locks do not touch) held while the store is open makes a second coordinator
    on the same file (or a restore over it) fail at once, with one line."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreInUse(
            f"another coordinator is serving {path}: one SQLite file has one"
            " coordinator (several coordinators share a PostgreSQL database)"
        ) from None
    return fd


def _deliver(answers: list[Answer]) -> None:
    for future, result, error in answers:
        if future.cancelled():
            continue  # the caller went away; its change, if any, is committed regardless
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


class SqliteStore(DriverStore):
    """The Store on an SQLite file (``sqlite:///PATH``)."""

    def __init__(
        self,
        path: str,
        *,
        clock: Clock | None = None,
        synchronous: str = "FULL",
        rules: StoreRules | None = None,
    ) -> None:
        super().__init__(SqliteDriver(path, clock=clock, synchronous=synchronous), rules)
