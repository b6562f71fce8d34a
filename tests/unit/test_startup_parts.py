"""The start-up line's description of a database, and structured exceptions in JSON logs."""

from __future__ import annotations

import io
import json
import logging
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from leasehold.cli.logs import configure_logging
from leasehold.coordinator import startup
from leasehold.coordinator.startup import (
    EXIT_REFUSED,
    StartupError,
    check_database_url,
    describe_database,
)


def test_a_relative_sqlite_path_is_described_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert describe_database("sqlite:///jobs.db") == f"sqlite:///{tmp_path.resolve() / 'jobs.db'}"


# SQLite URI filenames that keep no file: in memory (shared or not), or temporary.
EPHEMERAL_URIS = [
    "sqlite:///file::memory:?cache=shared",
    "sqlite:///file:x?mode=memory",
    "sqlite:///file:jobs.db?cache=shared&mode=memory",
    "sqlite:///file:/var/jobs.db?vfs=memdb",
    "sqlite:///file://localhost/var/jobs.db?mode=memory",
    "sqlite:///file:%3Amemory%3A",
    "sqlite:///file:?cache=shared",
]


@pytest.fixture
def uri_filenames(monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite built to read file: names as URIs (most builds are): the case to refuse."""
    monkeypatch.setattr(startup, "_uri_filenames", lambda: True, raising=False)


@pytest.mark.parametrize("url", EPHEMERAL_URIS)
def test_a_database_in_memory_spelt_as_a_uri_is_refused(url: str, uri_filenames: None) -> None:
    """They were taken for files (and named so at start-up): every job lost at the stop."""
    with pytest.raises(StartupError, match="in memory") as refused:
        check_database_url(url, allow_ephemeral=False)
    assert refused.value.exit_code == EXIT_REFUSED
    check_database_url(url, allow_ephemeral=True)  # when that is meant
    assert describe_database(url) == url  # no path to name


def test_a_file_spelt_as_a_uri_is_described_as_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, uri_filenames: None
) -> None:
    monkeypatch.chdir(tmp_path)
    expected = f"sqlite:///{tmp_path.resolve() / 'jobs.db'}"
    for url in (
        "sqlite:///file:jobs.db?cache=shared",
        "sqlite:///file:jobs%2Edb?mode=rwc#fragment",
        f"sqlite:///file://{tmp_path.resolve() / 'jobs.db'}",
        "sqlite:///file:jobs.db?MODE=memory",  # SQLite reads the parameter's name as written
    ):
        check_database_url(url, allow_ephemeral=False)
        assert describe_database(url) == expected, url
    with pytest.raises(StartupError, match="does not exist"):
        check_database_url("sqlite:///file:missing/jobs.db?cache=shared", allow_ephemeral=False)


def test_without_uri_filenames_a_file_name_is_a_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(startup, "_uri_filenames", lambda: False)
    check_database_url("sqlite:///file:x?mode=memory", allow_ephemeral=False)
    assert describe_database("sqlite:///file:x?mode=memory").endswith("/file:x?mode=memory")


def test_this_sqlite_is_asked_how_it_reads_file_names() -> None:
    with sqlite3.connect(":memory:") as conn:
        built = ("USE_URI",) in conn.execute("PRAGMA compile_options").fetchall()
    assert startup._uri_filenames() is built


def test_a_postgres_url_is_described_without_its_password() -> None:
    described = describe_database("postgresql://app:s3cret@db.internal:5433/jobs?sslmode=require")
    assert described == "postgresql://app@db.internal:5433/jobs"


class _Stderr:
    """What configure_logging takes from sys.stderr: a binary buffer, not a terminal."""

    def __init__(self, buffer: io.BytesIO) -> None:
        self.buffer = buffer

    def isatty(self) -> bool:
        return False


@pytest.fixture
def json_stderr(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.BytesIO]:
    """JSON logging into a buffer; structlog and the root logger are put back afterwards."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    # uvicorn's loggers as `serve` leaves them (log_config=None): an in-process server of an
    # earlier test may have given them handlers of their own and stopped their propagation.
    for name in ("uvicorn", "uvicorn.error"):
        uvicorn_logger = logging.getLogger(name)
        monkeypatch.setattr(uvicorn_logger, "handlers", [])
        monkeypatch.setattr(uvicorn_logger, "propagate", True)
        monkeypatch.setattr(uvicorn_logger, "level", logging.NOTSET)
        monkeypatch.setattr(uvicorn_logger, "disabled", False)
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stderr", _Stderr(raw))
    configure_logging("json", "info")
    yield raw
    structlog.configure(**saved)
    root.handlers, root.level = handlers, level


def lines(raw: io.BytesIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in raw.getvalue().splitlines()]


def test_an_exception_is_a_structured_field_in_json_logs(json_stderr: io.BytesIO) -> None:
    """structlog's and the standard library's (uvicorn's) exceptions alike: one JSON line
    each, the exception a list of frames, no plain-text traceback."""
    for logger in (
        structlog.get_logger("leasehold").exception,
        logging.getLogger("uvicorn").exception,
    ):
        try:
            raise RuntimeError("boom")
        except RuntimeError:
            logger("request.error")
    got = lines(json_stderr)
    assert len(got) == 2
    for event in got:
        exceptions: list[dict[str, Any]] = event["exception"]
        [exc] = exceptions
        assert exc["exc_type"] == "RuntimeError" and exc["exc_value"] == "boom"
        assert exc["frames"]
    assert got[1]["logger"] == "uvicorn"


def test_the_servers_copy_of_a_handled_500_is_dropped(json_stderr: io.BytesIO) -> None:
    """The app logs a 500 as request.error; uvicorn's second traceback of it is not logged."""
    logging.getLogger("uvicorn.error").error("Exception in ASGI application\n")
    logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
    assert [e["event"] for e in lines(json_stderr)] == ["Invalid HTTP request received."]
