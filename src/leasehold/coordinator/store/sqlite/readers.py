"""Read-only SQLite connections, so reads never wait behind the writer thread.

WAL lets readers and one writer work at once: a read transaction sees the last commit made
before it began and takes no lock the writer waits for. The writer thread (driver.py) is
kept for changes; listing jobs, reading one, the figures and the schedules run here, on a
few threads of their own, each with its own connection (``PRAGMA query_only``: a bug that
writes fails loudly instead of racing the writer).

A read of several statements (the figures) runs in one transaction, so it sees one state.
Every read answers only what committed before it began: an answer the writer has sent
(after its COMMIT) is visible to every read begun after it.

A read is also bounded: SQLite's progress handler stops a statement that has run more than
``max_steps`` virtual-machine steps (an unindexed filter over a huge table, say) with
``Unavailable``, rather than let it hold a reader for seconds.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Final, TypeVar

from leasehold.errors import Unavailable

T = TypeVar("T")

READERS: Final = 2  # threads (and connections) serving reads
# About a second of work on a slow machine: far above any indexed read's page.
MAX_STEPS: Final = 50_000_000
_CHECK_EVERY: Final = 10_000  # VM steps between two calls of the progress handler


class Readers:
    """A few threads, each with a read-only connection to one database file."""

    def __init__(self, path: str, *, threads: int = READERS, max_steps: int = MAX_STEPS) -> None:
        self._path = path
        self._max_steps = max_steps
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="leasehold-sqlite-read")

    def _connection(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
            conn.execute("PRAGMA busy_timeout = 10000")
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        conn = self._connection()
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += _CHECK_EVERY
            return 1 if steps > self._max_steps else 0  # non-zero interrupts the statement

        conn.set_progress_handler(count, _CHECK_EVERY)
        try:
            conn.execute("BEGIN")
            try:
                return op(conn)
            finally:
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if steps > self._max_steps:
                raise Unavailable("the read took too long; narrow it (filters, limit)") from exc
            raise Unavailable(f"database error: {exc}") from exc
        finally:
            conn.set_progress_handler(None, 0)

    async def read(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` in one read transaction on a reader thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, self._run, op)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        with self._lock:
            for conn in self._connections:
                conn.close()
            self._connections.clear()
