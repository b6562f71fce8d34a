"""What ``leasehold_enqueue`` (PostgreSQL migration 012) writes out in SQL agrees with the
coordinator's own homes: the name rule's character classes (``fields.name_problem``) are the
ones Python's ``unicodedata`` gives, and every bound and default is the wire model's."""

from __future__ import annotations

import re
import sys
import unicodedata
from importlib import resources

from leasehold.coordinator.api.schemas.fields import (
    MAX_KEY_LENGTH,
    MAX_KIND_LENGTH,
    MAX_QUEUE_LENGTH,
)
from leasehold.coordinator.api.schemas.jobs import MAX_UNIQUE_PERIOD_SECONDS, MAX_WEIGHT
from leasehold.coordinator.rules.userjson import MAX_JSON_DEPTH, has_invisible
from leasehold.coordinator.settings import MAX_PAYLOAD_BYTES
from leasehold.model import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    DEFAULT_QUEUE,
    MAX_ATTEMPTS_LIMIT,
    MAX_DEPTH,
    MAX_GROUPS,
    MAX_KINDS,
    MAX_LEASE_SECONDS,
    MAX_PARENTS,
    MAX_PRIORITY,
    MAX_QUEUES,
    MIN_PRIORITY,
    RESERVED_KEY_PREFIX,
)

_SQL = (
    resources.files("leasehold.coordinator.store.migrations")
    .joinpath("postgres/012_enqueue_in_transaction.sql")
    .read_text()
)


def _class(after: str) -> set[int]:
    """The code points of the bracket expression in the first ``value ~ '...'`` following
    ``after``."""
    text = _SQL[_SQL.index(after) :]
    body = re.search(r"value ~ '\^?\[([^\]]*)\]", text)
    assert body is not None
    points: set[int] = set()
    escape = r"\\u([0-9a-f]{4})|\\U([0-9a-f]{8})"
    for a4, a8, b4, b8 in re.findall(rf"(?:{escape})(?:-(?:{escape}))?", body.group(1)):
        start = int(a4 or a8, 16)
        end = int(b4 or b8, 16) if (b4 or b8) else start
        points.update(range(start, end + 1))
    return points


_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp"})


def test_the_invisible_class_is_pythons() -> None:
    """Cc, Cf, Zl and Zp, every code point of them but NUL (which text cannot hold)."""
    sql = _class("THEN 'must not be empty or only white space'")
    category = unicodedata.category
    python = {c for c in range(1, sys.maxunicode + 1) if category(chr(c)) in _INVISIBLE}
    assert sql == python, f"Unicode {unicodedata.unidata_version}: regenerate the class"
    assert all(has_invisible(chr(c)) for c in sql)  # the rule's categories are these


def test_the_blank_class_is_pythons_white_space() -> None:
    """A name that is all white space, as ``str.strip`` sees it, is blank."""
    sql = _class("SELECT CASE")
    assert sql == {c for c in range(sys.maxunicode + 1) if chr(c).isspace()}


def test_the_bounds_are_the_wire_models() -> None:
    """Every bound and default the function writes out is the one the coordinator's own
    enqueue takes from its single home."""
    written = {
        r"max_payload_bytes integer NOT NULL DEFAULT (\d+)": MAX_PAYLOAD_BYTES,
        r"max_kinds integer NOT NULL DEFAULT (\d+)": MAX_KINDS,
        r"max_queues integer NOT NULL DEFAULT (\d+)": MAX_QUEUES,
        r"max_groups integer NOT NULL DEFAULT (\d+)": MAX_GROUPS,
        r"'kind', (\d+), true": MAX_KIND_LENGTH,
        r"'queue', (\d+), true": MAX_QUEUE_LENGTH,
        r"'group_key', (\d+), true": MAX_KIND_LENGTH,
        r"'idempotency_key', (\d+), true": MAX_KEY_LENGTH,
        r"'max_attempts', 1, (\d+)\), (\d+)": (MAX_ATTEMPTS_LIMIT, DEFAULT_MAX_ATTEMPTS),
        r"'priority', (-?\d+), (\d+)\), (-?\d+)": (MIN_PRIORITY, MAX_PRIORITY, DEFAULT_PRIORITY),
        r"'weight', 1, (\d+)\)": MAX_WEIGHT,
        r"'timeout_seconds', (\d+)\)": int(MAX_LEASE_SECONDS),
        r"'unique.period_seconds',\s+(\d+) \* 86400\)": int(MAX_UNIQUE_PERIOD_SECONDS // 86400),
        r"jsonb_array_length\(jb->'depends_on'\) > (\d+)": MAX_PARENTS,
        r"IF depth_ > (\d+) THEN": MAX_DEPTH,
        r"strict \$\.\*\*\{(\d+)\}": MAX_JSON_DEPTH,
        r"'queue', 100, true\), '(\w+)'\)": DEFAULT_QUEUE,
        r"idempotency_key LIKE '([^%]+)%'": RESERVED_KEY_PREFIX,
    }
    for pattern, expected in written.items():
        found = re.search(pattern, _SQL)
        assert found is not None, pattern
        values = tuple(int(g) if g.lstrip("-").isdigit() else g for g in found.groups())
        assert values == (expected if isinstance(expected, tuple) else (expected,)), pattern
