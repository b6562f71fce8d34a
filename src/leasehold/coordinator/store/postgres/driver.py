"""The PostgreSQL driver: several coordinators sharing one database.

Every operation is one transaction on a pooled asyncpg connection (or, for one statement,
that statement alone: no BEGIN and COMMIT round trips). A change that makes work available
sends NOTIFY in its transaction; each driver LISTENs on a connection of its own and calls
its subscribers, which wake the long polls of that coordinator. Driver errors become
leasehold errors here, at the edge of the store.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import datetime
from typing import Any, Final, TypeVar

import asyncpg
import structlog

from leasehold._version import __version__
from leasehold.coordinator.store import migrate as schema_ops
from leasehold.coordinator.store.contract import StoreRules
from leasehold.coordinator.store.driver import Op, Write
from leasehold.coordinator.store.postgres.schema import session_name
from leasehold.coordinator.store.postgres.tx import CHANNEL, FINISHED_CHANNEL, PgTx
from leasehold.coordinator.store.store import DriverStore
from leasehold.errors import InvalidRequest, LeaseholdError, Unavailable

log = structlog.get_logger("leasehold")

T = TypeVar("T")

# An arbitrary key every coordinator agrees on ("leasehol" in ASCII): one migrator at a time.
_MIGRATION_LOCK: Final = 0x6C65617365686F6C
_ACQUIRE_TIMEOUT: Final = 30.0  # seconds a request may wait for a pooled connection
_RELISTEN_SECONDS: Final = 1.0  # pause between attempts to get the LISTEN connection back

# Errors after which a connection is in doubt: it is closed rather than pooled again.
# InternalClientError is what asyncpg raises when the server's goodbye (an admin shutdown)
# arrived on an idle connection before the socket closed.
_CONNECTION_LOST: Final = (
    OSError,
    TimeoutError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.OperatorInterventionError,
)
# Errors that say "the database cannot serve now", answered with 503. A deadlock or a
# serialisation failure (class 40) rolled the transaction back whole: a retry is safe.
_UNAVAILABLE: Final = (
    *_CONNECTION_LOST,
    asyncpg.exceptions.InsufficientResourcesError,
    asyncpg.exceptions.TransactionRollbackError,
)
# Text and jsonb cannot hold the NUL character, which JSON strings and SQLite can: a
# request carrying one is refused as invalid, not answered with a server error.
_UNSTORABLE: Final = (
    asyncpg.exceptions.CharacterNotInRepertoireError,
    asyncpg.exceptions.UntranslatableCharacterError,
)


async def _keep_session(conn: asyncpg.Connection) -> None:
    """Pool connections keep no session state (no SET, LISTEN or session locks), so the
    reset query asyncpg would send on every release is a round trip for nothing."""


@contextlib.contextmanager
def _translated() -> Iterator[None]:
    try:
        yield
    except _UNAVAILABLE as exc:
        log.warning("store.unavailable", error=f"{type(exc).__name__}: {exc}")
        raise Unavailable(f"database unavailable: {type(exc).__name__}: {exc}") from exc
    except _UNSTORABLE as exc:
        # The database's message quotes the offending bytes: input is never echoed.
        log.info("store.unstorable", error=type(exc).__name__)
        raise InvalidRequest("the database cannot store a value of this request") from exc


class PostgresDriver:
    """A ``driver.Driver`` on a PostgreSQL database shared by any number of coordinators."""

    dialect = "postgres"

    def __init__(self, url: str, *, min_connections: int = 2, max_connections: int = 10) -> None:
        self._url = url
        self._min = min_connections
        self._max = max_connections
        self._pool: asyncpg.Pool | None = None
        self._subscribers: list[Callable[[], None]] = []
        self._finish_subscribers: list[Callable[[Sequence[int] | None], None]] = []
        self._listener: asyncio.Task[None] | None = None
        # Named when opened: what this release knows is read then (a test stands in a
        # newer release by giving it more migrations).
        self._session: dict[str, str] = {}

    async def open(self, migrate: Op[T]) -> T:
        knows = schema_ops.knows(self.dialect)
        self._session = {"application_name": session_name(__version__, knows)}
        try:
            with _translated():
                self._pool = await asyncpg.create_pool(
                    self._url,
                    min_size=self._min,
                    max_size=self._max,
                    reset=_keep_session,
                    server_settings=self._session,
                )
                async with self._pool.acquire() as conn, conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
                    migrated = await self._run(PgTx(conn), migrate)
            listening: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._listener = asyncio.create_task(self._listen(listening), name="leasehold-listen")
            await listening
        except BaseException:
            await self.close()
            raise
        return migrated

    async def inspect(self, op: Op[T]) -> T:
        with _translated():
            conn = await asyncpg.connect(self._url)
            try:
                async with conn.transaction(readonly=True):
                    return await op(PgTx(conn))
            finally:
                await conn.close()

    async def close(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
            self._listener = None
        if self._pool is not None:
            pool, self._pool = self._pool, None
            await pool.close()

    # -- wake-ups across coordinators ----------------------------------------------------

    def subscribe(
        self,
        on_available: Callable[[], None],
        on_finished: Callable[[Sequence[int] | None], None] | None,
    ) -> None:
        self._subscribers.append(on_available)
        if on_finished is not None:
            self._finish_subscribers.append(on_finished)

    def _wake(self, *_: object) -> None:
        for on_available in self._subscribers:
            on_available()

    def _ended(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        ids = [int(i) for i in payload.split(",") if i.isdigit()]
        for on_finished in self._finish_subscribers:
            on_finished(ids)

    async def _listen(self, listening: asyncio.Future[None]) -> None:
        """Hold a LISTEN connection for as long as the store is open, reconnecting after a
        loss; notifications missed meanwhile are made up for by waking every subscriber."""
        while True:
            try:
                await self._listen_once(listening)
            except (*_UNAVAILABLE, asyncpg.PostgresError) as exc:
                if not listening.done():
                    listening.set_exception(Unavailable(f"cannot LISTEN: {exc}"))
                    return
                log.warning("store.listen_lost", error=str(exc))
            await asyncio.sleep(_RELISTEN_SECONDS)

    async def _listen_once(self, listening: asyncio.Future[None]) -> None:
        conn = await asyncpg.connect(self._url, server_settings=self._session)
        try:
            lost = asyncio.Event()
            conn.add_termination_listener(lambda _conn: lost.set())
            await conn.add_listener(CHANNEL, self._wake)
            await conn.add_listener(FINISHED_CHANNEL, self._ended)
            if listening.done():
                log.info("store.listen_restored")
                self._wake()  # what was missed meanwhile: every waiter looks again
                for on_finished in self._finish_subscribers:
                    on_finished(None)
            else:
                listening.set_result(None)
            await lost.wait()
            log.warning("store.listen_lost")
        finally:
            conn.terminate()

    # -- transactions ---------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[asyncpg.Connection]:
        if self._pool is None:
            raise Unavailable("the store is not open")
        with _translated():
            async with self._pool.acquire(timeout=_ACQUIRE_TIMEOUT) as conn:
                try:
                    yield conn
                except _CONNECTION_LOST:
                    conn.terminate()
                    raise

    @staticmethod
    async def _run(tx: PgTx, op: Op[T]) -> T:
        result = await op(tx)
        await tx.flush()
        return result

    async def now(self) -> datetime:
        async with self._connection() as conn:
            now: datetime = await conn.fetchval("SELECT clock_timestamp()")
            return now

    async def ping(self) -> None:
        async with self._connection() as conn:
            await conn.fetchval("SELECT 1")

    async def write(self, op: Op[T], *, small: bool = False, single: bool = False) -> T:
        async with self._connection() as conn:
            tx = PgTx(conn)
            if single:
                result = await op(tx)
                if tx.tally:  # counts must commit with their change: a bug, refused loudly
                    raise RuntimeError("a write outside a transaction counted something")
                await tx.flush()
                return result
            async with conn.transaction():
                return await self._run(tx, op)

    async def write_each(self, writes: Sequence[Write], *, small: bool = False) -> list[Any]:
        """One after the other, each its own transaction: each commit here is a round trip
        of its own anyway, and a lease never waits for another coordinator's insert."""
        answers: list[Any] = []
        for write in writes:
            try:
                answers.append(await self.write(write.op, single=write.single))
            except LeaseholdError as exc:
                answers.append(exc)
        return answers

    async def read(self, op: Op[T], *, point: bool = False) -> T:
        async with self._connection() as conn:
            if point:
                return await op(PgTx(conn))
            async with conn.transaction():
                return await op(PgTx(conn))


class PostgresStore(DriverStore):
    """The Store on a PostgreSQL database (``postgresql://...``)."""

    def __init__(
        self,
        url: str,
        *,
        min_connections: int = 2,
        max_connections: int = 10,
        rules: StoreRules | None = None,
    ) -> None:
        super().__init__(
            PostgresDriver(url, min_connections=min_connections, max_connections=max_connections),
            rules,
        )
