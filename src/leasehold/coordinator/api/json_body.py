"""A route's JSON body: read from the connection, then parsed and validated into its model,
on the event loop when it is small and on a thread of its own when it is not.

What parsing costs grows with the number of values a body holds, which its byte cap bounds
only loosely: 1 MiB of ``[[],[],...]`` is 350,000 lists. Every check made while parsing is
done in C (orjson, byte scans, ``rules.userjson.json_problem``), and a body longer than
``OFF_LOOP_BYTES`` is parsed on one thread kept for that, one body at a time, so the event
loop goes on answering ``/health``, leases and renewals while a large body is parsed (a
worker's batch renewal of 1,000 leases is at most 80 KiB: it is parsed on the loop, never
queued behind another client's payloads). While that thread parses, the garbage collector
is off: a parsed body holds no reference cycle, and the collections its hundreds of
thousands of new containers trigger tripled the cost of parsing it.
"""

from __future__ import annotations

import asyncio
import gc
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import orjson
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.requests import ClientDisconnect

from leasehold.coordinator.rules.userjson import INT_MESSAGE, has_long_integer

# Bodies longer than this are parsed off the event loop. Below it, the thread's hand-off
# (tens of microseconds) would cost more than it spares; above it, every body carries
# payloads or results (the bodies of routes without one are far shorter, see above).
OFF_LOOP_BYTES: Final = 128 * 1024

BODY: Final = ("body",)

# A body's model, or the errors that refuse it (located under ``body``).
Decoded = BaseModel | list[dict[str, Any]]

_parser: ThreadPoolExecutor | None = None


def missing(loc: tuple[str, ...]) -> dict[str, Any]:
    """The error of a required input that is absent."""
    return {"type": "missing", "loc": loc, "msg": "Field required", "input": None}


async def read_body(request: Request) -> bytes:
    """The request's body, read from the connection; ``ClientDisconnect`` if the client
    left first (answered as ``errors.CLIENT_GONE``). Starlette's ``Request.body`` reads
    through an async generator, and cost a lone POST /jobs about 8 us more; the endpoint
    is given the body parsed and never reads it again."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] != "http.request":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def decoded(raw: bytes, model: type[BaseModel]) -> Decoded:
    """``decode``, on the parsing thread when ``raw`` is over ``OFF_LOOP_BYTES``."""
    if len(raw) <= OFF_LOOP_BYTES:
        return decode(raw, model)
    return await asyncio.get_running_loop().run_in_executor(
        _parsing_thread(), _off_loop, raw, model
    )


def decode(raw: bytes, model: type[BaseModel]) -> Decoded:
    """``raw`` as an instance of ``model``, or its validation errors; a body that is not
    JSON, or holds an integer beyond 64 bits, raises its 422 at once (before the request's
    other inputs are looked at)."""
    if not raw:
        return [missing(BODY)]
    if has_long_integer(raw):
        raise RequestValidationError(
            [{"type": "int_out_of_range", "loc": BODY, "msg": INT_MESSAGE}]
        )
    try:
        parsed = orjson.loads(raw)  # NaN and Infinity are not JSON to orjson
    except orjson.JSONDecodeError as e:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": (*BODY, e.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": e.msg},
                }
            ]
        ) from e
    try:  # as FastAPI validates a body: the same errors for a non-object
        return model.model_validate(parsed, from_attributes=True)
    except ValidationError as exc:
        return [{**e, "loc": (*BODY, *e["loc"])} for e in exc.errors(include_url=False)]


def _off_loop(raw: bytes, model: type[BaseModel]) -> Decoded:
    # Only this thread turns the collector off and on, so it is on again after each body
    # unless something else had turned it off.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return decode(raw, model)
    finally:
        if collecting:
            gc.enable()


def _parsing_thread() -> ThreadPoolExecutor:
    # Made on first use: a process that never parses a large body starts no thread.
    global _parser
    if _parser is None:
        _parser = ThreadPoolExecutor(max_workers=1, thread_name_prefix="leasehold-parse")
    return _parser
