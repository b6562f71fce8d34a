"""The database's commands: ``leasehold migrate status | up [--dry-run]`` on each backend,
a schema newer than this release (refused by the commands and by ``serve``, with one line
and exit status 5), and what ``backup`` and ``restore`` refuse. A backup and restore under
load is ``test_backup.py``."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner, Result

from leasehold import cli
from leasehold.coordinator.store.migrations import migrations
from leasehold.coordinator.store.open import dialect_of
from tests.contract.test_schema import execute


def leasehold(*args: str) -> Result:
    return CliRunner().invoke(cli.app, list(args), env={"COLUMNS": "200"})


def test_a_missing_sqlite_database_is_looked_at_but_never_made(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'nothing.db'}"
    status = leasehold("migrate", "status", "--database-url", url)
    assert status.exit_code == 4
    assert status.stderr == f"leasehold: no database at {tmp_path / 'nothing.db'}\n"
    dry = leasehold("migrate", "up", "--dry-run", "--database-url", url)
    assert dry.exit_code == 0, dry.output
    labels = [m.label for m in migrations("sqlite")]
    assert (
        dry.stdout.splitlines()[-1]
        == f"would apply: {', '.join(labels)} (dry run: nothing applied)"
    )
    assert f"-- {labels[0]}\n" in dry.stdout and "CREATE TABLE jobs" in dry.stdout
    assert not (tmp_path / "nothing.db").exists()


def test_up_applies_what_is_pending_and_status_shows_each_migration(unmigrated_url: str) -> None:
    labels = [m.label for m in migrations(dialect_of(unmigrated_url))]
    url = ["--database-url", unmigrated_url]
    applied = leasehold("migrate", "up", *url)
    assert applied.exit_code == 0, applied.output
    assert applied.stdout.splitlines()[-1] == f"applied: {', '.join(labels)}"
    again = leasehold("migrate", "up", *url)
    assert again.stdout.splitlines()[-1] == "applied: nothing (up to date)"
    dry = leasehold("migrate", "up", "--dry-run", *url)
    assert dry.stdout.splitlines()[-1] == "would apply: nothing (dry run: nothing applied)"
    status = leasehold("migrate", "status", *url)
    assert status.exit_code == 0, status.output
    lines = status.stdout.splitlines()
    version = int(labels[-1][:3])
    assert lines[1].startswith(f"schema version {version}; this release knows {version}")
    assert [line.split()[:2] for line in lines[2:]] == [[label, "applied"] for label in labels]


def test_a_newer_schema_is_refused_with_one_line_and_status_5(
    database_url: str, tmp_path: Path
) -> None:
    assert leasehold("migrate", "up", "--database-url", database_url).exit_code == 0
    later = "INSERT INTO schema_migrations (version, name, applied_at) VALUES (900, 'later', "
    asyncio.run(execute(database_url, later + ("0)" if "sqlite" in database_url else "now())")))
    status = leasehold("migrate", "status", "--database-url", database_url)
    assert status.exit_code == 5
    assert status.stdout.splitlines()[-1].split() == [
        "900_later",
        "applied",
        "by",
        "a",
        "newer",
        "release",
    ]
    up = leasehold("migrate", "up", "--database-url", database_url)
    assert up.exit_code == 5 and "newer than this release knows" in up.stderr
    if not database_url.startswith("sqlite"):
        return  # the same refusal at start; one backend is enough for the process
    serve = subprocess.run(
        [sys.executable, "-m", "leasehold", "serve", "--port", "0", "--database-url", database_url],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert serve.returncode == 5, serve.stderr
    (line,) = [x for x in serve.stderr.splitlines() if not x.startswith("{")]
    assert line.startswith("leasehold: cannot start: the database's schema is at version 900,")


def test_backup_and_restore_refuse_with_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'leasehold.db'}"
    missing = leasehold("backup", str(tmp_path / "b.db"), "--database-url", url)
    assert (missing.exit_code, missing.stderr) == (
        4,
        f"leasehold: no database at {tmp_path / 'leasehold.db'}\n",
    )
    assert leasehold("migrate", "up", "--database-url", url).exit_code == 0
    (tmp_path / "b.db").write_text("not a database")
    taken = leasehold("backup", str(tmp_path / "b.db"), "--database-url", url)
    assert taken.exit_code == 2 and "a backup never overwrites" in taken.stderr
    junk = leasehold(
        "restore", str(tmp_path / "b.db"), "--database-url", f"sqlite:///{tmp_path / 'new.db'}"
    )
    assert junk.exit_code == 4 and "is not a usable SQLite database" in junk.stderr
    assert not (tmp_path / "new.db").exists()
    for command in ("backup", "restore"):
        pg = leasehold(command, str(tmp_path / "x.db"), "--database-url", "postgresql://u@h/db")
        assert pg.exit_code == 2 and ("pg_dump" in pg.stderr or "pg_restore" in pg.stderr)
