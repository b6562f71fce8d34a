"""``Client``: the async client. Every call is one idempotent request, retried as allowed."""

from __future__ import annotations

import builtins
import functools
import os
import random
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import TracebackType
from typing import Any, overload
from urllib.parse import quote

from leasehold import tracing
from leasehold.client._batch_items import (
    CompleteItem,
    FailItem,
    ItemResult,
    RenewItem,
    parse_results,
)
from leasehold.client._new_job import MAX_BATCH, NewJob
from leasehold.client._parse import (
    DEFAULT_TIMEOUT_SECONDS,
    DEFAULT_URL,
    JobPage,
    Lease,
    count,
    drop_none,
    encode,
    field,
    listed,
    parse_attempt,
    parse_job,
    parse_lease,
    parse_leases,
)
from leasehold.client._result import result_of, wait_finished
from leasehold.client._retry import RetryPolicy, call_with_retry
from leasehold.client._transport import Transport
from leasehold.errors import InvalidRequest, LeaseholdError
from leasehold.model import JSON, Attempt, Job, JobStatus


class Client:
    """An async client for one coordinator. Use ``async with Client(url) as client:``.

    ``token`` is sent as ``Authorization: Bearer <token>``. ``retry`` says how calls that
    got no answer (``Unavailable``) are tried again; 4xx answers are never retried.
    ``max_read_bytes`` bounds what one answer may make the client read (64 MiB by
    default, ``MAX_READ_BYTES``): a longer one is ``Unavailable``, as is a 2xx answer that
    is not JSON. An answer that is JSON but not what the call asked for (more leases than
    ``max_jobs``, a job twice, a batch answered for other jobs) is a ``LeaseholdError``.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        retry: RetryPolicy | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_connections: int = 100,
        rng: random.Random | None = None,
        max_read_bytes: int | None = None,
    ) -> None:
        self._transport = Transport(url, token, timeout_seconds, max_connections, max_read_bytes)
        self.retry = retry or RetryPolicy()
        self._rng = rng or random.Random()

    @classmethod
    def _over(cls, transport: Transport, retry: RetryPolicy | None = None) -> Client:
        """A client whose requests go through ``transport`` rather than a connection pool
        of its own: ``leasehold.testing`` hands requests to an in-process coordinator."""
        client = cls.__new__(cls)
        client._transport = transport
        client.retry = retry or RetryPolicy()
        client._rng = random.Random()
        return client

    @classmethod
    def from_env(cls, **options: Any) -> Client:
        """A client for ``$LEASEHOLD_URL`` with ``$LEASEHOLD_TOKEN``, if they are set."""
        url = os.environ.get("LEASEHOLD_URL", DEFAULT_URL)
        return cls(url, token=os.environ.get("LEASEHOLD_TOKEN"), **options)

    @property
    def url(self) -> str:
        return self._transport.url

    def with_retry(self, retry: RetryPolicy) -> Client:
        """The same client (same session) with another retry policy."""
        view = Client.__new__(Client)
        view._transport, view.retry, view._rng = self._transport, retry, self._rng
        return view

    async def close(self) -> None:
        await self._transport.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _call(
        self,
        method: str,
        path: str,
        body: Mapping[str, Any] | None = None,
        *,
        params: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        timeout_seconds: float | None = None,
    ) -> Any:
        raw = encode(body) if body is not None else None
        send = functools.partial(
            self._transport.send,
            method,
            path,
            raw,
            params or {},
            headers or {},
            timeout_seconds or self._transport.timeout_seconds,
        )
        return await call_with_retry(send, self.retry, self._rng, f"{method} {path}")

    # -- producers ----------------------------------------------------------------------

    async def enqueue(
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
    ) -> Job:
        """Add a job; the coordinator's defaults apply to what is not given.

        Without ``idempotency_key`` the client makes up a random one, so that its own
        retries (after a timeout, say, where the first request may have been stored) can
        never add the job twice; the key shows as ``job.idempotency_key``. Pass a key of
        your own to make the enqueue idempotent across processes and restarts as well:
        the same key with the same request returns the job already stored.

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
            job = parse_job(await self._call("POST", "/jobs", new.body()))
            tracing.sent(span, [job.id])
        return job

    async def enqueue_many(self, jobs: Sequence[NewJob]) -> list[Job]:
        """Add up to ``MAX_BATCH`` (1,000) jobs in one request and one transaction, in order.

        All or nothing: if any key was used before with a different request, the call
        raises ``IdempotencyConflict`` and adds none of them. Keys are made up for jobs
        without one, as ``enqueue`` does, so a retried batch never adds a job twice.
        """
        kinds = {j.kind for j in jobs}
        with tracing.producing(kinds.pop() if len(kinds) == 1 else "batch", len(jobs)) as span:
            data = await self._call("POST", "/jobs/batch", {"jobs": [j.body() for j in jobs]})
            enqueued = [parse_job(field(item, "job")) for item in listed(data, "jobs")]
            tracing.sent(span, [j.id for j in enqueued])
        return enqueued

    # -- workers ------------------------------------------------------------------------

    @overload
    async def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: None = None,
        request_id: str | None = None,
    ) -> Lease | None: ...

    @overload
    async def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: int,
        request_id: str | None = None,
    ) -> list[Lease]: ...

    async def lease(
        self,
        worker_id: str,
        *,
        lease_seconds: float | None = None,
        kinds: Sequence[str] | None = None,
        wait_seconds: float = 0.0,
        queues: Sequence[str] | None = None,
        max_jobs: int | None = None,
        request_id: str | None = None,
    ) -> Lease | list[Lease] | None:
        """Lease the next due job, waiting up to ``wait_seconds`` for one; None if none came.

        With ``max_jobs`` (1-1000): lease up to that many at once, each under its own
        token, and answer a list (empty if none came). The wait ends as soon as there is
        one; ask only for as many as you will start at once, since every lease runs from
        when it is granted.

        Every lease carries a request id (``request_id``, or a fresh one), and a retry
        after a lost answer sends the same one, so it gets the leases the lost answer
        carried instead of new ones (PROTOCOL.md, "Lease idempotency"). A coordinator
        older than protocol 1.1 refuses the field; the client then leases without it.
        """
        body = drop_none(
            worker_id=worker_id,
            lease_seconds=lease_seconds,
            kinds=list(kinds) if kinds is not None else None,
            queues=list(queues) if queues is not None else None,
            wait_seconds=wait_seconds,
            max_jobs=max_jobs,
        )
        if self._transport.lease_ids:
            body["request_id"] = request_id or f"lease-{uuid.uuid4()}"
        timeout = wait_seconds + self._transport.timeout_seconds
        try:
            data = await self._call("POST", "/lease", body, timeout_seconds=timeout)
        except InvalidRequest:
            if "request_id" not in body:
                raise
            # Protocol 1.0 refuses unknown fields: lease as it would have, from now on.
            self._transport.lease_ids = False
            del body["request_id"]
            data = await self._call("POST", "/lease", body, timeout_seconds=timeout)
        if max_jobs is not None:
            return [] if data is None else parse_leases(data, max_jobs)
        return None if data is None else parse_lease(data)

    async def renew(self, job_id: int, token: int, *, lease_seconds: float | None = None) -> Job:
        """Extend the lease from now (by the length it was granted for, by default)."""
        body = drop_none(token=token, lease_seconds=lease_seconds)
        return parse_job(await self._call("POST", f"/jobs/{job_id}/renew", body))

    async def complete(self, job_id: int, token: int, result: JSON = None) -> Job:
        """Report success. A repeat under the same token answers as the first did."""
        body = {"token": token, "result": result}
        return parse_job(await self._call("POST", f"/jobs/{job_id}/complete", body))

    async def fail(
        self,
        job_id: int,
        token: int,
        error: str,
        *,
        retryable: bool = True,
        retry_after_seconds: float | None = None,
    ) -> Job:
        """Report failure: retried after a backoff (or ``retry_after_seconds``), or dead
        when out of attempts or not ``retryable``."""
        body = drop_none(
            token=token,
            error=error,
            retryable=retryable,
            retry_after_seconds=retry_after_seconds,
        )
        return parse_job(await self._call("POST", f"/jobs/{job_id}/fail", body))

    async def release(self, job_id: int, token: int) -> Job:
        """Hand a leased job back unfinished: queued again at once, its attempt given back."""
        return parse_job(await self._call("POST", f"/jobs/{job_id}/release", {"token": token}))

    # Batch reports: one request and one transaction, each item fenced by its own token and
    # answered on its own (``ItemResult``); a repeat is answered as the first was.

    async def renew_many(self, items: Sequence[RenewItem]) -> list[ItemResult]:
        """Extend up to 1,000 leases; each item's result says whether its lease was."""
        return await self._batch("/batch/renew", [i.wire() for i in _check_size(items)])

    async def complete_many(self, items: Sequence[CompleteItem]) -> list[ItemResult]:
        """Report up to 1,000 successes; each item's result says whether it was accepted."""
        return await self._batch("/batch/complete", [i.wire() for i in _check_size(items)])

    async def fail_many(self, items: Sequence[FailItem]) -> list[ItemResult]:
        """Report up to 1,000 failures; each item's result says whether it was accepted."""
        return await self._batch("/batch/fail", [i.wire() for i in _check_size(items)])

    async def _batch(self, path: str, items: list[dict[str, Any]]) -> list[ItemResult]:
        answer = await self._call("POST", path, {"items": items})
        return parse_results(answer, [item["id"] for item in items])

    # -- reading and operating ----------------------------------------------------------

    async def get(self, job_id: int, *, wait_seconds: float = 0.0) -> Job:
        """The job. With ``wait_seconds`` (at most 30), the coordinator answers as soon as
        the job is completed, dead or cancelled, or after that long with the job as it is."""
        if wait_seconds <= 0:
            return parse_job(await self._call("GET", f"/jobs/{job_id}"))
        params = {"wait_seconds": repr(float(wait_seconds))}
        timeout = wait_seconds + self._transport.timeout_seconds
        data = await self._call("GET", f"/jobs/{job_id}", params=params, timeout_seconds=timeout)
        return parse_job(data)

    async def wait(self, job_id: int, *, timeout: float | None = None) -> Job:  # noqa: ASYNC109 (sent as the long poll's wait)
        """The job once it is completed, dead or cancelled, by long polls of the coordinator
        (no polling loop here: each request answers when the job ends). ``ResultTimeout``
        (a ``TimeoutError``) if it has not ended within ``timeout`` seconds (None: wait on)."""
        return await wait_finished(self.get, job_id, timeout)

    async def result(self, job_id: int, *, timeout: float | None = None) -> JSON:  # noqa: ASYNC109 (sent as the long poll's wait)
        """The result of the job once it has completed. ``JobFailed`` if it ended dead,
        ``JobCancelled`` if cancelled, ``ResultTimeout`` if not finished within ``timeout``."""
        return result_of(await self.wait(job_id, timeout=timeout))

    async def attempts(self, job_id: int) -> list[Attempt]:
        """The history of the job's leases, oldest first."""
        attempts: list[Attempt] = []
        params = {"limit": "1000"}
        while True:
            data = await self._call("GET", f"/jobs/{job_id}/attempts", params=params)
            attempts += [parse_attempt(job_id, a) for a in listed(data, "attempts")]
            cursor = data.get("next_cursor")  # absent from coordinators before pages
            if not cursor:
                return attempts
            if str(cursor) == params.get("cursor"):  # a page that would never end
                raise LeaseholdError("the coordinator answered the same attempts page again")
            params = {"limit": "1000", "cursor": str(cursor)}

    async def cancel(self, job_id: int) -> Job:
        """Cancel a job: queued and dead jobs at once; a running one is marked, its worker
        told at its next renewal, and it ends cancelled when the worker reports."""
        return parse_job(await self._call("POST", f"/jobs/{job_id}/cancel"))

    async def requeue(self, job_id: int) -> Job:
        """Bring a dead or cancelled job back: queued at once, attempts reset."""
        return parse_job(await self._call("POST", f"/jobs/{job_id}/requeue"))

    async def requeue_dead(
        self, *, kind: str | None = None, error_contains: str | None = None, limit: int = 1000
    ) -> int:
        """Requeue dead jobs matching the filter; how many were requeued."""
        body = drop_none(kind=kind, error_contains=error_contains, limit=limit)
        data = await self._call("POST", "/jobs/requeue", body)
        return count(data, "requeued")

    async def delete(self, job_id: int) -> None:
        """Delete a job and its history; a running job is refused (cancel it first)."""
        await self._call("DELETE", f"/jobs/{job_id}")

    async def delete_where(
        self,
        *,
        status: JobStatus | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        finished_before: datetime | None = None,
        limit: int = 1000,
    ) -> int:
        """Delete up to ``limit`` jobs matching the filter (never running ones); how many."""
        body = drop_none(
            status=status and str(status),
            kind=kind,
            queue=queue,
            finished_before=finished_before.isoformat() if finished_before else None,
            limit=limit,
        )
        data = await self._call("POST", "/jobs/delete", body)
        return count(data, "deleted")

    async def run_now(self, job_id: int) -> Job:
        """Make a queued job that waits for its run_after due at once."""
        return parse_job(await self._call("POST", f"/jobs/{job_id}/run-now"))

    async def queues(self) -> builtins.list[dict[str, Any]]:
        """Each queue's counts, oldest waiting job, throughput and pause (parsed JSON)."""
        data = await self._call("GET", "/queues")
        queues: builtins.list[dict[str, Any]] = listed(data, "queues")
        return queues

    async def pause(self, queue: str) -> None:
        """Lease nothing more from the queue until it is resumed; running jobs finish."""
        await self._call("POST", f"/queues/{quote(queue, safe='')}/pause")

    async def resume(self, queue: str) -> None:
        await self._call("POST", f"/queues/{quote(queue, safe='')}/resume")

    async def heartbeat(self, beat: Mapping[str, Any]) -> dict[str, Any]:
        """Tell the coordinator this worker is alive (``POST /workers/heartbeat``)."""
        data: dict[str, Any] = await self._call("POST", "/workers/heartbeat", beat)
        return data

    async def workers(self) -> builtins.list[dict[str, Any]]:
        """Live workers and those gone within the last hour (parsed JSON)."""
        data = await self._call("GET", "/workers")
        workers: builtins.list[dict[str, Any]] = listed(data, "workers")
        return workers

    async def stats(self) -> dict[str, Any]:
        """The coordinator's ``GET /stats``, as parsed JSON."""
        data: dict[str, Any] = await self._call("GET", "/stats")
        return data

    async def list(
        self,
        *,
        status: JobStatus | str | None = None,
        kind: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
        queue: str | None = None,
        error_contains: str | None = None,
        newest_first: bool = False,
    ) -> JobPage:
        """One page of jobs, oldest first (``newest_first``: by id, descending), optionally
        of one status, kind and queue, and with ``error_contains`` in the last error.
        Pass the page's ``next_cursor`` as ``cursor``, with the same filters, for the next."""
        params = drop_none(
            status=status and str(status),
            kind=kind,
            cursor=cursor,
            queue=queue,
            error_contains=error_contains,
            order="desc" if newest_first else None,
        )
        data = await self._call("GET", "/jobs", params={**params, "limit": str(limit)})
        jobs = [parse_job(j) for j in listed(data, "jobs")]
        return JobPage(jobs, field(data, "next_cursor"))

    async def parents(
        self, job_id: int, *, cursor: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """A page of the jobs ``job_id`` depends on, by id, as they stand now:
        ``{job_id, jobs: [{id, kind, status, spawn_key, on_failure, ...}], next_cursor}``."""
        return await self._edges(job_id, "parents", cursor, limit)

    async def dependents(
        self, job_id: int, *, cursor: str | None = None, limit: int = 100
    ) -> dict[str, Any]:
        """A page of the jobs that depend on ``job_id``, as ``parents`` gives them."""
        return await self._edges(job_id, "dependents", cursor, limit)

    async def _edges(
        self, job_id: int, which: str, cursor: str | None, limit: int
    ) -> dict[str, Any]:
        params = drop_none(cursor=cursor, limit=str(limit))
        data: dict[str, Any] = await self._call("GET", f"/jobs/{job_id}/{which}", params=params)
        listed(data, "jobs")  # the shape every caller reads
        return data

    async def explain(self, job_id: int) -> dict[str, Any]:
        """Why the job is not running right now (DESIGN.md §19): ``{job_id, status,
        runnable, reasons: [{code, message, until, detail}]}``."""
        data: dict[str, Any] = await self._call("GET", f"/jobs/{job_id}/explain")
        listed(data, "reasons")
        return data

    # -- schedules and limits (answers as parsed JSON, see DESIGN.md §9) -----------------

    async def put_schedule(
        self,
        name: str,
        *,
        cron: str,
        kind: str,
        timezone: str | None = None,
        payload: JSON = None,
        queue: str | None = None,
        priority: int | None = None,
        max_attempts: int | None = None,
        catch_up: str | None = None,
        enabled: bool | None = None,
    ) -> dict[str, Any]:
        """Create or replace schedule ``name``; the coordinator's defaults apply to what is
        not given. The schedule starts at its first fire time from now."""
        body = drop_none(
            cron=cron,
            kind=kind,
            timezone=timezone,
            queue=queue,
            priority=priority,
            max_attempts=max_attempts,
            catch_up=catch_up,
            enabled=enabled,
        )
        path = f"/schedules/{quote(name, safe='')}"
        data: dict[str, Any] = await self._call("PUT", path, {**body, "payload": payload})
        return data

    async def schedules(self) -> builtins.list[dict[str, Any]]:
        data = await self._call("GET", "/schedules")
        schedules: builtins.list[dict[str, Any]] = listed(data, "schedules")
        return schedules

    async def get_schedule(self, name: str) -> dict[str, Any]:
        data: dict[str, Any] = await self._call("GET", f"/schedules/{quote(name, safe='')}")
        return data

    async def delete_schedule(self, name: str) -> None:
        await self._call("DELETE", f"/schedules/{quote(name, safe='')}")

    async def put_limit(
        self,
        kind: str,
        max_running: int | None = None,
        *,
        max_running_per_group: int | None = None,
        rate: int | None = None,
        rate_period_seconds: float | None = None,
        rate_per_group: bool = False,
        fair: bool = False,
    ) -> dict[str, Any]:
        """Set every limit of ``kind`` at once (those not given are lifted; DESIGN.md §19):
        at most ``max_running`` running at once, ``max_running_per_group`` per group key,
        ``rate`` units started per ``rate_period_seconds`` (each group its own with
        ``rate_per_group``), and groups taking turns (``fair``)."""
        if (rate is None) != (rate_period_seconds is None):
            raise InvalidRequest("a rate needs both rate and rate_period_seconds")
        body: dict[str, Any] = drop_none(
            max_running=max_running, max_running_per_group=max_running_per_group
        )
        if rate is not None:
            body["rate"] = {"limit": rate, "period_seconds": float(rate_period_seconds or 0)}
            if rate_per_group:
                body["rate"]["per_group"] = True
        if fair:
            body["fair"] = True
        data: dict[str, Any] = await self._call("PUT", f"/limits/{quote(kind, safe='')}", body)
        return data

    async def delete_limit(self, kind: str) -> None:
        await self._call("DELETE", f"/limits/{quote(kind, safe='')}")

    async def limits(self) -> builtins.list[dict[str, Any]]:
        data = await self._call("GET", "/limits")
        limits: builtins.list[dict[str, Any]] = listed(data, "limits")
        return limits


def _check_size(items: Sequence[Any]) -> Sequence[Any]:
    # Refused here rather than by the coordinator's 422, which would name no item.
    if not 1 <= len(items) <= MAX_BATCH:
        raise InvalidRequest(f"a batch holds 1 to {MAX_BATCH} items, not {len(items)}")
    return items
