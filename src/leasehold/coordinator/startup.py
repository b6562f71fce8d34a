"""What ``leasehold serve`` checks before it serves, and how it says that it cannot.

A coordinator that cannot start says why in one line on stderr and exits with a code a
supervisor can act on; tracebacks are for bugs. The exit codes (README lists them too):
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final, NoReturn
from urllib.parse import unquote, urlparse

import structlog

from leasehold.coordinator.store.contract import Store
from leasehold.coordinator.store.open import open_store, postgres_missing, sqlite_path
from leasehold.coordinator.store.schema import SETTLE_SECONDS, SchemaReport
from leasehold.errors import SchemaTooNew, StoreInUse, Unavailable

log = structlog.get_logger("leasehold")

EXIT_STOPPED: Final = 0  # stopped by SIGTERM or SIGINT, after a clean shutdown
EXIT_LISTEN_FAILED: Final = 1  # could not listen on the address (in use, not allowed)
EXIT_REFUSED: Final = 2  # a bad option, or a configuration refused as unsafe or lossy
EXIT_STARTUP_FAILED: Final = 3  # the application did not start
EXIT_DATABASE: Final = 4  # the database could not be opened (or reached in time)
# The database's schema is newer than this release knows: refused at start, or raised by a
# newer release's coordinator while this one served (it stops taking work and exits).
EXIT_SCHEMA: Final = 5

EXIT_CODES_HELP: Final = (
    "Exit codes: 0 stopped cleanly; 1 could not listen on the address; 2 a bad option or a"
    " refused configuration; 3 the application did not start; 4 the database could not be"
    " opened or reached within --database-wait-seconds; 5 the database's schema is newer"
    " than this release knows (at start, or migrated by a newer release while serving)."
)

# After raising the schema's floor, how long a coordinator waits at most for the sessions of
# older coordinators to go (they stop within a second of seeing it; one still there after
# this is stuck, and its operator must stop it), and how often it looks.
OLDER_WAIT_SECONDS: Final = 60.0
OLDER_POLL_SECONDS: Final = 0.25

# Names SQLite keeps no file under: a database in memory, and a temporary one (deleted when
# it is closed).
_EPHEMERAL = ("", ":memory:")
_URI_PREFIX = "file:"


class StartupError(Exception):
    """The coordinator cannot start: ``str(self)`` is the one line to print."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def exit_with(error: StartupError) -> NoReturn:
    print(f"leasehold: cannot start: {error}", file=sys.stderr)
    raise SystemExit(error.exit_code)


@functools.cache
def _uri_filenames() -> bool:
    """Whether this SQLite reads a name starting with ``file:`` as a URI. The driver passes
    the name as it is, so that depends on how SQLite was built (``SQLITE_USE_URI``, as most
    builds are); without it, ``file:x`` is a file of that name."""
    with contextlib.closing(sqlite3.connect(":memory:")) as conn:
        return ("USE_URI",) in conn.execute("PRAGMA compile_options").fetchall()


def sqlite_file(url: str) -> str | None:
    """The file a ``sqlite:///`` URL keeps its jobs in, as SQLite will read the name; None
    for a database that keeps none: in memory (``:memory:``, and the URI forms
    ``file::memory:``, ``file:x?mode=memory``, ``file:x?vfs=memdb``) or temporary (an
    empty name, deleted when it is closed)."""
    path = sqlite_path(url)
    if path in _EPHEMERAL:
        return None
    if not path.startswith(_URI_PREFIX) or not _uri_filenames():
        return path
    # SQLite's URI rules (sqlite.org/uri.html): file:[//authority]path[?query][#fragment],
    # %HH escapes decoded; the parameters' names and values are compared as written.
    rest = path.removeprefix(_URI_PREFIX).partition("#")[0]
    location, _, query = rest.partition("?")
    if location.startswith("//"):  # an authority: empty or localhost, else SQLite refuses
        location = "/" + location[2:].partition("/")[2]
    options = {}
    for pair in query.split("&"):  # no "+" for a space here, unlike a web form's query
        key, _, value = pair.partition("=")
        options[unquote(key)] = unquote(value)  # as SQLite reads them: the last one counts
    name = unquote(location)
    if name in _EPHEMERAL or options.get("mode") == "memory" or options.get("vfs") == "memdb":
        return None
    return name


def describe_database(url: str) -> str:
    """The database as the start-up line names it: an absolute SQLite path (the file
    SQLite will open, also for a ``file:`` URI), or PostgreSQL's user, host, port and
    database (never the password)."""
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        file = sqlite_file(url)
        return f"sqlite:///{Path(file).resolve()}" if file is not None else url
    host = parsed.hostname or "localhost"
    netloc = f"{parsed.username}@{host}" if parsed.username else host
    if parsed.port is not None:
        netloc += f":{parsed.port}"
    return f"{parsed.scheme}://{netloc}{parsed.path}"


