"""Why a job is not running right now, in words (DESIGN.md §19, "Explain"): what the
lease policy would meet (``store/explain.py``), and whether a live worker serves it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from leasehold.coordinator.rules.presence import serves
from leasehold.coordinator.store.contract import WorkerSeen
from leasehold.coordinator.store.explain import AHEAD_COUNTED, Facts
from leasehold.model import JobStatus


@dataclass(frozen=True, slots=True)
class Reason:
    """One thing that keeps the job from starting: a stable ``code``, what it means, and
    when it stops, if that is known."""

    code: str
    message: str
    until: datetime | None = None
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Explanation:
    job_id: int
    status: JobStatus
    runnable: bool  # the next lease that asks for its kind (and queue) may take it
    reasons: list[Reason]


def explain(facts: Facts, live: Sequence[WorkerSeen]) -> Explanation:
    job = facts.job
    reasons = _reasons(facts, live)
    runnable = job.status is JobStatus.QUEUED and not any(
        r.code not in ("behind",) for r in reasons
    )
    return Explanation(job.id, job.status, runnable, reasons)


def _reasons(facts: Facts, live: Sequence[WorkerSeen]) -> list[Reason]:
    job = facts.job
    if job.status is JobStatus.RUNNING:
        return [
            Reason(
                "running",
                f"it is running: leased to {job.lease_owner} under token {job.lease_token}",
                job.lease_expires_at,
            )
        ]
    if job.status is JobStatus.WAITING:
        ids = [p.id for p in facts.parents]
        return [
            Reason(
                "waiting_for_parents",
                f"it waits for {job.waiting_for} parent job(s) to complete",
                detail={"parents": ids[:100]},
            )
        ]
    if job.status is not JobStatus.QUEUED:
        why = f"it is {job.status}"
        if job.blocked_by is not None:
            why += f": parent job {job.blocked_by} could not complete"
        elif job.last_error:
            why += f": {job.last_error.strip().splitlines()[-1]}"
        return [Reason("finished", why)]
    return _queued(facts, live)


def _queued(facts: Facts, live: Sequence[WorkerSeen]) -> list[Reason]:
    job, now, limit = facts.job, facts.now, facts.flow
    found: list[Reason] = []
    if job.start_by is not None and job.start_by <= now:
        found.append(Reason("deadline_passed", "its start deadline has passed: it will end"))
    if job.run_after > now:
        found.append(Reason("scheduled", "it is not due yet", job.run_after))
    if facts.paused:
        found.append(Reason("queue_paused", f"its queue {job.queue!r} is paused"))
    if limit is not None:
        found += _limits(facts)
    if not any(serves(w.beat, job.queue, job.kind) for w in live):
        found.append(
            Reason("no_worker", "no live worker takes its kind from its queue (heartbeats)")
        )
    if facts.ahead:
        more = "more than " if facts.ahead >= AHEAD_COUNTED else ""
        found.append(
            Reason(
                "behind",
                f"{more}{facts.ahead} due job(s) of its kind and queue come first",
                detail={"ahead": facts.ahead},
            )
        )
    return found


def _limits(facts: Facts) -> list[Reason]:
    job, limit = facts.job, facts.flow
    assert limit is not None
    found: list[Reason] = []
    if limit.max_running is not None and facts.kind_running >= limit.max_running:
        found.append(
            Reason(
                "kind_limit",
                f"{facts.kind_running} of its kind run, its limit is {limit.max_running}",
            )
        )
    per_group = limit.max_running_per_group
    if per_group is not None and job.group_key is not None and facts.group_running >= per_group:
        found.append(
            Reason(
                "group_limit",
                f"{facts.group_running} of its group run, the limit per group is {per_group}",
            )
        )
    rate = limit.rate
    if rate is not None and facts.rate_left is not None and job.weight > facts.rate_left:
        if job.weight > rate.limit:
            found.append(
                Reason(
                    "too_heavy",
                    f"its weight {job.weight} is over the rate limit {rate.limit}: it"
                    " starts only if the limit is raised",
                )
            )
        else:
            found.append(
                Reason(
                    "rate_limited",
                    f"its {'group' if rate.per_group else 'kind'}'s rate limit"
                    f" ({rate.limit} per {rate.period_seconds:g} s) has"
                    f" {facts.rate_left} unit(s) left, it needs {job.weight}",
                    facts.rate_refill_at,
                )
            )
    if limit.turns and facts.groups_ahead:
        found.append(
            Reason(
                "turns",
                f"{facts.groups_ahead} group(s) of its kind take their turn first",
                detail={"groups_ahead": facts.groups_ahead},
            )
        )
    return found
