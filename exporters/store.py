"""The result store: trust records kept for look-up by id, with retention by age and count.

SQLite is the embedded default, in WAL mode so that look-ups never wait on a
write. Each connection lives on its own thread (one writer, one reader), so the
event loop never blocks on disk and a connection is only used by the thread
that opened it. Writes wait in a bounded queue and are committed in batches;
when the queue is full a write is shed (``on_shed``: counted and warned about
by whoever wires the store) rather than letting memory and latency grow
without bound. Every batch also prunes a
bounded number of the oldest rows through the ``created_at`` index, so the
store holds at its configured size at any size, in steps that stay small.
Records hold users' questions and answers: the database and its WAL files are
0600 in a 0700 directory, and every read is scoped to the records' owner (the
name of the key that asked). A user's feedback on a record sits in its own
column beside the record's JSON: writing the record again keeps the label.
"""

from __future__ import annotations

import asyncio
import collections
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from scoring import (
    FEEDBACK_STATUSES,
    Feedback,
    FeedbackRefused,
    Labelled,
    RecordScope,
    StoreUnavailable,
    TrustRecord,
    private_file,
)

from .record_query import RecordPage, RecordQuery, encode_cursor
from .record_size import stored_json, stored_record
from .record_summary import MAX_SUMMARY_RECORDS, LabelCount, SummaryRow, TrustSummary, summarize
from .sqlite_query import (
    add_query_columns,
    label_counts_statement,
    labelled_statement,
    list_statement,
    summary_statement,
)

