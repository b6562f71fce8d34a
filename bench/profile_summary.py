"""Where the time goes, from the profiles ``bench/throughput.py --profile DIR`` writes.

    .venv/bin/python -m bench.profile_summary DIR/coordinator.txt DIR/w0.txt [--top 20]

Each file holds py-spy's collapsed stacks (one stack and its sample count a line). Prints
the share of samples by category (the first category a stack matches, in the order below)
and the functions with the most samples of their own.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

# (category, substrings of a frame that put a stack in it); the first match wins.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "SQLite writer thread (statements, COMMIT)",
        ("SqliteDriver._run", "SqliteDriver._commit_inline"),
    ),
    ("logging", ("_proxy_to_logger", "LineBatcher", "PrintLogger", "BytesLogger")),
    ("request validation (pydantic)", ("solve_dependencies", "request_body_to_args")),
    ("answer serialisation", ("reply_json", "job_wire", "item_result_wire", "reply (")),
    ("service and rules", ("JobService.", "decide_", "Metrics.")),
    ("HTTP server: middleware, routing", ("run_asgi", "HttpToolsProtocol")),
    ("HTTP client (aiohttp)", ("Transport.send", "ClientSession", "client_proto")),
    ("parsing answers", ("parse_job", "parse_results", "Leased.of", "Client.lease")),
    ("per-job asyncio tasks and waits", ("execute (", "unless_set", "tasks.py", "timeouts.py")),
    ("worker batching (reporter, renewer)", ("_Batcher", "Reporter", "Renewer", "LeaseKeeper")),
    ("worker job bookkeeping", ("JobRunner", "Worker._start", "contextvars", "Capacity")),
    ("the job's handler", ("record_start",)),
)


def frame_name(frame: str) -> str:
    """``function (path/file.py:line)`` as ``function (file.py)``."""
    function, _, where = frame.partition(" (")
    return f"{function} ({where.split(':')[0].rsplit('/', 1)[-1]})" if where else frame


def summarise(path: Path, top: int) -> None:
    by_category: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        samples = int(count)
        total += samples
        category = next(
            (name for name, needles in CATEGORIES if any(n in stack for n in needles)),
            "event loop, I/O and the rest",
        )
        by_category[category] += samples
        own[frame_name(stack.rsplit(";", 1)[-1])] += samples
    print(f"== {path} ({total} samples)")
    for name, samples in by_category.most_common():
        print(f"  {samples / total * 100:5.1f}%  {name}")
    print("  -- own samples")
    for name, samples in own.most_common(top):
        print(f"  {samples / total * 100:5.1f}%  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profiles", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=15)
    args = parser.parse_args()
    for path in args.profiles:
        summarise(path, args.top)


if __name__ == "__main__":
    main()
