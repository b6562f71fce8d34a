"""Enqueue inside the application's own transaction (DESIGN.md §26), on a real PostgreSQL:
a job exists if and only if its transaction commits, a coordinator leases it on the
commit's notification, and it is checked, keyed, counted and linked as the coordinator's
own enqueue does it.

One database for the module (each test uses kinds of its own); the tests that need a
coordinator serve one in the test process.
"""

from __future__ import annotations

import asyncio
import json
import re
import runpy
import sys
import time
import types
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import psycopg
import pytest

from leasehold.client import Client
from leasehold.coordinator.service.requests import Enqueue
from leasehold.coordinator.store.open import open_store
from leasehold.errors import (
    IdempotencyConflict,
    InvalidGraph,
    InvalidRequest,
    TooManyNames,
    Unavailable,
)
from leasehold.model import Dependency, Job, JobStatus, OnFailure, Unique
from leasehold.tasks import task
from leasehold.transactional import enqueue
from tests.inproc import quick_settings, serve_app
from tests.integration.test_readme import README, blocks, console
from tests.pgserver import PgServer, _run_coroutine

pytestmark = pytest.mark.postgres


class Boom(Exception):
    """The application's request failing after its enqueue."""


@pytest.fixture(scope="module")
def url(pg_server: PgServer) -> Iterator[str]:
    """One migrated database for the module."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    dsn = pg_server.create_database(name)

    async def migrate() -> None:
        store = open_store(dsn)
        await store.open()
        await store.close()

    _run_coroutine(migrate())
    yield dsn
    pg_server.drop_database(name)


@pytest.fixture
async def conn(url: str) -> AsyncIterator[asyncpg.Connection]:
    c = await asyncpg.connect(url)
    yield c
    await c.close()


def kind() -> str:
    return f"txn-{uuid.uuid4().hex[:8]}"


async def figures(conn: asyncpg.Connection) -> dict[str, Any]:
    """Everything an enqueue may change, as sums (shards left out)."""
    counts = await conn.fetch(
        "SELECT name, kind, queue, sum(value) AS n FROM counters GROUP BY name, kind, queue"
    )
    return {
        "jobs": await conn.fetchval("SELECT count(*) FROM jobs"),
        "counters": {(r["name"], r["kind"], r["queue"]): r["n"] for r in counts if r["n"]},
        "rollups": await conn.fetchval("SELECT coalesce(sum(count), 0) FROM rollups"),
        "groups": await conn.fetch("SELECT * FROM flow_groups ORDER BY kind, group_key"),
        "edges": await conn.fetchval("SELECT count(*) FROM job_deps"),
        "pending": await conn.fetchval("SELECT count(*) FROM enqueue_tally"),
    }


async def test_a_committed_job_is_leased_on_the_commits_notification(url: str) -> None:
    """A coordinator's waiting long poll gets the job as soon as the transaction commits,
    woken by the notification (its timer is set too long to find it), and not before."""
    k = kind()
    async with serve_app(open_store(url), quick_settings(), None) as coordinator:
        coordinator.service.due.max_sleep_seconds = 600.0  # only a NOTIFY can wake the poll
        async with Client(coordinator.url) as client:
            wakeup = coordinator.service.wakeup
            registered = asyncio.Event()
            started = wakeup.on_register

            def on_register() -> None:
                assert started is not None
                started()
                registered.set()

            wakeup.on_register = on_register
            waiting = asyncio.create_task(client.lease("w1", kinds=[k], wait_seconds=25))
            await asyncio.wait_for(registered.wait(), 10)
            conn = await asyncpg.connect(url)
            try:
                async with conn.transaction():
                    job = await enqueue(conn, k, {"to": "ada@example.com"})
                    assert await client.lease("w2", kinds=[k]) is None  # not committed yet
                    assert not waiting.done()
                committed = time.monotonic()
                lease = await asyncio.wait_for(waiting, 20)
                latency = time.monotonic() - committed
            finally:
                await conn.close()
    assert lease is not None and lease.job.id == job.id
    assert lease.job.payload == {"to": "ada@example.com"}
    print(f"leased {latency * 1000:.0f} ms after the commit")
    assert latency < 5.0


async def test_a_rolled_back_transaction_leaves_no_job_and_no_count(
    conn: asyncpg.Connection,
) -> None:
    """Every kind of job (plain, keyed, grouped, dependent, unique) leaves nothing behind
    when the application's request fails after its enqueue."""
    k = kind()
    parent = await enqueue(conn, k, None)  # committed alone, outside a transaction
    before = await figures(conn)

    async def request_that_fails() -> None:
        async with conn.transaction():
            await enqueue(conn, k, {"n": 1}, idempotency_key="once", group_key="acme")
            await enqueue(conn, k, {"n": 2}, depends_on=[parent.id])
            await enqueue(conn, k, {"n": 3}, unique=Unique(payload=True))
            raise Boom

    with pytest.raises(Boom):
        await request_that_fails()
    assert await figures(conn) == before
    # The key is free again: the same request now makes a job.
    job = await enqueue(conn, k, {"n": 1}, idempotency_key="once", group_key="acme")
    assert job.status is JobStatus.QUEUED


