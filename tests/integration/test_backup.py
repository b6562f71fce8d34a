"""Backup under load and restore, with real processes: ``leasehold backup`` of a SQLite
database its coordinator is writing holds every job acknowledged before it began (the WAL
included), and after ``leasehold restore`` the coordinator hands out no token it handed
out before, not even those it gave after the backup."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from typer.testing import CliRunner, Result

from leasehold.cli import app
from tests.http import Api
from tests.process import Coordinator

pytestmark = pytest.mark.slow(12)  # started early: see tests/conftest.py

CLIENTS = 8
LEASES = 150  # before the backup, and again after it
LEASE_SECONDS = 0.5  # jobs running at the backup are back soon after the restore


@dataclass
class Load:
    """What the load saw acknowledged: jobs made, and every token a lease handed out."""

    acked: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    leased: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def until(self, tokens: int) -> None:
        """Until the load has been handed ``tokens`` tokens in all."""
        async with self.leased:
            await self.leased.wait_for(lambda: len(self.tokens) >= tokens)

    async def client(self, api: Api, n: int) -> None:
        """Enqueue, lease, and complete every other lease: some jobs stay running."""
        while not self.stop.is_set():
            made = await api.post("/jobs", {"kind": "k", "payload": n})
            assert made.status == 201, made
            self.acked.append(made.body["id"])
            leased = await api.post(
                "/lease", {"worker_id": f"w{n}", "lease_seconds": LEASE_SECONDS}
            )
            assert leased.status in (200, 204), leased
            if leased.status == 200:
                token = leased.body["token"]
                self.tokens.append(token)
                async with self.leased:
                    self.leased.notify_all()
                if token % 2:
                    job_id = leased.body["job"]["id"]
                    done = await api.post(f"/jobs/{job_id}/complete", {"token": token})
                    assert done.status == 200, done


async def cli(*args: str) -> Result:
    """A ``leasehold`` command, on a thread: the event loop goes on with the load."""
    return await asyncio.to_thread(CliRunner().invoke, app, list(args))


def ids_in(path: Path) -> set[int]:
    conn = sqlite3.connect(path)
    try:
        return {i for (i,) in conn.execute("SELECT id FROM jobs")}
    finally:
        conn.close()


async def test_a_backup_under_load_restores_without_handing_out_a_token_twice(
    tmp_path: Path,
) -> None:
    db = tmp_path / "leasehold.db"
    url = f"sqlite:///{db}"
    dest = tmp_path / "backup.db"
    # No checkpoint by the reaper's pace alone: the WAL holds the newest commits, as under load.
    coordinator = Coordinator(url, tmp_path, ["--reap-interval-seconds", "0.1"]).start()
    load = Load()
    try:
        async with aiohttp.ClientSession() as session:
            api = Api(coordinator.url, session)
            clients = [asyncio.create_task(load.client(api, n)) for n in range(CLIENTS)]
            await load.until(LEASES)
            acked_before = set(load.acked)
            backed_up = await cli("backup", str(dest), "--database-url", url)
            await load.until(len(load.tokens) + LEASES)  # it keeps running after
            load.stop.set()
            await asyncio.gather(*clients)
        assert coordinator.stop() == 0
    finally:
        coordinator.kill()
    assert backed_up.exit_code == 0, backed_up.output
    assert backed_up.stdout.startswith(f"backed up {url} to {dest}")
    assert acked_before <= ids_in(dest)  # every acknowledged job, those in the WAL too
    assert len(set(load.tokens)) == len(load.tokens)

    refused = await cli("restore", str(dest), "--database-url", url)
    assert refused.exit_code == 2 and "--force" in refused.stderr  # it would replace a database
    restored = await cli("restore", str(dest), "--database-url", url, "--force")
    assert restored.exit_code == 0, restored.output
    assert ids_in(db) == ids_in(dest)

    unfinished = not_finished_in(db)
    again = Coordinator(url, tmp_path, ["--reap-interval-seconds", "0.1"]).start()
    try:
        async with aiohttp.ClientSession() as session:
            after = await lease_each(Api(again.url, session), unfinished)
    finally:
        again.kill()
    # Jobs queued or running at the backup run again, each under a token never seen before.
    assert unfinished >= CLIENTS
    assert min(after) > max(load.tokens)
    assert len(set(after)) == len(after) == unfinished


def not_finished_in(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        (n,) = conn.execute(
            "SELECT count(*) FROM jobs WHERE status IN ('queued', 'running')"
        ).fetchone()
        return int(n)
    finally:
        conn.close()


async def lease_each(api: Api, count: int) -> list[int]:
    """Lease ``count`` jobs (running ones once the reaper has taken back their lease,
    which ran out during the restore), keeping each: their tokens."""
    tokens: list[int] = []
    deadline = asyncio.get_running_loop().time() + 30
    while len(tokens) < count:
        assert asyncio.get_running_loop().time() < deadline, (len(tokens), count)
        leased = await api.post(
            "/leases",
            {"worker_id": "after", "lease_seconds": 60, "max_jobs": 100, "wait_seconds": 1},
        )
        assert leased.status in (200, 204), leased
        if leased.status == 200:
            tokens += [item["token"] for item in leased.body["leases"]]
    return tokens
