"""The demo's parts that need no processes: its workload and how a stop cuts a step short."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from leasehold.cli.demo.run import Stopped, until_stopped
from leasehold.cli.demo.workload import EMAIL_MAX_ATTEMPTS, demo_jobs


def test_the_workload_is_the_same_for_the_same_count() -> None:
    first, _ = demo_jobs(2000)
    again, _ = demo_jobs(2000)
    assert [(j.kind, j.payload) for j in first] == [(j.kind, j.payload) for j in again]
    kinds = Counter(j.kind for j in first)
    assert kinds["resize-image"] > 0.7 * len(first)  # mostly quick jobs
    assert 0 < kinds["build-report"] < 0.05 * len(first)  # a few slow ones


def test_the_expected_figures_follow_from_the_payloads() -> None:
    jobs, expected = demo_jobs(3000)
    emails = [j.payload["fail_times"] for j in jobs if j.kind == "send-email"]
    declined = sum(j.payload["card"] == "declined" for j in jobs if j.kind == "charge-card")
    never = sum(n >= EMAIL_MAX_ATTEMPTS for n in emails)
    assert expected.dead == never + declined > 0
    assert expected.retries == sum(min(n, EMAIL_MAX_ATTEMPTS - 1) for n in emails) > 0


async def test_until_stopped_returns_what_finished_first() -> None:
    assert await until_stopped(asyncio.Event(), asyncio.sleep(0, "done")) == "done"


async def test_until_stopped_cancels_the_step_and_lets_it_unwind() -> None:
    stop, unwound = asyncio.Event(), asyncio.Event()

    async def step() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            unwound.set()

    asyncio.get_running_loop().call_later(0.01, stop.set)
    with pytest.raises(Stopped):
        await until_stopped(stop, step())
    assert unwound.is_set()


async def test_until_stopped_passes_an_error_on() -> None:
    async def broken() -> None:
        raise ValueError("no")

    with pytest.raises(ValueError, match="no"):
        await until_stopped(asyncio.Event(), broken())
