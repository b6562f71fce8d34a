"""A job's answer, built inside the transaction that leased or changed the job.

An answer that fails after its transaction committed leaves a lease nobody received (the
job then loses an attempt when the lease runs out) or a change the client believes was
not made. So every route that answers with jobs has them encoded here while the store's
transaction is still open: ``seal`` runs in the store (for leases, ``LeaseRequest.seal``)
or inside the rule (``sealed``), and if a job cannot be encoded the transaction is rolled
back and the request fails whole (``Unanswerable``, answered 500) with nothing changed.

Each job is encoded on its own (``job_json``) and embedded in its envelope as an
``orjson.Fragment``, so an envelope adds no depth to what was checked.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog

from leasehold.core.transitions import Outcome, summary_line
from leasehold.errors import Unanswerable
from leasehold.model import Job, JobStatus

log = structlog.get_logger("leasehold")


def job_wire(job: Job) -> dict[str, Any]:
    """``schemas.JobOut`` of the job, as a dict orjson serialises."""
    return {
        "id": job.id,
        "kind": job.kind,
        "payload": job.payload,
        "status": job.status,
        "attempts": job.attempts,
        "max_attempts": job.max_attempts,
        "run_after": job.run_after,
        "created_at": job.created_at,
        "lease_owner": job.lease_owner,
        "lease_expires_at": job.lease_expires_at,
        "lease_token": job.lease_token,
        "idempotency_key": job.idempotency_key,
        "result": job.result,
        "last_error": job.last_error,
        "leased_at": job.leased_at,
        "finished_at": job.finished_at,
        "priority": job.priority,
        "queue": job.queue,
        "cancel_requested": job.cancel_requested,
        "headers": job.headers,
        "timeout_seconds": job.timeout_seconds,
        "error_summary": summary_line(job.last_error),
    }


def encode(data: Any) -> bytes:
    """The one JSON serialiser of answers."""
    return orjson.dumps(data)


def job_json(job: Job) -> orjson.Fragment:
    """The job's ``JobOut`` as JSON, ready to embed in any envelope."""
    try:
        return orjson.Fragment(encode(job_wire(job)))
    except (TypeError, ValueError) as exc:  # orjson.JSONEncodeError is a TypeError
        log.error("answer.unbuildable", job_id=job.id, error=str(exc))
        raise Unanswerable() from exc


def seal(jobs: Iterable[Job]) -> None:
    """Raise ``Unanswerable`` unless every job can be answered; the store calls this
    before it commits, so that a job that cannot be answered is never leased."""
    for job in jobs:
        job_json(job)


def sealed(outcome: Outcome) -> Outcome:
    """The outcome of a rule whose job is answered: checked inside the transaction."""
    job_json(outcome.job)
    return outcome


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def provisional(kind: str, payload: Any) -> Job:
    """A job about to be inserted, as far as its answer depends on the request."""
    return Job(0, kind, payload, JobStatus.QUEUED, 0, 1, _EPOCH, _EPOCH)
