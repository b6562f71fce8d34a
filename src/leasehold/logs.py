"""Structured logging: JSON lines off a terminal, readable console output on one."""

from __future__ import annotations

import logging
import sys

import orjson
import structlog

LOG_FORMATS = ("auto", "json", "console")


def configure_logging(log_format: str = "auto", level: str = "info") -> None:
    """Set up structlog (and route the standard library's logging through the same level)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"log format must be one of {LOG_FORMATS}")
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    use_json = log_format == "json" or (log_format == "auto" and not sys.stderr.isatty())
    renderer: structlog.typing.Processor
    factory: structlog.typing.WrappedLogger
    if use_json:
        # orjson straight to bytes (structlog's performance recipe): a coordinator or worker
        # under load writes a few lines per job, and the stdlib encoder was most of their
        # cost. The lines are the same JSON.
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory(file=sys.stderr.buffer)
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        factory = structlog.PrintLoggerFactory(file=sys.stderr)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    logging.basicConfig(level=numeric, stream=sys.stderr, format="%(name)s %(message)s")
