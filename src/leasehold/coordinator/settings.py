"""Settings objects, built once by the CLI (or a test) and passed down.

Each setting is declared once, here: its default, and, when ``leasehold serve`` takes it,
its bounds and help (``setting``). The command's options are made from these declarations
(``cli/options.py``): the flag is ``--<name>`` and the environment fallback
``LEASEHOLD_<NAME>``, both from the field's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, TypeVar

from leasehold.coordinator.auth_tokens import HashedToken
from leasehold.model import (
    MAX_ANSWER_BYTES,
    MAX_GROUPS,
    MAX_KINDS,
    MAX_LEASE_SECONDS,
    MAX_QUEUES,
    MAX_WAITING_POLLS,
    MAX_WAITING_RESULTS,
    MAX_WORKERS,
)

SqliteSynchronous = Literal["FULL", "NORMAL"]  # what `serve` offers (tests also use OFF)

# The HTTP protocol's limits (DESIGN.md §16 says why these values).
MAX_HEADER_BYTES = 64 * 1024
MAX_HEADERS = 100
REQUEST_TIMEOUT_SECONDS = 10.0
KEEP_ALIVE_TIMEOUT_SECONDS = 5
SEND_TIMEOUT_SECONDS = 10.0
MAX_CONNECTIONS_PER_PEER = 1024
MAX_HEADER_BYTES_TOTAL = 16 * 1024 * 1024

# Bounds that keep one request from holding the coordinator hostage; see DESIGN.md. Those
# the client side knows as well (the longest lease and long poll) are in the model.
MIN_LEASE_SECONDS = 1.0
MAX_BODY_BYTES = 1024 * 1024
MAX_SCHEDULE_GRACE_SECONDS = 600.0  # bounds how many runs one pass enqueues per schedule
# A job's payload (and a completion's result), as compact JSON. Kept well under the body cap:
# each lease hands the payload out again, and every row is read by listing and leasing.
MAX_PAYLOAD_BYTES = 256 * 1024


T = TypeVar("T")

OPTION: Final = "leasehold.option"
"""The key of a field's ``OptionSpec`` in its metadata."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """How a setting is given on the command line, besides its default and its name.

    A bool setting is a switch, given by its flag alone (``--allow-open-access``). Bounds
    are shown as written (``86400`` or ``600.0``), so write them as ``--help`` should say.
    """

    help: str | None = None
    min: float | None = None
    max: float | None = None
    # The values the command line accepts (any case), as a Literal type; when given, the
    # option takes these rather than whatever the field's type allows.
    choices: object | None = None


def setting(
    default: T,
    *,
    help: str | None = None,
    min: float | None = None,
    max: float | None = None,
    choices: object | None = None,
) -> T:
    """A field that the command line offers as an option, with this default."""
    spec = OptionSpec(help=help, min=min, max=max, choices=choices)
    return field(default=default, metadata={OPTION: spec})


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """What a running coordinator is configured with (``create_app``, ``serve_app``)."""

    host: str = setting("127.0.0.1", help="Address to bind.")
    port: int = setting(8080, min=0, max=65535)
    database_url: str = setting(
        "sqlite:///leasehold.db",
        help="sqlite:///PATH (embedded, the default) or postgresql://USER:PASS@HOST:PORT/DB.",
    )
    # The lease cap is a float; --help has always shown it as 86400.
    default_lease_seconds: float = setting(30.0, min=0.001, max=int(MAX_LEASE_SECONDS))
    # Shorter leases are refused (422): a lease shorter than a round trip cannot be renewed.
    min_lease_seconds: float = setting(
        MIN_LEASE_SECONDS,
        min=0.001,
        max=int(MAX_LEASE_SECONDS),
        help="Shortest lease a worker may ask for (shorter: 422).",
    )
    retry_base_seconds: float = setting(1.0, min=0, help="First retry delay.")
    retry_max_seconds: float = setting(3600.0, min=0, help="Cap on any retry delay.")
    reap_interval_seconds: float = setting(1.0, min=0.001, help="Expired-lease sweep.")
    # How often due schedules are fired.
    schedule_interval_seconds: float = setting(1.0, min=0.001, help="Due-schedule check.")
    # A fire time older than this when a scheduler first sees it was missed (every
    # coordinator was down): handled by the schedule's catch_up instead of run as usual.
    schedule_grace_seconds: float = setting(
        10.0,
        min=0,
        max=MAX_SCHEDULE_GRACE_SECONDS,
        help="A fire time older than this when first seen was missed (see catch_up).",
    )
    max_body_bytes: int = MAX_BODY_BYTES  # no option: the per-route caps follow the payload's
    sqlite_synchronous: str = setting(
        "FULL",
        choices=SqliteSynchronous,
        help="FULL (no acknowledged write lost on power loss) or NORMAL (faster; may lose"
        " the last commits on power loss, never on a process crash).",
    )
    # Bearer tokens (hashed) and their roles; none means open access (loopback only, unless
    # allow_open_access says otherwise). Given at start by StartOptions.tokens_file and
    # LEASEHOLD_TOKENS.
    tokens: tuple[HashedToken, ...] = ()
    allow_open_access: bool = setting(
        False, help="Serve without tokens on a non-loopback address (with a loud warning)."
    )
    # Behind a reverse proxy (DESIGN.md §16): parsed and checked by
    # coordinator/api/middleware/forwarded.py; either one set without tokens is refused.
    public_origin: str = setting(
        "",
        help="Origins browsers reach the coordinator at through a reverse proxy,"
        " http[s]://host[:port] separated by commas: the dashboard's changes sent from"
        " them pass the same-origin check whatever Host the proxy passes on.",
    )
    trusted_proxies: str = setting(
        "",
        help="Addresses or networks of reverse proxies, separated by commas (e.g."
        " 127.0.0.1,10.0.0.0/8): a request from one has its client address read from"
        " X-Forwarded-For (or Forwarded) for the logs.",
    )
    # Every log line carries it, so that lines from several coordinators can be told apart.
    instance: str = setting(
        "", help="This coordinator's name in its log lines (default: HOSTNAME:PORT)."
    )
    max_payload_bytes: int = setting(
        MAX_PAYLOAD_BYTES,
        min=1,
        help="Cap on a job's payload and a completion's result, as compact JSON (413).",
    )
    # Per connection, enforced by the HTTP protocol (coordinator/server/connections.py) before any route runs.
    max_header_bytes: int = setting(
        MAX_HEADER_BYTES,
        min=1024,
        help="Cap on a request's line and headers, in bytes (431, before authentication).",
    )
    max_headers: int = setting(MAX_HEADERS, min=8, help="Cap on a request's headers (431).")
    request_timeout_seconds: float = setting(
        REQUEST_TIMEOUT_SECONDS,
        min=0.1,
        max=600,
        help="A request must arrive whole (headers and body) within this time of the"
        " connection waiting for it, or the connection is closed (408).",
    )
    keep_alive_timeout_seconds: int = setting(
        KEEP_ALIVE_TIMEOUT_SECONDS,
        min=1,
        max=600,
        help="An idle connection is closed after this long without a request.",
    )
    send_timeout_seconds: float = setting(
        SEND_TIMEOUT_SECONDS,
        min=0.1,
        max=600,
        help="A client must take some of an answer sent to it within this time, or the"
        " connection is closed.",
    )
    # Across connections, enforced by the HTTP protocol's table (coordinator/server/table.py):
    # the longest-waiting connections are closed to make room.
    max_connections: int = setting(
        0,
        min=0,
        help="Connections open at once (0: the open-file limit less 128); past it, the"
        " connections waiting longest for a request are closed.",
    )
    max_connections_per_peer: int = setting(
        MAX_CONNECTIONS_PER_PEER,
        min=0,
        help="Connections one IPv4 address or IPv6 /64 may hold (0: no cap); behind a proxy"
        " every client is the proxy.",
    )
    max_header_bytes_total: int = setting(
        MAX_HEADER_BYTES_TOTAL,
        min=1024,
        help="Bytes of request heads still arriving, on all connections together; past it,"
        " the oldest are closed.",
    )
    # Long polls waiting at once; past it a poll answers after one look (no jobs: 204).
    max_waiting_polls: int = setting(
        MAX_WAITING_POLLS,
        min=0,
        help="Long polls waiting at once, at most; past it a poll answers after one look.",
    )
    # An answer carrying jobs (a page of GET /jobs, a batch lease) stops before this.
    max_answer_bytes: int = setting(
        MAX_ANSWER_BYTES,
        min=1,
        help="Jobs' JSON in one answer: a GET /jobs page or a batch lease stops before it.",
    )
    # Distinct kinds and queues accepted (names already known always are): 422 beyond.
    max_kinds: int = setting(
        MAX_KINDS,
        min=1,
        help="Distinct job kinds accepted; a job of one more kind is refused (422).",
    )
    max_queues: int = setting(
        MAX_QUEUES,
        min=1,
        help="Distinct queues accepted; a job in one more queue is refused (422).",
    )
    # Distinct group keys with jobs (DESIGN.md §19): each is a row its kind's leases read.
    max_groups: int = setting(
        MAX_GROUPS,
        min=1,
        help="Distinct group keys with jobs; a job of one more group is refused (422).",
    )
    # Heartbeats from more worker ids than this are kept only until the next prune, the
    # most recently seen first: a flood of ids cannot grow the list or its answers.
    max_workers: int = setting(
        MAX_WORKERS,
        min=1,
        help="Workers kept and listed, at most: the most recently seen.",
    )
    # Each waiting result holds a connection and a place in the wake-ups, as a long poll.
    max_waiting_results: int = setting(
        MAX_WAITING_RESULTS,
        min=0,
        help="Result waits (GET /jobs/{id}?wait_seconds) at once; past it a wait answers at once.",
    )
    # Retention of finished jobs, per status, in seconds after they finished (0: forever).
    # As River's job cleaner: completed and cancelled jobs a day (long enough to look at
    # what happened overnight, and to cover an idempotency key's retries), dead jobs a week
    # (they wait for a person: a weekend plus a few days). DESIGN.md §20.
    retain_completed_seconds: float = setting(
        86_400.0,
        min=0,
        help="Delete completed jobs this long after they finished (0: keep forever).",
    )
    retain_cancelled_seconds: float = setting(
        86_400.0,
        min=0,
        help="Delete cancelled jobs this long after they finished (0: keep forever).",
    )
    retain_dead_seconds: float = setting(
        7 * 86_400.0,
        min=0,
        help="Delete dead jobs this long after they died (0: keep forever).",
    )
    prune_interval_seconds: float = setting(
        10.0, min=0.001, help="How often finished jobs past their retention are deleted."
    )


@dataclass(frozen=True, slots=True)
class StartOptions:
    """What ``leasehold serve`` is told about starting the coordinator, beyond its settings:
    checked or used before it serves, never by the running coordinator."""

    allow_ephemeral_database: bool = setting(
        False,
        help="Serve on a database in memory (sqlite:///:memory: or sqlite:///), which loses"
        " every job when the coordinator stops; refused otherwise.",
    )
    database_wait_seconds: float = setting(
        30.0,
        min=0,
        max=3600,
        help="At start, how long to keep trying (with backoff) while PostgreSQL cannot be reached.",
    )
    tokens_file: Path | None = setting(  # noqa: RUF009 (a field() with its option)
        None,
        help="Bearer tokens: one `role:sha256hex` per line (roles: producer, worker, reader,"
        " metrics, admin; `leasehold new-token ROLE` makes one). Tokens can also be given in"
        " clear in the environment as LEASEHOLD_TOKENS=role=token,role=token (never as a"
        " flag: command lines are visible to every user). With neither, access is open and"
        " the coordinator only binds loopback.",
    )
