"""The name rule that ``leasehold_enqueue`` (PostgreSQL migration 012) applies in the
database is the coordinator's (``fields.name_problem``): its character classes, written out
as ranges in the SQL, are the ones Python's ``unicodedata`` gives."""

from __future__ import annotations

import re
import sys
import unicodedata
from importlib import resources

from leasehold.coordinator.rules.userjson import has_invisible

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
