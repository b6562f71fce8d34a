"""The process's open-file limit, and what happens when it runs out.

Every connection is a file descriptor. Under the common default soft limit of 1,024, a
thousand idle sockets were enough to refuse every new connection (workers could then not
renew their leases). The request timeout (coordinator/server/connections.py) closes such sockets; raising the
soft limit to the hard one at start gives that timeout room to act, and a failed accept is
logged rather than silent.
"""

from __future__ import annotations

import errno
import os
import resource

import structlog

log = structlog.get_logger("leasehold")


def raise_open_files_limit() -> int:
    """Raise the soft limit on open files to the hard limit; log and return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError) as exc:  # e.g. a hard limit the kernel caps lower
            log.warning("server.open_files_limit_unchanged", soft=soft, hard=hard, error=str(exc))
            return soft
    log.info("server.open_files_limit", soft=hard, was=soft)
    return hard


def open_files(limit: int) -> int | None:
    """How many descriptors this process holds (None where /proc is not available)."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError as exc:
        # Listing takes a descriptor too: failing for want of one is the answer.
        return limit if exc.errno in (errno.EMFILE, errno.ENFILE) else None


class DescriptorWatch:
    """Warns when the process nears its open-file limit.

    When the limit is reached, the kernel refuses every new connection's accept. The event
    loop (uvloop: libuv drops such connections on its own) does not tell the application,
    so the coordinator watches the count instead: a warning when fewer than ``headroom``
    descriptors are left (again every ``repeat_seconds`` while it lasts), and a line when
    it is over.
    """

    def __init__(self, limit: int, headroom: int = 64, repeat_seconds: float = 10.0) -> None:
        self.limit = limit
        self.headroom = min(headroom, limit // 4)
        self.repeat_seconds = repeat_seconds
        self._warned_at: float | None = None

    def check(self, now: float, count: int | None = None) -> None:
        count = open_files(self.limit) if count is None else count
        if count is None:
            return
        if count >= self.limit - self.headroom:
            if self._warned_at is None or now - self._warned_at >= self.repeat_seconds:
                self._warned_at = now
                log.warning(
                    "server.open_files_exhausted",
                    open=count,
                    limit=self.limit,
                    detail="new connections are refused until some close",
                )
        elif self._warned_at is not None:
            self._warned_at = None
            log.info("server.open_files_recovered", open=count, limit=self.limit)
