"""One call's exchange with the coordinators, decided without doing any I/O.

Every call of ``Client`` and ``SyncClient`` is a *flow*: a generator that yields the steps
it needs (``Send`` a request to a coordinator, ``Sleep`` before trying again) and is sent
back what each step gave. The flows, and the retry and failover policy in ``exchange``,
are written once; each client only performs the steps, the async one with ``await``, the
blocking one on its sockets (``_aio.py``, ``_blocking.py``). So the two clients cannot
disagree about what is retried, where a call moves, or what an answer means.

The policy: an answer (any 4xx, a 2xx) is final. No answer (a connection error, a
timeout, an answer cut short), or a 502, 503 or 504, moves the call at once to the next
coordinator that has not failed lately (``Endpoints``); when every coordinator has been
tried, the call waits with backoff and jitter (``RetryPolicy``) and starts another round,
``attempts`` rounds in all. Other 5xx answers and answers the client will not read (over
its bound, not JSON) are tried again on the same coordinator after the wait. Every call
the client makes is safe to send again (PROTOCOL.md §8): enqueues carry an idempotency
key, leases a request id, reports their token.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar
from urllib.parse import urlencode

import orjson
import structlog

from leasehold._version import __version__
from leasehold.client._endpoints import Endpoint, Endpoints
from leasehold.client._parse import error_from_answer
from leasehold.client._retry import RetryPolicy
from leasehold.client._unserved import warn_unserved
from leasehold.errors import LeaseholdError, Unavailable
from leasehold.model import Job

log = structlog.get_logger("leasehold.client")

T = TypeVar("T")

# Every request of either client carries these.
HEADERS: Final = {"Accept": "application/json", "User-Agent": f"leasehold/{__version__}"}

# The answers of a proxy or load balancer with no coordinator behind it, and of a
# coordinator that cannot serve (its database is down, it is stopping): another may answer.
MOVE_ON_STATUS: Final = frozenset({502, 503, 504})


@dataclass(frozen=True, slots=True)
class Request:
    """One HTTP request, before a coordinator is chosen for it."""

    method: str
    path: str  # under the coordinator's URL, with the query string if any
    body: bytes | None
    headers: Mapping[str, str]
    timeout_seconds: float  # for one try

    @classmethod
    def of(
        cls,
        method: str,
        path: str,
        body: bytes | None,
        params: Mapping[str, str] | None,
        headers: Mapping[str, str] | None,
        timeout_seconds: float,
    ) -> Request:
        if params:
            path = f"{path}?{urlencode(params)}"
        extra = dict(headers or {})
        if body is not None or method != "GET":
            # Also without a body: the coordinator refuses a state-changing request that
            # does not declare JSON (what a cross-site HTML form cannot do).
            extra["Content-Type"] = "application/json"
        return cls(method, path, body, extra, timeout_seconds)


MAX_READ_BYTES: Final = 64 * 1024 * 1024
"""The most of one answer a client reads, by default (``Client(max_read_bytes=...)``):
eight times the coordinator's default budget for the jobs in one answer (a page, a batch
lease), and room for a batch report's jobs or a long attempt history; far below what would
strain a client's memory. A longer answer is ``Unavailable``: like a lost answer, the
request may or may not have been applied, and the connection is dropped."""

MAX_ERROR_BYTES: Final = 64 * 1024
"""An error answer is read this far: its code and message are at the start (a coordinator's
body is a short JSON object), and a proxy's page says no more past it."""


def over_the_bound(request: Request, bound: int) -> Unavailable:
    """The error for a 2xx answer longer than the client reads (left unread past it)."""
    return Unavailable(
        f"{request.method} {request.path}: the answer is over the {bound} bytes this client reads"
    )


@dataclass(frozen=True, slots=True)
class Reply:
    """What a coordinator sent back, as read: an error answer's body only as far as
    ``MAX_ERROR_BYTES``; ``unserved``, its ``Leasehold-Unserved`` header, if any."""

    status: int
    content_type: str
    body: bytes
    unserved: str | None = None


@dataclass(frozen=True, slots=True)
class Send:
    """Step: send ``request`` to ``endpoint``; the flow is sent the ``Reply``, or thrown
    ``NoAnswer``, or ``Unavailable`` for an answer the client will not read whole."""

    endpoint: Endpoint
    request: Request


@dataclass(frozen=True, slots=True)
class Sleep:
    """Step: wait this long, then go on (the flow is sent None)."""

    seconds: float


Step = Send | Sleep
Flow = Generator[Step, Any, T]


class NoAnswer(Unavailable):
    """No answer came: no connection, a timeout, or an answer cut short. The request may or
    may not have been applied; another coordinator may answer it."""


@dataclass(slots=True)
class Shared:
    """What a client and its views (``with_retry``) share: the coordinators, the random
    source of the jitter, whether leases carry a request id (False once a coordinator
    older than protocol 1.1 refused the field), and the length of the last lease granted
    (the coordinator's default, for leases that do not ask for one)."""

    endpoints: Endpoints
    rng: random.Random = field(default_factory=random.Random)
    lease_ids: bool = True
    lease_seconds: float | None = None

    def seen_lease(self, job: Job) -> None:
        if job.leased_at is not None and job.lease_expires_at is not None:
            self.lease_seconds = (job.lease_expires_at - job.leased_at).total_seconds()


def exchange(request: Request, retry: RetryPolicy, shared: Shared) -> Flow[Any]:
    """The parsed JSON answer to ``request`` (None for an empty one), or its error, from
    whichever coordinator answers; see the module docstring for the policy."""
    endpoints = shared.endpoints
    tried: set[Endpoint] = set()
    rounds = 1
    while True:
        endpoint = endpoints.pick(tried)
        try:
            reply = yield Send(endpoint, request)
        except Unavailable as exc:
            error: LeaseholdError = exc
            moves = isinstance(exc, NoAnswer)
        else:
            if reply.status not in MOVE_ON_STATUS:
                endpoints.answered(endpoint)
                try:
                    return answer_of(request, reply)
                except Unavailable as exc:  # a 500, or an answer this client will not read
                    error, moves = exc, False
            else:
                error, moves = error_from_answer(reply.status, reply.body), True
        tried.add(endpoint)
        if moves:
            endpoints.failed(endpoint)
            following = endpoints.fresh(tried)
            if following is not None:
                log.warning(
                    "client.failover",
                    call=f"{request.method} {request.path}",
                    failed=endpoint.url,
                    next=following.url,
                    error=error.message,
                )
                continue
        if retry.attempts is not None and rounds >= retry.attempts:
            raise error
        delay = retry.delay(rounds, shared.rng)
        log.warning(
            "client.retry",
            call=f"{request.method} {request.path}",
            attempt=rounds,
            delay=round(delay, 3),
            error=error.message,
        )
        yield Sleep(delay)
        rounds += 1
        tried.clear()


def answer_of(request: Request, reply: Reply) -> Any:
    """The parsed JSON of a reply, or the error it stands for."""
    if reply.status >= 400:
        raise error_from_answer(reply.status, reply.body)
    # An enqueue stored for a kind no live worker serves: it succeeded, with a warning.
    warn_unserved(reply.unserved)
    if not reply.body:
        return None
    try:
        return orjson.loads(reply.body)
    except orjson.JSONDecodeError as exc:
        # A proxy's page, a truncated body, JSON nested beyond orjson's 1024 levels.
        raise Unavailable(
            f"{request.method} {request.path}: the answer ({reply.status}, {reply.content_type}) is not JSON: {exc}"
        ) from exc
