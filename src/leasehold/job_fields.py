"""The job's fields, defined once: how each is stored, which the guarded write sets, which a
job list's summary leaves out, and how each goes on the wire and is read back.

``model.Job`` declares the fields (name, type, default); ``FIELDS`` says, for each in the
same order, what the rest of the code needs to know of it, and everything that lists the
fields is derived from the two: both backends' column lists (full and summary), their row
decoders, their guarded write's SET list and its parameters, the answer's wire dict
(``service.answer.job_wire``) and the client's parser (``client._parse.parse_job``). Adding
a field to the job is: the field on ``Job``, its line here, a migration per dialect, and
(if it goes on the wire) its name in ``WIRE_ORDER`` and in ``api.schemas.jobs.JobOut``, whose
fields a test holds equal to these.

One name serves as the attribute, the column and the wire key. A field is nullable (stored
as NULL, sent as null, its conversions skipped for None) exactly when its default on
``Job`` is None.

Each user of a field's kind says how it converts one (``Stored`` for the backends, ``Wire``
for the client) as an expression on ``{v}``; the decoders and encoders are generated from
those once, at import, as ``dataclasses`` generates ``__init__``: they run for every job of
every lease and report, and a loop over the fields calling a converter per field was a
fifth to a third slower than the generated expression (bench/job_codec.py, "by a loop"),
slower than the hand-written decoders it replaced.

This module imports only ``model``, so the stores and the client may use it.
"""

from __future__ import annotations

import dataclasses
import linecache
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

import orjson

from leasehold.model import Job, JobStatus, Report


class Stored(Enum):
    """How a field is kept in the jobs table; each backend says how it converts each."""

    INT = "int"  # kept as it is, in an integer column
    FLOAT = "float"  # kept as it is, in a floating-point column
    TEXT = "text"  # kept as it is, in a text column
    FLAG = "flag"  # a bool (SQLite keeps 0 or 1)
    TIME = "time"  # an aware UTC datetime (SQLite: seconds since the epoch)
    JSON = "json"  # any JSON value, kept as JSON text (NULL for None when nullable)
    STATUS = "status"  # a JobStatus, kept as its value
    REPORT = "report"  # a Report, kept as its value
    NONE = "none"  # not a column: filled by the read that needs it (a lease's parents)


class Wire(Enum):
    """How the client reads a field from an answer. The server needs no converter: orjson
    writes every field's value as it is (datetimes as RFC 3339, enums as their value)."""

    AS_IS = "as_is"  # taken as the JSON gives it
    INT = "int"
    FLOAT = "float"
    STR = "str"
    FLAG = "flag"
    TIME = "time"  # RFC 3339 text to an aware UTC datetime
    STATUS = "status"


@dataclass(frozen=True, slots=True)
class JobField:
    """What the code needs to know of one field of ``model.Job`` besides its type."""

    name: str
    stored: Stored
    wire: Wire | None = None  # None: the coordinator keeps the field to itself
    required: bool = False  # the client refuses an answer without it (else: Job's default)
    written: bool = False  # the guarded write of a rule's decision sets it
    in_summary: bool = True  # a job list's summary form carries it (payload, result do not)

    @property
    def nullable(self) -> bool:
        return _JOB[self.name].default is None

    @property
    def default(self) -> Any:
        """Job's default; None for a field without one (the client's value when absent)."""
        default = _JOB[self.name].default
        return None if default is dataclasses.MISSING else default


_JOB: Final = {f.name: f for f in dataclasses.fields(Job)}

