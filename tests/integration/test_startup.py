"""Starting the coordinator: one line saying where it is, and one line (with a documented exit
code, never a traceback) when it cannot start."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from leasehold import cli
from leasehold._version import __version__, build
from leasehold.coordinator.startup import EXIT_DATABASE, EXIT_LISTEN_FAILED, EXIT_REFUSED
from leasehold.coordinator.store.migrations import migrations
from tests.process import Coordinator, free_port

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


def serve(
    *args: str, cwd: Path, timeout: float = 30, port: int | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    at = str(free_port() if port is None else port)
    return subprocess.run(
        [sys.executable, "-m", "leasehold", "serve", "--port", at, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
        env={**os.environ, "LEASEHOLD_LOG_FORMAT": "json", **env},
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


def test_a_postgres_url_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    """Without asyncpg (here: an asyncpg that fails to import, as a missing one does), a
    postgresql:// URL is one line naming the extra and exit 2, not a traceback."""
    missing = tmp_path / "shadow" / "asyncpg"
    missing.mkdir(parents=True)
    (missing / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'asyncpg'\", name='asyncpg')\n"
    )
    url = "postgresql://leasehold:secret@127.0.0.1:5432/jobs"
    done = serve("--database-url", url, cwd=tmp_path, PYTHONPATH=str(missing.parent))
    line = one_line_failure(done, EXIT_REFUSED)
    assert "pip install 'leasehold-queue[postgres]'" in line
    assert "make install EXTRAS=postgres" in line
    assert f"\n{line}\nexit 2\n" in README  # README shows the line as it is


def test_a_port_in_use_is_one_line_and_exit_1(tmp_path: Path) -> None:
    """README and --help promise exit 1 when the address cannot be listened on, with a line
    that says why, before the database is touched."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve("--database-url", "sqlite:///jobs.db", cwd=tmp_path, port=port)
    line = one_line_failure(done, EXIT_LISTEN_FAILED)
    assert f"could not listen on 127.0.0.1:{port}: address already in use" in line
    assert "--port" in line
    assert not (tmp_path / "jobs.db").exists()
    assert "uvicorn" not in done.stderr
    assert f"\n{line.replace(str(port), '8080')}\nexit 1\n" in README


def test_serve_help_fits_80_columns_and_names_every_flag() -> None:
    """At 80 columns nothing is cut: every flag in full (--allow-ephemeral-database, which
    the in-memory database's refusal names, among them), no line wider than the terminal."""
    done = subprocess.run(
        [sys.executable, "-m", "leasehold", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    assert "…" not in done.stdout and "..." not in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80
    shown = set(re.findall(r"^  (--[a-z-]+)", done.stdout, re.M))
    command = typer.main.get_command(cli.app).commands["serve"]  # type: ignore[attr-defined]
    assert shown == {flag for p in command.params for flag in p.opts} | {"--help"}
    assert "--allow-ephemeral-database" in shown
    assert "Exit codes: 0 stopped cleanly; 1 could not listen" in " ".join(done.stdout.split())


def test_the_command_list_gives_each_first_sentence_whole() -> None:
    """`leasehold --help` at 80 columns wraps each command's first sentence, never cuts it."""
    shown = CliRunner().invoke(cli.app, ["--help"], env={"COLUMNS": "80"}).stdout
    listed = shown.split("Commands:")[1]
    assert "..." not in listed and "…" not in listed
    assert max(len(line) for line in shown.splitlines()) <= 80
    words = " ".join(shown.split())
    assert (
        "certify-worker Certify a worker: start a coordinator on a temporary SQLite file," in words
    )
    assert "the cancellation honoured, a graceful SIGTERM." in words
