"""``leasehold conformance``: passes against the coordinator on every backend, and fails,
with a line naming the broken rule, against one with a planted protocol bug."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path

import pytest
import uvicorn

from leasehold.conformance import run_vectors
from leasehold.coordinator.app import create_app
from leasehold.coordinator.rules import transitions
from leasehold.coordinator.rules.transitions import Outcome
from leasehold.coordinator.service import decisions
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.model import JSON, Job
from tests.process import Coordinator, free_port


def test_the_command_passes_against_the_coordinator(coordinator: Coordinator) -> None:
    """Every vector passes on SQLite and on PostgreSQL; the table and exit status say so."""
    run = subprocess.run(
        [sys.executable, "-m", "leasehold", "conformance", "--url", coordinator.url],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[-1] == "9 passed, 0 failed"
    assert all(line.startswith("PASS") for line in lines[:-1])


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    """A coordinator app served in this process (so a test can plant a bug in it)."""
    settings = CoordinatorSettings(database_url=f"sqlite:///{tmp_path / 'in.db'}")
    port = free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="error")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = asyncio.get_running_loop().time() + 10
    while not server.started:
        assert asyncio.get_running_loop().time() < deadline, "the server did not start"
        assert not task.done(), "the server stopped"
        await asyncio.sleep(0.01)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


def _unfenced_complete(job: Job, token: int, result: JSON, now: datetime) -> Outcome:
    # The planted bug: a completion under any token is taken as the current holder's.
    return transitions.decide_complete(job, job.lease_token, result, now)


async def test_a_planted_fencing_bug_fails_with_a_clear_line(
    served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coordinator that accepts a stale token's completion fails the fencing vector, and
    the line says which request was wrongly accepted; the other vectors still pass."""
    clean = {r.name: r for r in await run_vectors(served)}
    assert all(r.passed for r in clean.values()), clean
    monkeypatch.setattr(decisions, "decide_complete", _unfenced_complete)
    results = {r.name: r for r in await run_vectors(served)}
    assert not results["fencing"].passed
    detail = results["fencing"].detail
    assert re.fullmatch(
        r"complete under token \d+ \(current \d+\): expected 409 stale_token, got 200", detail
    ), detail
    assert results["batches"].passed and results["cancel"].passed