FIELDS: Final = (
    JobField("id", Stored.INT, Wire.INT, required=True),
    JobField("kind", Stored.TEXT, Wire.STR, required=True),
    JobField("payload", Stored.JSON, Wire.AS_IS, in_summary=False),
    JobField("status", Stored.STATUS, Wire.STATUS, required=True, written=True),
    JobField("attempts", Stored.INT, Wire.INT, required=True, written=True),
    JobField("max_attempts", Stored.INT, Wire.INT, required=True),
    JobField("run_after", Stored.TIME, Wire.TIME, required=True, written=True),
    JobField("created_at", Stored.TIME, Wire.TIME, required=True),
    JobField("lease_token", Stored.INT, Wire.INT, required=True),
    JobField("lease_owner", Stored.TEXT, Wire.AS_IS, written=True),
    JobField("lease_expires_at", Stored.TIME, Wire.TIME, written=True),
    JobField("lease_seconds", Stored.FLOAT, written=True),  # answered beside the job, in a lease
    JobField("leased_at", Stored.TIME, Wire.TIME),
    JobField("finished_at", Stored.TIME, Wire.TIME, written=True),
    JobField("idempotency_key", Stored.TEXT, Wire.AS_IS),
    JobField("request_hash", Stored.TEXT),
    JobField("result", Stored.JSON, Wire.AS_IS, written=True, in_summary=False),
    JobField("last_error", Stored.TEXT, Wire.AS_IS, written=True),
    JobField("report", Stored.REPORT, written=True),
    JobField("priority", Stored.INT, Wire.INT),
    JobField("queue", Stored.TEXT, Wire.STR),
    JobField("cancel_requested", Stored.FLAG, Wire.FLAG, written=True),
    JobField("releases", Stored.INT, written=True),
    JobField("headers", Stored.JSON, Wire.AS_IS),
    JobField("timeout_seconds", Stored.FLOAT, Wire.FLOAT),
    JobField("waiting_for", Stored.INT, Wire.INT, written=True),
    JobField("depth", Stored.INT, Wire.INT),
    JobField("dependents", Stored.INT, Wire.INT),
    JobField("blocked_by", Stored.INT, Wire.INT, written=True),
    JobField("spawned_by", Stored.INT, Wire.INT),
    JobField("spawn_key", Stored.TEXT, Wire.AS_IS),
    JobField("group_key", Stored.TEXT, Wire.AS_IS),
    JobField("weight", Stored.INT, Wire.INT),
    JobField("start_by", Stored.TIME, Wire.TIME),
    JobField("unique_key", Stored.TEXT, Wire.AS_IS),
    # Answered beside the job, in a lease (PROTOCOL.md, "Leasing"); never a column.
    JobField("parents", Stored.NONE),
)
"""Every field of ``model.Job``, in its order (which is also the columns' order; the
fields that are not columns come last)."""

WIRE_ORDER: Final = (
    "id",
    "kind",
    "payload",
    "status",
    "attempts",
    "max_attempts",
    "run_after",
    "created_at",
    "lease_owner",
    "lease_expires_at",
    "lease_token",
    "idempotency_key",
    "result",
    "last_error",
    "leased_at",
    "finished_at",
    "priority",
    "queue",
    "cancel_requested",
    "headers",
    "timeout_seconds",
    "waiting_for",
    "depth",
    "dependents",
    "blocked_by",
    "spawned_by",
    "spawn_key",
    "group_key",
    "weight",
    "start_by",
    "unique_key",
)
"""The keys of a job's wire form in the order they are sent: older than some columns, and
kept, as a client may depend on it. New fields go at the end."""

DERIVED_WIRE: Final = ("error_summary",)
"""Wire keys sent after the fields, computed from them by ``service.answer``."""

BY_NAME: Final = {f.name: f for f in FIELDS}
STORED: Final = tuple(f for f in FIELDS if f.stored is not Stored.NONE)
"""The fields that are columns, in order: a row of ``columns()``."""
POSITION: Final = {f.name: i for i, f in enumerate(STORED)}
"""Each field's place in a row of ``columns()``."""
WRITTEN: Final = tuple(f for f in FIELDS if f.written)
"""The fields the guarded write sets, in order: its SET list and its parameters."""


