"""The operators' commands against a real coordinator: cancel, delete, run-now, queues,
pause, resume, workers; for workflows and flow control, a job's parents and dependents,
waiting jobs, explain, what cancel and requeue did to dependents, and limits with groups,
rates and turns. Most through typer's CliRunner; pause and resume as processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from typer.testing import CliRunner

from leasehold.cli import app
from leasehold.client import NewJob, SyncClient
from leasehold.model import Dependency, JobStatus, OnFailure
from tests.browser.seed import Http
from tests.integration.test_admin_cli import table_rows
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


def as_json(shared: Coordinator, *args: str) -> Any:
    code, out = run(shared, *args, "--json")
    assert code == 0, out
    return json.loads(out)


def field(out: str, name: str) -> str:
    """The value of a field of `leasehold job`'s first part (``name  value``)."""
    (line,) = [line for line in out.splitlines() if line.startswith(name + "  ")]
    return line.removeprefix(name).strip()


def chain(client: SyncClient, prefix: str, fan_out: int) -> tuple[int, list[int], int]:
    """A root, ``fan_out`` children depending on it, and one job depending on them all
    (the odd-numbered edges run anyway): the root's id, the children's, the last one's."""
    root = client.enqueue(f"{prefix}-root")
    children = client.enqueue_many(
        [NewJob(f"{prefix}-child", depends_on=(Dependency(root.id),)) for _ in range(fan_out)]
    )
    edges = tuple(
        Dependency(c.id, OnFailure.RUN if n % 2 else OnFailure.CANCEL)
        for n, c in enumerate(children)
    )
    (last,) = client.enqueue_many([NewJob(f"{prefix}-last", depends_on=edges)])
    return root.id, [c.id for c in children], last.id


def test_job_lists_parents_and_dependents_with_their_status(
    shared: Coordinator, client: SyncClient
) -> None:
    """`leasehold job` shows what a job waits for and who waits for it, each edge with its
    status and its choice on failure; --edges bounds the lists, --json has them whole;
    `jobs --status waiting` lists the waiting ones."""
    root, children, last = chain(client, "cli-graph", 3)
    code, out = run(shared, "job", str(last))
    assert code == 0, out
    assert field(out, "waiting for") == "3 parents to complete"
    rows = table_rows(out)
    parents = [r for r in rows if r[0] in {str(c) for c in children}]
    assert parents == [
        [str(children[0]), "cli-graph-child", "waiting", "cancel"],
        [str(children[1]), "cli-graph-child", "waiting", "run"],
        [str(children[2]), "cli-graph-child", "waiting", "cancel"],
    ]

    code, out = run(shared, "job", str(root), "--edges", "2")
    assert code == 0, out
    assert field(out, "dependents") == "3"
    assert "first 2 of 3 shown (--edges N)" in out
    shown = as_json(shared, "job", str(root), "--edges", "2")
    assert [e["id"] for e in shown["dependents"]["jobs"]] == children[:2]
    assert shown["dependents"]["more"] is True and shown["parents"] == {"jobs": [], "more": False}

    listed = as_json(shared, "jobs", "--status", "waiting", "--kind", "cli-graph-child")
    assert sorted(j["id"] for j in listed["jobs"]) == children
    code, out = run(shared, "jobs", "--status", "waiting", "--kind", "cli-graph-last")
    assert (code, table_rows(out)[0][:3]) == (0, [str(last), "cli-graph-last", "waiting"])


def test_spawned_children_name_their_parent(shared: Coordinator, client: SyncClient) -> None:
    """A child spawned by a running job says by which job and under which key."""
    spawner = client.enqueue("cli-spawner")
    lease = client.lease("cli-worker", kinds=["cli-spawner"])
    assert lease is not None and lease.job.id == spawner.id
    status, body = Http(shared.url).post(
        f"/jobs/{spawner.id}/children",
        {"token": lease.token, "jobs": [{"kind": "cli-spawned", "key": "part-1"}]},
    )
    assert status == 200, body
    child = body["jobs"][0]["job"]["id"]
    code, out = run(shared, "job", str(child))
    assert code == 0, out
    assert field(out, "spawned by") == f"job {spawner.id}, key part-1"


def test_explain_as_a_table_and_as_json(shared: Coordinator, client: SyncClient) -> None:
    """`leasehold explain` lists each reason with its code and the time it ends; --json is
    the coordinator's answer; an unknown job is exit 4."""
    root, children, _ = chain(client, "cli-why", 1)
    code, out = run(shared, "explain", str(children[0]))
    assert code == 0, out
    assert out.startswith(f"job {children[0]} (waiting): not runnable now, because:")
    assert table_rows(out) == [["waiting_for_parents", "it waits for 1 parent job(s) to complete"]]
    found = as_json(shared, "explain", str(root))
    assert (found["job_id"], found["status"], found["runnable"]) == (root, "queued", False)
    assert "no_worker" in [r["code"] for r in found["reasons"]]
    assert run(shared, "explain", "987654")[0] == 4


def test_cancel_and_requeue_say_what_they_did_to_dependents(
    shared: Coordinator, client: SyncClient
) -> None:
    """Cancelling a parent cancels its waiting dependents, and says how many; requeueing it
    revives them, and says so; --json stays the job alone."""
    root, children, last = chain(client, "cli-carry", 3)
    code, out = run(shared, "cancel", str(root))
    assert code == 0, out
    assert out.splitlines()[0] == f"job {root}: cancelled; 3 dependents cancelled"
    assert {client.get(c).status for c in children} == {JobStatus.CANCELLED}
    code, out = run(shared, "requeue", str(root))
    assert code == 0, out
    assert out.splitlines()[0] == (
        f"requeued job {root}: queued again, attempts reset; 3 dependents revived (3 waiting)"
    )
    assert as_json(shared, "cancel", str(children[0]))["status"] == "cancelled"
    assert client.get(last).status is JobStatus.CANCELLED  # its edge did not run anyway
    lease = client.lease("cli-worker", kinds=["cli-carry-root"])
    assert lease is not None
    code, out = run(shared, "cancel", str(root))
    assert out.splitlines()[0] == (
        f"job {root}: cancel requested (it is running);"
        " 2 waiting dependents will be cancelled when it ends"
    ), out


def test_limits_with_groups_rates_and_turns(shared: Coordinator) -> None:
    """`limits set` takes every limit of 1.2 and `limits list` shows them; a rate that is
    not LIMIT/PERIOD, or no limit at all, is exit 2 before anything is sent."""
    code, out = run(
        shared,
        "limits",
        "set",
        "cli-mail",
        "--max-running",
        "8",
        "--per-group",
        "2",
        "--rate",
        "600/1m",
        "--rate-per-group",
    )
    assert code == 0, out
    stored = as_json(shared, "limits", "set", "cli-sms", "--rate", "5/s", "--fair")
    assert stored["rate"] == {"limit": 5, "period_seconds": 1.0, "per_group": False}
    assert (stored["max_running"], stored["fair"]) == (None, True)
    code, out = run(shared, "limits", "list")
    assert code == 0, out
    rows = {r[0]: r for r in table_rows(out)}
    assert rows["cli-mail"] == ["cli-mail", "8", "2", "600 per 1m per group", "yes", "0"]
    assert rows["cli-sms"] == ["cli-sms", "-", "-", "5 per 1s", "yes", "0"]
    for bad in (["--rate", "fast"], ["--rate-per-group", "--max-running", "2"], []):
        assert run(shared, "limits", "set", "cli-none", *bad)[0] == 2
    assert (
        run(shared, "limits", "set", "cli-none", "--rate", "5/40d")[0] == 7
    )  # the coordinator's bound
