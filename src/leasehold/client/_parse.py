"""Parsing what the coordinator answers into types (errors, jobs, leases, pages), and
encoding requests as the strict JSON it takes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from leasehold import job_fields
from leasehold.errors import (
    Conflict,
    CrossSite,
    Forbidden,
    IdempotencyConflict,
    InvalidRequest,
    InvalidTransition,
    JobCancelled,
    JobNotFound,
    LeaseExpired,
    LeaseholdError,
    LimitNotFound,
    MisdirectedRequest,
    NotFound,
    NotRunning,
    PayloadTooLarge,
    ReportConflict,
    ScheduleNotFound,
    StaleToken,
    TooManyNames,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
)
from leasehold.job_fields import Wire
from leasehold.model import Attempt, AttemptOutcome, Job, JobStatus, OnFailure, Parent

DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT_SECONDS = 10.0

_BY_CODE: dict[str, type[LeaseholdError]] = {
    cls.code: cls
    for cls in (
        JobNotFound,
        ScheduleNotFound,
        LimitNotFound,
        NotFound,  # an unknown route, or a limit's kind the path cannot carry
        JobCancelled,
        Conflict,
        StaleToken,
        LeaseExpired,
        NotRunning,
        ReportConflict,
        InvalidTransition,
        InvalidRequest,
        IdempotencyConflict,
        TooManyNames,
        PayloadTooLarge,
        UnsupportedMediaType,
        Unauthorized,
        Forbidden,
        CrossSite,
        MisdirectedRequest,
        Unavailable,
    )
}
# The coordinator's codes for a body that failed validation.
_BY_CODE |= {"validation_error": InvalidRequest, "invalid_json": InvalidRequest}
# For answers without a known code (a proxy's, or a newer coordinator's). No 404 here: a
# route that does not exist (a wrong URL) is not a missing job.
_BY_STATUS: dict[int, type[LeaseholdError]] = {
    401: Unauthorized,
    403: Forbidden,
    409: Conflict,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: InvalidRequest,
}


def error_from_answer(status: int, body: bytes) -> LeaseholdError:
    """The error an HTTP answer with status >= 400 stands for."""
    code, message = _code_and_message(body)
    # A 408: the request did not arrive whole in time (or the coordinator closed an idle
    # connection as the request went out): nothing was applied, and it may be sent again.
    if status >= 500 or status == 408:
        return Unavailable(f"the coordinator answered {status}: {message}")
    cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status)
    if cls is None:
        return LeaseholdError(f"the coordinator answered {status} ({code}): {message}")
    return cls(message)


def error_from_code(
    code: str | None, message: str, fallback: type[LeaseholdError] = LeaseholdError
) -> LeaseholdError:
    """The error a code in an answer (a batch item's, say) stands for."""
    return (_BY_CODE.get(code or "") or fallback)(message)


def _code_and_message(body: bytes) -> tuple[str | None, str]:
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None, body[:200].decode(errors="replace") or "(no body)"
    if not isinstance(parsed, dict):
        return None, str(parsed)[:200]
    code = parsed.get("error")
    return (code if isinstance(code, str) else None), str(parsed.get("message", ""))


def encode(body: Mapping[str, Any]) -> bytes:
    # Strict JSON, as the coordinator requires: NaN and Infinity are refused here, not
    # silently turned into null.
    try:
        return json.dumps(body, allow_nan=False, separators=(",", ":")).encode()
    except (TypeError, ValueError, RecursionError) as exc:  # a result nested ~1000 deep
        raise InvalidRequest(f"the request is not JSON: {exc}") from exc


# -- typed answers ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lease:
    """A job leased to a worker, and the fencing token that speaks for the lease."""

    job: Job
    token: int


@dataclass(frozen=True, slots=True)
class Enqueued:
    """One job of a batch enqueue or a spawn, as the coordinator answered it.

    ``created`` is false when the request found the job there already: its idempotency key
    was used before by the same request, or (a spawn) the job spawned that key before.
    ``duplicate``: a unique job was there already and this is it (DESIGN.md §23);
    ``replaced``: that job took this item's payload and run_after."""

    job: Job
    created: bool
    duplicate: bool = False
    replaced: bool = False


@dataclass(frozen=True, slots=True)
class JobPage:
    """One page of ``Client.list``; pass ``next_cursor`` back for the next one."""

    jobs: list[Job]
    next_cursor: str | None


def _time(value: Any) -> datetime:
    # The coordinator sends RFC 3339 in UTC with an explicit offset; a naive time is UTC too.
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _time_or_none(value: Any) -> datetime | None:
    return None if value is None else _time(value)


# How each kind of field is read from an answer (job_fields.Wire); None is passed through
# for nullable fields. Times are aware UTC datetimes.
_READ: Final = {
    Wire.AS_IS: "{v}",
    Wire.INT: "int({v})",
    Wire.FLOAT: "float({v})",
    Wire.STR: "str({v})",
    Wire.FLAG: "bool({v})",
    Wire.TIME: "_time({v})",
    Wire.STATUS: "_JobStatus({v})",
}
_job_of_wire: Final = job_fields.wire_decoder(
    _READ, {"_time": _time, "_JobStatus": JobStatus}, name="_job_of_wire"
)


def parse_job(data: Any) -> Job:
    """A ``model.Job`` from its wire form (``api.schemas.jobs.JobOut``).

    Parsed here rather than with the server's schema, so that the client does not import
    the coordinator (FastAPI and all). The fields the coordinator keeps to itself
    (``report``, ``request_hash``, ``lease_seconds``, ``releases``) take ``Job``'s
    defaults, as do those older coordinators did not send (priority, queue, cancellation,
    headers, time limit).
    """
    try:
        return _job_of_wire(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not a job: {exc!r}") from exc


def parse_leases(data: Any, max_jobs: int) -> list[Lease]:
    """The leases of a ``max_jobs`` lease answer (``{"leases": [...]}``), refused whole
    (``LeaseholdError``) if it is not what was asked for: more than ``max_jobs`` leases, a
    job twice, a lease that is not one. A worker would start every job it is handed."""
    try:
        items = data["leases"]
        if not isinstance(items, list):
            raise TypeError("leases is not a list")
    except (KeyError, TypeError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not a lease answer: {exc!r}") from exc
    if len(items) > max_jobs:
        raise LeaseholdError(
            f"the coordinator answered {len(items)} leases to a request for at most {max_jobs}"
        )
    leases = [parse_lease(item) for item in items]
    if len({lease.job.id for lease in leases}) != len(leases):
        raise LeaseholdError("the coordinator answered the same job twice in one lease answer")
    return leases


def parse_lease(data: Any) -> Lease:
    """One lease (``{"job", "token", ...}``): a job leased under an issued token, with its
    lease's start and end and, for a job with parents, the parents' statuses and results
    (``Job.parents``), or ``LeaseholdError``."""
    try:
        job, token = parse_job(data["job"]), data["token"]
        parents = data.get("parents")
        if parents is not None:
            job = job.replace(parents=tuple(_parse_parent(p) for p in parents))
    except (KeyError, TypeError, ValueError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not a lease: {exc!r}") from exc
    if type(token) is not int or token <= 0:  # a JSON integer; bool is an int to Python
        raise LeaseholdError(f"the coordinator's lease of job {job.id} has no valid token")
    if job.leased_at is None or job.lease_expires_at is None:
        raise LeaseholdError(f"the coordinator's lease of job {job.id} has no lease times")
    return Lease(job, token)


def _parse_parent(data: Any) -> Parent:
    # A deleted parent has kind and status null; its result is the parsed JSON it stored.
    kind, status = data["kind"], data["status"]
    return Parent(
        id=int(data["id"]),
        kind=None if kind is None else str(kind),
        status=None if status is None else JobStatus(status),
        result=data.get("result"),
        result_omitted=bool(data.get("result_omitted", False)),
        spawn_key=data.get("spawn_key"),
        on_failure=OnFailure(data.get("on_failure", OnFailure.CANCEL)),
    )


def parse_enqueued(data: Any, sent: int) -> list[Enqueued]:
    """A batch enqueue's or a spawn's answer (``{"jobs": [{job, created, duplicate,
    replaced}]}``): one item per job sent, in order, or ``LeaseholdError``."""
    try:
        answered = [
            Enqueued(
                parse_job(item["job"]),
                bool(item.get("created", True)),
                bool(item.get("duplicate", False)),
                bool(item.get("replaced", False)),
            )
            for item in data["jobs"]
        ]
    except (KeyError, TypeError, AttributeError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not an enqueue's: {exc!r}") from exc
    if len(answered) != sent:
        raise LeaseholdError(f"the coordinator answered {len(answered)} jobs of {sent}")
    return answered


def parse_attempt(job_id: int, data: Any) -> Attempt:
    try:
        return Attempt(
            job_id=job_id,
            token=int(data["token"]),
            worker_id=str(data["worker_id"]),
            leased_at=_time(data["leased_at"]),
            finished_at=_time_or_none(data.get("finished_at")),
            outcome=AttemptOutcome(data["outcome"]),
            error=data.get("error"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise LeaseholdError(f"the coordinator's answer is not an attempt: {exc!r}") from exc


def field(data: Any, key: str) -> Any:
    """``data[key]`` of an answer; ``LeaseholdError`` if the answer has no such field."""
    try:
        return data[key]
    except (KeyError, TypeError, IndexError) as exc:
        raise LeaseholdError(f"the coordinator's answer has no {key!r}") from exc


def listed(data: Any, key: str) -> list[Any]:
    """``data[key]``, which must be a list of objects (a page of jobs, of workers, ...)."""
    value = field(data, key)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise LeaseholdError(f"the coordinator's answer's {key!r} is not a list of objects")
    return value


def count(data: Any, key: str) -> int:
    """``data[key]``, which must be a JSON integer (how many were deleted, requeued)."""
    value = field(data, key)
    if type(value) is not int:
        raise LeaseholdError(f"the coordinator's answer's {key!r} is not a number")
    return value


def drop_none(**fields: Any) -> dict[str, Any]:
    """Leave out what was not given, so the coordinator's defaults apply."""
    return {k: v for k, v in fields.items() if v is not None}