def check(fields: tuple[JobField, ...], wire_order: tuple[str, ...]) -> None:
    """Raise TypeError unless ``fields`` follow ``model.Job`` field by field and
    ``wire_order`` names each wire field once: run at import, so a field added to one and
    not the other fails at once."""
    names = tuple(f.name for f in fields)
    if names != tuple(_JOB):
        raise TypeError(f"job_fields.FIELDS {names} does not follow model.Job {tuple(_JOB)}")
    on_wire = sorted(f.name for f in fields if f.wire is not None)
    if sorted(wire_order) != on_wire:
        raise TypeError(f"job_fields.WIRE_ORDER {wire_order} is not the wire fields {on_wire}")
    kept = [f.stored is not Stored.NONE for f in fields]
    if kept != sorted(kept, reverse=True) or any(
        f.written or f.wire for f in fields if f.stored is Stored.NONE
    ):
        # A row is read by position: what is not a column must come after every column.
        raise TypeError("job_fields.FIELDS: a field that is not a column must come last")


check(FIELDS, WIRE_ORDER)


# -- the generated conversions -------------------------------------------------------------

# How every backend converts a stored value (``{v}``), unless it keeps that kind otherwise
# (SQLite: flags as 0 or 1, times as seconds since the epoch): values as they are, JSON as
# text, a status or report as its value. Their names come from ``_STORED_NAMES``; a status
# maps to its member by a dict, as an Enum call costs a microsecond, twice per row.
DECODE: Final[Mapping[Stored, str]] = {
    Stored.INT: "{v}",
    Stored.FLOAT: "{v}",
    Stored.TEXT: "{v}",
    Stored.FLAG: "{v}",
    Stored.TIME: "{v}",
    Stored.JSON: "_loads({v})",
    Stored.STATUS: "_STATUS[{v}]",
    Stored.REPORT: "_REPORT[{v}]",
}
ENCODE: Final[Mapping[Stored, str]] = {
    **{kind: "{v}" for kind in Stored},
    Stored.JSON: "_dumps({v}).decode()",
}
_STORED_NAMES: Final[Mapping[str, Any]] = {
    "_loads": orjson.loads,
    "_dumps": orjson.dumps,
    "_STATUS": {s.value: s for s in JobStatus},
    "_REPORT": {r.value: r for r in Report},
}


def _compile(name: str, params: str, body: str, namespace: Mapping[str, Any]) -> Callable[..., Any]:
    """``def name(params): return body``, compiled in ``namespace``. Named for its caller
    (``job_wire``, ...), so that profiles and tracebacks say which conversion ran."""
    scope = dict(namespace)
    source = f"def {name}({params}):\n    return {body}\n"
    # The source is built from FIELDS and the callers' templates, never from input.
    filename = f"<job_fields {name}>"
    exec(compile(source, filename, "exec"), scope)
    # Kept where tracebacks (and a reader) find the line that failed.
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    function: Callable[..., Any] = scope[name]
    return function


def _converted(field: JobField, template: str, value: str) -> str:
    """``template`` applied to ``value``, None passed through for a nullable field."""
    if template == "{v}":
        return value
    converted = template.format(v=value)
    return f"(None if {value} is None else {converted})" if field.nullable else converted


def columns(blank: Callable[[JobField], str] | None = None) -> str:
    """The job's columns in ``Job`` order, for SELECT and RETURNING. With ``blank``, the
    summary form: ``blank(field)`` (a constant the decoder reads as None) in place of each
    field the summary leaves out."""
    return ", ".join(f.name if f.in_summary or blank is None else blank(f) for f in STORED)


def set_list(placeholder: Callable[[int], str]) -> str:
    """The guarded write's ``name = <placeholder(i)>, ...``, i counting ``WRITTEN`` from 0."""
    return ", ".join(f"{f.name} = {placeholder(i)}" for i, f in enumerate(WRITTEN))


