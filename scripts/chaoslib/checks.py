"""The invariants the chaos run must end with, checked against the coordinator and the
fenced store."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from leasehold.model import Attempt, AttemptOutcome, Job, JobStatus


@dataclass
class Report:
    failures: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.failures.append(message)


def check_jobs(
    report: Report,
    acked: set[int],
    jobs: dict[int, Job],
    attempts: dict[int, list[Attempt]],
    ends: dict[int, JobStatus] | None = None,
) -> None:
    """Every acknowledged job is there, and no other; each ended as ``ends`` says
    (completed when it says nothing) and completed at most once."""
    ends = ends or {}
    missing = acked - jobs.keys()
    report.check(
        not missing, f"{len(missing)} acknowledged jobs are missing: {sorted(missing)[:10]}"
    )
    stray = jobs.keys() - acked
    report.check(not stray, f"{len(stray)} jobs nobody enqueued: {sorted(stray)[:10]}")
    wrong = [
        (j.id, j.status.value)
        for j in jobs.values()
        if j.status is not ends.get(j.id, JobStatus.COMPLETED)
    ]
    report.check(not wrong, f"{len(wrong)} jobs did not end as expected: {wrong[:10]}")
    for job in jobs.values():
        done = [a for a in attempts.get(job.id, []) if a.outcome is AttemptOutcome.COMPLETED]
        report.check(len(done) <= 1, f"job {job.id} completed {len(done)} times")
        if job.status is JobStatus.COMPLETED:
            result: Any = job.result
            report.check(
                isinstance(result, dict) and result.get("token") == job.lease_token,
                f"job {job.id}: result {result!r} not produced under its final token {job.lease_token}",
            )
    report.counts["jobs"] = len(jobs)
    report.counts["completed"] = sum(j.status is JobStatus.COMPLETED for j in jobs.values())
    report.counts["leases"] = sum(len(a) for a in attempts.values())
    report.counts["expired leases (takeovers)"] = sum(
        a.outcome is AttemptOutcome.EXPIRED for history in attempts.values() for a in history
    )
    report.counts["jobs run more than once"] = sum(len(a) > 1 for a in attempts.values())


def check_fenced_store(report: Report, conn: sqlite3.Connection, jobs: dict[int, Job]) -> None:
    highest: dict[int, int] = {}
    accepted = rejected = 0
    for job_id, token, ok in conn.execute(
        "SELECT job_id, token, accepted FROM writes ORDER BY seq"
    ):
        if ok:
            accepted += 1
            report.check(
                token >= highest.get(job_id, 0),
                f"fenced store accepted a stale write: job {job_id} token {token}"
                f" after token {highest.get(job_id)}",
            )
            highest[job_id] = max(token, highest.get(job_id, 0))
        else:
            rejected += 1
            report.check(
                token < highest.get(job_id, 0),
                f"fenced store rejected a current write: job {job_id} token {token}",
            )
    final = dict(conn.execute("SELECT job_id, token FROM fenced"))
    for job in jobs.values():
        if job.status is JobStatus.COMPLETED:
            report.check(
                final.get(job.id) == job.lease_token,
                f"job {job.id}: fenced side effect under token {final.get(job.id)},"
                f" final token {job.lease_token}",
            )
    report.counts["fenced writes accepted"] = accepted
    report.counts["fenced writes rejected (stale)"] = rejected


def check_lease_overlap(
    report: Report, conn: sqlite3.Connection, attempts: dict[int, list[Attempt]]
) -> None:
    """No two workers held an unexpired lease on one job at once: the expiry a worker last
    knew for token t is no later than the grant of token t + 1 (both coordinator times)."""
    known: dict[tuple[int, int], float] = defaultdict(float)
    for job_id, token, expiry in conn.execute("SELECT job_id, token, known_expiry FROM leases"):
        known[job_id, token] = max(known[job_id, token], expiry)
    overlaps = 0
    for job_id, history in attempts.items():
        granted = {a.token: a.leased_at.timestamp() for a in history}
        for token, leased_at in granted.items():
            previous = known.get((job_id, token - 1))
            if previous is not None and previous > leased_at + 1e-6:
                overlaps += 1
                report.check(
                    False,
                    f"job {job_id}: token {token - 1} was held until {previous:.3f}"
                    f" but token {token} was granted at {leased_at:.3f}",
                )
    report.counts["lease records checked"] = len(known)
    report.counts["overlapping leases"] = overlaps


def check_stats(report: Report, stats: dict[str, Any], jobs: dict[int, Job]) -> None:
    by_status = {s.value: 0 for s in JobStatus}
    for job in jobs.values():
        by_status[job.status.value] += 1
    report.check(
        stats["by_status"] == by_status,
        f"/stats by_status {stats['by_status']} disagrees with the jobs {by_status}",
    )
    report.check(
        stats["totals"]["completed"] >= by_status["completed"],
        f"/stats completed total {stats['totals']['completed']} < {by_status['completed']}",
    )
    report.counts["stale-token rejections (coordinator)"] = stats["stale_token_rejections"]
    report.counts["lease expirations (coordinator)"] = stats["lease_expirations"]
