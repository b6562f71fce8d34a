"""Flow control in the chaos run: one kind under a limit per group, groups taking turns,
and a rate limit for the whole kind, with jobs of weight 1 and 2 across several groups.
Afterwards every group's running count is zero (read from the database: a slot taken by a
lease that no call gave back would show here) and no window of the rate's period holds
more units than its limit, nor any group more running jobs than its cap, both replayed from
the attempt history."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from chaoslib.checks import Report
from chaoslib.wire import call_until
from leasehold.model import Attempt, Job

KIND = "chaos-flow"
ENQUEUE_WITHIN = 180.0
WINDOW_SLACK = 1e-5  # seconds: a stored time and its wire form may differ by a microsecond
# An expiry is known from the coordinator's log line, written just after the reaper's commit
# gave the slot back: a lease made in between would look like an overlap that never was.
EXPIRY_SLACK = 0.5


@dataclass
class Flow:
    jobs: int
    groups: int = 10
    per_group: int = 2
    rate_limit: int = 40
    period: float = 1.0
    acked: set[int] = field(default_factory=set)

    def limits(self) -> dict[str, Any]:
        return {
            "max_running_per_group": self.per_group,
            "rate": {"limit": self.rate_limit, "period_seconds": self.period},
            "fair": True,
        }

    def item(self, i: int) -> dict[str, Any]:
        return {
            "kind": KIND,
            "payload": {"n": i},
            "group_key": f"g{i % self.groups}",
            "weight": 2 if i % 5 == 0 else 1,
            "idempotency_key": f"flow-{i}",
            "max_attempts": 1000,
        }


async def produce(url: str, flow: Flow) -> None:
    """Set the kind's limits, then enqueue its jobs in batches, each sent again until
    acknowledged (every item has its key)."""
    if not flow.jobs:
        return
    await asyncio.to_thread(
        call_until, url, "PUT", f"/limits/{KIND}", flow.limits(), ENQUEUE_WITHIN
    )
    for start in range(0, flow.jobs, 100):
        body = {"jobs": [flow.item(i) for i in range(start, min(flow.jobs, start + 100))]}
        answer = await asyncio.to_thread(
            call_until, url, "POST", "/jobs/batch", body, ENQUEUE_WITHIN
        )
        flow.acked |= {a["job"]["id"] for a in answer["jobs"]}


async def group_running(database_url: str) -> dict[str, int]:
    """Each group's running count as the database keeps it (summed over its shards)."""
    query = (
        f"SELECT group_key, sum(running) FROM group_counts WHERE kind = '{KIND}' GROUP BY group_key"
    )
    if database_url.startswith("sqlite:///"):
        path = database_url.removeprefix("sqlite:///")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
        try:
            return {g: int(n) for g, n in conn.execute(query)}
        finally:
            conn.close()
    import asyncpg  # type: ignore[import-untyped]

    pg = await asyncpg.connect(database_url)
    try:
        return {r[0]: int(r[1]) for r in await pg.fetch(query)}
    finally:
        await pg.close()


def expiries(coordinator_log: str) -> dict[tuple[int, int], float]:
    """When the reaper expired each lease, by (job id, token), from the coordinator's log.

    A report that comes after its lease ran out is still accepted while no newer lease
    exists (DESIGN.md §3), and it then rewrites the attempt as completed at the report's
    time: the history no longer shows that the slot was given back at the expiry."""
    found: dict[tuple[int, int], float] = {}
    for line in coordinator_log.splitlines():
        if '"lease.expired"' in line:
            event = json.loads(line)
            at = datetime.fromisoformat(event["timestamp"]).timestamp()
            found[event["job_id"], event["token"]] = at - EXPIRY_SLACK
    return found


def check_flow(
    report: Report,
    flow: Flow,
    jobs: dict[int, Job],
    attempts: dict[int, list[Attempt]],
    running: dict[str, int],
    limits: list[dict[str, Any]],
    expired: dict[tuple[int, int], float],
) -> None:
    if not flow.jobs:
        return
    leaked = {g: n for g, n in running.items() if n != 0}
    report.check(not leaked, f"groups whose running count is not zero after the run: {leaked}")
    kind_running = [limit["running"] for limit in limits if limit["kind"] == KIND]
    report.check(kind_running == [0], f"{KIND}'s running count after the run: {kind_running}")
    starts = sorted(
        (a.leased_at.timestamp(), jobs[a.job_id].weight, jobs[a.job_id].group_key or "")
        for job_id in flow.acked
        for a in attempts.get(job_id, [])
    )
    worst = _worst_window(starts, flow.period - WINDOW_SLACK)
    report.check(
        worst <= flow.rate_limit,
        f"{worst} units started within {flow.period}s; the rate allows {flow.rate_limit}",
    )
    busiest = _most_running(flow, jobs, attempts, expired)
    report.check(
        busiest <= flow.per_group,
        f"a group had {busiest} jobs running at once; its cap is {flow.per_group}",
    )
    report.counts["flow-controlled starts"] = len(starts)
    report.counts["flow: most units started in one period"] = worst
    report.counts["flow: most running in one group"] = busiest
    report.counts["flow: groups counted"] = len(running)


def _worst_window(starts: list[tuple[float, int, str]], period: float) -> int:
    """The most units started in any window [t, t + period): a window holding the most
    begins at a start, so sliding over the starts finds it."""
    worst = total = 0
    first = 0
    for at, weight, _ in starts:
        total += weight
        while starts[first][0] <= at - period:
            total -= starts[first][1]
            first += 1
        worst = max(worst, total)
    return worst


def _most_running(
    flow: Flow,
    jobs: dict[int, Job],
    attempts: dict[int, list[Attempt]],
    expired: dict[tuple[int, int], float],
) -> int:
    """The most attempts of one group held at once, from each attempt's start to its end
    (a completion, a failure, a release, the reaper's expiry, whichever came first): an
    end at the same instant as a start comes first."""
    events: dict[str, list[tuple[float, int]]] = defaultdict(list)
    for job_id in flow.acked:
        for a in attempts.get(job_id, []):
            group = jobs[job_id].group_key or ""
            end = a.finished_at.timestamp() if a.finished_at else float("inf")
            end = min(end, expired.get((job_id, a.token), end))
            events[group] += [(a.leased_at.timestamp(), 1), (end, -1)]
    most = 0
    for group_events in events.values():
        held = 0
        for _, change in sorted(group_events):
            held += change
            most = max(most, held)
    return most