def row_decoder(
    decode: Mapping[Stored, str] = DECODE,
    namespace: Mapping[str, Any] = _STORED_NAMES,
    *,
    by_name: bool,
    name: str = "decode_row",
) -> Callable[[Any], Job]:
    """A function from a row of ``columns()`` to a Job; ``decode[kind]`` converts one
    non-null stored value ``{v}`` (names it uses come from ``namespace``, beside
    ``DECODE``'s own). Rows are read by column name (``by_name``), else by position."""
    args = []
    for index, field in enumerate(STORED):  # the rest keep Job's default
        value = f"row[{field.name!r}]" if by_name else f"row[{index}]"
        args.append(_converted(field, decode[field.stored], value))
    scope = {**_STORED_NAMES, **namespace, "_Job": Job}
    return _compile(name, "row", f"_Job({', '.join(args)})", scope)


def written_encoder(
    encode: Mapping[Stored, str] = ENCODE,
    namespace: Mapping[str, Any] = _STORED_NAMES,
    *,
    then: tuple[str, ...] = (),
    name: str = "encode_written",
) -> Callable[[Job, Job], tuple[Any, ...]]:
    """A function of (before, after) to the guarded write's parameters: each ``WRITTEN``
    field of ``after`` stored as ``encode[kind]`` says, followed by the expressions
    ``then`` (on ``before`` and ``after``), all in one tuple."""
    values = [_converted(f, encode[f.stored], f"after.{f.name}") for f in WRITTEN]
    body = f"({', '.join([*values, *then])},)"
    return _compile(name, "before, after", body, {**_STORED_NAMES, **namespace})


def wire_encoder(
    derived: Mapping[str, tuple[str, Callable[[Any], Any]]], *, name: str = "encode_wire"
) -> Callable[[Job], dict[str, Any]]:
    """A function from a Job to its wire form, a dict in ``WIRE_ORDER`` that orjson
    serialises, ending with the ``DERIVED_WIRE`` keys: ``derived[key]`` is (the field it is
    computed from, the function computing it)."""
    if tuple(derived) != DERIVED_WIRE:
        raise TypeError(f"the derived wire keys are {DERIVED_WIRE}, not {tuple(derived)}")
    items = [f"{key!r}: job.{key}" for key in WIRE_ORDER]
    namespace: dict[str, Any] = {}
    for index, (key, (source_field, function)) in enumerate(derived.items()):
        namespace[f"_derived{index}"] = function
        items.append(f"{key!r}: _derived{index}(job.{source_field})")
    return _compile(name, "job", "{" + ", ".join(items) + "}", namespace)


def wire_decoder(
    read: Mapping[Wire, str], namespace: Mapping[str, Any], *, name: str = "decode_wire"
) -> Callable[[Mapping[str, Any]], Job]:
    """A function from a job's wire form (parsed JSON) to a Job; ``read[kind]`` converts
    one non-null value ``{v}``. A required key that is missing raises KeyError; any other
    takes ``Job``'s default. Conversion errors are raised as they come (ValueError,
    TypeError): the caller says what it was reading."""
    scope: dict[str, Any] = {**namespace, "_Job": Job}
    args = []
    for field in (BY_NAME[key] for key in WIRE_ORDER):
        assert field.wire is not None  # WIRE_ORDER names only wire fields (check)
        if field.required:
            value = f"data[{field.name!r}]"
        elif field.default is None:
            value = f"data.get({field.name!r})"
        else:
            scope[f"_default_{field.name}"] = field.default
            value = f"data.get({field.name!r}, _default_{field.name})"
        template = read[field.wire]
        if field.nullable and template != "{v}":  # evaluated once, bound to a local name
            value = f"(None if (v := {value}) is None else {template.format(v='v')})"
        else:
            value = template.format(v=value)
        args.append(f"{field.name}={value}")
    return _compile(name, "data", f"_Job({', '.join(args)})", scope)
