"""Errors as types. Each carries a stable machine-readable ``code``.

The tree::

    LeaseholdError
    ├── NotFound                                                         (404)
    │   ├── JobNotFound         no job has that id
    │   ├── ScheduleNotFound    no schedule has that name
    │   └── LimitNotFound       no concurrency limit is set for that kind
    ├── Conflict                the job's state forbids the request      (409)
    │   ├── StaleToken          a newer lease exists, or the token was never issued
    │   ├── LeaseExpired        the lease ran out or is no longer held
    │   │   └── NotRunning      this lease already reported (completed, failed, released)
    │   ├── ReportConflict      a different outcome was already reported under this token
    │   ├── InvalidTransition   e.g. requeue of a job that is not dead
    │   └── JobCancelled        the job was cancelled (or is being cancelled)
    ├── InvalidRequest          well-formed but unacceptable input      (422)
    │   ├── IdempotencyConflict the key was used with a different request
    │   ├── TooManyNames        a new kind, queue or group past the cap on distinct ones
    │   └── InvalidGraph        dependencies that cannot be: an unknown parent, a cycle
    ├── Unauthorized            no valid bearer token                    (401)
    ├── Forbidden               the token's role may not make the request (403)
    │   └── CrossSite           a browser request from another site
    ├── MisdirectedRequest      an open coordinator asked other than directly on loopback (421)
    ├── PayloadTooLarge         the request body or payload is over a cap (413)
    ├── UnsupportedMediaType    a body that is not declared as JSON      (415)
    ├── Unavailable             the coordinator cannot serve right now    (503)
    ├── Unanswerable            the answer could not be built: nothing was changed (500)
    ├── JobFailed               a waited-for job ended dead        (client side only)
    └── ResultTimeout           a waited-for job did not finish in time (client side;
                                also a TimeoutError)

``JobCancelled`` is also what waiting for a cancelled job's result raises.

The HTTP layer maps them to status codes in one table (``coordinator/api/errors.py``); the client
maps status codes back to the same types.
"""

from __future__ import annotations

from typing import Any


class LeaseholdError(Exception):
    """Something went wrong in leasehold."""

    code = "error"
    # Where in the request the problem is, as a validation error's ``detail`` says it:
    # ``[{"loc": [...], "msg": ..., "type": ...}]`` (None: the message says it all).
    detail: list[dict[str, Any]] | None = None

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or self.code).strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class NotFound(LeaseholdError):
    """Nothing has that name or id."""

    code = "not_found"


class JobNotFound(NotFound):
    """No job has that id."""

    code = "job_not_found"


class ScheduleNotFound(NotFound):
    """No schedule has that name."""

    code = "schedule_not_found"


class LimitNotFound(NotFound):
    """No concurrency limit is set for that kind."""

    code = "limit_not_found"


class Conflict(LeaseholdError):
    """The job's current state does not allow this request."""

    code = "conflict"


class StaleToken(Conflict):
    """The token is not the job's current lease token: a newer lease exists or it was
    never issued."""

    code = "stale_token"


class LeaseExpired(Conflict):
    """The lease has run out or is no longer held."""

    code = "lease_expired"


class NotRunning(LeaseExpired):
    """The job is not running under this lease any more: its holder already reported
    (completed, failed or released) under this token."""

    code = "not_running"


class ReportConflict(Conflict):
    """A different outcome was already reported under this token."""

    code = "report_conflict"


class InvalidTransition(Conflict):
    """The job is not in a state this request applies to."""

    code = "invalid_transition"


class JobCancelled(Conflict):
    """The job was cancelled: its holder should stop, and its result is not recorded."""

    code = "job_cancelled"


class InvalidRequest(LeaseholdError):
    """The request is well-formed but cannot be accepted."""

    code = "invalid_request"


class IdempotencyConflict(InvalidRequest):
    """The idempotency key was already used with a different request."""

    code = "idempotency_conflict"


class InvalidGraph(InvalidRequest):
    """The jobs' dependencies cannot be inserted as given: a parent that does not exist, a
    reference to no item, a cycle, too many parents, or a chain of parents too long."""

    code = "invalid_graph"

    def __init__(self, message: str, *, loc: tuple[str | int, ...] | None = None) -> None:
        super().__init__(message)
        if loc is not None:
            self.detail = [{"loc": ["body", *loc], "msg": message, "type": self.code}]


class TooManyNames(InvalidRequest):
    """The coordinator already knows as many distinct kinds (or queues) as it accepts."""

    code = "too_many_names"


class Unauthorized(LeaseholdError):
    """A valid bearer token is required (Authorization: Bearer <token>)."""

    code = "unauthorized"


class Forbidden(LeaseholdError):
    """The token's role may not make this request."""

    code = "forbidden"


class CrossSite(Forbidden):
    """A state-changing request sent by a browser from another site (Origin or
    Sec-Fetch-Site) is refused."""

    code = "cross_site"


# Also raised, with its own message, for a peer off loopback or a request through a proxy.
class MisdirectedRequest(LeaseholdError):
    """Without tokens the coordinator answers only under a loopback name (localhost,
    127.0.0.1, [::1]): another Host may be a DNS-rebinding page reading the queue."""

    code = "misdirected_request"


class PayloadTooLarge(LeaseholdError):
    """The request body (or the payload or result in it) is larger than the coordinator
    accepts."""

    code = "payload_too_large"


class UnsupportedMediaType(LeaseholdError):
    """Request bodies must be JSON (Content-Type: application/json)."""

    code = "unsupported_media_type"


class Unavailable(LeaseholdError):
    """The coordinator cannot serve the request right now; retry later."""

    code = "unavailable"


class StoreInUse(Unavailable):
    """Another coordinator serves this SQLite file: one file has one coordinator."""

    code = "store_in_use"


class SchemaTooNew(Unavailable):
    """The database's schema is newer than this release knows: a newer release serves it."""

    code = "schema_too_new"


class Unanswerable(LeaseholdError):
    """The answer could not be built, so nothing was changed."""

    code = "unanswerable"


class JobFailed(LeaseholdError):
    """The job ended dead: it failed for good. ``error`` is its last error."""

    code = "job_failed"

    def __init__(self, message: str | None = None, *, job_id: int = 0, error: str = "") -> None:
        super().__init__(message)
        self.job_id = job_id
        self.error = error


class ResultTimeout(LeaseholdError, TimeoutError):
    """The job did not finish within the time given to wait for its result."""

    code = "result_timeout"