async def test_a_commit_counts_as_the_coordinators_own_enqueue(
    conn: asyncpg.Connection, url: str
) -> None:
    """The same jobs enqueued through the store (the coordinator's path) and in a
    transaction leave the same rows, edges, counts, rollups and group turns."""
    store = open_store(url)
    await store.open()
    try:
        made: dict[str, list[Any]] = {}
        for way in ("store", "txn"):
            k = f"{kind()}-{way}"
            before = await figures(conn)
            if way == "store":
                done = [i.job for i in await store.job_insert_many([Enqueue(k).new_job()])]
                dead = done[0]
                await conn.execute("UPDATE jobs SET status = 'dead' WHERE id = $1", dead.id)
                specs = _scenario(k, done[0].id)
                for spec in specs:
                    (inserted,) = await store.job_insert_many([spec.new_job()])
                    done.append(inserted.job)
            else:
                dead = await enqueue(conn, k, None)
                await conn.execute("UPDATE jobs SET status = 'dead' WHERE id = $1", dead.id)
                done = [dead]
                for spec in _scenario(k, dead.id):
                    done.append(await _enqueue_spec(conn, spec))
            rows = await conn.fetch(
                "SELECT status, waiting_for, depth, dependents, blocked_by IS NOT NULL AS blocked,"
                " last_error IS NOT NULL AS error, group_key, unique_key IS NOT NULL AS u"
                " FROM jobs WHERE kind = $1 ORDER BY id",
                k,
            )
            after = await figures(conn)
            made[way] = [
                [tuple(r) for r in rows],
                _changed(before["counters"], after["counters"], k),
                after["rollups"] - before["rollups"],
                after["edges"] - before["edges"],
                [(g["group_key"], g["active"]) for g in after["groups"] if g["kind"] == k],
                [j.id == done[-2].id for j in done[-1:]],  # the duplicate is the job before it
            ]
        assert made["txn"] == made["store"]
        assert (await figures(conn))["pending"] == 0
    finally:
        await store.close()


def _scenario(k: str, dead: int) -> list[Enqueue]:
    """A grouped job, a dependent cancelled by a dead parent, one waiting for a queued
    parent, a unique job and its duplicate."""
    return [
        Enqueue(k, {"n": 1}, group_key="acme"),
        Enqueue(k, {"n": 2}, depends_on=(Dependency(dead),)),
        Enqueue(k, {"n": 3}, depends_on=(Dependency(dead, OnFailure.RUN),)),
        Enqueue(k, {"n": 4}, unique=Unique(payload=True)),
        Enqueue(k, {"n": 4}, unique=Unique(payload=True)),
    ]


async def _enqueue_spec(conn: asyncpg.Connection, spec: Enqueue) -> Any:
    return await enqueue(
        conn,
        spec.kind,
        spec.payload,
        group_key=spec.group_key,
        depends_on=spec.depends_on,
        unique=spec.unique,
    )


def _changed(before: dict[Any, Any], after: dict[Any, Any], k: str) -> dict[Any, Any]:
    """The counters of kind ``k`` that changed, named without the kind."""
    keys = {key for key in before.keys() | after.keys() if key[1] == k}
    return {(n, q): after.get((n, k, q), 0) - before.get((n, k, q), 0) for n, _, q in keys}


