"""Everything the admin commands print from a coordinator is safe for a terminal.

A producer's payload reaches ``last_error`` through an honest handler's exception, and a
heartbeat's host and version are a worker's own words; a coordinator (or a proxy in its
place) may send anything. A scripted coordinator answers every read with text that clears
the screen, writes the clipboard (OSC 52), starts a CSI in one character (U+009B), reverses
the text (U+202E) and looks like rich's markup: the tables, the ``--json`` forms and the
error lines show all of it as escapes, and nothing of it acts on the terminal.
"""

from __future__ import annotations

import asyncio
import json
import logging
import unicodedata
from datetime import UTC, datetime
from typing import Any

import aiohttp.web
import pytest
import structlog
from typer.testing import CliRunner, Result

from leasehold.cli import app
from leasehold.cli.logs import configure_logging
from tests.scripted import serving

HOSTILE = "\x1b[2J\x1b]52;c;cHduZWQ=\x07\u009b31m\u202eevil[/bold] [link=http://x]y"
NOW = datetime(2030, 1, 1, tzinfo=UTC).isoformat()
JOB: dict[str, Any] = {
    "id": 7,
    "kind": HOSTILE,
    "payload": {"p": HOSTILE},
    "status": "dead",
    "attempts": 1,
    "max_attempts": 1,
    "run_after": NOW,
    "created_at": NOW,
    "lease_owner": HOSTILE,
    "lease_expires_at": None,
    "lease_token": 1,
    "idempotency_key": HOSTILE,
    "result": {"r": HOSTILE},
    "last_error": f"Traceback (most recent call last):\n  ...\nValueError: {HOSTILE}",
    "leased_at": NOW,
    "finished_at": NOW,
    "priority": 0,
    "queue": HOSTILE,
    "cancel_requested": False,
    "headers": {"traceparent": HOSTILE},
    "waiting_for": 1,
    "depth": 1,
    "dependents": 2,
    "blocked_by": None,
    "spawned_by": 3,
    "spawn_key": HOSTILE,
    "group_key": HOSTILE,
    "weight": 2,
    "start_by": NOW,
    "unique_key": HOSTILE,
}
EDGE = {"kind": HOSTILE, "status": "waiting", "spawn_key": HOSTILE, "on_failure": HOSTILE}
COUNTS = {"queued": 1, "running": 0, "completed": 0, "dead": 1, "cancelled": 0}
ANSWERS: dict[str, Any] = {
    "/jobs/7": JOB,
    "/jobs/7/attempts": {
        "job_id": 7,
        "attempts": [
            {
                "token": 1,
                "worker_id": HOSTILE,
                "leased_at": NOW,
                "finished_at": NOW,
                "outcome": "failed",
                "error": HOSTILE,
            }
        ],
        "next_cursor": None,
    },
    "/jobs/7/parents": {"job_id": 7, "jobs": [{**EDGE, "id": 3}], "next_cursor": None},
    "/jobs/7/dependents": {"job_id": 7, "jobs": [{**EDGE, "id": 8}], "next_cursor": None},
    "/jobs/7/explain": {
        "job_id": 7,
        "status": HOSTILE,
        "runnable": False,
        "reasons": [{"code": HOSTILE, "message": HOSTILE, "until": HOSTILE, "detail": {}}],
    },
    "/jobs/9": {**JOB, "id": 9, "dependents": 0},  # read before its cancel
    "/jobs": {"jobs": [JOB], "next_cursor": HOSTILE},
    "/workers": {
        "workers": [
            {
                "worker_id": HOSTILE,
                "host": HOSTILE,
                "pid": 1,
                "version": HOSTILE,
                "kinds": [HOSTILE],
                "queues": [HOSTILE],
                "concurrency": 1,
                "started_at": NOW,
                "last_seen": NOW,
                "live": True,
                "seconds_since_seen": 1.0,
            }
        ]
    },
    "/stats": {
        "by_status": COUNTS,
        "by_kind": {HOSTILE: COUNTS},
        "by_queue": {HOSTILE: COUNTS, "default": COUNTS},
        "totals": {"enqueued": 2},
        "totals_by_kind": {HOSTILE: {"enqueued": 2}},
        "avg_wait_seconds": None,
        "avg_run_seconds": None,
        "average_window_seconds": 300,
        "lease_expirations": 0,
        "stale_token_rejections": 0,
        "oldest_queued_age_seconds": None,
        "completed_last_minute": 0,
        "failed_last_minute": 0,
        "unserved": [{"queue": HOSTILE, "kind": HOSTILE, "queued": 1}],
    },
    "/queues": {
        "queues": [
            {
                "name": HOSTILE,
                "counts": COUNTS,
                "paused": False,
                "paused_at": None,
                "oldest_queued_age_seconds": 1.0,
                "completed_last_minute": 0,
            }
        ]
    },
    "/schedules": {
        "schedules": [
            {
                "name": HOSTILE,
                "cron": HOSTILE,
                "timezone": HOSTILE,
                "kind": HOSTILE,
                "queue": HOSTILE,
                "enabled": True,
                "next_fire_at": HOSTILE,
                "last_fire_at": HOSTILE,
            }
        ]
    },
    "/limits": {
        "limits": [
            {"kind": HOSTILE, "max_running": 1, "running": 0},
            {
                "kind": HOSTILE,
                "max_running": None,
                "running": 0,
                "max_running_per_group": 2,
                "rate": {"limit": 5, "period_seconds": 60.0, "per_group": True},
                "fair": True,
            },
        ]
    },
}


