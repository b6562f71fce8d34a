"""Versioned schema migrations, one folder of ``NNN_name.sql`` files per dialect.

A migration is assumed to change what a coordinator must do (a new rule, a table its
statements must keep up): once applied, a coordinator of an older release, which does not
know it, must stop serving the database (DESIGN.md §24). A migration that leaves every
older coordinator right (an index, say) says so on a line of its own::

    -- compatible: <why an older coordinator keeps every rule>
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Final

COMPATIBLE_MARK: Final = "-- compatible:"


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def compatible(self) -> bool:
        """Whether coordinators that do not know it keep every rule once it is applied."""
        return any(line.startswith(COMPATIBLE_MARK) for line in self.sql.splitlines())

    @property
    def label(self) -> str:
        """``011_name``, as the file is named."""
        return f"{self.version:03d}_{self.name}"


def migrations(dialect: str) -> list[Migration]:
    """The dialect's migrations in version order."""
    folder = resources.files(__package__).joinpath(dialect)
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            number, _, rest = entry.name.partition("_")
            found.append(Migration(int(number), rest.removesuffix(".sql"), entry.read_text()))
    return sorted(found, key=lambda m: m.version)