async def test_bad_input_is_refused_and_the_transaction_goes_on(
    conn: asyncpg.Connection,
) -> None:
    """Each refusal is the error the HTTP enqueue answers, raised inside the transaction,
    which stays usable: the application decides whether to commit its other work."""
    k = kind()
    await conn.execute("CREATE TABLE IF NOT EXISTS accounts (email text)")
    async with conn.transaction():
        await conn.execute("INSERT INTO accounts VALUES ($1)", k)
        await enqueue(conn, k, {"to": "ada"}, idempotency_key="welcome:ada")
        refusals: dict[str, tuple[Callable[[], Awaitable[Job]], type[Exception], str]] = {
            "a blank kind": (lambda: enqueue(conn, " ", None), InvalidRequest, "kind"),
            "a key reused": (
                lambda: enqueue(conn, k, {"to": "bob"}, idempotency_key="welcome:ada"),
                IdempotencyConflict,
                "with a different request",
            ),
            "no such parent": (
                lambda: enqueue(conn, k, None, depends_on=[2**62]),
                InvalidGraph,
                f"no job has id {2**62}",
            ),
            "too deep": (lambda: enqueue(conn, k, _nested(65)), InvalidRequest, "64 deep"),
            "past 64 bits": (lambda: enqueue(conn, k, {"n": 2**64}), InvalidRequest, "64 bits"),
            "a NUL": (lambda: enqueue(conn, k, "a\x00b"), InvalidRequest, "NUL"),
            "max_attempts": (
                lambda: enqueue(conn, k, None, max_attempts=0),
                InvalidRequest,
                "max_attempts",
            ),
            "weight": (lambda: enqueue(conn, k, None, weight=0), InvalidRequest, "weight"),
            "a reserved key": (
                lambda: enqueue(conn, k, None, idempotency_key="schedule:x"),
                InvalidRequest,
                "scheduler",
            ),
            "a missing field": (
                lambda: enqueue(conn, k, {"a": 1}, unique=Unique(fields=("b",))),
                InvalidRequest,
                "no field 'b'",
            ),
        }
        for name, (call, error, words) in refusals.items():
            with pytest.raises(error) as raised:
                await call()
            assert words in str(raised.value), name
        await enqueue(conn, k, _nested(64))  # as deep as allowed
        assert await conn.fetchval("SELECT count(*) FROM jobs WHERE kind = $1", k) == 2
    assert await conn.fetchval("SELECT count(*) FROM accounts WHERE email = $1", k) == 1
    assert await conn.fetchval("SELECT count(*) FROM jobs WHERE kind = $1", k) == 2


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


async def test_idempotent_retries_and_unique_jobs_agree_with_the_coordinators(
    conn: asyncpg.Connection, url: str
) -> None:
    """A key the coordinator stored is the same key here (the fingerprints are its own),
    and a retry in a later transaction gives back the job already there."""
    k = kind()
    store = open_store(url)
    await store.open()
    try:
        spec = Enqueue(k, {"to": "ada"}, idempotency_key="welcome:ada", priority=0)
        (stored,) = await store.job_insert_many([spec.new_job()])
        unique = Enqueue(k, {"to": "bob"}, unique=Unique(fields=("to",)))
        (first,) = await store.job_insert_many([unique.new_job()])
    finally:
        await store.close()
    for _ in range(2):
        async with conn.transaction():
            again = await enqueue(conn, k, {"to": "ada"}, idempotency_key="welcome:ada")
            assert again.id == stored.job.id
            dup = await enqueue(conn, k, {"to": "bob", "x": 1}, unique=Unique(fields=("to",)))
            assert dup.id == first.job.id
    with pytest.raises(IdempotencyConflict):
        await enqueue(conn, k, {"to": "eve"}, idempotency_key="welcome:ada")
    assert await conn.fetchval("SELECT count(*) FROM jobs WHERE kind = $1", k) == 2


def test_psycopg_commits_and_rolls_back(url: str) -> None:
    """psycopg 3's connection: the job with the commit at the end of the block, nothing
    after a rollback."""
    k = kind()
    with psycopg.connect(url) as pc:
        job = enqueue(pc, k, {"n": 1}, run_after=datetime.now(UTC) + timedelta(hours=1))
        assert job.status is JobStatus.QUEUED and job.run_after > datetime.now(UTC)

    def request_that_fails() -> None:
        with psycopg.connect(url) as pc:
            enqueue(pc, k, {"n": 2})
            raise Boom

    with pytest.raises(Boom):
        request_that_fails()
    with psycopg.connect(url) as pc:
        rows = pc.execute("SELECT id FROM jobs WHERE kind = %s", (k,)).fetchall()
        pending = pc.execute("SELECT count(*) FROM enqueue_tally").fetchone()
    assert rows == [(job.id,)] and pending == (0,)


