"""The results store: one SQLite row per run, written as each run finishes.

A row is keyed by the run's identity (``run_key``, :mod:`.identity`) and grouped by its
``config_hash``, the same without the seed.

Sweeps are resumable: :meth:`ResultsStore.claim` atomically marks a cell 'running' and returns
False for a cell that is done (never recomputed) or that a live process is running. A 'running'
row whose owner is gone (its pid is dead on this host, the host has rebooted since, or no sign of
life for ``stale_after`` seconds) and a 'failed' row are taken over and redone. Several processes
may write at once: the file is in WAL mode with a busy timeout and every write is one short
``BEGIN IMMEDIATE`` transaction.

The pieces: how a record becomes a row and back (:mod:`.store_columns`: nothing of a record is
dropped), the file's tables, schema version and migration (:mod:`.store_schema`), and who owns a
running row (:mod:`.owners`).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from .identity import ADDED_KEY_DEFAULTS, canonical_config, run_key
from .owners import abandoned, git_state, iso, now, owner_fields, pid_alive
from .store_columns import config_fields, json_default, result_fields, row_from_db
from .store_schema import (
    SCHEMA_VERSION,
    StoreError,
    check_schema,
    init_schema,
    retry_locked,
    tables,
    transaction,
)

__all__ = [
    "DEFAULT_STALE_AFTER",
    "DEFAULT_STORE",
    "SCHEMA_VERSION",
    "STORE_ENV",
    "ResultsStore",
    "StoreError",
    "default_store_path",
    "git_state",
    "json_default",
    "record_run",
]

#: Environment variable naming the default store.
STORE_ENV = "LDPGRAPH_STORE"
DEFAULT_STORE = Path("results") / "ldpgraph.db"
#: A 'running' row with no sign of life for this long is treated as interrupted.
DEFAULT_STALE_AFTER = 12 * 3600.0
#: Kept under its old name: the sweep's tests ask it whether a pid is alive.
_pid_alive = pid_alive


def default_store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path`` if given, else ``$LDPGRAPH_STORE``, else ``./results/ldpgraph.db``."""
    return Path(path or os.environ.get(STORE_ENV) or DEFAULT_STORE)


# --- the store --------------------------------------------------------------------------------


