"""The log lines about jobs: the fields each carries, and the lines a decision writes."""

from __future__ import annotations

import structlog

from leasehold.coordinator.rules.transitions import Outcome
from leasehold.model import Event, Job

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


# The log line each event of a decision writes (enqueues and leases log their own).
EVENT_NAMES = {
    Event.COMPLETED: "job.completed",
    Event.FAILED: "job.failed",
    Event.DEAD: "job.dead",
    Event.LEASE_EXPIRED: "lease.expired",
    Event.RENEWED: "job.renewed",
    Event.RELEASED: "job.released",
    Event.REQUEUED: "job.requeued",
    Event.STALE_TOKEN: "token.stale",
    Event.CANCELLED: "job.cancelled",
    Event.CANCEL_REQUESTED: "job.cancel_requested",
    Event.DEADLINE_MISSED: "job.deadline_missed",
    Event.DUPLICATE: "job.duplicate",
}
_WARNINGS = (Event.STALE_TOKEN, Event.DEAD, Event.LEASE_EXPIRED, Event.DEADLINE_MISSED)


def log_outcome(outcome: Outcome, token: int | None) -> None:
    """One line per event of a decision: warnings for a stale token, a death or an expiry,
    debug for a renewal (one per job every few seconds), info for the rest."""
    fields = log_fields(outcome.job, token)
    if outcome.error is not None:
        fields["error"] = outcome.error.code
    for event in outcome.events:
        level = "warning" if event in _WARNINGS else "info"
        if event == Event.RENEWED:
            level = "debug"
        getattr(log, level)(EVENT_NAMES[event], **fields)