async def test_psycopg_async_and_typed_tasks(url: str, conn: asyncpg.Connection) -> None:
    """A typed task takes a connection as it takes a client: its arguments checked, its
    payload its parameters, on psycopg (sync and async) and asyncpg alike."""
    k = kind()

    @task(kind=k, queue="mail", max_attempts=3)
    def greet(name: str, times: int = 1) -> str:
        return name * times

    async with await psycopg.AsyncConnection.connect(url) as ac:
        made = await greet.enqueue(ac, "ada", times=2)
    with psycopg.connect(url) as pc:
        also = greet.enqueue(pc, name="bob")
    async with conn.transaction():
        third = await greet.enqueue(conn, name="eve")  # asyncpg: untyped, Any
    assert (made.payload, made.queue, made.max_attempts) == ({"name": "ada", "times": 2}, "mail", 3)
    assert also.payload == {"name": "bob", "times": 1}
    assert third.kind == k
    with pytest.raises(ValueError, match="times"):
        await greet.enqueue(conn, name="x", times="many")  # type: ignore[call-overload]


async def test_the_producer_role_enqueues_and_reads_but_changes_nothing_else(
    url: str, conn: asyncpg.Connection
) -> None:
    """The role README's SQL makes may enqueue and read jobs; it may neither lease nor
    change one, nor write the tables behind the enqueue."""
    role = f"app_{uuid.uuid4().hex[:8]}"
    await conn.execute(blocks()["producer-role"].replace("shop_app", role))
    app = await asyncpg.connect(url.replace("//postgres@", f"//{role}@"))
    try:
        async with app.transaction():
            job = await enqueue(app, kind(), {"n": 1}, group_key="acme")
        assert await app.fetchval("SELECT status FROM jobs WHERE id = $1", job.id) == "queued"
        for statement in (
            "UPDATE jobs SET status = 'running', lease_token = lease_token + 1",
            "SELECT id FROM jobs FOR UPDATE SKIP LOCKED LIMIT 1",
            "INSERT INTO counters (name, kind, queue, shard, value) VALUES ('x', 'x', '', 0, 1)",
            "DELETE FROM enqueue_tally",
            "UPDATE enqueue_caps SET max_kinds = 1000000",
        ):
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await app.execute(statement)
    finally:
        await app.close()
        await conn.execute(f"DROP OWNED BY {role}; DROP ROLE {role}")


@pytest.mark.parametrize(
    ("change", "code", "words"),
    [
        ({"zzz": 1}, "invalid_request", "zzz: no such field"),
        ({"kind": "a\u200bb"}, "invalid_request", "kind: must not contain control"),
        ({"kind": "\u3000"}, "invalid_request", "kind: must not be empty"),
        ({"queue": "q" * 101}, "invalid_request", "queue: must be 1 to 100"),
        ({"priority": 1.5}, "invalid_request", "priority: must be an integer"),
        ({"max_attempts": 1001}, "invalid_request", "max_attempts"),
        ({"timeout_seconds": 0}, "invalid_request", "timeout_seconds"),
        ({"run_after": "tomorrow"}, "invalid_request", "run_after: must be an RFC 3339"),
        ({"start_by": "10000-01-01T00:00:00Z"}, "invalid_request", "start_by"),
        ({"headers": {"a b": "x"}}, "invalid_request", "headers: a name"),
        ({"headers": {"a": "x\u202e"}}, "invalid_request", "headers.a"),
        ({"idempotency_key": "schedule:1"}, "invalid_request", "scheduler"),
        ({"request_hash": "nope"}, "invalid_request", "request_hash"),
        ({"payload": "a\u0000b"}, "invalid_request", "NUL"),
        ({"payload": {"n": 18446744073709551616}}, "invalid_request", "64 bits"),
        ({"payload": {"n": 1e30}}, None, None),  # a float, however it is written
        ({"payload": "x" * 300_000}, "payload_too_large", "over 262144 bytes"),
        ({"depends_on": [[1, "cancel"], [1, "run"]]}, "invalid_graph", "twice"),
        ({"depends_on": [[1, "maybe"]]}, "invalid_request", "depends_on"),
        ({"unique": {"states": ["gone"]}, "unique_key": "u1:x"}, "invalid_request", "states"),
        ({"unique_key": "u1:x"}, "invalid_request", "without unique"),
    ],
)
async def test_the_database_checks_what_it_is_given(
    conn: asyncpg.Connection, change: dict[str, Any], code: str | None, words: str | None
) -> None:
    """A caller that goes round leasehold.transactional meets the same bounds in the
    database: refused (SQLSTATE LH422, the code in DETAIL) with nothing written."""
    job = {"kind": kind(), "payload": None, "request_hash": "a" * 64, **change}
    text = json.dumps(job)  # not orjson: it refuses to write an integer past 64 bits
    if code is None:
        await conn.fetchrow("SELECT * FROM leasehold_enqueue($1::json)", text)
        return
    with pytest.raises(asyncpg.PostgresError) as raised:
        async with conn.transaction():
            await conn.fetchrow("SELECT * FROM leasehold_enqueue($1::json)", text)
    assert (raised.value.sqlstate, raised.value.detail) == ("LH422", code)
    assert words is not None and words in raised.value.message


