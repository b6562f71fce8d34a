"""The database's own commands: ``migrate status``, ``migrate up [--dry-run]``, ``backup``
and ``restore``. They work on the database itself (``--database-url``, as ``serve`` takes
it), not through a coordinator; their exit codes are ``serve``'s (``EXIT_HELP``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, NoReturn, TypeVar

import typer

from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.startup import (
    EXIT_DATABASE,
    EXIT_REFUSED,
    EXIT_SCHEMA,
    StartupError,
    check_database_url,
    describe_database,
    sqlite_file,
)
from leasehold.coordinator.store.migrations import migrations
from leasehold.coordinator.store.open import dialect_of, open_store
from leasehold.coordinator.store.schema import SchemaState
from leasehold.errors import SchemaTooNew, StoreInUse, Unavailable

T = TypeVar("T")

EXIT_HELP = (
    "Exit codes: 0 done; 2 a bad option or a refused request; 4 the database could not be"
    " opened (missing, in use by a coordinator, unreachable); 5 the database's schema is"
    " newer than this release knows."
)
# What to use on PostgreSQL: its own tools, consistent while coordinators serve.
POSTGRES_BACKUP = (
    "on PostgreSQL, back up with the server's tools: pg_dump --format=custom --file=FILE URL"
    " (online and consistent), or continuous archiving for point-in-time recovery;"
    " see README, 'Backup and restore'"
)
POSTGRES_RESTORE = (
    "on PostgreSQL, restore with pg_restore into an empty database (pg_restore"
    " --dbname=URL FILE), then start a coordinator of this release or later, which raises"
    " the lease tokens above every token issued before; see README, 'Backup and restore'"
)

DatabaseUrl = Annotated[
    str,
    typer.Option(
        "--database-url",
        envvar="LEASEHOLD_DATABASE_URL",
        help="The database, as `leasehold serve` takes it.",
    ),
]
DEFAULT_DATABASE = CoordinatorSettings().database_url

migrate = typer.Typer(
    help="The database's schema: what is applied, and applying what is not.",
    no_args_is_help=True,
)


def _fail(message: str, code: int) -> NoReturn:
    typer.echo(f"leasehold: {message}", err=True)
    raise typer.Exit(code)


def _run(work: Callable[[], T]) -> T:
    """``work()``, its failures as one line and an exit code."""
    try:
        return work()
    except SchemaTooNew as exc:
        _fail(str(exc), EXIT_SCHEMA)
    except StoreInUse as exc:
        _fail(f"{exc}: stop it first", EXIT_DATABASE)
    except (FileNotFoundError, ValueError) as exc:  # ours: the message says it all
        _fail(str(exc), EXIT_DATABASE)
    except (Unavailable, sqlite3.Error, OSError) as exc:
        _fail(f"{type(exc).__name__}: {exc}", EXIT_DATABASE)


def _checked(url: str) -> str:
    """``url``, refused before anything is touched if it cannot hold a database to keep."""
    try:
        check_database_url(url, allow_ephemeral=False)
    except StartupError as exc:
        _fail(str(exc), exc.exit_code)
    return url


def _inspect(url: str) -> SchemaState:
    file = sqlite_file(url) if url.startswith("sqlite") else None
    if file is not None and not Path(file).exists():
        _fail(f"no database at {Path(file).resolve()}", EXIT_DATABASE)
    return _run(lambda: asyncio.run(open_store(url).schema_inspect()))


@migrate.command("status", epilog=EXIT_HELP)
def status(database_url: DatabaseUrl = DEFAULT_DATABASE) -> None:
    """Show the schema's version, and each migration: applied (when), pending, or applied
    by a newer release. Reads only: safe while coordinators serve the database."""
    state = _inspect(_checked(database_url))
    floor = state.record.floor
    typer.echo(f"database: {describe_database(database_url)}")
    typer.echo(
        f"schema version {state.version}; this release knows {state.knows}"
        + (f"; coordinators must know {floor.version}" if floor is not None else "")
    )
    applied = {a.version: a for a in state.record.applied}
    for migration in state.known:
        done = applied.get(migration.version)
        when = (done.applied_at.isoformat() if done.applied_at else "") if done else ""
        typer.echo(f"  {migration.label:<36} {'applied ' + when if done else 'pending'}")
    for newer in state.unknown:
        typer.echo(f"  {newer.label:<36} applied by a newer release")
    problem = state.too_new()
    if problem is not None:
        _fail(problem, EXIT_SCHEMA)


@migrate.command("up", epilog=EXIT_HELP)
def up(
    database_url: DatabaseUrl = DEFAULT_DATABASE,
    dry_run: bool = typer.Option(
        False, "--dry-run", help="Show what would be applied, with its SQL; change nothing."
    ),
) -> None:
    """Apply the migrations not yet applied, in order, each in the same transaction as its
    record (a coordinator does this at start too). A coordinator of an older release stops
    within a second of a migration it cannot serve (DESIGN.md §24)."""
    url = _checked(database_url)
    typer.echo(f"database: {describe_database(url)}")
    if dry_run:
        exists = not url.startswith("sqlite") or Path(sqlite_file(url) or "").exists()
        state = _inspect(url) if exists else None  # a missing file would be made: all
        pending = state.pending if state is not None else tuple(migrations(dialect_of(url)))
        if state is not None and (problem := state.too_new()) is not None:
            _fail(problem, EXIT_SCHEMA)
        for migration in pending:
            typer.echo(f"-- {migration.label}\n{migration.sql.rstrip()}\n")
        names = ", ".join(m.label for m in pending) or "nothing"
        typer.echo(f"would apply: {names} (dry run: nothing applied)")
        return

    async def apply() -> tuple[str, ...]:
        store = open_store(url)
        report = await store.open()
        await store.close()
        return report.applied

    applied = _run(lambda: asyncio.run(apply()))
    typer.echo(f"applied: {', '.join(applied) or 'nothing (up to date)'}")


def backup(
    dest: Path = typer.Argument(..., help="The backup file to write (must not exist)."),
    database_url: DatabaseUrl = DEFAULT_DATABASE,
) -> None:
    """Back up a SQLite database, also while its coordinator serves it: one consistent
    state, every acknowledged change in it (a copy of the file alone may miss the newest,
    still in the -wal file). On PostgreSQL, says what to use."""
    from leasehold.coordinator.store.sqlite import backup as sqlite_backup

    file = _sqlite_only(database_url, POSTGRES_BACKUP)
    if dest.exists():
        _fail(f"{dest} exists: give a new name (a backup never overwrites)", EXIT_REFUSED)
    summary = _run(lambda: sqlite_backup.backup(Path(file), dest))
    typer.echo(
        f"backed up {describe_database(database_url)} to {dest.resolve()}: schema version"
        f" {summary.version}, {summary.jobs} jobs, {summary.size} bytes"
    )


def restore(
    backup_file: Path = typer.Argument(..., metavar="BACKUP", help="A file `backup` wrote."),
    database_url: DatabaseUrl = DEFAULT_DATABASE,
    force: bool = typer.Option(
        False, "--force", help="Replace the database if it exists (what it holds is lost)."
    ),
) -> None:
    """Replace a SQLite database with a backup, with its coordinator stopped. Jobs running
    when the backup was taken run again, and what changed after it is forgotten
    (DESIGN.md §24); lease tokens start above every token handed out before. On
    PostgreSQL, says what to use."""
    from leasehold.coordinator.store.sqlite import backup as sqlite_backup

    file = Path(_sqlite_only(database_url, POSTGRES_RESTORE))
    if file.exists() and not force:
        _fail(
            f"{file.resolve()} exists: stop its coordinator and pass --force to replace it"
            " (back it up first if it may be wanted)",
            EXIT_REFUSED,
        )
    summary, tokens_from = _run(lambda: sqlite_backup.restore(backup_file, file))
    typer.echo(
        f"restored {backup_file.resolve()} to {describe_database(database_url)}: schema"
        f" version {summary.version}, {summary.jobs} jobs; lease tokens from {tokens_from}"
    )


def _sqlite_only(url: str, postgres: str) -> str:
    """The SQLite file ``url`` names; a PostgreSQL URL is refused with what to use."""
    if not _checked(url).startswith("sqlite"):
        _fail(postgres, EXIT_REFUSED)
    file = sqlite_file(url)
    assert file is not None  # _checked refused a database in memory
    return file


def register(app: typer.Typer) -> None:
    app.add_typer(migrate, name="migrate")
    app.command(epilog=EXIT_HELP)(backup)
    app.command(epilog=EXIT_HELP)(restore)
