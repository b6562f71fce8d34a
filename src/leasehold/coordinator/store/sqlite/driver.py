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
import functools
import queue
import sqlite3
import threading
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

from leasehold.coordinator.clock import Clock, SystemClock
from leasehold.coordinator.store.driver import Op, Write
from leasehold.coordinator.store.sqlite.readers import Readers
from leasehold.coordinator.store.sqlite.tx import SqliteTx, TokenCounter
from leasehold.coordinator.store.store import DriverStore
from leasehold.errors import Unavailable

T = TypeVar("T")
Call = Callable[[sqlite3.Connection], Any]
Answer = tuple["asyncio.Future[Any]", Any, BaseException | None]

SYNCHRONOUS_MODES: Final = ("FULL", "NORMAL", "OFF")
_BATCH_LIMIT: Final = 512  # operations sharing one commit, at most
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

    # -- the writer thread ----------------------------------------------------------------

    async def open(self, migrate: Op[None]) -> None:
        self._loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = self._loop.create_future()
        self._thread = threading.Thread(
            target=self._run, args=(ready, migrate), name="leasehold-sqlite", daemon=True
        )
        self._thread.start()
        await ready
        if self._path not in ("", ":memory:") and not self._path.startswith("file:"):
            self._readers = Readers(self._path)  # after the writer has migrated the file

    async def close(self) -> None:
        if self._readers is not None:
            await asyncio.to_thread(self._readers.close)
            self._readers = None
        if self._thread is None:
            return
        self._queue.put(_STOP)
        await asyncio.to_thread(self._thread.join)
        self._thread = None

    def subscribe(self, on_available: Callable[[], None]) -> None:
        """Nothing to do: this process is the only one writing to the file."""

    def _connect(self, migrate: Op[None]) -> sqlite3.Connection:
        conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.create_function("next_lease_token", 0, self._tokens.next)
        conn.execute("BEGIN IMMEDIATE")  # one migrator at a time, even across processes
        try:
            self._transact(conn, migrate)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return conn

    def _run(self, ready: asyncio.Future[None], migrate: Op[None]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            conn = self._connect(migrate)
        except Exception as exc:
            loop.call_soon_threadsafe(ready.set_exception, exc)
            return
        self._conn = conn
        loop.call_soon_threadsafe(ready.set_result, None)
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
                answers = self._execute(conn, batch)
            loop.call_soon_threadsafe(_deliver, answers)
        with self._busy:  # not while the event loop runs a transaction on it
            self._conn = None
            conn.close()

    @staticmethod
    def _execute(
        conn: sqlite3.Connection, batch: list[tuple[Call, asyncio.Future[Any]]]
    ) -> list[Answer]:
        answers: list[Answer] = []
        # A lone operation needs no savepoint: its failure rolls back the whole
        # transaction, which holds nothing else (two statements fewer per lone request).
        alone = len(batch) == 1
        try:
            conn.execute("BEGIN IMMEDIATE")
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
            answers = self._execute(conn, batch)
        finally:
            self._busy.release()
        _deliver(answers)

    # -- the Driver protocol ---------------------------------------------------------------

    async def now(self) -> datetime:
        return self._clock.now()

    async def ping(self) -> None:
        # On the writer thread, inside its write transaction: it answers only when a write
        # could be made (the database not locked by another process, the disk answering).
        await self._call(lambda conn: conn.execute("SELECT 1 FROM schema_migrations").fetchone())

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

    def __init__(self, path: str, *, clock: Clock | None = None, synchronous: str = "FULL") -> None:
        super().__init__(SqliteDriver(path, clock=clock, synchronous=synchronous))
