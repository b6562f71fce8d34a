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

import orjson

MAX_JSON_DEPTH: Final = 64
"""Arrays and objects nested at most this deep in a payload, result or schedule payload."""

MIN_INT: Final = -(2**63)
MAX_INT: Final = 2**64 - 1  # orjson writes unsigned 64-bit integers exactly too

DEPTH_MESSAGE: Final = f"must not nest arrays and objects more than {MAX_JSON_DEPTH} deep"
NUL_MESSAGE: Final = "must not contain the NUL character (\\u0000)"
INT_MESSAGE: Final = f"integers must be from {MIN_INT} to {MAX_INT} (64 bits)"
NOT_JSON_MESSAGE: Final = "must be JSON"

# Any integer out of range has at least 19 digits; most bodies have no such run at all,
# so the exact (slower) look is only taken when one might be there. The run is looked for
# with every digit made a 0 and then a plain search, ten times faster than a regex's.
_DIGITS_AS_ZEROS: Final = bytes(b"0"[0] if b in b"0123456789" else b" "[0] for b in range(256))
_LONG_DIGITS: Final = b"0" * 19


def json_problem(value: object) -> str | None:
    """Why ``value`` (parsed JSON) is not acceptable as user JSON, or None if it is.

    Checked by orjson, in C: a walk in Python took 0.15 s for a payload of 190,000 empty
    lists, on the event loop, before the payload was even found over its cap. Encoding
    refuses integers beyond 64 bits; NUL is then found as its escape, ``\\u0000``, in the
    text; a value with more than ``MAX_JSON_DEPTH`` brackets is encoded again inside
    enough lists that orjson's own depth limit falls exactly past ``MAX_JSON_DEPTH``
    (``_DEPTH_PADDING``). What orjson would not encode at all is walked instead.
    """
    kind = type(value)
    if kind not in (dict, list):  # most results and many payloads: answered at once
        if kind is str:
            return NUL_MESSAGE if "\x00" in value else None  # type: ignore[operator]
        if kind is int:
            return None if MIN_INT <= value <= MAX_INT else INT_MESSAGE  # type: ignore[operator]
        if value is None or kind in (bool, float):
            return None
    try:
        text = orjson.dumps(value, option=_ONLY_JSON)
    except TypeError as exc:  # orjson.JSONEncodeError
        return _ENCODE_PROBLEMS.get(str(exc)) or _walked_problem(value) or NOT_JSON_MESSAGE
    if b"\\u0000" in text and _NUL_ESCAPE.search(text):
        return NUL_MESSAGE
    if text.count(b"[") + text.count(b"{") > MAX_JSON_DEPTH:  # could nest that deep
        padded = value
        for _ in range(_DEPTH_PADDING):
            padded = [padded]
        try:
            orjson.dumps(padded, option=_ONLY_JSON)
        except TypeError:
            return DEPTH_MESSAGE
    return None


# Dates, dataclasses and subclasses of str, int, dict and list are not encoded as JSON but
# refused: the value must be what a JSON parser makes.
_ONLY_JSON: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
# orjson's own words for what it refuses to encode, for the two problems it finds first.
_ENCODE_PROBLEMS: Final = {
    "Integer exceeds 64-bit range": INT_MESSAGE,
    "Recursion limit reached": DEPTH_MESSAGE,
}
# The escape of NUL, not preceded by an odd number of backslashes (``\\\\u0000`` is the
# text "\\u0000", not NUL).
_NUL_ESCAPE: Final = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")


def _orjson_depth() -> int:
    """How many arrays orjson encodes nested in one another (254 when this was written);
    measured rather than assumed, so that a release that moves it moves the padding."""
    nested: list[object] = []
    for depth in range(1, 4096):
        try:
            orjson.dumps(nested)
        except TypeError:
            return depth - 1
        nested = [nested]
    raise RuntimeError("orjson encodes any depth: the user JSON depth check needs another way")


# Lists put around a value so that orjson refuses it exactly when it nests deeper than
# MAX_JSON_DEPTH.
_DEPTH_PADDING: Final = _orjson_depth() - MAX_JSON_DEPTH


def _walked_problem(value: object) -> str | None:
    """``json_problem`` by a walk of the value, for what orjson would not encode at all.

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
    if _LONG_DIGITS not in body.translate(_DIGITS_AS_ZEROS):
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
