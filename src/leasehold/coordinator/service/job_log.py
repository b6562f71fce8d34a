"""The log lines about jobs: the fields each carries, and the lines a decision writes."""

from __future__ import annotations

import structlog

from leasehold.coordinator.rules.transitions import Outcome
from leasehold.model import Job

log = structlog.get_logger("leasehold")


def log_fields(job: Job, token: int | None = None) -> dict[str, object]:
    """The fields every log line about a job carries (never its payload)."""
    return {
        "job_id": job.id,
        "kind": job.kind,
        "queue": job.queue,
        "attempt": job.attempts,
        "worker_id": job.lease_owner,
        "token": token if token is not None else job.lease_token,
    }


EVENT_NAMES = {
    "completed": "job.completed",
    "failed": "job.failed",
    "dead": "job.dead",
    "lease_expired": "lease.expired",
    "renewed": "job.renewed",
    "released": "job.released",
    "requeued": "job.requeued",
    "stale_token": "token.stale",
    "cancelled": "job.cancelled",
    "cancel_requested": "job.cancel_requested",
}


def log_outcome(outcome: Outcome, token: int | None) -> None:
    """One line per event of a decision: warnings for a stale token, a death or an expiry,
    debug for a renewal (one per job every few seconds), info for the rest."""
    fields = log_fields(outcome.job, token)
    if outcome.error is not None:
        fields["error"] = outcome.error.code
    for event in outcome.events:
        level = "warning" if event in ("stale_token", "dead", "lease_expired") else "info"
        if event == "renewed":
            level = "debug"
        getattr(log, level)(EVENT_NAMES[event], **fields)