class ResultsStore:
    """One SQLite file of runs. Safe for several processes writing at once; open one instance
    per process (a connection does not cross ``fork``)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        timeout: float = 60.0,
        stale_after: float = DEFAULT_STALE_AFTER,
        read_only: bool = False,
    ) -> None:
        self.path = default_store_path(path)
        self.stale_after = float(stale_after)
        self.read_only = bool(read_only)
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a results store (an SQLite file)")
        if self.read_only:
            self._open_read_only()
            return
        if not self.path.exists():
            if not create:
                raise FileNotFoundError(
                    f"no results store at {self.path} (choose one with --store or ${STORE_ENV})"
                )
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the results store {self.path}: {exc}") from None
        try:
            self._con = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the results store {self.path}: {exc}") from None
        try:
            self._con.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            # Another program's SQLite file is refused before anything is written to it (the
            # WAL switch below rewrites its header).
            found = tables(self._con)
            if found and not {"meta", "runs"} <= found:
                raise StoreError(f"{self.path} is an SQLite file but not an ldpgraph results store")
            retry_locked(lambda: self._con.execute("PRAGMA journal_mode = WAL"), timeout)
            retry_locked(self._init_schema, timeout)
        except sqlite3.DatabaseError as exc:
            self._con.close()
            raise StoreError(f"{self.path} is not a usable ldpgraph results store: {exc}") from None
        except BaseException:
            self._con.close()
            raise

    def _open_read_only(self) -> None:
        """Open for reading only: nothing is created or migrated, and a store on a read-only
        mount (where SQLite cannot write its WAL index) is read as an immutable file."""
        if not self.path.is_file():
            raise FileNotFoundError(f"no results store at {self.path}")
        uri = self.path.resolve().as_uri()
        last: Exception | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                self._con = sqlite3.connect(uri + query, uri=True, isolation_level=None)
                self.schema_version = check_schema(self._con, self.path)
                return
            except sqlite3.DatabaseError as exc:
                self._con.close()
                last = exc
        raise StoreError(f"{self.path} is not a readable ldpgraph results store: {last}")

    def _init_schema(self) -> None:
        self.schema_version = init_schema(self._con, self.path)

    def _write(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its start."""
        return transaction(self._con)

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- claiming and recording --

    def _upsert(self, con: sqlite3.Connection, values: dict[str, Any], where: str = "") -> None:
        cols = list(values)
        update = [c for c in cols if c not in ("run_key", "started_at")]
        sets = [
            f"{c} = COALESCE(excluded.{c}, runs.{c})" if c == "sweep" else f"{c} = excluded.{c}"
            for c in update
        ]
        con.execute(
            f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))}) "
            f"ON CONFLICT (run_key) DO UPDATE SET {', '.join(sets)} {where}",
            [values[c] for c in cols],
        )

    def claim(self, config: Any, sweep: str | None = None, *, retry_failed: bool = True) -> bool:
        """Mark the run 'running' for this process; False if it is done or a live process runs
        it. A 'running' row whose owner is gone, and (with ``retry_failed``) a 'failed' row, is
        taken over."""
        cfg = canonical_config(config)
        fields = config_fields(cfg)
        stamp = iso(now())
        with self._write() as con:
            row = con.execute(
                "SELECT status, pid, host, owner, heartbeat_at FROM runs WHERE run_key = ?",
                (fields["run_key"],),
            ).fetchone()
            if row is not None:
                status, pid, host, owner, beat = row
                if status == "done":
                    return False
                if status == "failed" and not retry_failed:
                    return False
                if status == "running" and not abandoned(pid, host, owner, beat, self.stale_after):
                    return False
            values = {
                **fields,
                **owner_fields(),
                "sweep": sweep,
                "status": "running",
                "started_at": stamp,
                "heartbeat_at": stamp,
                "finished_at": None,
                "error": None,
            }
            if row is None:
                self._upsert(con, values)
            else:
                sets = ", ".join(
                    f"{c} = COALESCE(?, sweep)" if c == "sweep" else f"{c} = ?"
                    for c in values
                    if c != "run_key"
                )
                con.execute(
                    f"UPDATE runs SET {sets}, attempts = attempts + 1 WHERE run_key = ?",
                    [v for c, v in values.items() if c != "run_key"] + [fields["run_key"]],
                )
        return True

    def finish(self, config: Any, result: dict[str, Any], sweep: str | None = None) -> int:
        """Store the record of a finished run (the dict ``pipeline.run`` returns) as 'done';
        returns the row id. Works with or without a prior :meth:`claim`."""
        cfg = canonical_config(config)
        values = {
            **config_fields(cfg),
            **owner_fields(),
            "sweep": sweep,
            "status": "done",
            **result_fields(result, now()),
        }
        with self._write() as con:
            self._upsert(con, values)
            row = con.execute(
                "SELECT id FROM runs WHERE run_key = ?", (values["run_key"],)
            ).fetchone()
        return int(row[0])

    def fail(self, config: Any, message: str, sweep: str | None = None) -> None:
        """Mark the run 'failed' with ``message`` (a later :meth:`claim` retries it). A run
        already 'done' stays done."""
        cfg = canonical_config(config)
        stamp = iso(now())
        values = {
            **config_fields(cfg),
            **owner_fields(),
            "sweep": sweep,
            "status": "failed",
            "started_at": stamp,
            "finished_at": stamp,
            "heartbeat_at": stamp,
            "error": str(message),
        }
        with self._write() as con:
            self._upsert(con, values, where="WHERE runs.status != 'done'")

    def mark_interrupted(self, sweep: str, pids: set[int]) -> int:
        """Mark the rows of ``sweep`` that processes ``pids`` of this host were running as
        'failed' with the error "interrupted" (the sweep was stopped, e.g. by Ctrl-C): at once,
        not when their owners are found dead; a resumed sweep redoes them as it redoes any
        failed run. Returns how many were marked."""
        if not pids:
            return 0
        stamp = iso(now())
        marks = ", ".join("?" * len(pids))
        with self._write() as con:
            cur = con.execute(
                "UPDATE runs SET status = 'failed', error = ?, finished_at = ?, heartbeat_at = ? "
                f"WHERE status = 'running' AND sweep = ? AND host = ? AND pid IN ({marks})",
                (
                    "interrupted: the sweep was stopped; a resumed sweep redoes it",
                    stamp,
                    stamp,
                    sweep,
                    owner_fields()["host"],
                    *sorted(int(p) for p in pids),
                ),
            )
        return int(cur.rowcount)

    # -- reading --

    def supersede_finals(
        self, sweep: str, entry: str, dataset: str, model: str, epsilon: float, keep: str
    ) -> int:
        """Set aside the final runs of one sweep cell whose configuration hash is not ``keep``
        (``phase`` becomes ``"superseded"``): their grid point lost to a search the grid grew
        since, so reports must not average them with the new winner's. Rows are kept, not
        deleted (they are still finished, reusable runs). Returns how many were set aside."""
        with self._write() as con:
            cur = con.execute(
                "UPDATE runs SET extra = json_set(extra, '$.phase', 'superseded') "
                "WHERE sweep = ? AND dataset = ? AND model = ? AND abs(epsilon - ?) <= ? "
                "AND json_extract(extra, '$.phase') = 'final' "
                "AND json_extract(extra, '$.entry') = ? AND config_hash != ?",
                (
                    sweep,
                    dataset,
                    model,
                    float(epsilon),
                    1e-9 * max(1.0, abs(float(epsilon))),
                    entry,
                    keep,
                ),
            )
            return cur.rowcount

    def count_with_value(self, sweep: str, entry: str, key: str, value: Any) -> int:
        """How many runs of protocol entry ``entry`` of sweep ``sweep`` have configuration key
        ``key`` at ``value`` (a configuration without the key counts as its
        :data:`ADDED_KEY_DEFAULTS` value)."""
        if not key.isidentifier():
            raise ValueError(f"bad configuration key {key!r}")
        missing = ADDED_KEY_DEFAULTS.get(key)
        row = self._con.execute(
            f"SELECT COUNT(*) FROM runs WHERE sweep = ? AND json_extract(extra, '$.entry') = ? "
            f"AND COALESCE(json_extract(config, '$.{key}'), ?) = ?",
            (sweep, entry, missing, value),
        ).fetchone()
        return int(row[0])

    def get(self, config: Any) -> dict[str, Any] | None:
        """The row of this run, or None."""
        rows = self._select("WHERE run_key = ?", [run_key(config)])
        return rows[0] if rows else None

    def is_done(self, config: Any) -> bool:
        row = self._con.execute(
            "SELECT status FROM runs WHERE run_key = ?", (run_key(config),)
        ).fetchone()
        return row is not None and row[0] == "done"

    def rows(
        self,
        *,
        protocol: str | None = None,
        dataset: str | None = None,
        model: str | None = None,
        epsilon: float | None = None,
        sweep: str | None = None,
        status: str | None = None,
        seed: int | None = None,
        config_hash: str | None = None,
    ) -> list[dict[str, Any]]:
        """The runs matching every given filter, oldest first, each a dict of the columns with
        the JSON columns parsed."""
        where, args = [], []
        for name, value in (
            ("protocol", protocol),
            ("dataset", dataset),
            ("model", model),
            ("sweep", sweep),
            ("status", status),
            ("seed", seed),
            ("config_hash", config_hash),
        ):
            if value is not None:
                where.append(f"{name} = ?")
                args.append(value)
        if epsilon is not None:
            where.append("abs(epsilon - ?) <= ?")
            args += [float(epsilon), 1e-9 * max(1.0, abs(float(epsilon)))]
        return self._select(("WHERE " + " AND ".join(where)) if where else "", args)

    def _select(self, where: str, args: list[Any]) -> list[dict[str, Any]]:
        cur = self._con.execute(f"SELECT * FROM runs {where} ORDER BY id", args)
        names = [d[0] for d in cur.description]
        return [row_from_db(names, values) for values in cur.fetchall()]


# --- records ----------------------------------------------------------------------------------


def record_run(
    store_path: str | os.PathLike[str] | None,
    config: Any,
    result: dict[str, Any],
    sweep: str | None = None,
) -> int:
    """Store one finished run in the store at ``store_path`` (None: the default store);
    returns its row id."""
    with ResultsStore(store_path) as store:
        return store.finish(config, result, sweep=sweep)
