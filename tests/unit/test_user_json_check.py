"""The user JSON check (``json_problem``) is made in C and says what a walk of the value
says (issue 26, item 9)."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.coordinator.rules.userjson import (
    DEPTH_MESSAGE,
    INT_MESSAGE,
    MAX_INT,
    MAX_JSON_DEPTH,
    MIN_INT,
    NUL_MESSAGE,
    _walked_problem,
    json_problem,
)

# Text that could fool a check made on the encoded text: escapes, quotes and brackets.
_TRICKY = st.sampled_from(["\x00", "\\", "\\u0000", '"', "[", "]", "{", "}", "a", "é", "\\\x00"])
_STRINGS = st.lists(_TRICKY, max_size=4).map("".join)
_NUMBERS = st.integers(MIN_INT - 2, MAX_INT + 2) | st.sampled_from([MIN_INT - 1, MAX_INT + 1])
_LEAVES = st.none() | st.booleans() | _NUMBERS | st.floats(allow_nan=False) | _STRINGS


def nested(depth: int, leaf: Any = None) -> Any:
    """``depth`` arrays and objects, one inside the other, around ``leaf``."""
    value = leaf
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


_DEEP = st.builds(nested, st.integers(MAX_JSON_DEPTH - 2, MAX_JSON_DEPTH + 2), _LEAVES)
_VALUES = st.recursive(
    _LEAVES | _DEEP,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_STRINGS, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(_VALUES)
def test_the_check_agrees_with_a_walk_of_the_value(value: Any) -> None:
    """Accepted or refused alike, for the same reason when there is only one."""
    found, walked = json_problem(value), _walked_problem(value)
    assert (found is None) == (walked is None), (found, walked)


def test_each_problem_is_named_at_its_limit() -> None:
    """64 levels pass and 65 do not, also inside a wide value; a NUL escape is found, an
    escaped backslash before ``u0000`` is not one; 64-bit integers pass at both ends."""
    assert json_problem(nested(MAX_JSON_DEPTH)) is None
    assert json_problem([1, nested(MAX_JSON_DEPTH - 1), "x"]) is None
    assert json_problem(nested(MAX_JSON_DEPTH + 1)) == DEPTH_MESSAGE
    assert json_problem([[]] * 100 + [nested(MAX_JSON_DEPTH)]) == DEPTH_MESSAGE
    assert json_problem(nested(300)) == DEPTH_MESSAGE
    assert json_problem({"a\x00": 1}) == NUL_MESSAGE
    assert json_problem(["\\\x00"]) == NUL_MESSAGE
    assert json_problem(["\\u0000", "\\\\u0000"]) is None
    assert json_problem([MIN_INT, MAX_INT]) is None
    assert json_problem([MAX_INT + 1]) == INT_MESSAGE
    assert json_problem({"n": MIN_INT - 1}) == INT_MESSAGE


def test_a_value_of_190_000_lists_is_checked_in_milliseconds() -> None:
    """The value of a 556 KiB body of ``[[],...]``: a walk in Python took 0.13 to 0.2 s of
    CPU, each time such a body was sent."""
    wide: list[Any] = [[]] * 190_000  # one list, encoded 190,000 times
    deep = [nested(MAX_JSON_DEPTH)] * 8_000  # the most levels for its size
    for value in (wide, deep):
        started = time.process_time()
        json_problem(value)
        assert time.process_time() - started < 0.05
