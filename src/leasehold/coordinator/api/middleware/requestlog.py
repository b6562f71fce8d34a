"""One structured log line per request: method, route, job id, status, duration.

The route is logged as its template (``/jobs/{job_id}/complete``) with the job id beside it
when it is one of ours, never as the raw path: a path is client input, and a log must not
keep whatever a client typed there (a token pasted in the wrong place, a payload).

Successful requests log at debug (a busy coordinator answers thousands a second), client
errors at info, server errors at warning.
"""

from __future__ import annotations

import re
import time
from typing import Any

import structlog
from starlette.types import Scope

log = structlog.get_logger("leasehold")

_ID = re.compile(r"[0-9]{1,18}")


def _where(scope: Scope) -> dict[str, Any]:
    route = scope.get("route")
    fields: dict[str, Any] = {"route": getattr(route, "path", None)}
    job_id = scope.get("path_params", {}).get("job_id")
    if isinstance(job_id, str) and _ID.fullmatch(job_id):
        fields["job_id"] = int(job_id)
    return fields


def log_request(scope: Scope, status: int, started: float) -> None:
    """The request's line; ``started``: ``time.perf_counter()`` when it arrived."""
    level = "debug" if status < 400 else "info" if status < 500 else "warning"
    getattr(log, level)(
        "http.request",
        method=scope["method"],
        **_where(scope),
        status=status,
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
