"""The enqueue's warning when no live worker serves the job's kind: the coordinator's
``Leasehold-Unserved`` header, the client's ``UnservedWarning``, the command line's line;
and ``leasehold schedules sync APP``, the deploy step for schedules declared in code."""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from leasehold import Client, UnservedWarning, cli
from leasehold.client import NewJob
from tests.inproc import InProcessCoordinator, asgi_app

BEAT = {
    "worker_id": "w1",
    "host": "h",
    "pid": 1,
    "version": "1",
    "kinds": ["served"],
    "queues": ["q"],
    "concurrency": 1,
    "started_at": "2030-01-01T00:00:00+00:00",
}


# The client and the command line are the same on every backend.
on_sqlite = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def unserved(header: str | None) -> list[dict[str, str]]:
    return json.loads(header) if header else []


async def test_the_header_names_due_work_no_live_worker_takes(sqlite_url: str) -> None:
    async with asgi_app(sqlite_url) as api:
        seen = await api.post("/jobs", {"kind": "served", "queue": "q"})
        assert seen.status == 201
        assert unserved(seen.headers.get("leasehold-unserved")) == [
            {"queue": "q", "kind": "served"}
        ]
        await api.post("/workers/heartbeat", BEAT)  # takes effect at the next enqueue
        later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
        batch = await api.post(
            "/jobs/batch",
            {
                "jobs": [
                    {"kind": "served", "queue": "q"},
                    {"kind": "served", "queue": "other"},  # the kind, but not that queue
                    {"kind": "sévère", "queue": "q"},  # non-ASCII: escaped in the header
                    {"kind": "tomorrow", "run_after": later},  # not due: no worker needed yet
                ]
            },
        )
        assert batch.status == 200
        assert "\\u00e9" in batch.headers["leasehold-unserved"]
        assert unserved(batch.headers["leasehold-unserved"]) == [
            {"queue": "other", "kind": "served"},
            {"queue": "q", "kind": "sévère"},
        ]
        served = await api.post("/jobs", {"kind": "served", "queue": "q"})
        assert "leasehold-unserved" not in served.headers


@on_sqlite
async def test_the_client_warns_and_the_job_is_stored(inproc: InProcessCoordinator) -> None:
    async with Client(inproc.url) as client:
        with pytest.warns(UnservedWarning, match="kind 'sned-email' in queue 'default'"):
            job = await client.enqueue("sned-email", {"to": "ada@example.com"})
        assert (await client.get(job.id)).status == "queued"
        with pytest.warns(UnservedWarning, match="'b'"):
            await client.enqueue_many([NewJob("b", None), NewJob("b", None)])
        await client.heartbeat({**BEAT, "kinds": None, "queues": None})  # takes anything
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnservedWarning)
            await client.enqueue("sned-email", None)


@on_sqlite
async def test_the_command_line_prints_the_warning_on_stderr(
    inproc: InProcessCoordinator,
) -> None:
    runner = CliRunner()
    args = ["enqueue", "sned-email", "--json", "--url", inproc.url]
    done = await asyncio.to_thread(runner.invoke, cli.app, args)
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["kind"] == "sned-email"  # stdout: the job alone
    assert "warning: no live worker serves kind 'sned-email'" in done.stderr


@on_sqlite
async def test_schedules_sync_is_the_workers_sync_as_a_command(
    inproc: InProcessCoordinator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"sync_app_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(
        "from leasehold.worker import Registry\n"
        "registry = Registry()\n"
        "registry.add('sc-clean', print)\n"
        "registry.schedule('clean', 'sc-clean', cron='0 * * * *')\n"
    )
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    async def sync(*more: str) -> tuple[int, str]:
        args = ["schedules", "sync", f"{module}:registry", "--url", inproc.url, *more]
        done = await asyncio.to_thread(runner.invoke, cli.app, args)
        return done.exit_code, done.output

    assert await sync() == (0, "created: clean\n")
    async with Client(inproc.url) as client:
        await client.put_schedule("by-hand", cron="0 * * * *", kind="sc-clean")
    code, out = await sync("--json")
    assert (code, json.loads(out)) == (0, {"unchanged": ["clean"], "undeclared": ["by-hand"]})
    code, out = await sync()
    assert code == 0 and "leasehold schedules delete NAME" in out
    dead = ["schedules", "sync", f"{module}:registry", "--url", "http://127.0.0.1:9"]
    done = await asyncio.to_thread(runner.invoke, cli.app, dead)
    assert done.exit_code == 3 and "cannot reach the coordinator" in done.output
