"""The fenced store: a side-effect table that accepts a write only under a token at least as
high as the highest it has seen for that job (Kleppmann's storage-side check), and logs
every accepted and rejected write."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS fenced (
    job_id INTEGER PRIMARY KEY,
    token INTEGER NOT NULL,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS writes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    worker TEXT NOT NULL,
    accepted INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    worker TEXT NOT NULL,
    started_at REAL NOT NULL,
    known_expiry REAL NOT NULL,
    PRIMARY KEY (job_id, token, worker, started_at)
);
CREATE TABLE IF NOT EXISTS spawns (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    first_key TEXT NOT NULL,
    created INTEGER NOT NULL,
    again INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS joins (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    token INTEGER NOT NULL,
    parents TEXT NOT NULL
);
"""


def connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA busy_timeout = 60000")
    return conn


def create(path: Path) -> None:
    conn = connect(path)
    conn.executescript(SCHEMA)
    conn.close()


def fenced_write(
    conn: sqlite3.Connection, job_id: int, token: int, worker: str, value: str
) -> bool:
    """Write ``value`` for ``job_id`` if ``token`` is not older than what the store has seen."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT token FROM fenced WHERE job_id = ?", (job_id,)).fetchone()
        accepted = row is None or row[0] <= token
        if accepted:
            conn.execute(
                "INSERT INTO fenced (job_id, token, value) VALUES (?, ?, ?)"
                " ON CONFLICT (job_id) DO UPDATE SET token = excluded.token, value = excluded.value",
                (job_id, token, value),
            )
        conn.execute(
            "INSERT INTO writes (job_id, token, worker, accepted, at) VALUES (?, ?, ?, ?, ?)",
            (job_id, token, worker, int(accepted), time.time()),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return accepted


def record_lease(
    conn: sqlite3.Connection, job_id: int, token: int, worker: str, started: float, expiry: float
) -> None:
    """What a worker believed: it held ``token`` from ``started`` until at least ``expiry``."""
    conn.execute(
        "INSERT OR REPLACE INTO leases (job_id, token, worker, started_at, known_expiry)"
        " VALUES (?, ?, ?, ?, ?)",
        (job_id, token, worker, started, expiry),
    )


def record_spawn(
    conn: sqlite3.Connection,
    job_id: int,
    token: int,
    attempt: int,
    first_key: str,
    answers: list[dict[str, object]],
) -> None:
    """What one ``POST /jobs/{id}/children`` answered: how many children it made and how
    many it gave back as made before (a parent leased again spawning the same keys)."""
    created = sum(bool(a["created"]) for a in answers)
    conn.execute(
        "INSERT INTO spawns (job_id, token, attempt, first_key, created, again)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (job_id, token, attempt, first_key, created, len(answers) - created),
    )


def record_join(conn: sqlite3.Connection, job_id: int, token: int, parents: str) -> None:
    """The parents a continuation's lease carried (JSON), under that lease's token."""
    conn.execute(
        "INSERT INTO joins (job_id, token, parents) VALUES (?, ?, ?)", (job_id, token, parents)
    )
