"""Reading and operating calls, each once, as a flow (``_exchange.py``): jobs and their
results, workflows' edges and why a job waits, queues, workers, figures, schedules and
limits."""

from __future__ import annotations

import builtins
import time
from datetime import datetime
from typing import Any
from urllib.parse import quote

from leasehold.client._exchange import Flow
from leasehold.client._parse import (
    JobPage,
    count,
    drop_none,
    field,
    listed,
    parse_attempt,
    parse_job,
)
from leasehold.client._result import result_of
from leasehold.client._worker_calls import CallsCore
from leasehold.errors import InvalidRequest, LeaseholdError, ResultTimeout
from leasehold.model import FINISHED, JSON, MAX_WAIT_SECONDS, Attempt, Job, JobStatus


class OperatorCalls(CallsCore):
    """Reading jobs and operating the coordinator."""

    def get(self, job_id: int, *, wait_seconds: float = 0.0) -> Flow[Job]:
        """The job. With ``wait_seconds`` (at most 30), the coordinator answers as soon as
        the job is completed, dead or cancelled, or after that long with the job as it is."""
        if wait_seconds <= 0:
            return parse_job((yield from self.call("GET", f"/jobs/{job_id}")))
        params = {"wait_seconds": repr(float(wait_seconds))}
        timeout = wait_seconds + self.timeout_seconds
        data = yield from self.call(
            "GET", f"/jobs/{job_id}", params=params, timeout_seconds=timeout
        )
        return parse_job(data)

    def wait(self, job_id: int, *, timeout: float | None = None) -> Flow[Job]:
        """The job once it is completed, dead or cancelled, by long polls of the coordinator
        (no polling loop here: each request answers when the job ends). ``ResultTimeout``
        (a ``TimeoutError``) if it has not ended within ``timeout`` seconds (None: wait on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            # One long poll waits at most MAX_WAIT_SECONDS; a longer wait is a few in a row.
            remaining = MAX_WAIT_SECONDS if deadline is None else deadline - time.monotonic()
            wait = min(max(remaining, 0.0), MAX_WAIT_SECONDS)
            job = yield from self.get(job_id, wait_seconds=wait)
            if job.status in FINISHED:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise ResultTimeout(
                    f"job {job_id} did not finish within {timeout} s (it is {job.status})"
                )

    def result(self, job_id: int, *, timeout: float | None = None) -> Flow[JSON]:
        """The result of the job once it has completed. ``JobFailed`` if it ended dead,
        ``JobCancelled`` if cancelled, ``ResultTimeout`` if not finished within ``timeout``."""
        return result_of((yield from self.wait(job_id, timeout=timeout)))

    def attempts(self, job_id: int) -> Flow[builtins.list[Attempt]]:
        """The history of the job's leases, oldest first."""
        attempts: builtins.list[Attempt] = []
        params = {"limit": "1000"}
        while True:
            data = yield from self.call("GET", f"/jobs/{job_id}/attempts", params=params)
            attempts += [parse_attempt(job_id, a) for a in listed(data, "attempts")]
            cursor = data.get("next_cursor")  # absent from coordinators before pages
            if not cursor:
                return attempts
            if str(cursor) == params.get("cursor"):  # a page that would never end
                raise LeaseholdError("the coordinator answered the same attempts page again")
            params = {"limit": "1000", "cursor": str(cursor)}

    def cancel(self, job_id: int) -> Flow[Job]:
        """Cancel a job: queued and dead jobs at once; a running one is marked, its worker
        told at its next renewal, and it ends cancelled when the worker reports."""
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/cancel")))

    def requeue(self, job_id: int) -> Flow[Job]:
        """Bring a dead or cancelled job back: queued at once, attempts reset."""
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/requeue")))

    def requeue_dead(
        self, *, kind: str | None = None, error_contains: str | None = None, limit: int = 1000
    ) -> Flow[int]:
        """Requeue dead jobs matching the filter; how many were requeued."""
        body = drop_none(kind=kind, error_contains=error_contains, limit=limit)
        return count((yield from self.call("POST", "/jobs/requeue", body)), "requeued")

    def delete(self, job_id: int) -> Flow[None]:
        """Delete a job and its history; a running job is refused (cancel it first)."""
        yield from self.call("DELETE", f"/jobs/{job_id}")

    def delete_where(
        self,
        *,
        status: JobStatus | str | None = None,
        kind: str | None = None,
        queue: str | None = None,
        finished_before: datetime | None = None,
        limit: int = 1000,
    ) -> Flow[int]:
        """Delete up to ``limit`` jobs matching the filter (never running ones); how many."""
        body = drop_none(
            status=status and str(status),
            kind=kind,
            queue=queue,
            finished_before=finished_before.isoformat() if finished_before else None,
            limit=limit,
        )
        return count((yield from self.call("POST", "/jobs/delete", body)), "deleted")

    def run_now(self, job_id: int) -> Flow[Job]:
        """Make a queued job that waits for its run_after due at once."""
        return parse_job((yield from self.call("POST", f"/jobs/{job_id}/run-now")))

    def queues(self) -> Flow[builtins.list[dict[str, Any]]]:
        """Each queue's counts, oldest waiting job, throughput and pause (parsed JSON)."""
        return listed((yield from self.call("GET", "/queues")), "queues")

    def pause(self, queue: str) -> Flow[None]:
        """Lease nothing more from the queue until it is resumed; running jobs finish."""
        yield from self.call("POST", f"/queues/{quote(queue, safe='')}/pause")

    def resume(self, queue: str) -> Flow[None]:
        yield from self.call("POST", f"/queues/{quote(queue, safe='')}/resume")

    def workers(self) -> Flow[builtins.list[dict[str, Any]]]:
        """Live workers and those gone within the last hour (parsed JSON)."""
        return listed((yield from self.call("GET", "/workers")), "workers")

    def stats(self) -> Flow[dict[str, Any]]:
        """The coordinator's ``GET /stats``, as parsed JSON."""
        data: dict[str, Any] = yield from self.call("GET", "/stats")
        return data

    def list(
        self,
        *,
        status: JobStatus | str | None = None,
        kind: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
        queue: str | None = None,
        error_contains: str | None = None,
        newest_first: bool = False,
    ) -> Flow[JobPage]:
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
        data = yield from self.call("GET", "/jobs", params={**params, "limit": str(limit)})
        jobs = [parse_job(j) for j in listed(data, "jobs")]
        return JobPage(jobs, field(data, "next_cursor"))

    # -- workflows (DESIGN.md §22) and why a job waits (§19) ----------------------------

    def parents(
        self, job_id: int, *, cursor: str | None = None, limit: int = 100
    ) -> Flow[dict[str, Any]]:
        """A page of the jobs ``job_id`` depends on, by id, as they stand now:
        ``{job_id, jobs: [{id, kind, status, spawn_key, on_failure, ...}], next_cursor}``."""
        return (yield from self._edges(job_id, "parents", cursor, limit))

    def dependents(
        self, job_id: int, *, cursor: str | None = None, limit: int = 100
    ) -> Flow[dict[str, Any]]:
        """A page of the jobs that depend on ``job_id``, as ``parents`` gives them."""
        return (yield from self._edges(job_id, "dependents", cursor, limit))

    def _edges(
        self, job_id: int, which: str, cursor: str | None, limit: int
    ) -> Flow[dict[str, Any]]:
        params = drop_none(cursor=cursor, limit=str(limit))
        data: dict[str, Any] = yield from self.call("GET", f"/jobs/{job_id}/{which}", params=params)
        listed(data, "jobs")  # the shape every caller reads
        return data

    def explain(self, job_id: int) -> Flow[dict[str, Any]]:
        """Why the job is not running right now (DESIGN.md §19): ``{job_id, status,
        runnable, reasons: [{code, message, until, detail}]}``."""
        data: dict[str, Any] = yield from self.call("GET", f"/jobs/{job_id}/explain")
        listed(data, "reasons")
        return data

    # -- schedules and limits (answers as parsed JSON, see DESIGN.md §9) -----------------

    def put_schedule(
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
    ) -> Flow[dict[str, Any]]:
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
        data: dict[str, Any] = yield from self.call("PUT", path, {**body, "payload": payload})
        return data

    def schedules(self) -> Flow[builtins.list[dict[str, Any]]]:
        return listed((yield from self.call("GET", "/schedules")), "schedules")

    def get_schedule(self, name: str) -> Flow[dict[str, Any]]:
        data: dict[str, Any] = yield from self.call("GET", f"/schedules/{quote(name, safe='')}")
        return data

    def delete_schedule(self, name: str) -> Flow[None]:
        yield from self.call("DELETE", f"/schedules/{quote(name, safe='')}")

    def put_limit(
        self,
        kind: str,
        max_running: int | None = None,
        *,
        max_running_per_group: int | None = None,
        rate: int | None = None,
        rate_period_seconds: float | None = None,
        rate_per_group: bool = False,
        fair: bool = False,
    ) -> Flow[dict[str, Any]]:
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
        data: dict[str, Any] = yield from self.call("PUT", f"/limits/{quote(kind, safe='')}", body)
        return data

    def delete_limit(self, kind: str) -> Flow[None]:
        yield from self.call("DELETE", f"/limits/{quote(kind, safe='')}")

    def limits(self) -> Flow[builtins.list[dict[str, Any]]]:
        return listed((yield from self.call("GET", "/limits")), "limits")
