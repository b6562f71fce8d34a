"""Starting the coordinator: one line saying where it is, and one line (with a documented exit
code, never a traceback) when it cannot start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from leasehold._version import __version__, build
from leasehold.coordinator.startup import EXIT_DATABASE, EXIT_REFUSED
from leasehold.coordinator.store.migrations import migrations
from tests.process import Coordinator, free_port


def serve(*args: str, cwd: Path, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "leasehold", "serve", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "LEASEHOLD_LOG_FORMAT": "json"},
    )


def one_line_failure(done: subprocess.CompletedProcess[str], code: int) -> str:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr
    [line] = [ln for ln in done.stderr.splitlines() if ln.startswith("leasehold: cannot start")]
    return line


@pytest.mark.parametrize(
    ("url", "code", "says"),
    [
        ("mysql://root@localhost/jobs", EXIT_REFUSED, "unsupported database URL scheme 'mysql'"),
        ("sqlite:///", EXIT_REFUSED, "--allow-ephemeral-database"),
        ("sqlite:///:memory:", EXIT_REFUSED, "every job would be lost"),
        ("sqlite:///no/such/folder/jobs.db", EXIT_DATABASE, "does not exist"),
        ("sqlite:///corrupt.db", EXIT_DATABASE, "not a usable SQLite database"),
    ],
)
def test_a_database_that_cannot_work_is_one_line_and_an_exit_code(
    tmp_path: Path, url: str, code: int, says: str
) -> None:
    """Unknown schemes, databases in memory, a missing folder and a corrupt file are refused
    at start with one line naming the problem."""
    (tmp_path / "corrupt.db").write_bytes(b"this is not a database" * 100)
    line = one_line_failure(serve("--database-url", url, cwd=tmp_path), code)
    assert says in line


@pytest.mark.parametrize(
    "option",
    [
        ("--log-level", "verbose"),
        ("--log-format", "pretty"),
        ("--sqlite-synchronous", "fast"),
    ],
)
def test_a_bad_choice_is_a_usage_error_listing_the_choices(
    tmp_path: Path, option: tuple[str, str]
) -> None:
    """A mistyped choice exits 2 with the valid choices and no traceback."""
    done = serve(*option, cwd=tmp_path)
    assert done.returncode == EXIT_REFUSED
    assert "Traceback" not in done.stderr
    assert "is not one of" in done.stderr
    assert not (tmp_path / "leasehold.db").exists()


def test_unreachable_postgres_is_retried_then_one_line(tmp_path: Path) -> None:
    """While PostgreSQL cannot be reached the coordinator keeps trying for the wait given,
    then says so in one line (without the password) and exits 4."""
    url = f"postgresql://leasehold:hunter2@127.0.0.1:{free_port()}/jobs"
    done = serve("--database-url", url, "--database-wait-seconds", "1", cwd=tmp_path)
    line = one_line_failure(done, EXIT_DATABASE)
    assert "could not be reached in 1 s" in line
    assert "store.waiting" in done.stderr  # it did retry
    assert "hunter2" not in done.stderr


def test_the_start_line_says_where_everything_is(tmp_path: Path) -> None:
    """One line names the URL, the dashboard, the API docs, the release and the database's
    absolute path, after the open-file limit it runs with and the schema it found."""
    c = Coordinator(f"sqlite:///{tmp_path / 'here.db'}", tmp_path).start()
    try:
        lines = [json.loads(ln) for ln in c.logs().splitlines() if ln.startswith("{")]
    finally:
        c.kill()
    [where] = [e for e in lines if e["event"] == "coordinator.listening"]
    assert where["url"] == c.url
    assert where["dashboard"] == f"{c.url}/ui/"
    assert where["docs"] == f"{c.url}/docs"
    assert where["database"] == f"sqlite:///{(tmp_path / 'here.db').resolve()}"
    assert (where["version"], where["build"]) == (__version__, build())
    [schema] = [e for e in lines if e["event"] == "schema.ready"]
    known = [m.label for m in migrations("sqlite")]
    assert (schema["version"], schema["applied"]) == (int(known[-1][:3]), known)
    assert schema["database"] == where["database"] and schema["tokens_from"] > 0


def test_an_ephemeral_database_is_served_when_asked_for(tmp_path: Path) -> None:
    """``--allow-ephemeral-database`` makes a database in memory a deliberate choice."""
    c = Coordinator("sqlite:///:memory:", tmp_path, ["--allow-ephemeral-database"]).start()
    c.kill()
    assert '"database":"sqlite:///:memory:"' in c.logs().replace(" ", "")
