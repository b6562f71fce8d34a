"""The continuation worker of the chaos run: leases the workflows' fan-in steps
(``wf-join``) over the protocol itself, so that it sees the ``parents`` a lease answer
carries (the Python worker does not hand them to its handler), and sums their results.

    python -m chaoslib.joiner URL WORKER_ID LEASE_SECONDS     (LEASEHOLD_CHAOS_DB set)

On a join's first attempt it records what it read and then kills itself with SIGKILL
before reporting: every run sees a continuation leased again, which must still complete
once, with all its parents' results."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from chaoslib.fenced import connect, fenced_write, record_join, record_lease
from chaoslib.wire import Refused, call, call_until


def summary(parents: list[dict[str, Any]]) -> dict[str, Any]:
    """What a fan-in makes of its parents: their ids, how many completed with a result in
    the answer, and the sum of their values."""
    complete = [p for p in parents if p["status"] == "completed" and not p["result_omitted"]]
    return {
        "ids": [p["id"] for p in parents],
        "completed_with_result": len(complete),
        "sum": sum(p["result"]["value"] for p in complete if isinstance(p["result"], dict)),
    }


def run(url: str, worker_id: str, lease: dict[str, Any]) -> None:
    job, token = lease["job"], lease["token"]
    started, conn = time.time(), connect(Path(os.environ["LEASEHOLD_CHAOS_DB"]))
    seen = summary(lease.get("parents") or [])
    record_join(conn, job["id"], token, json.dumps(seen))
    if job["attempts"] == 1:
        os.kill(os.getpid(), signal.SIGKILL)  # dies mid-join, for real
    expiry = started + lease["lease_seconds"]
    record_lease(conn, job["id"], token, worker_id, started, expiry)
    fenced_write(conn, job["id"], token, worker_id, f"joined {len(seen['ids'])}")
    result = {"token": token, "parents": len(seen["ids"]), "sum": seen["sum"]}
    # A stale or lost lease is refused: the job runs again under a newer token.
    with contextlib.suppress(Refused, OSError):
        call_until(
            url, "POST", f"/jobs/{job['id']}/complete", {"token": token, "result": result}, 30
        )
    conn.close()


def main() -> None:
    url, worker_id, lease_seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    ask = {
        "worker_id": worker_id,
        "kinds": ["wf-join"],
        "lease_seconds": lease_seconds,
        "wait_seconds": 1,
        "max_jobs": 1,
    }
    while True:
        try:
            answer = call(url, "POST", "/leases", ask)
        except (OSError, Refused):
            time.sleep(0.1)
            continue
        for lease in (answer or {}).get("leases", []):
            run(url, worker_id, lease)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    main()