__all__ = ["PRUNE_EXPIRED", "PRUNE_OLDEST", "RecordStore", "SqliteRecordStore", "StoreUnavailable"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trust_records (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    record TEXT NOT NULL,
    owner TEXT,
    feedback TEXT
);
CREATE INDEX IF NOT EXISTS trust_records_created ON trust_records (created_at);
"""
# Stores written before records had owners lack the column; their rows keep owner NULL (admins only).
_ADD_OWNER = "ALTER TABLE trust_records ADD COLUMN owner TEXT"
_ADD_FEEDBACK = "ALTER TABLE trust_records ADD COLUMN feedback TEXT"  # stores written before feedback existed
_OWNER_INDEX = "CREATE INDEX IF NOT EXISTS trust_records_owner ON trust_records (owner, created_at)"
_SIDE_FILES = ("-wal", "-shm", "-journal")
# An upsert, not INSERT OR REPLACE: a record written again (pending, then done) keeps its feedback column.
_INSERT = (
    "INSERT INTO trust_records (id, created_at, record, owner) VALUES (?, ?, ?, ?) ON CONFLICT (id) DO "
    "UPDATE SET created_at = excluded.created_at, record = excluded.record, owner = excluded.owner"
)
_SET_FEEDBACK = "UPDATE trust_records SET feedback = ? WHERE id = ?"
# Both prunes walk the created_at index from its oldest end and stop after LIMIT rows.
PRUNE_EXPIRED = (
    "DELETE FROM trust_records WHERE rowid IN (SELECT rowid FROM trust_records "
    "WHERE created_at < ? ORDER BY created_at LIMIT ?)"
)
PRUNE_OLDEST = "DELETE FROM trust_records WHERE rowid IN (SELECT rowid FROM trust_records ORDER BY created_at LIMIT ?)"
# Rows deleted per batch at most: more than a write batch adds, so an over-full store shrinks.
PRUNE_BATCH = 1000


class RecordStore(Protocol):
    async def put(self, record: TrustRecord) -> None: ...
    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None: ...
    async def list_records(self, query: RecordQuery, *, scope: RecordScope) -> RecordPage: ...
    async def summary(self, *, scope: RecordScope, since: float, until: float, buckets: int) -> TrustSummary: ...

    async def set_feedback(self, record_id: str, feedback: Feedback, *, scope: RecordScope) -> Labelled | None:
        """Label a record ``scope`` may read, replacing its label; None when it may not or there is none (alike,
        as for ``get``). The record as labelled comes back with the label it carried before.

        Raises FeedbackRefused for a record whose status takes no label (FEEDBACK_STATUSES), storing nothing.
        """
        ...

    async def labelled(self, model: str, limit: int = 10_000, *, by: frozenset[str] | None = None) -> list[TrustRecord]:
        """A model group's records that carry feedback, newest label first, every owner's (server-internal);
        with ``by``, only those whose label one of these key names gave."""
        ...

    async def label_counts(self, *, by: frozenset[str] | None = None) -> list[LabelCount]:
        """Every model group with a labelled record, by name: its labels and how many say correct (every owner's);
        with ``by``, only the labels one of these key names gave."""
        ...

    async def close(self) -> None: ...


def _by_id(record_id: str, scope: RecordScope) -> tuple[str, list[Any]]:
    """One record and its feedback, if ``scope`` may read it (SQLite filters by owner itself)."""
    if scope.owner is None:
        return "SELECT record, feedback FROM trust_records WHERE id = ?", [record_id]
    return "SELECT record, feedback FROM trust_records WHERE id = ? AND owner = ?", [record_id, scope.owner]


class SqliteRecordStore:
    def __init__(
        self,
        path: Path,
        *,
        max_age_s: float,
        max_records: int,
        max_record_bytes: int = 64 * 1024,
        max_pending_writes: int = 2000,
        write_batch: int = 500,
        on_shed: Callable[[], None] = lambda: None,
    ) -> None:
        self._path = path
        self._max_age_s = max_age_s
        self._max_records = max_records
        self._max_record_bytes = max_record_bytes
        self._max_pending = max_pending_writes
        self._batch = min(write_batch, PRUNE_BATCH)
        self._on_shed = on_shed
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trust-store-writer")
        self._reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trust-store-reader")
        self._write_db: sqlite3.Connection | None = None
        self._read_db: sqlite3.Connection | None = None
        self._rows = 0  # kept by the writer: a COUNT(*) per batch would read the whole index
        self._queue: collections.deque[tuple[TrustRecord, asyncio.Future[None]]] = collections.deque()
        self._flushing: asyncio.Task[None] | None = None

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._writer, self._open_writer)
        await loop.run_in_executor(self._reader, self._open_reader)

    def _open_writer(self) -> None:
        """Open the database as a private file (SQLite gives its WAL files the database's mode) and migrate it."""
        private_file(self._path)
        for suffix in _SIDE_FILES:
            side = self._path.with_name(self._path.name + suffix)
            if side.exists():
                private_file(side)
        db = sqlite3.connect(self._path)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")  # in WAL mode: durable across a crash of the process
        with db:
            db.executescript(_SCHEMA)
            columns = {row[1] for row in db.execute("PRAGMA table_info(trust_records)")}
            if "owner" not in columns:
                db.execute(_ADD_OWNER)
            if "feedback" not in columns:
                db.execute(_ADD_FEEDBACK)
            db.execute(_OWNER_INDEX)
            add_query_columns(db)
        self._rows = int(db.execute("SELECT COUNT(*) FROM trust_records").fetchone()[0])
        self._write_db = db

    def _open_reader(self) -> None:
        db = sqlite3.connect(self._path)
        db.execute("PRAGMA query_only=ON")
        self._read_db = db

    async def put(self, record: TrustRecord) -> None:
        """Store the record once its batch commits; shed it at once (counted) when the write queue is full."""
        if len(self._queue) >= self._max_pending:
            self._on_shed()
            return
        done = asyncio.get_running_loop().create_future()
        self._queue.append((record, done))
        if self._flushing is None:
            self._flushing = asyncio.create_task(self._flush(), name="trust-store-flush")
        await done

    async def _flush(self) -> None:
        """Commit the queue in batches on the writer thread, one batch at a time, until it is empty."""
        loop = asyncio.get_running_loop()
        try:
            while self._queue:
                batch = [self._queue.popleft() for _ in range(min(self._batch, len(self._queue)))]
                failure: Exception | None = None
                try:
                    await loop.run_in_executor(self._writer, self._write, [record for record, _ in batch])
                except sqlite3.Error as exc:
                    failure = StoreUnavailable(f"trust store write failed: {exc}")
                except Exception as exc:  # every waiting put hears of it; the next batch still goes
                    failure = exc
                for _, done in batch:
                    if done.done():
                        continue
                    if failure is None:
                        done.set_result(None)
                    else:
                        done.set_exception(failure)
        finally:
            self._flushing = None

    def _write(self, records: list[TrustRecord]) -> None:
        db = self._write_db
        assert db is not None, "open() the store first"
        rows = [(r.id, r.created_at, stored_json(r, self._max_record_bytes), r.owner) for r in records]
        ids = list({row[0] for row in rows})
        with db:
            existing = db.execute(
                f"SELECT COUNT(*) FROM trust_records WHERE id IN ({','.join('?' * len(ids))})", ids
            ).fetchone()[0]
            db.executemany(_INSERT, rows)
            self._rows += len(ids) - int(existing)
            self._prune_step(db)

    def _prune_step(self, db: sqlite3.Connection) -> None:
        """Delete at most PRUNE_BATCH expired rows, then at most PRUNE_BATCH of the oldest beyond max_records."""
        deleted = db.execute(PRUNE_EXPIRED, (time.time() - self._max_age_s, PRUNE_BATCH)).rowcount
        excess = self._rows - deleted - self._max_records
        if excess > 0:
            deleted += db.execute(PRUNE_OLDEST, (min(excess, PRUNE_BATCH),)).rowcount
        self._rows -= deleted

    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None:
        """The record, if it exists and ``scope`` may read it; None alike for both misses (no oracle for ids)."""
        rows = await self._read_rows(*_by_id(record_id, scope))
        return stored_record(*rows[0]) if rows else None

    async def set_feedback(self, record_id: str, feedback: Feedback, *, scope: RecordScope) -> Labelled | None:
        """Label the record on the writer's connection, so the check and the write see the same row."""

        def label() -> Labelled | None:
            db = self._write_db
            assert db is not None, "open() the store first"
            row = db.execute(*_by_id(record_id, scope)).fetchone()
            if row is None:
                return None
            record = stored_record(*row)
            if record.status not in FEEDBACK_STATUSES:
                raise FeedbackRefused(record.status)
            with db:
                db.execute(_SET_FEEDBACK, (feedback.model_dump_json(), record_id))
            previous, record.feedback = record.feedback, feedback
            return Labelled(record, previous)

        try:
            return await asyncio.get_running_loop().run_in_executor(self._writer, label)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"trust store write failed: {exc}") from exc

    async def labelled(self, model: str, limit: int = 10_000, *, by: frozenset[str] | None = None) -> list[TrustRecord]:
        return [stored_record(*row) for row in await self._read_rows(*labelled_statement(model, limit, by))]

    async def label_counts(self, *, by: frozenset[str] | None = None) -> list[LabelCount]:
        return [
            LabelCount(model, labels, correct or 0)
            for model, labels, correct in await self._read_rows(*label_counts_statement(by))
        ]

    async def _read_rows(self, sql: str, args: list[Any]) -> list[Any]:
        """Rows of a query on the reader's connection; StoreUnavailable when SQLite fails."""

        def read() -> list[Any]:
            assert self._read_db is not None, "open() the store first"
            return self._read_db.execute(sql, args).fetchall()

        try:
            return await asyncio.get_running_loop().run_in_executor(self._reader, read)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"trust store read failed: {exc}") from exc

    async def list_records(self, query: RecordQuery, *, scope: RecordScope) -> RecordPage:
        """One page of the records ``scope`` may read that match ``query``, newest first."""
        rows = await self._read_rows(*list_statement(query, scope.owner))
        records = [stored_record(*row) for row in rows[: query.limit]]
        more = len(rows) > query.limit
        return RecordPage(
            data=records, next_cursor=encode_cursor((records[-1].created_at, records[-1].id)) if more else None
        )

    async def summary(self, *, scope: RecordScope, since: float, until: float, buckets: int) -> TrustSummary:
        rows = await self._read_rows(*summary_statement(scope.owner, since, until, MAX_SUMMARY_RECORDS + 1))
        return summarize(
            (SummaryRow(*row) for row in rows[:MAX_SUMMARY_RECORDS]),
            since=since,
            until=until,
            buckets=buckets,
            truncated=len(rows) > MAX_SUMMARY_RECORDS,
        )

    async def count(self) -> int:
        def count_rows() -> int:
            assert self._read_db is not None, "open() the store first"
            return int(self._read_db.execute("SELECT COUNT(*) FROM trust_records").fetchone()[0])

        return await asyncio.get_running_loop().run_in_executor(self._reader, count_rows)

    async def close(self) -> None:
        """Commit what is queued, then close both connections."""
        if self._flushing is not None:
            await self._flushing
        loop = asyncio.get_running_loop()
        for executor, db in ((self._writer, self._write_db), (self._reader, self._read_db)):
            if db is not None:
                await loop.run_in_executor(executor, db.close)
            executor.shutdown(wait=True)
        self._write_db = self._read_db = None
