"""``leasehold conformance``: passes against the coordinator on every backend, and fails,
with a line naming the broken rule, against one with a planted protocol bug (fencing, a
dead parent's dependents, fenced children, a slot given back)."""

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

from leasehold.conformance import run_vectors, runner
from leasehold.conformance.vectors import VECTORS
from leasehold.coordinator.app import create_app
from leasehold.coordinator.rules import graph, transitions
from leasehold.coordinator.rules.transitions import Outcome
from leasehold.coordinator.service import decisions
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.coordinator.store.tally import Tally
from leasehold.model import JSON, Job, JobStatus, OnFailure
from tests.process import Coordinator, free_port

CORE = [name for name, _ in VECTORS[:9]]  # 1.1's vectors, from discovery to errors


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
    assert lines[-1] == "22 passed, 0 failed"
    assert all(line.startswith("PASS") for line in lines[:-1])


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    """A coordinator app served in this process (so a test can plant a bug in it), with
    the quick reaper of the `coordinator` fixture."""
    settings = CoordinatorSettings(
        database_url=f"sqlite:///{tmp_path / 'in.db'}",
        reap_interval_seconds=0.1,
        min_lease_seconds=0.01,
    )
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


def only(monkeypatch: pytest.MonkeyPatch, names: list[str]) -> None:
    """Run these vectors alone (each run of the rest would only add time)."""
    monkeypatch.setattr(runner, "VECTORS", [(n, v) for n, v in VECTORS if n in names])


def _unfenced_complete(job: Job, token: int, result: JSON, now: datetime) -> Outcome:
    # The planted bug: a completion under any token is taken as the current holder's.
    return transitions.decide_complete(job, job.lease_token, result, now)


async def test_a_planted_fencing_bug_fails_with_a_clear_line(
    served: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A coordinator that accepts a stale token's completion fails the fencing vector, and
    the line says which request was wrongly accepted; the other vectors still pass."""
    only(monkeypatch, CORE)
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


def _any_end_will_do(status: JobStatus | None, on_failure: OnFailure) -> bool:
    # The planted bug: a dependent counts a parent that died as done (BullMQ's waits
    # forever; this one runs without what it needed).
    return status is not None


def _unfenced_spawn(job: Job, token: int, now: datetime) -> Outcome:
    # The planted bug: any token may spawn, as the holder's.
    return transitions.decide_spawn(job, job.lease_token, now)


def _leaky_moved(self: Tally, job: Job, before: JobStatus, after: JobStatus) -> None:
    # The planted bug: a running job put back in the queue keeps its group's slot.
    running = dict(self.running)
    Tally_moved(self, job, before, after)
    if (before, after) == (JobStatus.RUNNING, JobStatus.QUEUED):
        self.running.clear()
        self.running.update(running)


Tally_moved = Tally.moved


@pytest.mark.parametrize(
    ("vector", "plant", "detail"),
    [
        pytest.param(
            "failure propagation",
            (graph, "done_with", _any_end_will_do),
            r"job \d+ is queued \(blocked_by None\) after its parent \d+ ended dead: expected"
            r" cancelled, blocked_by \d+",
            id="a dead parent's dependent runs",
        ),
        pytest.param(
            "children",
            (decisions, "decide_spawn", _unfenced_spawn),
            r"spawn under token 0 \(current \d+\): expected 409 stale_token, got 200",
            id="a stale token spawns",
        ),
        pytest.param(
            "capacity given back",
            (Tally, "moved", _leaky_moved),
            r"conformance\.\w+\.room\.group, after fail, retried: a lease started 0 of room for 1",
            id="a retried job keeps its group's slot",
        ),
    ],
)
async def test_a_planted_workflow_or_flow_bug_fails_its_vector(
    served: str,
    monkeypatch: pytest.MonkeyPatch,
    vector: str,
    plant: tuple[object, str, object],
    detail: str,
) -> None:
    """Each 1.2 vector passes on the clean coordinator, and fails on one with the rule it
    checks broken, with a line that says what was answered."""
    only(monkeypatch, [vector])
    (clean,) = await run_vectors(served)
    assert clean.passed, clean
    monkeypatch.setattr(*plant)
    (broken,) = await run_vectors(served)
    assert not broken.passed
    assert re.fullmatch(detail, broken.detail), broken.detail
