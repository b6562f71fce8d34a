"""Settings objects, built once by the CLI (or a test) and passed down."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from leasehold.coordinator.auth_tokens import HashedToken

SqliteSynchronous = Literal["FULL", "NORMAL"]  # what `serve` offers (tests also use OFF)

# The HTTP protocol's per-connection limits (DESIGN.md §16 says why these values).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 100
REQUEST_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_TIMEOUT_SECONDS = 5

# Bounds that keep one request from holding the coordinator hostage; see DESIGN.md.
MAX_LEASE_SECONDS = 86_400.0
MIN_LEASE_SECONDS = 1.0
MAX_WAIT_SECONDS = 30.0
MAX_BODY_BYTES = 1024 * 1024
MAX_SCHEDULE_GRACE_SECONDS = 600.0  # bounds how many runs one pass enqueues per schedule
# A job's payload (and a completion's result), as compact JSON. Kept well under the body cap:
# each lease hands the payload out again, and every row is read by listing and leasing.
MAX_PAYLOAD_BYTES = 256 * 1024
# Jobs' JSON in one answer: a page of GET /jobs or a batch lease stops before it.
MAX_ANSWER_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    host: str = "127.0.0.1"
    port: int = 8080
    database_url: str = "sqlite:///leasehold.db"
    default_lease_seconds: float = 30.0
    # Shorter leases are refused (422): a lease shorter than a round trip cannot be renewed.
    min_lease_seconds: float = MIN_LEASE_SECONDS
    retry_base_seconds: float = 1.0
    retry_max_seconds: float = 3600.0
    reap_interval_seconds: float = 1.0
    schedule_interval_seconds: float = 1.0  # how often due schedules are fired
    # A fire time older than this when a scheduler first sees it was missed (every
    # coordinator was down): handled by the schedule's catch_up instead of run as usual.
    schedule_grace_seconds: float = 10.0
    max_body_bytes: int = MAX_BODY_BYTES
    sqlite_synchronous: str = "FULL"
    log_format: str = "auto"  # auto | json | console
    log_level: str = "info"
    # Bearer tokens (hashed) and their roles; none means open access (loopback only, unless
    # allow_open_access says otherwise).
    tokens: tuple[HashedToken, ...] = ()
    allow_open_access: bool = False
    max_payload_bytes: int = MAX_PAYLOAD_BYTES
    # Per connection, enforced by the HTTP protocol (api/connections.py) before any route runs.
    max_header_bytes: int = MAX_HEADER_BYTES
    max_headers: int = MAX_HEADERS
    request_timeout_seconds: float = REQUEST_TIMEOUT_SECONDS
    keep_alive_timeout_seconds: int = KEEP_ALIVE_TIMEOUT_SECONDS
    # Long polls waiting at once; past it a poll answers after one look (no jobs: 204).
    max_waiting_polls: int = 4096
    # An answer carrying jobs (a page of GET /jobs, a batch lease) stops before this.
    max_answer_bytes: int = MAX_ANSWER_BYTES
    # Distinct kinds and queues accepted (names already known always are): 422 beyond.
    max_kinds: int = 1000
    max_queues: int = 100
    # Retention of finished jobs, per status, in seconds after they finished (0: forever);
    # the defaults and their reasons are in core/retention.py and DESIGN.md §20.
    retain_completed_seconds: float = 86_400.0
    retain_cancelled_seconds: float = 86_400.0
    retain_dead_seconds: float = 7 * 86_400.0
    prune_interval_seconds: float = 10.0
