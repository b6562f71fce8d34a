"""Large bodies are parsed off the event loop, small ones on it (issue 26, item 9: with two
connections sending 976 KiB bodies, ``/health`` waited 2.1 s, since each was parsed on the
loop). The loop is watched by a task that counts its turns while a body is decoded."""

from __future__ import annotations

import asyncio

import orjson

from leasehold.coordinator.api.json_body import OFF_LOOP_BYTES, decoded
from leasehold.coordinator.api.schemas.leases import BatchCompleteRequest


def body(results: int) -> bytes:
    """A batch completion whose one result holds ``results`` empty lists."""
    return b'{"items":[{"id":1,"token":1,"result":[' + b"[]," * results + b"[]]}]}"


async def turns_while_decoding(raw: bytes) -> int:
    """How many times the loop ran another task while ``raw`` was decoded."""
    turns = 0
    done = False

    async def count() -> None:
        nonlocal turns
        while not done:
            turns += 1
            await asyncio.sleep(0)

    counter = asyncio.create_task(count())
    await asyncio.sleep(0)  # the counter has started
    started = turns
    got = await decoded(raw, BatchCompleteRequest)
    done = True
    await counter
    assert isinstance(got, BatchCompleteRequest)
    assert got.items[0].result == orjson.loads(raw)["items"][0]["result"]
    return turns - started


async def test_a_large_body_is_parsed_while_the_loop_runs() -> None:
    """A 350 KiB body: the loop goes on (where /health and renewals are answered)."""
    raw = body(120_000)
    assert len(raw) > OFF_LOOP_BYTES
    assert await turns_while_decoding(raw) >= 2


async def test_a_small_body_is_parsed_on_the_loop() -> None:
    """Under the threshold, a body is parsed at once: a thread's hand-off would cost more."""
    raw = body(1000)
    assert len(raw) <= OFF_LOOP_BYTES
    assert await turns_while_decoding(raw) == 0
