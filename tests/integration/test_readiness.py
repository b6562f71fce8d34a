"""Liveness and readiness apart: while another process holds the SQLite database's write lock,
/health stays 200 and /health/ready answers 503 (a JSON body) within its timeout, then 200
again once the lock is gone."""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path

from leasehold._version import __version__, build
from leasehold.coordinator.api.routes.health import READY_TIMEOUT_SECONDS
from tests.process import sqlite_coordinator

# Both answers name the release and the build, so an operator sees which one serves.
RELEASE = {"version": __version__, "build": build()}


def get(url: str) -> tuple[int, dict[str, object]]:
    try:
        with urllib.request.urlopen(url, timeout=15) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_locked_database_is_not_ready_but_alive(tmp_path: Path) -> None:
    with sqlite_coordinator(tmp_path) as c:
        assert get(c.url + "/health/ready") == (200, {"status": "ready", **RELEASE})
        holder = sqlite3.connect(tmp_path / "leasehold.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process's writer, stuck
        try:
            started = time.monotonic()
            status, body = get(c.url + "/health/ready")
            waited = time.monotonic() - started
            assert status == 503 and body["error"] == "unavailable", body
            assert "did not answer within" in str(body["message"])
            assert waited < READY_TIMEOUT_SECONDS + 3
            assert get(c.url + "/health") == (200, {"status": "ok", **RELEASE})
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert get(c.url + "/health/ready") == (200, {"status": "ready", **RELEASE})
