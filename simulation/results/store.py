"""The results store: one SQLite row per run, written as each run finishes.

A row is keyed by the run's identity (``run_key``, :mod:`.identity`) and grouped by its
``config_hash``, the same without the seed.

Sweeps are resumable: :meth:`ResultsStore.claim` atomically marks a cell 'running' and returns
False for a cell that is done (never recomputed) or that a live process is running. A 'running'
row whose owner is gone (its pid is dead on this host, the host has rebooted since, or no sign of
life for ``stale_after`` seconds) and a 'failed' row are taken over and redone. Several processes
may write at once: the file is in WAL mode with a busy timeout and every write is one short
``BEGIN IMMEDIATE`` transaction.

Nothing of a result record is dropped: the keys of :func:`ldpgraph.simulation.pipeline.run`'s
record go to their columns, every metric's section (``accuracy``, ``training``, ``graph_stats``,
``lp``, ``attack``, ``skipped_metrics``, …: :func:`ldpgraph.server.record.metric_sections`) to
the ``metrics`` column, anything else to ``extra``. Stores written before every section went to
``metrics`` kept the sections other than accuracy and training in ``extra``: rows read from
them show those sections under ``metrics`` too (:meth:`ResultsStore.rows`).
"""

from __future__ import annotations

import functools
import json
import os
import random
import socket
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ldpgraph.server.record import metric_sections

from .identity import ADDED_KEY_DEFAULTS, canonical_config, config_hash, run_key

#: Version of the store: 1 keyed runs by every protocol's parameters, 2 by the chosen
#: protocol's only (identity version 2); a version-1 store is re-keyed once when opened
#: (:meth:`ResultsStore._rekey_from_1`). A store written by a newer ldpgraph is refused.
SCHEMA_VERSION = 2
#: Environment variable naming the default store.
STORE_ENV = "LDPGRAPH_STORE"
DEFAULT_STORE = Path("results") / "ldpgraph.db"
#: A 'running' row with no sign of life for this long is treated as interrupted.
DEFAULT_STALE_AFTER = 12 * 3600.0

#: The record keys of ``pipeline.run`` that have their own JSON column (``metrics`` holds every
#: metric section); any other key of a record is kept in ``extra``.
_RECORD_COLUMNS = ("privacy", "timings", "graph", "release", "versions")
_RECORD_KNOWN = {"config", "fingerprint", "command", *_RECORD_COLUMNS}
_JSON_COLUMNS = ("config", "metrics", *_RECORD_COLUMNS, "extra")

_SCHEMA = """
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


# --- environment ------------------------------------------------------------------------------


def default_store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """``path`` if given, else ``$LDPGRAPH_STORE``, else ``./results/ldpgraph.db``."""
    return Path(path or os.environ.get(STORE_ENV) or DEFAULT_STORE)


@functools.lru_cache(maxsize=1)
def git_state() -> tuple[str | None, bool | None]:
    """(commit, dirty) of the ldpgraph source checkout this module runs from, or (None, None)
    when it is not one (an installed wheel). Cached."""
    root = Path(__file__).resolve().parents[2]

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()

    try:
        if Path(git("rev-parse", "--show-toplevel")).resolve() != root:
            return None, None  # some other repository around an installed copy
        commit = git("rev-parse", "HEAD")
        dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
        return commit, dirty
    except (OSError, subprocess.SubprocessError):
        return None, None


@functools.lru_cache(maxsize=1)
def _machine() -> str:
    """This host's boot and pid namespace: pids are only comparable when it matches."""
    parts = []
    for path in ("/proc/sys/kernel/random/boot_id", "/proc/self/ns/pid"):
        try:
            parts.append(os.readlink(path) if path.endswith("/pid") else Path(path).read_text())
        except OSError:
            parts.append("")
    return "/".join(p.strip() for p in parts)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    except OSError:
        return False
    try:  # a zombie has finished: it is not running our cell
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _now() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="seconds")


def json_default(obj: Any) -> Any:
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return str(obj)


def _dumps(obj: Any) -> str | None:
    if obj is None:
        return None
    return json.dumps(obj, default=json_default, ensure_ascii=False)


