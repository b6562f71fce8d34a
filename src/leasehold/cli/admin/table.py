"""Tables that fit the terminal with one line per row, in the style of ``docker ps``.

rich squeezes every column alike when a table is too wide, wrapping ids and times over
several lines. Here the columns that identify a row keep their width, and only the ones
marked ``shrink`` give way (the widest first), their text cut short with an ellipsis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from rich import box
from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

from leasehold.cli.terminal import plain

Cell = str | Text
# Between two columns: one space of padding and the (blank) column separator.
GAP = 2


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    shrink: int | None = None  # the narrowest it may become; None: never narrower than its text
    cap: int | None = None  # the widest it may become
    justify: Literal["left", "right"] = "left"


def fitted(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int,
    *,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A table of ``rows`` no wider than ``width``, if the unshrinkable columns allow.

    Every header, cell, title and caption is shown as its text (``terminal.plain``): what
    the coordinator sent is never read as markup nor reaches the terminal raw."""
    rows = [[_cell(cell) for cell in row] for row in rows]
    natural = [_natural(c, [row[i] for row in rows]) for i, c in enumerate(columns)]
    widths = _shrink(natural, columns, width - GAP * (len(columns) - 1))
    table = Table(
        box=box.SIMPLE_HEAD,
        padding=(0, 1, 0, 0),
        show_edge=False,
        pad_edge=False,
        header_style="bold",
        title=None if title is None else plain(title),
        title_justify="left",
        title_style="bold",
        caption=None if caption is None else plain(caption),
        caption_justify="left",
    )
    for column, column_width in zip(columns, widths, strict=True):
        table.add_column(
            plain(column.header),
            width=column_width,
            justify=column.justify,
            no_wrap=True,
            overflow="ellipsis",
        )
    for row in rows:
        table.add_row(*row)
    return table


def _cell(cell: Cell) -> Text:
    # Our own Text cells carry one style (a status's colour): kept, over its safe text.
    if isinstance(cell, Text):
        return plain(cell.plain, cell.style)
    return plain(str(cell))  # str(): an answer may hold a number where text belongs


def _natural(column: Column, cells: Sequence[Cell]) -> int:
    widest = max([cell_len(column.header), *(cell_len(str(c)) for c in cells)])
    return min(widest, column.cap) if column.cap is not None else widest


def _shrink(widths: list[int], columns: Sequence[Column], room: int) -> list[int]:
    """Take a character at a time from the column with the most to give, until it fits."""
    widths = list(widths)
    while sum(widths) > room:
        slack = [
            w - c.shrink if c.shrink is not None else 0
            for w, c in zip(widths, columns, strict=True)
        ]
        widest = max(range(len(widths)), key=lambda i: (slack[i], widths[i]))
        if slack[widest] <= 0:
            break  # nothing left to give: the terminal is narrower than the table can be
        widths[widest] -= 1
    return widths
