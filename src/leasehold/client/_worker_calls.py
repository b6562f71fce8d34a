"""Producers' and workers' calls, each once, as a flow (``_exchange.py``); ``_calls.py``
says how the clients are made from them."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Self, overload

from leasehold import tracing
from leasehold.client._batch_items import (
    CompleteItem,
    FailItem,
    ItemResult,
    RenewItem,
    parse_results,
)
from leasehold.client._exchange import Flow, Request, Shared, exchange
from leasehold.client._new_job import MAX_BATCH, NewJob
from leasehold.client._parse import (
    Enqueued,
    Lease,
    drop_none,
    encode,
    parse_enqueued,
    parse_job,
    parse_lease,
    parse_leases,
)
from leasehold.client._retry import RetryPolicy
from leasehold.errors import InvalidRequest
from leasehold.model import JSON, LEASE_WAIT_SHARE, Job


class CallsCore:
    """The options of one client (or of a view of it, ``with_retry``) and its one way to
    send a request."""

    def __init__(self, shared: Shared, retry: RetryPolicy, timeout_seconds: float) -> None:
        self.shared = shared
        self.retry = retry
        self.timeout_seconds = timeout_seconds

    def view(self, retry: RetryPolicy | None, timeout_seconds: float | None) -> Self:
        """The same coordinators and state, with other options."""
        return type(self)(
            self.shared,
            retry or self.retry,
            timeout_seconds if timeout_seconds is not None else self.timeout_seconds,
        )

    def call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> Flow[Any]:
        raw = encode(body) if body is not None else None
        timeout = timeout_seconds or self.timeout_seconds
        request = Request.of(method, path, raw, params, headers, timeout)
        return (yield from exchange(request, self.retry, self.shared))


class WorkerCalls(CallsCore):
    """Producers' and workers' calls."""

    def enqueue(
        self,
        kind: str,
        payload: JSON = None,
        *,
        max_attempts: int | None = None,
        run_after: datetime | None = None,
        idempotency_key: str | None = None,
        priority: int | None = None,
        queue: str | None = None,
        headers: dict[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> Flow[Job]:
        """Add a job; the coordinator's defaults apply to what is not given.

        Without ``idempotency_key`` the client makes up a random one, so that its own
        retries (after a timeout, say, where the first request may have been stored, or
        on another coordinator) can never add the job twice; the key shows as
        ``job.idempotency_key``. Pass a key of your own to make the enqueue idempotent
        across processes and restarts as well: the same key with the same request returns
        the job already stored.

        ``headers`` go with the job to every worker that leases it. With OpenTelemetry
        installed, the current trace context is added to them (W3C ``traceparent``).
        """
        with tracing.producing(kind) as span:
            new = NewJob(
                kind,
                payload,
                max_attempts,
                run_after,
                idempotency_key,
                priority,
                queue,
                headers,
                timeout_seconds,
            )
            job = parse_job((yield from self.call("POST", "/jobs", new.body())))
            tracing.sent(span, [job.id])
        return job

    def enqueue_many(self, jobs: Sequence[NewJob]) -> Flow[list[Job]]:
        """Add up to ``MAX_BATCH`` (1,000) jobs in one request and one transaction, in order.

        All or nothing: if any key was used before with a different request, the call
        raises ``IdempotencyConflict`` and adds none of them. Keys are made up for jobs
        without one, as ``enqueue`` does, so a retried batch never adds a job twice.
        The jobs may depend on each other by ``ref`` (see ``enqueue_graph``).
        """
        return [item.job for item in (yield from self.enqueue_graph(jobs))]

    def enqueue_graph(self, jobs: Sequence[NewJob]) -> Flow[list[Enqueued]]:
        """Add up to 1,000 jobs that may depend on each other, in one request and one
        transaction, as ``enqueue_many`` does; each answered with whether this request
        created it (``Enqueued``: ``created``, ``duplicate``, ``replaced``).

        A job names another of the same request by its ``ref`` (``NewJob(..., ref="a")``,
        then ``after=("a",)``); the coordinator inserts parents first and answers in the
        order given. A cycle, or a ref no job has, is ``InvalidRequest`` (422
        ``invalid_graph``) and adds none of them (DESIGN.md §22).
        """
        with tracing.producing(_kind_of(jobs), len(jobs)) as span:
            body = {"jobs": [j.body() for j in _check_size(jobs)]}
            data = yield from self.call("POST", "/jobs/batch", body)
            enqueued = parse_enqueued(data, len(jobs))
            tracing.sent(span, [item.job.id for item in enqueued])
        return enqueued

    def spawn(self, job_id: int, token: int, children: Sequence[NewJob]) -> Flow[list[Enqueued]]:
        """Enqueue up to 1,000 children of running job ``job_id`` under its lease ``token``
        (``POST /jobs/{id}/children``), in one transaction; each answered as
        ``enqueue_graph`` answers.

        Each child's ``ref`` is its key under the job: spawning a key again (this lease
        retrying, or the job leased again after a crash) answers the child made the first
        time (``created`` false) and makes no other, whatever the rest of the item says.
        Children depend on each other by their keys (``after``), and on any job by id, so a
        continuation is one more child that depends on the others; it runs when they are
        done, even if the spawning job has completed by then. A token that is not the
        job's current lease's is ``StaleToken``, a lease that reported ``NotRunning``, a
        cancelled job ``JobCancelled`` (409): each spawns nothing.
        """
        items = [child.child_body() for child in _check_size(children)]
        with tracing.producing(_kind_of(children), len(items)) as span:
            body = {"token": token, "jobs": items}
            data = yield from self.call("POST", f"/jobs/{job_id}/children", body)
            enqueued = parse_enqueued(data, len(items))
            tracing.sent(span, [item.job.id for item in enqueued])
        return enqueued

    @overload
    def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: None = None,
        request_id: str | None = None,
    ) -> Flow[Lease | None]: ...

    @overload
    def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: int,
        request_id: str | None = None,
    ) -> Flow[list[Lease]]: ...

    def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: int | None = None,
        request_id: str | None = None,
    ) -> Flow[Lease | list[Lease] | None]:
        """Lease the next due job, waiting up to ``wait_seconds`` for one; None if none came.

        With ``max_jobs`` (1-1000): lease up to that many at once, each under its own
        token, and answer a list (empty if none came). The wait ends as soon as there is
        one; ask only for as many as you will start at once, since every lease runs from
        when it is granted. A wait is at most a quarter of the lease (PROTOCOL.md §4).

        Every lease carries a request id (``request_id``, or a fresh one), and a retry
        after a lost answer sends the same one, so it gets the leases the lost answer
        carried instead of new ones (PROTOCOL.md §5). The answer is waited for
        ``wait_seconds`` and then a quarter of the lease at most (10 s at most), so that
        an answer that hangs is asked again while its leases still run. A coordinator
        older than protocol 1.1 refuses the field; the client then leases without it.
        """
        length = lease_seconds or self.shared.lease_seconds
        if length is not None:
            wait_seconds = min(wait_seconds, length * LEASE_WAIT_SHARE)
        body = drop_none(
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            kinds=list(kinds) if kinds is not None else None,
            queues=list(queues) if queues is not None else None,
            wait_seconds=wait_seconds,
            max_jobs=max_jobs,
        )
        if self.shared.lease_ids:
            body["request_id"] = request_id or f"lease-{uuid.uuid4()}"
        allowance = self.timeout_seconds
        if length is not None:
            allowance = min(allowance, length * LEASE_WAIT_SHARE)
        timeout = wait_seconds + allowance
        try:
            data = yield from self.call("POST", "/lease", body, timeout_seconds=timeout)
        except InvalidRequest:
            if "request_id" not in body:
                raise
            # Protocol 1.0 refuses unknown fields: lease as it would have, from now on.
            self.shared.lease_ids = False
            del body["request_id"]
            data = yield from self.call("POST", "/lease", body, timeout_seconds=timeout)
        if max_jobs is not None:
            leases = [] if data is None else parse_leases(data, max_jobs)
        else:
            leases = [] if data is None else [parse_lease(data)]
        if leases:
            self.shared.seen_lease(leases[0].job)
        return leases if max_jobs is not None else (leases[0] if leases else None)

    def renew(self, job_id: int, token: int, *, lease_seconds: float | None = None) -> Flow[Job]:
        """Extend the lease from now (by the length it was granted for, by default)."""
        body = drop_none(token=token, lease_seconds=lease_seconds)
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/renew", body)))

    def complete(self, job_id: int, token: int, result: JSON = None) -> Flow[Job]:
        """Report success. A repeat under the same token answers as the first did."""
        body = {"token": token, "result": result}
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/complete", body)))

    def fail(
        self,
        job_id: int,
        token: int,
        error: str,
        *,
        retryable: bool = True,
        retry_after_seconds: float | None = None,
    ) -> Flow[Job]:
        """Report failure: retried after a backoff (or ``retry_after_seconds``), or dead
        when out of attempts or not ``retryable``."""
        body = drop_none(
            token=token,
            error=error,
            retryable=retryable,
            retry_after_seconds=retry_after_seconds,
        )
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/fail", body)))

    def release(self, job_id: int, token: int) -> Flow[Job]:
        """Hand a leased job back unfinished: queued again at once, its attempt given back
        (for the job's first three releases)."""
        path = f"/jobs/{job_id}/release"
        return parse_job((yield from self.call("POST", path, {"token": token})))

    # Batch reports: one request and one transaction, each item fenced by its own token and
    # answered on its own (``ItemResult``); a repeat is answered as the first was.

    def renew_many(self, items: Sequence[RenewItem]) -> Flow[list[ItemResult]]:
        """Extend up to 1,000 leases; each item's result says whether its lease was."""
        return (yield from self._batch("/batch/renew", [i.wire() for i in _check_size(items)]))

    def complete_many(self, items: Sequence[CompleteItem]) -> Flow[list[ItemResult]]:
        """Report up to 1,000 successes; each item's result says whether it was accepted."""
        wire = [i.wire() for i in _check_size(items)]
        return (yield from self._batch("/batch/complete", wire))

    def fail_many(self, items: Sequence[FailItem]) -> Flow[list[ItemResult]]:
        """Report up to 1,000 failures; each item's result says whether it was accepted."""
        return (yield from self._batch("/batch/fail", [i.wire() for i in _check_size(items)]))

    def _batch(self, path: str, items: list[dict[str, Any]]) -> Flow[list[ItemResult]]:
        answer = yield from self.call("POST", path, {"items": items})
        return parse_results(answer, [item["id"] for item in items])

    def heartbeat(self, beat: Mapping[str, Any]) -> Flow[dict[str, Any]]:
        """Tell the coordinator this worker is alive (``POST /workers/heartbeat``)."""
        data: dict[str, Any] = yield from self.call("POST", "/workers/heartbeat", beat)
        return data


def _kind_of(jobs: Sequence[NewJob]) -> str:
    # The producer span's name: the kind, when the request carries one.
    kinds = {j.kind for j in jobs}
    return kinds.pop() if len(kinds) == 1 else "batch"


def _check_size(items: Sequence[Any]) -> Sequence[Any]:
    # Refused here rather than by the coordinator's 422, which would name no item.
    if not 1 <= len(items) <= MAX_BATCH:
        raise InvalidRequest(f"a batch holds 1 to {MAX_BATCH} items, not {len(items)}")
    return items
