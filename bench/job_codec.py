"""What a job's conversions cost: the hot paths every lease and report runs per job.

    .venv/bin/python -m bench.job_codec [--jobs 10000] [--repeat 7]

Times, for ``--jobs`` jobs, the best of ``--repeat`` runs of: decoding stored rows into
``model.Job`` (SQLite's positional rows, PostgreSQL's rows by name: dicts stand in for
asyncpg's Records), the guarded write's parameters (SQLite), encoding the job's wire form
(``service.answer.job_bytes``) and the client's parsing of it (``client._parse.parse_job``);
and, beside SQLite's generated row decoder, the same as a loop over the fields.
Run it before and after a change to one of them; it takes a few seconds.
"""

from __future__ import annotations

import argparse
import timeit
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from leasehold import job_fields
from leasehold.client._parse import parse_job
from leasehold.coordinator.service.answer import job_bytes
from leasehold.coordinator.store.postgres import tx as postgres
from leasehold.coordinator.store.sqlite import tx as sqlite
from leasehold.job_fields import Stored
from leasehold.model import Job, JobStatus, Report


def sample_job(job_id: int) -> Job:
    """A running job with most fields set, as a lease hands out."""
    now = datetime(2026, 1, 2, 3, 4, 5, 678_000, UTC)
    return Job(
        id=job_id,
        kind="send-email",
        payload={"to": f"user{job_id}@example.com", "n": job_id},
        status=JobStatus.RUNNING,
        attempts=1,
        max_attempts=5,
        run_after=now,
        created_at=now,
        lease_token=job_id * 7,
        lease_owner="worker-1",
        lease_expires_at=now,
        lease_seconds=30.0,
        leased_at=now,
        idempotency_key=f"key-{job_id}",
        request_hash="abc",
        report=Report.COMPLETED,
        priority=3,
        queue="mail",
        headers={"traceparent": "00-abc-def-01"},
        timeout_seconds=60.0,
    )


def _json(value: Any) -> str | None:
    return None if value is None else orjson.dumps(value).decode()


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def sqlite_row(job: Job) -> tuple[Any, ...]:
    """The job as SQLite returns it (times as epoch seconds, JSON as text)."""
    return (
        job.id, job.kind, orjson.dumps(job.payload).decode(), str(job.status), job.attempts,
        job.max_attempts, job.run_after.timestamp(), job.created_at.timestamp(),
        job.lease_token, job.lease_owner, _ts(job.lease_expires_at), job.lease_seconds,
        _ts(job.leased_at), _ts(job.finished_at), job.idempotency_key, job.request_hash,
        _json(job.result), job.last_error, job.report and str(job.report), job.priority,
        job.queue, int(job.cancel_requested), job.releases, _json(job.headers),
        job.timeout_seconds,
    )  # fmt: skip


def postgres_row(job: Job) -> dict[str, Any]:
    """The job as asyncpg returns it (times as datetimes, jsonb as text)."""
    names = [f.name for f in Job.__dataclass_fields__.values()]
    row = {name: getattr(job, name) for name in names}
    row |= {"payload": orjson.dumps(job.payload).decode(), "result": _json(job.result)}
    row |= {"headers": _json(job.headers), "status": str(job.status)}
    row["report"] = job.report and str(job.report)
    return row


def loop_decoder() -> Callable[[tuple[Any, ...]], Job]:
    """SQLite's row decoder as a loop over ``job_fields.FIELDS`` calling a converter per
    field: the alternative to the generated code, measured beside it."""
    statuses, reports = {s.value: s for s in JobStatus}, {r.value: r for r in Report}
    convert: dict[Stored, Callable[[Any], Any] | None] = {
        Stored.INT: None,
        Stored.FLOAT: None,
        Stored.TEXT: None,
        Stored.FLAG: bool,
        Stored.TIME: lambda v: datetime.fromtimestamp(v, UTC),
        Stored.JSON: orjson.loads,
        Stored.STATUS: statuses.__getitem__,
        Stored.REPORT: reports.__getitem__,
    }
    plan = tuple((convert[f.stored], f.nullable) for f in job_fields.FIELDS)

    def decode(row: tuple[Any, ...]) -> Job:
        values = [
            v if c is None or (nullable and v is None) else c(v)
            for (c, nullable), v in zip(plan, row, strict=True)
        ]
        return Job(*values)

    return decode


def best(run: Callable[[], object], repeat: int) -> float:
    return min(timeit.repeat(run, number=1, repeat=repeat))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    jobs = [sample_job(k + 1) for k in range(args.jobs)]
    lite_rows = [sqlite_row(job) for job in jobs]
    pg_rows = [postgres_row(job) for job in jobs]
    wires = [orjson.loads(job_bytes(job)) for job in jobs]
    looped = loop_decoder()
    assert [sqlite._job(r) for r in lite_rows[:3]] == jobs[:3] == [looped(r) for r in lite_rows[:3]]
    assert [postgres._job(r) for r in pg_rows[:3]] == jobs[:3]
    cases: dict[str, Callable[[], object]] = {
        "sqlite row -> Job": lambda: [sqlite._job(r) for r in lite_rows],
        "sqlite row -> Job, by a loop": lambda: [looped(r) for r in lite_rows],
        "postgres row -> Job": lambda: [postgres._job(r) for r in pg_rows],
        "sqlite guarded write params": lambda: [sqlite._write_params(j, j) for j in jobs],
        "Job -> wire JSON": lambda: [job_bytes(j) for j in jobs],
        "wire -> Job (client)": lambda: [parse_job(w) for w in wires],
    }
    for name, run in cases.items():
        seconds = best(run, args.repeat)
        print(f"{name:30} {seconds * 1e3:8.2f} ms  {seconds / args.jobs * 1e6:6.3f} us/job")


if __name__ == "__main__":
    main()
