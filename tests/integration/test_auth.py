"""Who may call what: every endpoint x every role, without a token and with a wrong one."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from starlette.routing import BaseRoute

from leasehold import Client
from leasehold.coordinator.app import create_app
from leasehold.coordinator.auth_tokens import Role, hash_token
from leasehold.coordinator.settings import CoordinatorSettings
from leasehold.errors import Forbidden, Unauthorized
from leasehold.model import JobStatus
from tests.http import Answer, Api
from tests.process import Coordinator, free_port

TOKENS = {
    Role.PRODUCER: "producer-token-0123456789abcdef",
    Role.WORKER: "worker-token-0123456789abcdef",
    Role.READER: "reader-token-0123456789abcdef",
    Role.ADMIN: "admin-token-0123456789abcdef",
    Role.METRICS: "metrics-token-0123456789abcdef",
}
WRONG = "wrong-token-0123456789abcdef"
PRODUCER, WORKER, READER, ADMIN = Role.PRODUCER, Role.WORKER, Role.READER, Role.ADMIN
METRICS = Role.METRICS


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # "{job_id}" stands for a queued job's id
    roles: frozenset[Role] | None  # None: open to anyone
    passed: tuple[int, ...]  # the answers that show the request got past the guard
    body: Any = None

    def __str__(self) -> str:
        return f"{self.method} {self.path}"


def endpoint(
    method: str, path: str, roles: set[Role] | None, passed: tuple[int, ...], body: Any = None
) -> Endpoint:
    return Endpoint(method, path, frozenset(roles) if roles is not None else None, passed, body)


# Allowed calls get a domain answer that proves they reached the handler: a report under
# token 99 of a job leased never is 409 (stale), a requeue of a queued job is 409.
ENDPOINTS = [
    endpoint("GET", "/health", None, (200,)),
    endpoint("GET", "/health/ready", None, (200,)),
    endpoint("GET", "/protocol", None, (200,)),
    endpoint("GET", "/openapi.json", None, (200,)),
    endpoint("GET", "/docs", None, (200,)),
    endpoint("GET", "/redoc", None, (200,)),
    # The docs pages' files (test_docs_offline.py fetches them): open, like the pages; the
    # folders themselves have no index.
    endpoint("GET", "/docs/assets/", None, (404,)),
    endpoint("GET", "/docs/init/", None, (404,)),
    endpoint("GET", "/", None, (200,)),  # redirects to the dashboard (followed)
    endpoint("GET", "/ui/", None, (200,)),  # its files hold no data; it calls the API
    endpoint("POST", "/jobs", {PRODUCER, ADMIN}, (201,), {"kind": "matrix"}),
    endpoint("GET", "/jobs/{job_id}", {PRODUCER, WORKER, READER, ADMIN}, (200,)),
    endpoint("GET", "/jobs/{job_id}/attempts", {PRODUCER, READER, ADMIN}, (200,)),
    endpoint("GET", "/jobs/{job_id}/parents", {PRODUCER, WORKER, READER, ADMIN}, (200,)),
    endpoint("GET", "/jobs/{job_id}/dependents", {PRODUCER, WORKER, READER, ADMIN}, (200,)),
    endpoint("GET", "/jobs/{job_id}/explain", {PRODUCER, WORKER, READER, ADMIN}, (200,)),
    endpoint(
        "POST",
        "/jobs/{job_id}/children",
        {WORKER, ADMIN},
        (409,),
        {"token": 99, "jobs": [{"key": "c", "kind": "matrix"}]},
    ),
    endpoint("POST", "/lease", {WORKER, ADMIN}, (204,), {"worker_id": "w", "kinds": ["none"]}),
    endpoint("POST", "/leases", {WORKER, ADMIN}, (204,), {"worker_id": "w", "kinds": ["none"]}),
    endpoint("POST", "/jobs/{job_id}/renew", {WORKER, ADMIN}, (409,), {"token": 99}),
    endpoint("POST", "/jobs/{job_id}/complete", {WORKER, ADMIN}, (409,), {"token": 99}),
    endpoint("POST", "/jobs/{job_id}/fail", {WORKER, ADMIN}, (409,), {"token": 99, "error": "e"}),
    endpoint("POST", "/jobs/{job_id}/release", {WORKER, ADMIN}, (409,), {"token": 99}),
    endpoint("POST", "/jobs/batch", {PRODUCER, ADMIN}, (200,), {"jobs": [{"kind": "matrix"}]}),
    endpoint("POST", "/batch/renew", {WORKER, ADMIN}, (200,), {"items": [{"id": 1, "token": 99}]}),
    endpoint(
        "POST", "/batch/complete", {WORKER, ADMIN}, (200,), {"items": [{"id": 1, "token": 99}]}
    ),
    endpoint(
        "POST",
        "/batch/fail",
        {WORKER, ADMIN},
        (200,),
        {"items": [{"id": 1, "token": 99, "error": "e"}]},
    ),
    endpoint("GET", "/jobs", {READER, ADMIN}, (200,)),
    endpoint("GET", "/stats", {READER, METRICS, ADMIN}, (200,)),
    endpoint("GET", "/metrics", {READER, METRICS, ADMIN}, (200,)),
    endpoint("POST", "/jobs/{job_id}/requeue", {ADMIN}, (409,)),
    endpoint("POST", "/jobs/requeue", {ADMIN}, (200,), {"kind": "none"}),
    endpoint("POST", "/jobs/{job_id}/cancel", {PRODUCER, ADMIN}, (200,)),
    endpoint("GET", "/schedules", {READER, ADMIN}, (200,)),
    endpoint("GET", "/schedules/{name}", {READER, ADMIN}, (200, 404)),
    endpoint(
        "PUT", "/schedules/{name}", {ADMIN}, (200, 201), {"cron": "0 0 1 1 *", "kind": "matrix"}
    ),
    endpoint("DELETE", "/schedules/{name}", {ADMIN}, (204, 404)),
    endpoint("GET", "/limits", {READER, ADMIN}, (200,)),
    endpoint("PUT", "/limits/{kind:path}", {ADMIN}, (200,), {"max_running": 5}),
    endpoint("DELETE", "/limits/{kind:path}", {ADMIN}, (204, 404)),
    endpoint("DELETE", "/jobs/{job_id}", {ADMIN}, (204,)),
    endpoint("POST", "/jobs/delete", {ADMIN}, (200,), {"kind": "none"}),
    endpoint("POST", "/jobs/{job_id}/run-now", {ADMIN}, (200,)),
    endpoint("GET", "/queues", {READER, ADMIN}, (200,)),
    endpoint("POST", "/queues/{name}/pause", {ADMIN}, (200,)),
    endpoint("POST", "/queues/{name}/resume", {ADMIN}, (200,)),
    endpoint("GET", "/workers", {READER, ADMIN}, (200,)),
    endpoint(
        "POST",
        "/workers/heartbeat",
        {WORKER, ADMIN},
        (200,),
        {
            "worker_id": "matrix",
            "host": "h",
            "pid": 1,
            "version": "0",
            "concurrency": 1,
            "started_at": "2026-01-01T00:00:00Z",
        },
    ),
]
CREDENTIALS: dict[str, dict[str, str]] = {
    "no-token": {},
    "wrong-token": {"Authorization": f"Bearer {WRONG}"},
    "not-bearer": {"Authorization": f"Basic {TOKENS[ADMIN]}"},
    "empty-bearer": {"Authorization": "Bearer "},
    **{role.value: {"Authorization": f"Bearer {token}"} for role, token in TOKENS.items()},
}


def tokens_file(path: Path) -> Path:
    lines = ["# test tokens", *(f"{r.value}:{hash_token(t).hex()}" for r, t in TOKENS.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Coordinator]:
    """One coordinator with a token per role, shared by the whole matrix."""
    tmp = tmp_path_factory.mktemp("auth")
    tokens = tokens_file(tmp / "tokens")
    c = Coordinator(f"sqlite:///{tmp / 'auth.db'}", tmp, ["--tokens-file", str(tokens)])
    c.start()
    yield c
    c.kill()


@pytest.fixture
async def http(guarded: Coordinator) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(guarded.url, session)


@pytest.fixture
async def job_id(http: Api) -> int:
    admin = {"Authorization": f"Bearer {TOKENS[ADMIN]}"}
    made = await http.post("/jobs", {"kind": "matrix-victim"}, headers=admin)
    assert made.status == 201, made
    job_id: int = made.body["id"]
    return job_id


def expected(e: Endpoint, credential: str) -> str:
    if e.roles is None:
        return "passed"
    if credential not in {r.value for r in Role}:
        return "unauthorized"
    return "passed" if Role(credential) in e.roles else "forbidden"


async def call(http: Api, e: Endpoint, job_id: int, headers: dict[str, str]) -> Answer:
    path = e.path.replace("{kind:path}", "matrix").format(job_id=job_id, name="matrix")
    if e.method in ("GET", "DELETE"):
        return await http.request(e.method, path, headers=headers)
    return await http.request(e.method, path, json=e.body, headers=headers)


@pytest.mark.parametrize("credential", list(CREDENTIALS))
@pytest.mark.parametrize("e", ENDPOINTS, ids=str)
async def test_role_matrix(http: Api, job_id: int, e: Endpoint, credential: str) -> None:
    """Each endpoint answers 401 without a valid token, 403 to a role it is not for, and
    reaches its handler for the roles it is for; open endpoints answer everyone."""
    before = await http.get(f"/jobs/{job_id}", headers=CREDENTIALS[ADMIN.value])
    a = await call(http, e, job_id, CREDENTIALS[credential])
    verdict = expected(e, credential)
    if verdict == "passed":
        assert a.status in e.passed, a
    elif verdict == "unauthorized":
        assert a.status == 401, a
        assert a.body["error"] == "unauthorized", a
    else:
        assert a.status == 403, a
        assert a.body["error"] == "forbidden", a
    if verdict != "passed":
        after = await http.get(f"/jobs/{job_id}", headers=CREDENTIALS[ADMIN.value])
        assert after.body == before.body  # a refused request changed nothing


async def test_401_names_the_scheme_and_never_the_token(guarded: Coordinator) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            guarded.url + "/jobs",
            json={"kind": "k"},
            headers={"Authorization": f"Bearer {WRONG}"},
        ) as r,
    ):
        assert r.status == 401
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
        assert WRONG not in await r.text()
    assert WRONG not in guarded.logs()


async def test_the_guard_runs_before_the_body_is_read(http: Api) -> None:
    """Nobody's bytes are parsed before we know who sent them: no 415 or 422 to strangers
    or to a role the route is not for."""
    garbage = {"data": b"\xff not json", "headers": {"content-type": "text/plain"}}
    for credential, status in (("no-token", 401), ("worker", 403), ("producer", 415)):
        headers = {**garbage["headers"], **CREDENTIALS[credential]}  # type: ignore[dict-item]
        a = await http.request("POST", "/jobs", data=garbage["data"], headers=headers)
        assert a.status == status, (credential, a)
    a = await http.request("POST", "/jobs", data=b"{", headers=CREDENTIALS["no-token"])
    assert a.status == 401, a


def all_routes(routes: Iterable[BaseRoute]) -> Iterator[BaseRoute]:
    for route in routes:
        # Recent FastAPI keeps an included router whole instead of copying its routes.
        inner = getattr(route, "original_router", None)
        if inner is not None:
            yield from all_routes(inner.routes)
        else:
            yield route


def test_the_matrix_covers_every_route() -> None:
    """A route added without a row here fails: decide who may call it (and declare the
    guard on the route; undeclared means admin only)."""
    app = create_app(CoordinatorSettings(database_url="sqlite:///:memory:"))
    listed = {(e.method, e.path.rstrip("/") or "/"): e.roles for e in ENDPOINTS}
    for route in all_routes(app.routes):
        path = getattr(route, "path", "?")
        # A mount (the dashboard's files) answers GET under its path.
        methods = getattr(route, "methods", None) or {"GET"}
        for method in methods - {"HEAD"}:
            assert (method, path) in listed, f"{method} {path} is missing from ENDPOINTS"
            roles = listed[method, path]
            # Only our route class checks tokens: anything else must be meant to be open.
            guard = getattr(route, "guard", None)
            declared = getattr(guard, "roles", None)
            assert declared == roles, f"{method} {path}: guard {declared}, the matrix {roles}"


async def test_tokens_from_the_environment_and_a_token_with_two_roles(
    tmp_path: Path,
) -> None:
    both = "producer-and-worker-0123456789"
    env = {"LEASEHOLD_TOKENS": f"producer={both}, worker={both},admin={TOKENS[ADMIN]}"}
    c = Coordinator(f"sqlite:///{tmp_path / 'env.db'}", tmp_path, env=env).start()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(c.url, session)
            mine = {"Authorization": f"Bearer {both}"}
            made = await api.post("/jobs", {"kind": "k"}, headers=mine)
            assert made.status == 201, made
            lease = await api.post("/lease", {"worker_id": "w"}, headers=mine)
            assert lease.status == 200, lease
            assert (await api.get("/jobs", headers=mine)).status == 403  # not a reader
            admin = {"Authorization": f"Bearer {TOKENS[ADMIN]}"}
            assert (await api.get("/jobs", headers=admin)).status == 200
            assert (await api.get("/jobs")).status == 401
    finally:
        c.kill()
    assert both not in c.logs()


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "leasehold", "serve", "--port", str(free_port()), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
    )
    # Typer draws usage errors in a box, wrapped: keep the words only.
    done.stderr = " ".join(done.stderr.replace("│", " ").split())
    return done


def test_no_tokens_off_loopback_refuses_to_start(tmp_path: Path) -> None:
    done = run_serve("--host", "0.0.0.0", "--database-url", f"sqlite:///{tmp_path / 'x.db'}")
    assert done.returncode == 2, done
    assert "refusing to start" in done.stderr
    assert not (tmp_path / "x.db").exists()  # refused before touching anything


@pytest.mark.parametrize(
    ("setting", "env"),
    [
        ("file", {}),
        ("env", {"LEASEHOLD_TOKENS": "admin=sk_live_SHORT"}),
        ("env", {"LEASEHOLD_TOKENS": "root=sk_live_0123456789abcdefgh"}),
        ("env", {"LEASEHOLD_TOKENS": "sk_live_0123456789abcdefgh"}),
    ],
)
def test_bad_token_configuration_stops_start_without_echoing_it(
    tmp_path: Path, setting: str, env: dict[str, str]
) -> None:
    args: list[str] = ["--database-url", f"sqlite:///{tmp_path / 'x.db'}"]
    if setting == "file":
        # A token pasted in clear where its digest belongs.
        (tmp_path / "tokens").write_text("# ok\nadmin:sk_live_0123456789abcdefgh\n")
        args += ["--tokens-file", str(tmp_path / "tokens")]
    done = run_serve(*args, env=env)
    assert done.returncode == 2, done
    assert "sk_live" not in done.stderr + done.stdout
    assert ("line 2" if setting == "file" else "LEASEHOLD_TOKENS, entry 1") in done.stderr


def test_an_empty_tokens_file_is_an_error_not_open_access(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("# nobody yet\n\n")
    done = run_serve(
        "--tokens-file", str(tmp_path / "tokens"), "--database-url", f"sqlite:///{tmp_path}/x.db"
    )
    assert done.returncode == 2, done
    assert "lists no token" in done.stderr


async def test_the_client_carries_its_token(guarded: Coordinator) -> None:
    """leasehold.Client end to end under authentication: each role does its part, a wrong
    token is Unauthorized and a wrong role Forbidden, neither of them retried."""
    producer = Client(guarded.url, token=TOKENS[PRODUCER])
    worker = Client(guarded.url, token=TOKENS[WORKER])
    stranger = Client(guarded.url, token=WRONG)
    try:
        job = await producer.enqueue("client-auth", {"n": 1})
        lease = await worker.lease("w", kinds=["client-auth"])
        assert lease is not None and lease.job.id == job.id
        await worker.complete(job.id, lease.token, "done")
        assert (await producer.get(job.id)).status is JobStatus.COMPLETED
        with pytest.raises(Forbidden):
            await worker.enqueue("client-auth")
        with pytest.raises(Unauthorized):
            await stranger.get(job.id)
    finally:
        for client in (producer, worker, stranger):
            await client.close()
