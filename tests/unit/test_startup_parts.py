"""The start-up line's description of a database, and structured exceptions in JSON logs."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from leasehold.cli.logs import configure_logging
from leasehold.coordinator.startup import describe_database


def test_a_relative_sqlite_path_is_described_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert describe_database("sqlite:///jobs.db") == f"sqlite:///{tmp_path.resolve() / 'jobs.db'}"


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
