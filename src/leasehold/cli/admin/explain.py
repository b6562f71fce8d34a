"""``leasehold explain ID``: why a job is not running right now (``GET /jobs/{id}/explain``,
DESIGN.md §19), as a table of reasons with the time each one ends, when that is known."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import RenderableType
from rich.text import Text

from leasehold.cli.admin.connect import AsJson, Token, TokenFile, Url, connected
from leasehold.cli.admin.render import status_text, utc_when
from leasehold.cli.admin.table import Cell, Column, Output, fitted
from leasehold.cli.admin.wire import print_json
from leasehold.cli.terminal import plain
from leasehold.client import DEFAULT_URL

REASON_COLUMNS = (
    Column("REASON"),
    Column("UNTIL (UTC)"),
    Column("WHY", shrink=20),
)


def explain(
    job_id: Annotated[int, typer.Argument(metavar="ID", help="The job's id.")],
    url: Url = DEFAULT_URL,
    token: Token = None,
    token_file: TokenFile = None,
    as_json: AsJson = False,
) -> None:
    """Why a job is not running now, and until when. Each reason a lease would meet: its
    run-after, its queue paused, the parents it waits for, its kind's or group's limit, its
    rate and when it refills, groups taking their turn first, no live worker for its kind,
    the jobs ahead of it."""
    with connected(url, token, token_file) as client:
        found = client.explain(job_id)
    if as_json:
        print_json(found)
        return
    out = Output()
    out.print(headline(found), reasons_table(found["reasons"], out.width))


def headline(found: dict[str, Any]) -> Text:
    """``job 7 (queued): runnable ...``, the job's status in its colour."""
    line = Text.assemble(
        plain(f"job {found['job_id']} ("), status_text(str(found["status"])), plain("): ")
    )
    if found["runnable"]:
        line.append("runnable: the next lease that asks for its kind and queue may take it")
    elif found["status"] == "running":
        line.append("running")
    elif found["status"] in ("completed", "dead", "cancelled"):
        line.append("finished: it will not run unless requeued")
    else:
        line.append("not runnable now, because:")
    return line


def reasons_table(reasons: list[dict[str, Any]], width: int | None) -> RenderableType:
    rows: list[list[Cell]] = [
        [str(r["code"]), _until(r.get("until")), str(r["message"])] for r in reasons
    ]
    return fitted(REASON_COLUMNS, rows, width, caption=None if rows else "nothing holds it back")


def _until(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    try:
        return utc_when(datetime.fromisoformat(value).astimezone(UTC)).removesuffix(" UTC")
    except ValueError:
        return value  # shown as sent (and made safe by the table)
