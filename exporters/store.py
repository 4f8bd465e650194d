"""The result store: trust records kept for look-up by id, with retention by age and count.

SQLite is the embedded default. All database work runs on one dedicated
thread, so the event loop never blocks on disk and the connection is only
ever used from the thread that owns it. Records hold users' questions and
answers: the database and its WAL files are 0600 in a 0700 directory, and
every read is scoped to the records' owner (the name of the key that asked).
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from collections.abc import Callable
from typing import Protocol, TypeVar

from scoring.private_files import private_file
from scoring.types import RecordScope, TrustRecord

__all__ = ["RecordStore", "SqliteRecordStore"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trust_records (
    id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    record TEXT NOT NULL,
    owner TEXT
);
CREATE INDEX IF NOT EXISTS trust_records_created ON trust_records (created_at);
"""
# Stores written before records had owners lack the column; their rows keep owner NULL (admins only).
_ADD_OWNER = "ALTER TABLE trust_records ADD COLUMN owner TEXT"
_OWNER_INDEX = "CREATE INDEX IF NOT EXISTS trust_records_owner ON trust_records (owner, created_at)"
_SIDE_FILES = ("-wal", "-shm", "-journal")


class RecordStore(Protocol):
    async def put(self, record: TrustRecord) -> None: ...
    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None: ...
    async def close(self) -> None: ...


class SqliteRecordStore:
    def __init__(self, path: Path, *, max_age_s: float, max_records: int, prune_every: int = 100) -> None:
        self._path = path
        self._max_age_s = max_age_s
        self._max_records = max_records
        self._prune_every = prune_every
        self._puts = 0
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trust-store")
        self._db: sqlite3.Connection | None = None

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, self._call, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        if self._db is None:
            self._db = self._connect()
        with self._db:
            return fn(self._db)

    def _connect(self) -> sqlite3.Connection:
        """Open the database as a private file (SQLite gives its WAL files the database's mode) and migrate it."""
        private_file(self._path)
        for suffix in _SIDE_FILES:
            side = self._path.with_name(self._path.name + suffix)
            if side.exists():
                private_file(side)
        db = sqlite3.connect(self._path)
        db.execute("PRAGMA journal_mode=WAL")
        with db:
            db.executescript(_SCHEMA)
            if "owner" not in {row[1] for row in db.execute("PRAGMA table_info(trust_records)")}:
                db.execute(_ADD_OWNER)
            db.execute(_OWNER_INDEX)
        return db

    async def open(self) -> None:
        await self._run(lambda db: None)

    async def put(self, record: TrustRecord) -> None:
        self._puts += 1
        prune = self._puts % self._prune_every == 0

        def write(db: sqlite3.Connection) -> None:
            db.execute("INSERT OR REPLACE INTO trust_records (id, created_at, record, owner) VALUES (?, ?, ?, ?)",
                       (record.id, record.created_at, record.model_dump_json(), record.owner))
            if prune:
                self._prune(db)

        await self._run(write)

    async def get(self, record_id: str, *, scope: RecordScope) -> TrustRecord | None:
        """The record, if it exists and ``scope`` may read it; None alike for both misses (no oracle for ids)."""
        if scope.owner is None:
            query, args = "SELECT record FROM trust_records WHERE id = ?", (record_id,)
        else:
            query, args = "SELECT record FROM trust_records WHERE id = ? AND owner = ?", (record_id, scope.owner)
        row = await self._run(lambda db: db.execute(query, args).fetchone())
        return TrustRecord.model_validate_json(row[0]) if row else None

    async def prune(self) -> None:
        await self._run(self._prune)

    def _prune(self, db: sqlite3.Connection) -> None:
        db.execute("DELETE FROM trust_records WHERE created_at < ?", (time.time() - self._max_age_s,))
        db.execute("DELETE FROM trust_records WHERE id NOT IN "
                   "(SELECT id FROM trust_records ORDER BY created_at DESC LIMIT ?)", (self._max_records,))

    async def count(self) -> int:
        return int(await self._run(lambda db: db.execute("SELECT COUNT(*) FROM trust_records").fetchone()[0]))

    async def close(self) -> None:
        def shut(db: sqlite3.Connection) -> None:
            db.commit()

        if self._db is not None:
            await self._run(shut)
            await asyncio.get_running_loop().run_in_executor(self._thread, self._db.close)
            self._db = None
        self._thread.shutdown(wait=True)
