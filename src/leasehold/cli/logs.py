"""Structured logging: JSON lines off a terminal, readable console output on one."""

from __future__ import annotations

import asyncio
import atexit
import logging
import sys
import threading
from collections.abc import Mapping
from typing import Any, BinaryIO, Literal, get_args

import orjson
import structlog
import typer

from leasehold.cli.terminal import safe

LogFormat = Literal["auto", "json", "console"]
LogLevel = Literal["debug", "info", "warning", "error", "critical"]
LOG_FORMATS: tuple[str, ...] = get_args(LogFormat)


class LineBatcher:
    """Writes JSON log lines to a binary stream, one write per event-loop iteration.

    A coordinator answering a batch of 100 jobs, or a worker running them, logs a line per
    job; a write system call for each was a tenth of their time. Lines logged on an event
    loop's thread are gathered and written together as soon as the loop gets to it (the
    same iteration, before it waits for anything); lines from any other thread, or with no
    loop running, are written at once. Whatever is pending is written at exit as well.
    """

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._scheduled = False
        atexit.register(self.flush)

    def __call__(self, *args: Any) -> LineBatcher:
        return self  # the logger factory: one writer for every logger

    def msg(self, message: bytes) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        with self._lock:
            self._pending.append(message)
            if loop is not None and not self._scheduled:
                self._scheduled = True
                loop.call_soon(self.flush)
                return
        if loop is None:
            self.flush()

    log = debug = info = warn = warning = error = err = critical = exception = fatal = msg

    def flush(self) -> None:
        with self._lock:
            self._scheduled = False
            if not self._pending:
                return
            data = b"\n".join(self._pending) + b"\n"
            self._pending.clear()
            self._file.write(data)
            self._file.flush()


def configure_logging(
    log_format: str = "auto", level: str = "info", every_line: Mapping[str, str] | None = None
) -> None:
    """Set up structlog (and route the standard library's logging through the same level);
    ``every_line``: fields every line carries (the coordinator's ``instance``)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}")
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    use_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor
    factory: structlog.typing.WrappedLogger
    if use_json:
        # orjson straight to bytes (structlog's performance recipe) and one write per loop
        # iteration: a coordinator or worker under load writes a few lines per job, and the
        # stdlib encoder and a write each were most of their cost. The lines are the same.
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = LineBatcher(sys.stderr.buffer)
        # An exception is a field of its line (type, message, frames), not text to re-parse.
        exceptions: structlog.typing.Processor = structlog.processors.dict_tracebacks
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        factory = structlog.PrintLoggerFactory(file=sys.stderr)
        exceptions = structlog.processors.format_exc_info
    fields = _fields(every_line or {})
    processors: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        fields,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        exceptions,
    ]
    if not use_json:  # JSON escapes what a terminal acts on; the console form does not
        processors.append(terminal_safe)
    structlog.configure(
        processors=[*processors, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    _route_standard_logging(numeric, exceptions, factory if use_json else None, fields)


def _fields(fields: Mapping[str, str]) -> structlog.typing.Processor:
    """A processor adding ``fields`` to every line (a line's own value wins)."""
    fixed = dict(fields)

    def add(
        logger: object, method: str, event_dict: structlog.typing.EventDict
    ) -> structlog.typing.EventDict:
        for key, value in fixed.items():
            event_dict.setdefault(key, value)
        return event_dict

    return add


def terminal_safe(
    logger: object, method: str, event_dict: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """Text fields as ``terminal.safe`` shows them: a console log line may quote what a
    coordinator or a job sent (an error message, a kind), which must not reach a terminal
    as escape sequences. A traceback keeps its line breaks."""
    for key, value in event_dict.items():
        if isinstance(value, str):
            event_dict[key] = safe(value, lines=key == "exception")
    return event_dict


class _Batched(logging.Handler):
    """Standard-library records into the same JSON line writer as structlog's."""

    def __init__(self, batcher: LineBatcher) -> None:
        super().__init__()
        self.batcher = batcher

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.batcher.msg(self.format(record).encode())
        except Exception:
            self.handleError(record)


def _handled_by_the_app(record: logging.LogRecord) -> bool:
    # Our error handler logs every unexpected exception as `request.error` (with the route);
    # Starlette then re-raises it to the server, which would log the same traceback again.
    return record.name != "uvicorn.error" or not record.getMessage().startswith(
        "Exception in ASGI application"
    )


def _route_standard_logging(
    level: int,
    exceptions: structlog.typing.Processor,
    batcher: LineBatcher | None,
    fields: structlog.typing.Processor,
) -> None:
    """The standard library's records (uvicorn's, asyncio's) as structlog lines: the same
    format, fields and exception rendering, with the logger's name as ``logger``."""
    renderer: structlog.typing.Processor
    handler: logging.Handler
    if batcher is not None:
        renderer = structlog.processors.JSONRenderer()
        handler = _Batched(batcher)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                structlog.stdlib.add_logger_name,
                fields,
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                exceptions,
                *([] if batcher is not None else [terminal_safe]),
                renderer,
            ],
        )
    )
    handler.addFilter(_handled_by_the_app)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(level)


def configure_quiet_logging() -> None:
    """Errors only, on stderr: for commands whose stdout is their output (the admin
    commands' tables and --json). Their one-line error message says what the client's
    retry warnings would have. The standard library's logging is left alone, so that a
    later ``configure_logging`` (serve, worker) still takes effect."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            terminal_safe,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )


LOG_FORMAT_OPTION = typer.Option(
    "auto",
    envvar="LEASEHOLD_LOG_FORMAT",
    case_sensitive=False,
    help="json off a terminal, console on one (auto), or either always.",
)


LOG_LEVEL_OPTION = typer.Option("info", envvar="LEASEHOLD_LOG_LEVEL", case_sensitive=False)