async def test_the_caps_on_names_hold_in_the_database(conn: asyncpg.Connection) -> None:
    """A new kind, queue or group past enqueue_caps is refused; known ones still go in."""
    known = kind()
    await enqueue(conn, known, None, group_key="acme")
    kinds = await conn.fetchval(
        "SELECT count(*) FROM (SELECT kind FROM counters WHERE name LIKE 'jobs:%'"
        " GROUP BY kind HAVING sum(value) <> 0) AS known"
    )
    refusals: list[tuple[Callable[[], Awaitable[Job]], str]] = [
        (lambda: enqueue(conn, kind(), None), "distinct kinds"),
        (lambda: enqueue(conn, known, None, queue="other"), "distinct queues"),
        (lambda: enqueue(conn, known, None, group_key="globex"), "distinct group keys"),
    ]

    async def with_caps_down_to_what_there_is() -> None:
        async with conn.transaction():  # rolled back: the caps as they were, afterwards
            await conn.execute(
                "UPDATE enqueue_caps SET max_kinds = $1, max_queues = 1, max_groups = 1", kinds
            )
            await enqueue(conn, known, None, group_key="acme")
            for call, words in refusals:
                with pytest.raises(TooManyNames, match=words):
                    await call()
            raise Boom

    with pytest.raises(Boom):
        await with_caps_down_to_what_there_is()


def test_the_readmes_example_runs_as_the_role_it_grants(
    url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """README's role, made by its own SQL, runs README's sign-up with README's typed task,
    and prints what README shows."""
    found = blocks()
    role = f"shop_{uuid.uuid4().hex[:8]}"
    tasks_py = re.search(r"```python\n(# tasks\.py\n.*?)```", README.read_text(), re.S)
    assert tasks_py is not None

    async def grant() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(found["producer-role"].replace("shop_app", role))
            await conn.execute("CREATE TABLE IF NOT EXISTS accounts (email text)")
            await conn.execute(f"GRANT INSERT ON accounts TO {role}")
        finally:
            await conn.close()

    async def revoke() -> None:
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f"DROP OWNED BY {role}; DROP ROLE {role}")
        finally:
            await conn.close()

    _run_coroutine(grant())
    try:
        tasks = types.ModuleType("tasks")
        exec(compile(tasks_py.group(1), "tasks.py", "exec"), tasks.__dict__)
        monkeypatch.setitem(sys.modules, "tasks", tasks)
        monkeypatch.setenv("SHOP_DATABASE_URL", url.replace("//postgres@", f"//{role}@"))
        (tmp_path / "signup.py").write_text(found["signup.py"])
        runpy.run_path(str(tmp_path / "signup.py"), run_name="__main__")
    finally:
        _run_coroutine(revoke())
    (step,) = console(found["signup-run"])
    assert step.command == "python signup.py"
    assert capsys.readouterr().out.splitlines() == step.output


async def test_a_database_without_the_function_says_what_to_do(url: str) -> None:
    """A connection that does not find leasehold_enqueue (no coordinator of this release
    has migrated the database, or another search_path) is told so, not given SQL's error."""
    lost = await asyncpg.connect(url, server_settings={"search_path": "pg_catalog"})
    try:
        with pytest.raises(Unavailable, match="search_path"):
            await enqueue(lost, kind(), None)
    finally:
        await lost.close()
