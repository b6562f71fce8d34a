"""Tables in the style of ``docker ps``: on a terminal they fit its width, and piped they
are one line per row with nothing cut.

rich squeezes every column alike when a table is too wide, wrapping ids and times over
several lines and cutting headers short. Here, on a terminal, the columns that identify a
row keep their width, and only the ones marked ``shrink`` give way (the widest first),
their text wrapped onto more lines, never cut; a header of several words may wrap between
them. Piped or redirected (``leasehold jobs | grep timeout``), a table is as wide as its
text: one line per row, every cell in full, no padding at the ends of lines.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from rich import box
from rich.cells import cell_len
from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from leasehold.cli.terminal import plain

Cell = str | Text
# Between two columns: one space of padding and the (blank) column separator.
GAP = 2
# Off a terminal, lines are as long as their text: rich needs some width, so a large one.
_UNLIMITED: Final = 1_000_000


class Output:
    """Where a command prints its tables: ``width`` is the terminal's, or None off a
    terminal, where nothing is cut or wrapped to fit."""

    def __init__(self) -> None:
        self._console = Console()
        self.width: int | None = self._console.width if self._console.is_terminal else None

    def print(self, *things: RenderableType) -> None:
        """Each of ``things`` from a line of its own."""
        if self.width is not None:
            for thing in things:
                self._console.print(thing)
            return
        wide = Console(width=_UNLIMITED, color_system=None)
        with wide.capture() as captured:
            for thing in things:
                wide.print(thing)
        # rich pads every line of a table to its width: trailing blanks help no reader.
        text = "\n".join(line.rstrip() for line in captured.get().splitlines())
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


@dataclass(frozen=True, slots=True)
class Column:
    header: str
    shrink: int | None = None  # the narrowest it may become; None: never narrower than its text
    cap: int | None = None  # the widest it may become
    justify: Literal["left", "right"] = "left"


def fitted(
    columns: Sequence[Column],
    rows: Sequence[Sequence[Cell]],
    width: int | None,
    *,
    title: str | None = None,
    caption: str | None = None,
) -> Table:
    """A table of ``rows`` no wider than ``width``, if the unshrinkable columns allow; with
    ``width`` None (not a terminal), every column as wide as its widest cell, uncapped.

    Every header, cell, title and caption is shown as its text (``terminal.plain``): what
    the coordinator sent is never read as markup nor reaches the terminal raw."""
    rows = [[_cell(cell) for cell in row] for row in rows]
    cells = [[row[i] for row in rows] for i in range(len(columns))]
    if width is None:
        widths = [
            _natural(c, column_cells, capped=False)
            for c, column_cells in zip(columns, cells, strict=True)
        ]
    else:
        natural = [
            _natural(c, column_cells) for c, column_cells in zip(columns, cells, strict=True)
        ]
        floors = [
            _floor(c, column_cells, w)
            for c, column_cells, w in zip(columns, cells, natural, strict=True)
        ]
        widths = _shrink(natural, floors, width - GAP * (len(columns) - 1))
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
            no_wrap=width is None,
            overflow="fold",  # a word longer than its column goes on, never cut
        )
    for row in rows:
        table.add_row(*row)
    return table


def _cell(cell: Cell) -> Text:
    # Our own Text cells carry one style (a status's colour): kept, over its safe text.
    if isinstance(cell, Text):
        return plain(cell.plain, cell.style)
    return plain(str(cell))  # str(): an answer may hold a number where text belongs


def _natural(column: Column, cells: Sequence[Cell], *, capped: bool = True) -> int:
    widest = max([cell_len(column.header), *(cell_len(str(c)) for c in cells)])
    return min(widest, column.cap) if capped and column.cap is not None else widest


def _floor(column: Column, cells: Sequence[Cell], natural: int) -> int:
    """The narrowest ``column`` may become: its ``shrink``; else its widest cell, with the
    header wrapped between its words."""
    if column.shrink is not None:
        return min(natural, column.shrink)
    words = max(cell_len(word) for word in column.header.split() or [""])
    return max([words, *(cell_len(str(c)) for c in cells)])


def _shrink(widths: list[int], floors: Sequence[int], room: int) -> list[int]:
    """Take a character at a time from the column with the most to give, until it fits."""
    widths = list(widths)
    while sum(widths) > room:
        slack = [w - f for w, f in zip(widths, floors, strict=True)]
        widest = max(range(len(widths)), key=lambda i: (slack[i], widths[i]))
        if slack[widest] <= 0:
            break  # nothing left to give: the terminal is narrower than the table can be
        widths[widest] -= 1
    return widths
