"""``leasehold_enqueue`` on the application's own connection: asyncpg, or psycopg 3 (sync or
async). One statement each: the function, and the job it answers with.

The function is asked to answer a refusal rather than raise it, so a refused job leaves the
caller's transaction usable (an error raised in PostgreSQL would abort it); the refusal
is raised here, as the leasehold error its code names.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from datetime import UTC
from typing import Any, Final

from leasehold import job_fields
from leasehold.errors import (
    IdempotencyConflict,
    InvalidGraph,
    InvalidRequest,
    LeaseholdError,
    PayloadTooLarge,
    TooManyNames,
    Unavailable,
)
from leasehold.model import Job

_BY_CODE: Final[dict[str, type[LeaseholdError]]] = {
    e.code: e
    for e in (InvalidRequest, IdempotencyConflict, InvalidGraph, TooManyNames, PayloadTooLarge)
}
# Text PostgreSQL cannot store (NUL), as the coordinator's driver refuses it too.
_UNSTORABLE: Final = ("22P05", "22021")
_UNDEFINED_FUNCTION: Final = "42883"

# The enqueue and the job it answers with, in one statement (one round trip): the job's
# columns with JSON as text on every driver (psycopg would parse it, asyncpg does not).
_COLUMNS: Final = ", ".join(
    f"j.{f.name}::text AS {f.name}" if f.stored is job_fields.Stored.JSON else f"j.{f.name}"
    for f in job_fields.STORED
)
_ENQUEUE: Final = (
    f"SELECT e.error, e.message, {_COLUMNS} FROM leasehold_enqueue({{}}::json, false) AS e"
    " LEFT JOIN LATERAL leasehold_job(e.id) AS j ON true"
)
_ASYNCPG: Final = _ENQUEUE.format("$1")
_PSYCOPG: Final = _ENQUEUE.format("%s")
# Times in UTC, as everywhere else (psycopg gives them in the session's time zone).
_decode: Final[Callable[[Any], Job]] = job_fields.row_decoder(
    {**job_fields.DECODE, job_fields.Stored.TIME: "{v}.astimezone(_UTC)"},
    {"_UTC": UTC},
    by_name=True,
    name="transactional_job",
)


def refused(error: str | None, message: str | None) -> LeaseholdError | None:
    """The error ``leasehold_enqueue`` answered (its code and message), or None."""
    if error is None:
        return None
    return _BY_CODE.get(error, InvalidRequest)(message or None)


def translated(sqlstate: str | None) -> LeaseholdError | None:
    """The error a database error stands for: text PostgreSQL cannot store (NUL), refused
    as the coordinator refuses it; a database whose schema has no leasehold_enqueue yet
    (no coordinator of this release has started on it), or a search_path that misses it."""
    if sqlstate in _UNSTORABLE:
        return InvalidRequest("the database cannot store a value of this job")
    if sqlstate == _UNDEFINED_FUNCTION:
        return Unavailable(
            "the database has no leasehold_enqueue on this connection's search_path: a"
            " coordinator of this release adds it when it starts (migration 012); connect"
            " with the search_path the coordinators use"
        )
    return None


def kind_of(conn: object) -> str:
    """Which driver ``conn`` belongs to: "asyncpg", "psycopg" or "psycopg-async"; TypeError
    for anything else."""
    module = type(conn).__module__
    if module.startswith("asyncpg"):
        return "asyncpg"
    if module.startswith("psycopg"):
        import psycopg

        if isinstance(conn, psycopg.AsyncConnection):
            return "psycopg-async"
        if isinstance(conn, psycopg.Connection):
            return "psycopg"
    raise TypeError(
        "enqueue in a transaction takes an asyncpg connection or a psycopg (3) connection,"
        f" not {type(conn).__name__}"
    )


async def insert_asyncpg(conn: Any, argument: str) -> Job:
    import asyncpg

    with _database_errors(asyncpg.PostgresError):
        return _answered(await conn.fetchrow(_ASYNCPG, argument))


def insert_psycopg(conn: Any, argument: str) -> Job:
    import psycopg
    from psycopg.rows import dict_row

    with _database_errors(psycopg.Error), conn.cursor(row_factory=dict_row) as cursor:
        return _answered(cursor.execute(_PSYCOPG, (argument,)).fetchone())


async def insert_psycopg_async(conn: Any, argument: str) -> Job:
    import psycopg
    from psycopg.rows import dict_row

    with _database_errors(psycopg.Error):
        async with conn.cursor(row_factory=dict_row) as cursor:
            return _answered(await (await cursor.execute(_PSYCOPG, (argument,))).fetchone())


@contextlib.contextmanager
def _database_errors(driver_error: type[Exception]) -> Iterator[None]:
    """The driver's errors that stand for a leasehold error, raised as that error."""
    try:
        yield
    except driver_error as exc:
        if (error := translated(getattr(exc, "sqlstate", None))) is None:
            raise
        raise error from None


def _answered(row: Any) -> Job:
    """The job of ``leasehold_enqueue``'s answer, or the refusal it answered, raised."""
    if (error := refused(row["error"], row["message"])) is not None:
        raise error
    return _decode(row)
