"""The field types, validators and caps every wire model shares (the wire contract:
PROTOCOL.md); requests reject unknown fields (``Strict``)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    PlainSerializer,
    PlainValidator,
    StrictFloat,
    StrictInt,
)

from leasehold.coordinator.rules.userjson import INVISIBLE_MESSAGE, has_invisible, json_problem
from leasehold.model import (
    DEFAULT_PRIORITY,
    MAX_LEASE_SECONDS,
    MAX_PRIORITY,
    MIN_PRIORITY,
    RESERVED_KEY_PREFIX,
)

MAX_KIND_LENGTH = 200


MAX_KEY_LENGTH = 255


MAX_WORKER_ID_LENGTH = 200


MAX_ERROR_LENGTH = 65_536


MAX_KINDS_PER_LEASE = 100


MAX_JOBS_PER_LEASE = 1000


MAX_QUEUE_LENGTH = 100


MAX_QUEUES_PER_LEASE = 100


MAX_RUNNING_LIMIT = 100_000


MAX_LABEL_LENGTH = 200


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name or key (a kind, queue, worker id, idempotency key, job
    header value, lease request id, heartbeat host or version), or None if it can.

    One rule for all of them, checked here before any store sees the value, so both
    backends answer alike: not blank, and no character of Unicode category Cc, Cf, Zl or
    Zp (NUL, ESC, U+009B, bidi overrides, zero-width characters, line separators), which
    would reach logs, tables, terminals and /metrics raw, or which PostgreSQL cannot store.
    """
    if not value.strip():
        return "must not be empty or only white space"
    if has_invisible(value):
        return INVISIBLE_MESSAGE
    return None


def _name(value: str) -> str:
    if problem := name_problem(value):
        raise ValueError(problem)
    return value


def _not_reserved(value: str) -> str:
    if value.startswith(RESERVED_KEY_PREFIX):
        raise ValueError(f"keys starting with {RESERVED_KEY_PREFIX!r} are the scheduler's")
    return value


def _user_json(value: object) -> object:
    if problem := json_problem(value):
        raise ValueError(problem)
    return value


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character")
    return value


# Validated by ``json_problem`` alone, in C: the value is parsed JSON already, and Pydantic's
# own walk of a JsonValue, in Python objects, cost 50 ms for a body of 190,000 empty lists.
# The schema is still JsonValue's.
UserJSON = Annotated[JsonValue, PlainValidator(_user_json, json_schema_input_type=JsonValue)]


Kind = Annotated[str, Field(min_length=1, max_length=MAX_KIND_LENGTH), AfterValidator(_name)]


# Up to 16 headers, names like HTTP's, values up to 512 printable characters.
HeaderName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]


HeaderValue = Annotated[str, Field(max_length=512), AfterValidator(_name)]


Headers = Annotated[dict[HeaderName, HeaderValue], Field(max_length=16)]


IdempotencyKey = Annotated[
    str,
    Field(min_length=1, max_length=MAX_KEY_LENGTH),
    AfterValidator(_name),
    AfterValidator(_not_reserved),
]


WorkerId = Annotated[
    str, Field(min_length=1, max_length=MAX_WORKER_ID_LENGTH), AfterValidator(_name)
]


QueueName = Annotated[str, Field(min_length=1, max_length=MAX_QUEUE_LENGTH), AfterValidator(_name)]


LeaseRequestId = Annotated[
    str, Field(min_length=1, max_length=MAX_KEY_LENGTH), AfterValidator(_name)
]


# What a worker says of itself in a heartbeat (its host, its version): shown by
# `leasehold workers` and the dashboard, so held to the names' rule.
Label = Annotated[str, Field(min_length=1, max_length=MAX_LABEL_LENGTH), AfterValidator(_name)]


Priority = Annotated[
    StrictInt,
    Field(
        ge=MIN_PRIORITY,
        le=MAX_PRIORITY,
        description=f"higher is leased first (default {DEFAULT_PRIORITY})",
    ),
]


Token = Annotated[StrictInt, Field(ge=0, le=2**63 - 1, description="the lease's fencing token")]


# Numbers are JSON numbers: StrictFloat refuses "10" and true, which lax floats take.
LeaseSeconds = Annotated[
    StrictFloat,
    Field(gt=0, le=MAX_LEASE_SECONDS, allow_inf_nan=False, description="lease length"),
]


TimeoutSeconds = Annotated[
    StrictFloat, Field(gt=0, le=MAX_LEASE_SECONDS, allow_inf_nan=False, description="time limit")
]


# Times the coordinator can store and read back on every backend.
EARLIEST_TIME = datetime(1970, 1, 1, tzinfo=UTC)


LATEST_TIME = datetime(9999, 1, 1, tzinfo=UTC)


_RFC3339_START = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}")


def _rfc3339_text(value: object) -> object:
    # Pydantic alone takes numbers, and strings of digits, as Unix times (seconds or
    # milliseconds, by size): a guess. Only RFC 3339 text is a time here.
    if not isinstance(value, str) or not _RFC3339_START.match(value):
        raise ValueError("must be an RFC 3339 date-time with an offset")
    return value


def _storable(value: datetime) -> datetime:
    try:
        in_range = EARLIEST_TIME <= value < LATEST_TIME
    except OverflowError:  # e.g. 9999-12-31T23:00-05:00 is past year 9999 in UTC
        in_range = False
    if not in_range:
        raise ValueError("must be from 1970-01-01 to 9998-12-31 (UTC)")
    return value


Rfc3339Time = Annotated[AwareDatetime, BeforeValidator(_rfc3339_text), AfterValidator(_storable)]


# Times go out as RFC 3339 in UTC with an explicit +00:00 offset.
UtcTime = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]


# A group key: the tenant or account a job's kind's limits count it under (DESIGN.md §19).
GroupKey = Annotated[str, Field(min_length=1, max_length=MAX_KIND_LENGTH), AfterValidator(_name)]


# A name one item of a batch (or a spawn) gives itself, for the others to depend on it.
Ref = Annotated[str, Field(min_length=1, max_length=MAX_KEY_LENGTH), AfterValidator(_name)]


class Strict(BaseModel):
    """Requests reject unknown fields, so a misspelt option is an error, not a no-op."""

    model_config = ConfigDict(extra="forbid")


class ErrorOut(BaseModel):
    error: str = Field(description="a stable machine-readable code")
    message: str
    detail: list[dict[str, Any]] | None = None
