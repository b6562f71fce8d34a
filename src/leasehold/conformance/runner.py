"""Run the vectors against a coordinator and print a pass/fail table."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import TextIO

import aiohttp

from leasehold.conformance.context import Ctx, new_prefix
from leasehold.conformance.vectors import VECTORS
from leasehold.conformance.wire import Mismatch, Wire


@dataclass(frozen=True)
class Result:
    name: str
    passed: bool
    detail: str
    seconds: float


async def run_vectors(url: str, token: str | None = None) -> list[Result]:
    """Every vector, in order; one that fails does not stop the others. Then what they
    left is swept: their unfinished jobs end cancelled, their limits are lifted."""
    results: list[Result] = []
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        ctx = Ctx(Wire(url, token, session), new_prefix())
        for name, vector in VECTORS:
            started = time.perf_counter()
            try:
                await vector(ctx)
            except Mismatch as exc:
                results.append(Result(name, False, str(exc), time.perf_counter() - started))
            except (aiohttp.ClientError, TimeoutError, KeyError, TypeError) as exc:
                detail = f"{type(exc).__name__}: {exc}"
                results.append(Result(name, False, detail, time.perf_counter() - started))
            else:
                results.append(Result(name, True, "", time.perf_counter() - started))
        await ctx.sweep()
    return results


def print_table(results: list[Result], out: TextIO = sys.stdout) -> None:
    width = max(len(r.name) for r in results)
    for r in results:
        mark = "PASS" if r.passed else "FAIL"
        line = f"{mark}  {r.name:<{width}}  {r.seconds * 1000:7.1f} ms"
        print(f"{line}  {r.detail}" if r.detail else line, file=out)
    failed = sum(not r.passed for r in results)
    print(f"{len(results) - failed} passed, {failed} failed", file=out)
