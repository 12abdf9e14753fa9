"""The results store's file: its tables, its schema version, and the one migration.

A store is an SQLite file with a ``meta`` table (``schema_version``, ``created_at``) and a
``runs`` table, one row per run (:mod:`.store`). Version 1 keyed runs by every protocol's
parameters, version 2 by the chosen protocol's only (identity version 2, :mod:`.identity`); a
version-1 store is re-keyed once when opened writable (:func:`rekey_from_1`). A store written by
a newer ldpgraph is refused. Every write here is one ``BEGIN IMMEDIATE`` transaction
(:func:`transaction`), so that several processes may open one store at once.
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .identity import config_hash, run_key
from .owners import iso, now

#: Version of the store: 1 keyed runs by every protocol's parameters, 2 by the chosen
#: protocol's only (identity version 2); a version-1 store is re-keyed once when opened
#: (:func:`rekey_from_1`). A store written by a newer ldpgraph is refused.
SCHEMA_VERSION = 2

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    run_key TEXT NOT NULL UNIQUE,
    config_hash TEXT NOT NULL,
    sweep TEXT,
    status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 1,
    started_at TEXT,
    finished_at TEXT,
    heartbeat_at TEXT,
    pid INTEGER,
    host TEXT,
    owner TEXT,
    protocol TEXT,
    dataset TEXT,
    model TEXT,
    epsilon REAL,
    seed INTEGER,
    val_acc REAL,
    test_acc REAL,
    config TEXT NOT NULL,
    metrics TEXT,
    privacy TEXT,
    timings TEXT,
    graph TEXT,
    release TEXT,
    versions TEXT,
    extra TEXT,
    fingerprint TEXT,
    command TEXT,
    git_commit TEXT,
    git_dirty INTEGER,
    error TEXT
);
CREATE INDEX runs_config_hash ON runs (config_hash);
CREATE INDEX runs_sweep ON runs (sweep);
CREATE INDEX runs_select ON runs (protocol, dataset, model, epsilon);
"""


class StoreError(ValueError):
    """The store cannot be used (not a store, a newer schema, unwritable); one line for users."""


@contextmanager
def transaction(con: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction holding the database's write lock from its start."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise


def retry_locked(step: Callable[[], Any], timeout: float) -> None:
    """Run ``step``, retrying while the database is locked. Switching a fresh file to WAL can
    fail at once with "database is locked" (SQLite does not wait on the busy handler there)
    when several processes open a new store together."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02 + 0.05 * random.random())


def tables(con: sqlite3.Connection) -> set[str]:
    rows = con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {r[0] for r in rows}


def _version(con: sqlite3.Connection) -> str | None:
    row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else row[0]


def check_schema(con: sqlite3.Connection, path: Path) -> int:
    """The read-only half of :func:`init_schema`: an ldpgraph store of today's schema."""
    if not {"meta", "runs"} <= tables(con):
        raise StoreError(f"{path} is an SQLite file but not an ldpgraph results store")
    found = _version(con)
    if found is None or int(found) != SCHEMA_VERSION:
        found = "none" if found is None else found
        raise StoreError(
            f"the results store {path} has schema version {found}; this ldpgraph reads "
            f"{SCHEMA_VERSION} read-only (open it once writable to migrate an old one)"
        )
    return SCHEMA_VERSION


def init_schema(con: sqlite3.Connection, path: Path) -> int:
    """Create the tables in an empty file, check an existing store's, migrate a version-1
    store; returns the schema version (today's)."""
    if not tables(con):
        with transaction(con):
            if not tables(con):  # another process may have been first
                for statement in SCHEMA.split(";"):
                    if statement.strip():
                        con.execute(statement)
                con.execute(
                    "INSERT INTO meta (key, value) VALUES ('schema_version', ?), ('created_at', ?)",
                    (str(SCHEMA_VERSION), iso(now())),
                )
    if not {"meta", "runs"} <= tables(con):
        raise StoreError(f"{path} is an SQLite file but not an ldpgraph results store")
    found = _version(con)
    if found is None:
        raise StoreError(f"{path} has no schema version; not an ldpgraph results store")
    version = int(found)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the results store {path} has schema version {version}, newer than this "
            f"ldpgraph understands ({SCHEMA_VERSION}): upgrade ldpgraph to read it"
        )
    if version == 1:
        rekey_from_1(con)
        version = SCHEMA_VERSION
    elif version < SCHEMA_VERSION:
        raise StoreError(f"the results store {path} has an unknown old schema {version}")
    return version


def rekey_from_1(con: sqlite3.Connection) -> None:
    """Re-key a version-1 store once: every row's ``run_key`` and ``config_hash`` from its
    stored configuration with today's identity, which leaves out the parameters of other
    protocols. Rows that were different runs only by a parameter their protocol ignores become
    one run: the first finished one stays (else the first), the others move, whole, to the
    table ``superseded_runs`` — nothing is deleted. One transaction; a store another process
    has migrated meanwhile is left alone."""
    with transaction(con):
        if int(_version(con) or 0) != 1:
            return
        rows = con.execute("SELECT id, status, config FROM runs ORDER BY id").fetchall()
        status_of = {row_id: status for row_id, status, _ in rows}
        keep: dict[str, int] = {}
        hashes: dict[int, tuple[str, str]] = {}
        for row_id, status, config in rows:
            cfg = json.loads(config)
            key = run_key(cfg)
            hashes[row_id] = (key, config_hash(cfg))
            first = keep.get(key)
            if first is None or (status == "done" and status_of[first] != "done"):
                keep[key] = row_id
        dropped = [row_id for row_id in hashes if row_id not in set(keep.values())]
        con.execute("CREATE TABLE IF NOT EXISTS superseded_runs AS SELECT * FROM runs WHERE 0")
        for row_id in dropped:
            con.execute("INSERT INTO superseded_runs SELECT * FROM runs WHERE id = ?", (row_id,))
            con.execute("DELETE FROM runs WHERE id = ?", (row_id,))
        # Through a temporary key: a new key may equal another row's old one.
        con.execute("UPDATE runs SET run_key = 'v1:' || run_key")
        for row_id in keep.values():
            key, group = hashes[row_id]
            con.execute(
                "UPDATE runs SET run_key = ?, config_hash = ? WHERE id = ?", (key, group, row_id)
            )
        con.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
        )
        con.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES ('rekeyed_from_1', ?)",
            (f"{iso(now())}; {len(dropped)} duplicate run(s) moved to superseded_runs",),
        )
