"""Where each model's calibration report lives: beside the labels it was learned from.

A fit belongs to the labels it came from, so it is kept by the store that
keeps them: in the SQLite record store's own database (a table of its own),
or in the Redis the records live in. A gateway with a record store of its own
therefore never serves another store's fit, whatever data directory it shares
with another. A report is small (a fit's few weights and the points of two
charts per score) and changes once per refit.

- ``SqliteFitStore``: one row per fit (a model's shared one, or a key's own),
  read on a thread of its own so the event loop never waits on the disk, and
  cached until the database says another connection wrote to it
  (``PRAGMA data_version``): a refit process's write is seen by the next read.
- ``RedisFitStore``: the reports are fields of one hash, so every gateway and
  worker on that Redis reads the same fit; no TTL, because a fit is not traffic.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol, TypeVar, cast

from pydantic import ValidationError
from redis.asyncio import Redis

from ..redis_reachable import redis_reachable
from ..types import StoreUnavailable
from .report import CalibrationReport

__all__ = ["FitStore", "RedisFitStore", "SqliteFitStore"]

log = logging.getLogger("trustgate.learning")

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS trust_fits (
    model TEXT NOT NULL,
    key TEXT NOT NULL DEFAULT '',
    report TEXT NOT NULL,
    PRIMARY KEY (model, key)
)
"""
_SHARED = ""  # the key column of a model's shared fit (a key's name is never empty)
_BUSY_TIMEOUT_S = 5.0  # a refit process and the gateway write the same database


class FitStore(Protocol):
    async def get(self, model: str, key: str | None = None) -> CalibrationReport | None:
        """The report of ``model``'s shared fit, or (``key``) of that key's own."""
        ...

    async def put(self, report: CalibrationReport) -> None: ...
    async def all(self) -> list[CalibrationReport]: ...
    async def close(self) -> None: ...


def _parse(name: str, text: str) -> CalibrationReport | None:
    """A stored report, or None (logged) when it cannot be read: a bad entry must not stop scoring."""
    try:
        return CalibrationReport.model_validate_json(text)
    except ValidationError:
        log.warning("the stored calibration report of %s is unreadable; its default combination is used", name)
        return None


def _ordered(reports: list[CalibrationReport]) -> list[CalibrationReport]:
    return sorted(reports, key=lambda report: (report.model, report.key or ""))


class SqliteFitStore:
    """Every fit in the ``trust_fits`` table of the record store's database ``path``."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trust-fits")
        self._db: sqlite3.Connection | None = None
        self._version: int | None = None
        self._reports: dict[tuple[str, str], CalibrationReport] = {}

    def _connection(self) -> sqlite3.Connection:
        """The store's connection, opened on first use. The record store created the database, private: opening
        and closing another descriptor on it here would drop the locks this process's other connections hold on
        it (POSIX locks are per process), so it is not touched but through SQLite."""
        if self._db is None:
            db = sqlite3.connect(self._path, timeout=_BUSY_TIMEOUT_S)
            # Created only where missing: a read needs no write lock, so a database another writer holds (a
            # store that cannot keep up) still serves the fits instead of holding every job for the busy timeout.
            if (
                db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trust_fits'").fetchone()
                is None
            ):
                with db:
                    db.execute(_SCHEMA)
            self._db = db
        return self._db

    def _fresh(self) -> dict[tuple[str, str], CalibrationReport]:
        """The reports, read again only when some connection has written to the database since the last read."""
        db = self._connection()
        version = int(db.execute("PRAGMA data_version").fetchone()[0])
        if version != self._version:
            rows = db.execute("SELECT model, key, report FROM trust_fits").fetchall()
            parsed = {(model, key): _parse(model, text) for model, key, text in rows}
            self._reports = {name: report for name, report in parsed.items() if report is not None}
            self._version = version
        return self._reports

    def _write(self, report: CalibrationReport) -> None:
        db = self._connection()
        with db:
            db.execute(
                "INSERT INTO trust_fits (model, key, report) VALUES (?, ?, ?) "
                "ON CONFLICT (model, key) DO UPDATE SET report = excluded.report",
                (report.model, report.key or _SHARED, report.model_dump_json()),
            )
        self._version = None  # this connection's own writes leave data_version as it was

    async def _run(self, work: Callable[[], T]) -> T:
        """``work`` on the store's own thread (its connection is used by that thread only)."""
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, work)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"fit store failed: {exc}") from exc

    async def open(self) -> None:
        """Connect and create the table now, at start-up: a first job must not be the one to write the schema
        into a database another writer may hold by then."""
        await self._run(self._connection)

    async def get(self, model: str, key: str | None = None) -> CalibrationReport | None:
        return (await self._run(self._fresh)).get((model, key or _SHARED))

    async def put(self, report: CalibrationReport) -> None:
        await self._run(lambda: self._write(report))

    async def all(self) -> list[CalibrationReport]:
        return _ordered(list((await self._run(self._fresh)).values()))

    async def close(self) -> None:
        def shut() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        await asyncio.get_running_loop().run_in_executor(self._thread, shut)
        self._thread.shutdown(wait=True)


class RedisFitStore:
    """Every fit as a field of the hash ``<prefix>:calibration``: a model's name for its shared fit (as stored
    before keys had fits of their own), ``<model>\\x1f<key>`` for a key's own."""

    def __init__(self, redis: Redis, *, prefix: str) -> None:
        self._redis = redis
        self._key = f"{prefix}:calibration"

    @staticmethod
    def _field(model: str, key: str | None) -> str:
        return model if key is None else f"{model}\x1f{key}"

    async def get(self, model: str, key: str | None = None) -> CalibrationReport | None:
        field = self._field(model, key)
        with redis_reachable():
            text = cast(str | None, await self._redis.hget(self._key, field))  # decode_responses
        return None if text is None else _parse(field, text)

    async def put(self, report: CalibrationReport) -> None:
        with redis_reachable():
            await self._redis.hset(self._key, self._field(report.model, report.key), report.model_dump_json())

    async def all(self) -> list[CalibrationReport]:
        with redis_reachable():
            stored = cast(dict[str, str], await self._redis.hgetall(self._key))  # decode_responses
        parsed = [_parse(field, text) for field, text in stored.items()]
        return _ordered([report for report in parsed if report is not None])

    async def close(self) -> None:
        """The Redis client belongs to whoever created it."""