def check_database_url(url: str, *, allow_ephemeral: bool) -> None:
    """Refuse, before touching anything, a URL that cannot work or would lose every job."""
    scheme = urlparse(url).scheme
    if scheme not in ("sqlite", "postgres", "postgresql"):
        raise StartupError(
            f"unsupported database URL scheme {scheme!r}: use sqlite:///PATH or"
            " postgresql://USER:PASSWORD@HOST:PORT/DB",
            EXIT_REFUSED,
        )
    if scheme != "sqlite":
        missing = postgres_missing()
        if missing is not None:  # before anything starts: one line, not a traceback
            raise StartupError(missing, EXIT_REFUSED)
        return
    if not url.startswith("sqlite:///"):
        raise StartupError(f"a SQLite URL is sqlite:///PATH, not {url!r}", EXIT_REFUSED)
    file = sqlite_file(url)
    if file is None and not allow_ephemeral:
        raise StartupError(
            f"{url!r} is a database in memory: every job would be lost when the coordinator"
            " stops. Give a file (sqlite:///leasehold.db), or pass --allow-ephemeral-database"
            " if that is meant.",
            EXIT_REFUSED,
        )
    if file is not None and not Path(file).resolve().parent.is_dir():
        raise StartupError(
            f"the folder of the SQLite database {Path(file).resolve()} does not exist",
            EXIT_DATABASE,
        )


def prepare_database(
    url: str, *, synchronous: str, wait_seconds: float, sleep: Callable[[float], None] = time.sleep
) -> SchemaReport:
    """Open the database once (creating and migrating it) and close it again, so that a
    database that cannot be used fails here with one line; log its schema
    (``schema.ready``), and, if this start raised the schema's floor, wait until the
    coordinators of older releases have stopped. While PostgreSQL cannot be reached (a
    container starting next to it), try again with backoff for ``wait_seconds``."""
    deadline = time.monotonic() + wait_seconds
    delay = 0.25
    attempt = 1
    while True:
        try:
            return asyncio.run(_open_and_close(url, synchronous))
        except StoreInUse as exc:  # another coordinator serves the file: waiting won't help
            raise StartupError(str(exc), EXIT_DATABASE) from None
        except SchemaTooNew as exc:
            raise StartupError(str(exc), EXIT_SCHEMA) from None
        except Unavailable as exc:  # PostgreSQL not reachable (yet)
            left = deadline - time.monotonic()
            if left <= 0:
                raise StartupError(
                    f"the database {describe_database(url)} could not be reached in"
                    f" {wait_seconds:g} s ({attempt} attempts): {_cause(exc)}",
                    EXIT_DATABASE,
                ) from None
            log.warning("store.waiting", attempt=attempt, retry_in=round(min(delay, left), 2))
            sleep(min(delay, left))
            delay = min(delay * 2, 5.0)
            attempt += 1
        except (sqlite3.Error, OSError, ValueError) as exc:
            raise StartupError(_sqlite_problem(url, exc), EXIT_DATABASE) from None
        except Exception as exc:  # the driver's own errors (a wrong password, no such database)
            raise StartupError(
                f"the database {describe_database(url)} could not be opened: {_cause(exc)}",
                EXIT_DATABASE,
            ) from None


async def _open_and_close(url: str, synchronous: str) -> SchemaReport:
    store = open_store(url, synchronous=synchronous)
    report = await store.open()
    try:
        log.info(
            "schema.ready",
            database=describe_database(url),
            version=report.version,
            applied=list(report.applied),
            floor=report.floor.version,
            tokens_from=report.tokens_from,
        )
        await _settle(store, report)
    finally:
        await store.close()
    return report


async def _settle(store: Store, report: SchemaReport) -> None:
    """After a floor raised moments ago: give the older coordinators the time to see it,
    then wait until none of them still holds a session (they stop on seeing it)."""
    settle = report.settle_seconds(SETTLE_SECONDS)
    if settle <= 0:
        return
    log.info("schema.settling", seconds=round(settle, 2), floor=report.floor.version)
    await asyncio.sleep(settle)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + OLDER_WAIT_SECONDS
    while (older := await store.coordinators_below(report.floor.version)) > 0:
        if loop.time() > deadline:
            log.error("schema.older_still_connected", sessions=older, floor=report.floor.version)
            return
        log.info("schema.waiting_for_older", sessions=older, floor=report.floor.version)
        await asyncio.sleep(OLDER_POLL_SECONDS)


def _cause(exc: BaseException) -> str:
    root = exc.__cause__ or exc
    return f"{type(root).__name__}: {root}".strip()


def _sqlite_problem(url: str, exc: BaseException) -> str:
    where = describe_database(url)
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return f"the database {where} is read-only ({text}): the coordinator must write to it"
    if "not a database" in text or "malformed" in text:
        return f"{where} is not a usable SQLite database ({text})"
    return f"the database {where} could not be opened: {type(exc).__name__}: {text}"
