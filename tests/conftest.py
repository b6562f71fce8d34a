"""Fixtures shared by every test: backends, real coordinators, raw HTTP."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AsyncExitStack
from datetime import UTC, datetime
from pathlib import Path

import aiohttp
import pytest
import structlog

from leasehold.coordinator.clock import FakeClock
from leasehold.coordinator.store.open import open_store
from tests.http import Api
from tests.inproc import InProcessCoordinator, in_process_store, quick_settings, serve_app
from tests.pgserver import PgServer, find_pg_bin, start_pg_server
from tests.process import Coordinator

# Modules that start no process: the rules, the stores, and the app served in the test
# process. With the tests that use the in-process coordinator, they are `make check`.
IN_PROCESS_DIRS = ("tests/unit/", "tests/contract/")
IN_PROCESS_MODULES = (
    "test_state_machine.py",
    "test_reaper_race.py",
    "test_pipeline.py",
    "test_testing_mode.py",
)
IN_PROCESS_FIXTURES = {"inproc", "start_inproc"}

BACKENDS = ["sqlite"]
if importlib.util.find_spec("leasehold.coordinator.store.postgres.driver") is not None:
    BACKENDS.append("postgres")


def pytest_configure(config: pytest.Config) -> None:
    """structlog's default renderer, with plain tracebacks: its default (rich, with every
    frame's locals) spends seconds of CPU on one logged exception, and tests that provoke a
    500 on purpose log one."""
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.StackInfoRenderer(),
            structlog.dev.set_exc_info,
            structlog.processors.TimeStamper(fmt="%Y-%m-%d %H:%M:%S", utc=False),
            structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback),
        ]
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark `fast` every test that starts no process of its own."""
    root = config.rootpath
    for item in items:
        path = item.path.relative_to(root).as_posix()
        if (
            path.startswith(IN_PROCESS_DIRS)
            or path.endswith(IN_PROCESS_MODULES)
            or IN_PROCESS_FIXTURES & set(getattr(item, "fixturenames", ()))
        ):
            item.add_marker(pytest.mark.fast)
    # The longest tests first (`slow(seconds)`, ten by default): run in parallel (`make
    # test`), they then overlap the many short ones instead of finishing alone at the end.
    # `make test` keeps each module in one process (--dist loadscope) and its modules in
    # this order (--no-loadscope-reorder; by default xdist would start the modules with the
    # most tests first, and a one-test module of a minute, such as the chaos run, last).
    items.sort(key=lambda item: -_expected_seconds(item))


def _expected_seconds(item: pytest.Item) -> float:
    slow = item.get_closest_marker("slow")
    if slow is None:
        return 0.0
    return float(slow.args[0]) if slow.args else 10.0


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    bin_dir = find_pg_bin()
    if bin_dir is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing in CI (scripts/ensure-postgres.sh)")
        pytest.skip("!!! PostgreSQL server binaries not found: PostgreSQL tests SKIPPED !!!")
    # Not under pytest's base temp: every pytest session that starts on this machine (other
    # checkouts included) takes the o+x bit off /tmp/pytest-of-<user> again, and the
    # unprivileged server user then cannot reach its files while it starts.
    server = start_pg_server(Path(tempfile.gettempdir()), bin_dir=bin_dir)
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_template(pg_server: PgServer) -> str:
    """A PostgreSQL database migrated once, which each test's database copies (as
    procrastinate's tests do): creating a database and migrating it took about 0.7 s of a
    test's setup, and the PostgreSQL tests are a sixth of the suite."""
    name = "leasehold_migrated"
    url = pg_server.create_database(name)

    async def migrate() -> None:
        store = open_store(url)
        await store.open()
        await store.close()

    with ThreadPoolExecutor(max_workers=1) as thread:  # wherever an event loop runs
        thread.submit(asyncio.run, migrate()).result()
    return name


def _fresh_database(server: PgServer, template: str | None) -> Iterator[str]:
    # Dropped afterwards, so that a full run leaves a small server to delete.
    name = f"t_{uuid.uuid4().hex[:16]}"
    yield server.create_database(name, template)
    server.drop_database(name)


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database on each backend with no job in it: on SQLite a new file, on
    PostgreSQL a copy of ``pg_template`` (a store opened on it finds it migrated)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'leasehold.db'}"
    else:
        template = request.getfixturevalue("pg_template")
        yield from _fresh_database(request.getfixturevalue("pg_server"), template)


@pytest.fixture
def postgres_url(pg_server: PgServer, pg_template: str) -> Iterator[str]:
    """A fresh PostgreSQL database (a copy of ``pg_template``), for what only PostgreSQL
    does (many coordinators)."""
    yield from _fresh_database(pg_server, pg_template)


@pytest.fixture(params=BACKENDS)
def unmigrated_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database on each backend that no store has opened yet: no schema at all."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'leasehold.db'}"
    else:
        yield from _fresh_database(request.getfixturevalue("pg_server"), None)


@pytest.fixture
def empty_postgres_url(pg_server: PgServer) -> Iterator[str]:
    """A PostgreSQL database with nothing in it, not even the schema: for what happens
    when stores first migrate it."""
    yield from _fresh_database(pg_server, None)


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'leasehold.db'}"


CoordinatorFactory = Callable[..., Coordinator]


@pytest.fixture
def start_coordinator(database_url: str, tmp_path: Path) -> Iterator[CoordinatorFactory]:
    """Start real coordinator processes on ``database_url``; all are stopped afterwards."""
    started: list[Coordinator] = []

    def start(*args: str, url: str | None = None) -> Coordinator:
        c = Coordinator(url or database_url, tmp_path, args).start()
        started.append(c)
        return c

    yield start
    for c in started:
        c.kill()


@pytest.fixture
def coordinator(start_coordinator: CoordinatorFactory) -> Coordinator:
    """One coordinator with quick retry and reaper timings."""
    return start_coordinator(
        "--retry-base-seconds", "0.05", "--retry-max-seconds", "1", "--reap-interval-seconds", "0.1"
    )


@pytest.fixture
async def api(coordinator: Coordinator) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession() as session:
        yield Api(coordinator.url, session)


InProcessFactory = Callable[..., Awaitable[InProcessCoordinator]]


@pytest.fixture
async def start_inproc(database_url: str) -> AsyncIterator[InProcessFactory]:
    """Serve coordinator apps in the test process (tests/inproc.py) on each backend.

    ``await start_inproc(max_payload_bytes=...)`` changes settings; all share one database
    and, on SQLite, one FakeClock. Every app is stopped afterwards.
    """
    fake = FakeClock(datetime.now(UTC))
    async with AsyncExitStack() as stack:

        async def start(**settings: object) -> InProcessCoordinator:
            store, clock = in_process_store(database_url, fake)
            return await stack.enter_async_context(
                serve_app(store, quick_settings(**settings), clock)
            )

        yield start


@pytest.fixture
async def inproc(start_inproc: InProcessFactory) -> InProcessCoordinator:
    """One in-process coordinator with the `coordinator` fixture's quick timings."""
    return await start_inproc()


@pytest.fixture
async def inproc_api(inproc: InProcessCoordinator) -> AsyncIterator[Api]:
    """The `api` fixture's Api, talking to the in-process coordinator."""
    async with aiohttp.ClientSession() as session:
        yield Api(inproc.url, session)
