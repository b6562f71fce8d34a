"""The workflows of the chaos run: a parent that spawns a fan-out through
``POST /jobs/{id}/children`` with a continuation depending on every child, and a graph
inserted by one ``POST /jobs/batch`` (a fan-out and fan-in, and a step that fails for good,
whose dependents must be cancelled, transitively, but for a cleanup step that runs anyway).
Then the checks: every job ended as the rules say, each exactly once, no child made twice,
and each continuation ran with all its parents' results."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from chaoslib.checks import Report
from chaoslib.wire import call_until
from leasehold.model import Attempt, Job, JobStatus

ENQUEUE_WITHIN = 180.0  # seconds an enqueue is sent again while the coordinator is down


@dataclass
class Graphs:
    """What the workflows enqueued, and how each job must end."""

    size: int
    parent: int | None = None
    refs: dict[str, int] = field(default_factory=dict)

    @property
    def doomed_dependents(self) -> int:
        return max(2, self.size // 10)

    @property
    def fan(self) -> int:
        return self.size - self.doomed_dependents - 5  # root, join, doom, y, cleanup

    @property
    def expected_jobs(self) -> int:
        """Jobs the workflows make: the batch, the parent, its children and continuation."""
        return self.size + 1 + self.size + 1 if self.size else 0


def batch_items(graphs: Graphs) -> list[dict[str, Any]]:
    """root -> f0..fF -> join; root -> doom (fails) -> x0..xD (each also after its f) ->
    y after x0; doom -> cleanup with on_failure "run"."""

    def item(ref: str, kind: str, value: int, *after: Any, attempts: int = 1000) -> Any:
        deps = [{"ref": a} if isinstance(a, str) else a for a in after]
        return {
            "ref": ref,
            "kind": kind,
            "payload": {"value": value},
            "idempotency_key": f"wf-{ref}",
            "max_attempts": attempts,
            **({"depends_on": deps} if deps else {}),
        }

    fan = [item(f"f{i}", "wf-step", i + 1, "root") for i in range(graphs.fan)]
    doomed = [
        item(f"x{i}", "wf-step", 0, "doom", f"f{i % graphs.fan}")
        for i in range(graphs.doomed_dependents)
    ]
    return [
        item("root", "wf-step", 0),
        *fan,
        item("join", "wf-join", 0, *(f"f{i}" for i in range(graphs.fan))),
        item("doom", "wf-doom", 0, "root", attempts=1),
        *doomed,
        item("y", "wf-step", 0, "x0"),
        item("cleanup", "wf-step", -1, {"ref": "doom", "on_failure": "run"}),
    ]


async def produce(url: str, graphs: Graphs, chunk: int) -> None:
    """Enqueue both workflows, each sent again until acknowledged (every item has its key)."""
    if not graphs.size:
        return
    body = {"jobs": batch_items(graphs)}
    answer = await asyncio.to_thread(call_until, url, "POST", "/jobs/batch", body, ENQUEUE_WITHIN)
    graphs.refs = {
        i["ref"]: a["job"]["id"] for i, a in zip(body["jobs"], answer["jobs"], strict=True)
    }
    parent = {
        "kind": "wf-parent",
        "payload": {"children": graphs.size, "chunk": chunk},
        "idempotency_key": "wf-parent",
        "max_attempts": 1000,
    }
    job = await asyncio.to_thread(call_until, url, "POST", "/jobs", parent, ENQUEUE_WITHIN)
    graphs.parent = job["id"]


def expected_ends(graphs: Graphs) -> dict[int, JobStatus]:
    """The final status of each workflow job that does not end completed."""
    refs = graphs.refs
    ends = {refs["doom"]: JobStatus.DEAD}
    ends |= {refs[f"x{i}"]: JobStatus.CANCELLED for i in range(graphs.doomed_dependents)}
    ends[refs["y"]] = JobStatus.CANCELLED
    return ends


def workflow_ids(graphs: Graphs, jobs: dict[int, Job]) -> set[int]:
    ids = set(graphs.refs.values())
    if graphs.parent is not None:
        ids.add(graphs.parent)
        ids |= {j.id for j in jobs.values() if j.spawned_by == graphs.parent}
    return ids


def check_workflows(
    report: Report,
    graphs: Graphs,
    jobs: dict[int, Job],
    attempts: dict[int, list[Attempt]],
    conn: sqlite3.Connection,
) -> None:
    if not graphs.size:
        return
    report.check(graphs.parent is not None and bool(graphs.refs), "a workflow was not enqueued")
    if graphs.parent is None or not graphs.refs:
        return
    _check_propagation(report, graphs, jobs, attempts)
    children = _check_children(report, graphs, jobs)
    fan = [graphs.refs[f"f{i}"] for i in range(graphs.fan)]
    joins = {graphs.refs["join"]: fan}
    if "join" in children:
        keys = (f"c{i}" for i in range(graphs.size))
        joins[children["join"]] = [children[k] for k in keys if k in children]
    for join, parents in joins.items():
        _check_join(report, jobs, conn, join, parents)
    report.counts["workflow jobs"] = len(workflow_ids(graphs, jobs))
    report.counts["workflow jobs cancelled by a parent"] = sum(
        jobs[i].blocked_by is not None for i in workflow_ids(graphs, jobs) if i in jobs
    )
    (again,) = conn.execute("SELECT coalesce(sum(again), 0) FROM spawns").fetchone()
    report.counts["children answered again (parent leased again)"] = again
    report.check(again > 0, "no parent was leased again mid-spawn: the fault did not happen")
    (retried,) = conn.execute(
        "SELECT count(*) FROM (SELECT job_id FROM joins GROUP BY job_id HAVING count(*) > 1)"
    ).fetchone()
    report.counts["continuations leased again"] = retried


def _check_propagation(
    report: Report, graphs: Graphs, jobs: dict[int, Job], attempts: dict[int, list[Attempt]]
) -> None:
    refs = graphs.refs
    blocked_by = {refs[f"x{i}"]: refs["doom"] for i in range(graphs.doomed_dependents)}
    blocked_by[refs["y"]] = refs["x0"]
    for job_id, parent in blocked_by.items():
        job = jobs.get(job_id)
        if job is None:
            continue  # check_jobs says it is missing
        report.check(
            job.blocked_by == parent and str(parent) in (job.last_error or ""),
            f"job {job_id}: blocked_by {job.blocked_by}, error {job.last_error!r};"
            f" expected to be cancelled by {parent}",
        )
        report.check(not attempts.get(job_id), f"job {job_id} was cancelled but was leased")


def _check_children(report: Report, graphs: Graphs, jobs: dict[int, Job]) -> dict[str, int]:
    """No child made twice: exactly one job per key the parent gave, none other."""
    spawned = [j for j in jobs.values() if j.spawned_by == graphs.parent]
    keys = [j.spawn_key for j in spawned]
    expected = {f"c{i}" for i in range(graphs.size)} | {"join"}
    report.check(
        len(keys) == len(set(keys)) == len(expected) and set(keys) == expected,
        f"the parent's children: {len(keys)} jobs, {len(set(keys))} keys, expected"
        f" {len(expected)}; unexpected keys {sorted(set(keys) - expected, key=str)[:5]},"
        f" missing {sorted(expected - set(keys))[:5]}",
    )
    report.counts["children spawned"] = len(spawned)
    return {j.spawn_key: j.id for j in spawned if j.spawn_key is not None}


def _check_join(
    report: Report,
    jobs: dict[int, Job],
    conn: sqlite3.Connection,
    join_id: int,
    parents: list[int],
) -> None:
    """The continuation completed once (check_jobs) with its result made from every
    parent's, as its final lease carried them."""
    join = jobs.get(join_id)
    if join is None or join.status is not JobStatus.COMPLETED:
        report.check(False, f"continuation {join_id} did not complete")
        return
    values = sum(_value(jobs[p]) for p in parents if p in jobs)
    result: Any = join.result
    report.check(
        result.get("parents") == len(parents) and result.get("sum") == values,
        f"continuation {join_id}: result {result!r}; expected {len(parents)} parents"
        f" summing to {values}",
    )
    rows = conn.execute(
        "SELECT parents FROM joins WHERE job_id = ? AND token = ?", (join_id, join.lease_token)
    ).fetchall()
    seen = [json.loads(r[0]) for r in rows]
    report.check(
        bool(seen)
        and all(
            s["ids"] == sorted(parents) and s["completed_with_result"] == len(parents) for s in seen
        ),
        f"continuation {join_id}: its final lease did not carry its {len(parents)} parents'"
        f" results ({[(len(s['ids']), s['completed_with_result']) for s in seen]})",
    )


def _value(job: Job) -> int:
    result: Any = job.result
    return int(result["value"]) if isinstance(result, dict) else 0
