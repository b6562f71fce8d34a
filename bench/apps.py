"""The no-op jobs the benchmarks run, for leasehold's worker and for huey's consumer.

Both do exactly the same when a job starts: record the time, as a fixed-width line in a
probe file (throughput) and/or a UDP datagram to the benchmark (latency). Nothing else.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any

from leasehold.worker import LeasedJob, Registry

PROBE_ENV = "LEASEHOLD_BENCH_PROBE"  # path of the probe file
UDP_ENV = "LEASEHOLD_BENCH_UDP"  # port on 127.0.0.1 for a datagram per start
PROBE_RECORD = 18  # bytes per probe line: "%17.6f\n"

_probe_fd: int | None = None
_udp: tuple[socket.socket, tuple[str, int]] | None = None


def record_start(tag: Any) -> None:
    """Called first thing by every benchmark job, in either system."""
    global _probe_fd, _udp
    now = time.time()
    probe = os.environ.get(PROBE_ENV)
    if probe:
        if _probe_fd is None:
            _probe_fd = os.open(probe, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(_probe_fd, b"%17.6f\n" % now)  # one short O_APPEND write: atomic
    port = os.environ.get(UDP_ENV)
    if port:
        if _udp is None:
            _udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), ("127.0.0.1", int(port))
        sock, address = _udp
        sock.sendto(f"{tag} {now:.6f}".encode(), address)


# -- leasehold ------------------------------------------------------------------------------

registry = Registry()


@registry.handler("bench")
async def noop(job: LeasedJob) -> None:
    record_start(job.payload)


# -- workflows (bench/workflows.py) ---------------------------------------------------------

STARTS_ENV = "LEASEHOLD_BENCH_STARTS"  # path of a file of "job_id start_time" lines
_starts_fd: int | None = None


def record_job_start(job_id: Any) -> None:
    """The job's id and the time it started, as one short O_APPEND write (atomic)."""
    global _starts_fd
    now = time.time()
    if _starts_fd is None:
        _starts_fd = os.open(os.environ[STARTS_ENV], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(_starts_fd, f"{job_id} {now:.6f}\n".encode())


@registry.handler("bench-wf")
async def step(job: LeasedJob) -> None:
    record_job_start(job.id)