async def hostile(request: aiohttp.web.Request) -> aiohttp.web.StreamResponse:
    if request.path == "/jobs/9/cancel":  # a refusal whose message quotes the payload
        return aiohttp.web.json_response({"error": "job_cancelled", "message": HOSTILE}, status=409)
    if request.path == "/jobs/10":  # a proxy's page instead of the coordinator's answer
        return aiohttp.web.Response(status=404, text=f"<html>{HOSTILE}</html>")
    return aiohttp.web.json_response(ANSWERS[request.path])


def unsafe(text: str) -> list[str]:
    """The characters of ``text`` a terminal could act on (a line break is text's own)."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c != "\n"]


def invoke(url: str, *args: str) -> Result:
    env = {"COLUMNS": "400", "LEASEHOLD_URL": url, "LEASEHOLD_TOKEN": ""}
    return CliRunner().invoke(app, list(args), env=env)


TABLES = [
    ("job", "7"),
    ("explain", "7"),
    ("jobs",),
    ("workers",),
    ("stats",),
    ("queues",),
    ("schedules", "list"),
    ("limits", "list"),
]


@pytest.mark.parametrize("args", TABLES, ids=" ".join)
async def test_tables_show_escapes_and_no_markup(args: tuple[str, ...]) -> None:
    async with serving(hostile) as server:
        # In a thread: the scripted server answers on this test's event loop.
        result = await asyncio.to_thread(invoke, server.url, *args)
    assert result.exit_code == 0, result.output
    assert unsafe(result.stdout) == [] and unsafe(result.stderr) == []
    assert "\\x1b[2J" in result.stdout  # shown, not acted on
    assert "[/bold]" in result.stdout  # rich's markup is text here, not an exception


def strings(value: Any) -> set[str]:
    """Every string in parsed JSON, keys included."""
    if isinstance(value, dict):
        return {*value, *(s for v in value.values() for s in strings(v))}
    if isinstance(value, list):
        return {s for v in value for s in strings(v)}
    return {value} if isinstance(value, str) else set()


@pytest.mark.parametrize("args", TABLES, ids=" ".join)
async def test_json_escapes_what_a_terminal_acts_on(args: tuple[str, ...]) -> None:
    async with serving(hostile) as server:
        result = await asyncio.to_thread(invoke, server.url, *args, "--json")
    assert result.exit_code == 0, result.output
    assert unsafe(result.stdout) == []
    assert HOSTILE in strings(json.loads(result.stdout))  # the same data, escaped


@pytest.mark.parametrize(("args", "code"), [(("cancel", "9"), 6), (("job", "10"), 1)])
async def test_error_lines_quote_the_coordinator_safely(args: tuple[str, ...], code: int) -> None:
    async with serving(hostile) as server:
        result = await asyncio.to_thread(invoke, server.url, *args)
    assert result.exit_code == code, result.output
    assert unsafe(result.stderr) == [] and result.stderr.count("\n") == 1
    assert "\\x1b[2J" in result.stderr


def test_console_log_lines_show_escapes(capsys: pytest.CaptureFixture[str]) -> None:
    """``leasehold worker`` on a terminal logs what a coordinator answered (an error's
    message, a job's kind) in console form, which writes strings as they are; the standard
    library's records go the same way."""
    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging("console", "info")
        structlog.get_logger("test").warning("lease.lost", error=HOSTILE, kind=HOSTILE)
        logging.getLogger("test.stdlib").warning("proxy said %s", HOSTILE)
    finally:
        structlog.configure(**saved)
        root.handlers, root.level = handlers, level
    err = capsys.readouterr().err
    assert "lease.lost" in err and "proxy said" in err and err.count("\\x1b[2J") == 3
    assert unsafe(err) == []
