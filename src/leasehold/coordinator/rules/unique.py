"""The rules of unique jobs (DESIGN.md §23): the fingerprint duplicates are found by, the
states a duplicate may be in, and what a debounce does to the job already there."""

from __future__ import annotations

import hashlib
from datetime import datetime

import orjson

from leasehold.coordinator.store.contract import NewJob
from leasehold.errors import InvalidRequest
from leasehold.model import JSON, JobStatus, Outcome, Unique
from leasehold.model import Job as Job

UNFINISHED_STATES = (JobStatus.WAITING, JobStatus.QUEUED, JobStatus.RUNNING)
"""Without a period, a job is a duplicate of one that has not finished (one at a time)."""
REPLACEABLE = (JobStatus.WAITING, JobStatus.QUEUED)
"""A debounce changes a duplicate only before it has started."""


def fingerprint(kind: str, queue: str, payload: JSON, unique: Unique) -> str:
    """What makes two enqueues the same job: the kind, and what ``unique`` names. A named
    payload field the payload lacks is refused (422), so a typo does not make every job a
    duplicate of the first."""
    parts: dict[str, JSON] = {"kind": kind}
    if unique.queue:
        parts["queue"] = queue
    if unique.payload:
        parts["payload"] = payload
    if unique.fields:
        if not isinstance(payload, dict):
            raise InvalidRequest(
                "unique.fields names payload fields, but the payload is not an object"
            )
        missing = [name for name in unique.fields if name not in payload]
        if missing:
            raise InvalidRequest(f"unique.fields: the payload has no field {missing[0]!r}")
        parts["fields"] = {name: payload[name] for name in unique.fields}
    if unique.key is not None:
        parts["key"] = unique.key
    encoded = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)
    return "u1:" + hashlib.sha256(encoded).hexdigest()


def states(unique: Unique) -> tuple[JobStatus, ...]:
    """The states a duplicate may be in: those given; by default, with a period, any (one
    job per period), else those of a job that has not finished (one at a time)."""
    if unique.states is not None:
        return unique.states
    return tuple(JobStatus) if unique.period_seconds is not None else UNFINISHED_STATES


def replace(duplicate: Job, new: NewJob, now: datetime) -> Outcome:
    """A debounce: the duplicate, if it has not started, takes the newer enqueue's payload
    and run_after (now, when it gave none); one that has started is left as it is."""
    if duplicate.status not in REPLACEABLE:
        return Outcome(duplicate)
    run_after = new.run_after if new.run_after is not None else now
    return Outcome(duplicate.replace(payload=new.payload, run_after=run_after), changed=True)
