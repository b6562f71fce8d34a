"""The operators' commands against a real coordinator: cancel, delete, run-now, queues,
pause, resume, workers. Most through typer's CliRunner; pause and resume as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from typer.testing import CliRunner

from leasehold.cli import app
from leasehold.client import SyncClient
from leasehold.model import JobStatus
from tests.process import Coordinator, sqlite_coordinator

ENV = {"COLUMNS": "200", "LEASEHOLD_URL": "", "LEASEHOLD_TOKEN": ""}


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    with sqlite_coordinator(tmp_path_factory.mktemp("ops-cli")) as coordinator:
        yield coordinator


@pytest.fixture
def client(shared: Coordinator) -> Iterator[SyncClient]:
    with SyncClient(shared.url) as c:
        yield c


def run(shared: Coordinator, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [*args, "--url", shared.url], env=ENV)
    return result.exit_code, result.output


def test_cancel_delete_and_run_now(shared: Coordinator, client: SyncClient) -> None:
    later = datetime.now(UTC) + timedelta(hours=1)
    waiting = client.enqueue("cli-later", run_after=later)
    code, out = run(shared, "run-now", str(waiting.id), "--json")
    assert code == 0, out
    assert datetime.fromisoformat(json.loads(out)["run_after"]) < later
    assert run(shared, "cancel", str(waiting.id))[0] == 0
    assert client.get(waiting.id).status is JobStatus.CANCELLED
    code, out = run(shared, "delete", str(waiting.id))
    assert (code, out.strip()) == (0, f"deleted job {waiting.id}")
    assert run(shared, "delete", str(waiting.id))[0] == 4  # not found
    for _ in range(3):
        client.enqueue("cli-bulk", queue="cli-q")
    code, out = run(shared, "delete", "--kind", "cli-bulk", "--queue", "cli-q", "--json")
    assert (code, json.loads(out)) == (0, {"deleted": 3})
    assert run(shared, "delete")[0] == 2  # neither an id nor a filter


def test_a_running_job_is_not_deleted(shared: Coordinator, client: SyncClient) -> None:
    job = client.enqueue("cli-running")
    assert client.lease("w", kinds=["cli-running"]) is not None
    code, out = run(shared, "delete", str(job.id))
    assert code == 6 and "cancel it first" in out, out  # a conflict


def test_workers_and_the_unserved_warning(shared: Coordinator, client: SyncClient) -> None:
    client.enqueue("cli-nobody", queue="cli-lonely")
    client.heartbeat(
        {
            "worker_id": "cli-w1",
            "host": "box",
            "pid": 7,
            "version": "0.1.0",
            "kinds": ["other"],
            "concurrency": 3,
            "started_at": datetime.now(UTC).isoformat(),
        }
    )
    code, out = run(shared, "workers")
    assert code == 0, out
    assert "cli-w1" in out and "live" in out and "box" in out
    assert "no live worker serves kind 'cli-nobody' in queue 'cli-lonely'" in out
    code, out = run(shared, "stats")
    assert "no live worker serves kind 'cli-nobody' in queue 'cli-lonely'" in out
    code, out = run(shared, "workers", "--json")
    assert {"queue": "cli-lonely", "kind": "cli-nobody", "queued": 1} in json.loads(out)["unserved"]


def test_pause_and_resume_as_processes(shared: Coordinator, client: SyncClient) -> None:
    """The installed entry point pauses a queue, lists it as paused, and resumes it."""
    client.enqueue("cli-p", queue="cli-paused")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "leasehold", *args, "--url", shared.url],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, **ENV},
        )

    paused = cli("pause", "cli-paused")
    assert (paused.returncode, paused.stdout) == (0, "paused queue cli-paused\n"), paused
    assert client.lease("w", queues=["cli-paused"]) is None
    listed = cli("queues")
    (row,) = [line for line in listed.stdout.splitlines() if "cli-paused" in line]
    assert row.split()[:3] == ["cli-paused", "paused", "1"], listed.stdout
    assert cli("resume", "cli-paused").returncode == 0
    assert client.lease("w", queues=["cli-paused"]) is not None
