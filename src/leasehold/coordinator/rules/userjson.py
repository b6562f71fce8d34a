"""What JSON the coordinator accepts from producers and workers: checked without I/O.

Payloads, results and schedule payloads are stored, and handed back inside answers that
wrap them a few levels deeper. Every JSON library on the way has its own depth limit
(orjson parses 1024 levels but writes 255, Pydantic validates 256), so a value accepted
near one of those limits could be stored and then fail every answer that carries it. One
limit, far below all of them, is checked on input instead: ``MAX_JSON_DEPTH``.

Integers must fit in 64 bits (orjson reads larger ones as floats, which would hand the
worker other data than the producer sent) and no string may hold NUL (PostgreSQL's text
and jsonb cannot store it; refusing it everywhere keeps the backends answering alike).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Final

MAX_JSON_DEPTH: Final = 64
"""Arrays and objects nested at most this deep in a payload, result or schedule payload."""

MIN_INT: Final = -(2**63)
MAX_INT: Final = 2**64 - 1  # orjson writes unsigned 64-bit integers exactly too

DEPTH_MESSAGE: Final = f"must not nest arrays and objects more than {MAX_JSON_DEPTH} deep"
NUL_MESSAGE: Final = "must not contain the NUL character (\\u0000)"
INT_MESSAGE: Final = f"integers must be from {MIN_INT} to {MAX_INT} (64 bits)"

# Any integer out of range has at least 19 digits; most bodies have no such run at all,
# so the exact (slower) look is only taken when one might be there.
_LONG_DIGITS: Final = re.compile(rb"[0-9]{19}")


def json_problem(value: object) -> str | None:
    """Why ``value`` (parsed JSON) is not acceptable as user JSON, or None if it is.

    Iterative, so a deep value costs no recursion; it stops at the first problem.
    """
    pending: list[tuple[object, int]] = [(value, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return NUL_MESSAGE
        elif isinstance(item, dict | list):
            if depth >= MAX_JSON_DEPTH:
                return DEPTH_MESSAGE
            inner = depth + 1
            if isinstance(item, dict):
                pending.extend((key, inner) for key in item)
                pending.extend((v, inner) for v in item.values())
            else:
                pending.extend((v, inner) for v in item)
        elif isinstance(item, int) and not MIN_INT <= item <= MAX_INT:
            return INT_MESSAGE
    return None


class _IntegerOutOfRange(Exception):
    pass


def _int64(text: str) -> int:
    number = int(text)
    if not MIN_INT <= number <= MAX_INT:
        raise _IntegerOutOfRange
    return number


def has_long_integer(body: bytes) -> bool:
    """Whether the JSON text ``body`` holds an integer literal beyond 64 bits.

    The check is on the text, because a parsed value cannot tell: orjson turns such an
    integer into the nearest float. Text that is not JSON is left to the parser to refuse.
    """
    if not _LONG_DIGITS.search(body):
        return False
    try:
        json.loads(body, parse_int=_int64)
    except _IntegerOutOfRange:
        return True
    except (ValueError, RecursionError):
        return False
    return False


# Control, format (U+200B, U+202E ...), line and paragraph separators: invisible or
# reordering characters that would reach logs, tables and /metrics raw.
_INVISIBLE_CATEGORIES: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})
_ASCII_CONTROL: Final = re.compile("[\x00-\x1f\x7f]")
INVISIBLE_MESSAGE: Final = "must not contain control, format or line-separator characters"


def has_invisible(name: str) -> bool:
    """Whether a name or key (``coordinator/api/schemas/fields.py`` ``name_problem``) holds
    a character of Unicode category Cc, Cf, Zl or Zp. ASCII names, nearly all of them, take
    one regex search."""
    if name.isascii():
        return _ASCII_CONTROL.search(name) is not None
    return any(unicodedata.category(c) in _INVISIBLE_CATEGORIES for c in name)