def _float(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


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
            self._retry_locked(lambda: self._con.execute("PRAGMA journal_mode = WAL"), timeout)
            self._retry_locked(self._init_schema, timeout)
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
                self._check_schema()
                return
            except sqlite3.DatabaseError as exc:
                self._con.close()
                last = exc
        raise StoreError(f"{self.path} is not a readable ldpgraph results store: {last}")

    def _check_schema(self) -> None:
        """The read-only half of :meth:`_init_schema`: an ldpgraph store of today's schema."""
        if not {"meta", "runs"} <= self._tables():
            raise StoreError(f"{self.path} is an SQLite file but not an ldpgraph results store")
        row = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            found = "none" if row is None else row[0]
            raise StoreError(
                f"the results store {self.path} has schema version {found}; this ldpgraph reads "
                f"{SCHEMA_VERSION} read-only (open it once writable to migrate an old one)"
            )
        self.schema_version = SCHEMA_VERSION

    # -- housekeeping --

    @staticmethod
    def _retry_locked(step: Any, timeout: float) -> None:
        """Run ``step``, retrying while the database is locked. Switching a fresh file to WAL
        can fail at once with "database is locked" (SQLite does not wait on the busy handler
        there) when several processes open a new store together."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                step()
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02 + 0.05 * random.random())

    def _tables(self) -> set[str]:
        rows = self._con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        return {r[0] for r in rows}

    def _init_schema(self) -> None:
        if not self._tables():
            with self._write() as con:
                if not self._tables():  # another process may have been first
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            con.execute(statement)
                    con.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', ?), "
                        "('created_at', ?)",
                        (str(SCHEMA_VERSION), _iso(_now())),
                    )
        tables = self._tables()
        if not {"meta", "runs"} <= tables:
            raise StoreError(f"{self.path} is an SQLite file but not an ldpgraph results store")
        row = self._con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise StoreError(f"{self.path} has no schema version; not an ldpgraph results store")
        version = int(row[0])
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"the results store {self.path} has schema version {version}, newer than this "
                f"ldpgraph understands ({SCHEMA_VERSION}): upgrade ldpgraph to read it"
            )
        if version == 1:
            self._rekey_from_1()
            version = SCHEMA_VERSION
        elif version < SCHEMA_VERSION:
            raise StoreError(f"the results store {self.path} has an unknown old schema {version}")
        self.schema_version = version

    def _rekey_from_1(self) -> None:
        """Re-key a version-1 store once: every row's ``run_key`` and ``config_hash`` from its
        stored configuration with today's identity, which leaves out the parameters of other
        protocols. Rows that were different runs only by a parameter their protocol ignores
        become one run: the first finished one stays (else the first), the others move, whole,
        to the table ``superseded_runs`` — nothing is deleted. One transaction; a store another
        process has migrated meanwhile is left alone."""
        with self._write() as con:
            (version,) = con.execute(
                "SELECT value FROM meta WHERE key = 'schema_version'"
            ).fetchone()
            if int(version) != 1:
                return
            rows = con.execute("SELECT id, status, config FROM runs ORDER BY id").fetchall()
            keep: dict[str, int] = {}
            hashes: dict[int, tuple[str, str]] = {}
            for row_id, status, config in rows:
                cfg = json.loads(config)
                key = run_key(cfg)
                hashes[row_id] = (key, config_hash(cfg))
                first = keep.get(key)
                if first is None or (status == "done" and self._status(first) != "done"):
                    keep[key] = row_id
            dropped = [row_id for row_id in hashes if row_id not in set(keep.values())]
            con.execute("CREATE TABLE IF NOT EXISTS superseded_runs AS SELECT * FROM runs WHERE 0")
            for row_id in dropped:
                con.execute(
                    "INSERT INTO superseded_runs SELECT * FROM runs WHERE id = ?", (row_id,)
                )
                con.execute("DELETE FROM runs WHERE id = ?", (row_id,))
            # Through a temporary key: a new key may equal another row's old one.
            con.execute("UPDATE runs SET run_key = 'v1:' || run_key")
            for row_id in keep.values():
                key, group = hashes[row_id]
                con.execute(
                    "UPDATE runs SET run_key = ?, config_hash = ? WHERE id = ?",
                    (key, group, row_id),
                )
            con.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),)
            )
            con.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('rekeyed_from_1', ?)",
                (f"{_iso(_now())}; {len(dropped)} duplicate run(s) moved to superseded_runs",),
            )

    def _status(self, row_id: int) -> str:
        (status,) = self._con.execute("SELECT status FROM runs WHERE id = ?", (row_id,)).fetchone()
        return str(status)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction holding the database's write lock from its start."""
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise

    def close(self) -> None:
        self._con.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- claiming and recording --

    def _abandoned(
        self, pid: int | None, host: str | None, owner: str | None, beat: str | None
    ) -> bool:
        """Whether a 'running' row's owner is gone."""
        if host == socket.gethostname():
            here = _machine()
            if owner == here and pid is not None:
                if not _pid_alive(int(pid)):
                    return True
            elif owner and here and owner.split("/")[0] != here.split("/")[0]:
                return True  # this host has rebooted since the row was claimed
        if beat is None:
            return True
        age = (_now() - datetime.fromisoformat(beat)).total_seconds()
        return age > self.stale_after

    def _owner_fields(self) -> dict[str, Any]:
        commit, dirty = git_state()
        return {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "owner": _machine(),
            "git_commit": commit,
            "git_dirty": None if dirty is None else int(dirty),
        }

    @staticmethod
    def _config_fields(cfg: dict[str, Any]) -> dict[str, Any]:
        seed = cfg.get("seed")
        return {
            "run_key": run_key(cfg),
            "config_hash": config_hash(cfg),
            "protocol": cfg.get("protocol"),
            "dataset": cfg.get("dataset"),
            "model": cfg.get("model"),
            "epsilon": _float(cfg.get("epsilon")),
            "seed": int(seed) if isinstance(seed, int | float) else None,
            "config": _dumps(cfg),
        }

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
        fields = self._config_fields(cfg)
        now = _iso(_now())
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
                if status == "running" and not self._abandoned(pid, host, owner, beat):
                    return False
            values = {
                **fields,
                **self._owner_fields(),
                "sweep": sweep,
                "status": "running",
                "started_at": now,
                "heartbeat_at": now,
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
        accuracy = result.get("accuracy") or {}
        finished = _now()
        total = _float((result.get("timings") or {}).get("total"))
        started = finished.timestamp() - (total or 0.0)
        sections = metric_sections(result)
        extra = {k: v for k, v in result.items() if k not in _RECORD_KNOWN and k not in sections}
        metrics = {
            "accuracy": accuracy,
            "training": result.get("training") or {},
            **{k: v for k, v in sections.items() if k not in ("accuracy", "training")},
        }
        values = {
            **self._config_fields(cfg),
            **self._owner_fields(),
            "sweep": sweep,
            "status": "done",
            "started_at": _iso(datetime.fromtimestamp(started, UTC)),
            "finished_at": _iso(finished),
            "heartbeat_at": _iso(finished),
            "val_acc": _float(accuracy.get("val")),
            "test_acc": _float(accuracy.get("test")),
            "metrics": _dumps(metrics),
            **{c: _dumps(result.get(c)) for c in _RECORD_COLUMNS},
            "extra": _dumps(extra) if extra else None,
            "fingerprint": result.get("fingerprint"),
            "command": result.get("command"),
            "error": None,
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
        now = _iso(_now())
        values = {
            **self._config_fields(cfg),
            **self._owner_fields(),
            "sweep": sweep,
            "status": "failed",
            "started_at": now,
            "finished_at": now,
            "heartbeat_at": now,
            "error": str(message),
        }
        with self._write() as con:
            self._upsert(con, values, where="WHERE runs.status != 'done'")

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
        out = []
        for values in cur.fetchall():
            row = dict(zip(names, values, strict=True))
            for c in _JSON_COLUMNS:
                row[c] = json.loads(row[c]) if row[c] is not None else None
            _legacy_sections(row)
            if row["git_dirty"] is not None:
                row["git_dirty"] = bool(row["git_dirty"])
            out.append(row)
        return out


def _legacy_sections(row: dict[str, Any]) -> None:
    """A row written before every metric section went to ``metrics`` kept the sections other
    than accuracy and training in ``extra``: move them (every mapping there) to ``metrics``."""
    extra = row.get("extra")
    if not extra:
        return
    moved = {k: v for k, v in extra.items() if isinstance(v, dict)}
    if moved:
        row["metrics"] = {**(row.get("metrics") or {}), **moved}
        row["extra"] = {k: v for k, v in extra.items() if k not in moved} or None


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
