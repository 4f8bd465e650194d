"""Where spend is kept: US dollars in time buckets, per subject (a key, a model group) and purpose, in SQLite or Redis.

Spend is added in buckets of a minute, an hour and a day at once, and a span
of time is read back as the fewest buckets that tile it: whole days in the
middle, hours and minutes at its ends (``buckets``). So a month's budget is
read as about thirty days, a day's hours and an hour's minutes, never as
forty thousand minutes. Each size is kept as long as it is needed: minutes two
days, hours 62 days, days 800 — a span reaching further back than its finest
buckets is counted from the whole hour or day that holds its start.

SQLite (``SqliteSpendStore``) keeps them in the record store's database, so
that budgets survive a restart with nothing else to run; Redis
(``RedisSpendStore``) keeps one counter per bucket with its own expiry, so
that every replica and worker adds to, and reads, the same spend.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from redis.asyncio import Redis
from redis.exceptions import RedisError

from scoring import StoreUnavailable, open_beside_records

__all__ = [
    "MINUTE",
    "SPANS",
    "RedisSpendStore",
    "SpendCharge",
    "SpendPurpose",
    "SpendStore",
    "Spent",
    "SqliteSpendStore",
    "buckets",
]

T = TypeVar("T")

SpendPurpose = Literal["answer", "scoring"]
PURPOSES: tuple[SpendPurpose, ...] = ("answer", "scoring")
MINUTE, HOUR, DAY = 60, 3600, 86400
SPANS = (DAY, HOUR, MINUTE)  # bucket sizes, largest first
RETENTION_S = {MINUTE: 2 * DAY, HOUR: 62 * DAY, DAY: 800 * DAY}


@dataclass(frozen=True)
class Spent:
    """What a subject spent over a span: on answers, and on scoring them."""

    answer_usd: float = 0.0
    scoring_usd: float = 0.0

    def __add__(self, other: Spent) -> Spent:
        return Spent(self.answer_usd + other.answer_usd, self.scoring_usd + other.scoring_usd)

    @classmethod
    def of(cls, by_purpose: Mapping[str, float]) -> Spent:
        return cls(by_purpose.get("answer", 0.0), by_purpose.get("scoring", 0.0))


@dataclass(frozen=True)
class SpendCharge:
    """Dollars a subject spent for a purpose in one minute (``minute``: its start, Unix seconds)."""

    subject: str
    purpose: SpendPurpose
    minute: int
    usd: float


class SpendStore(Protocol):
    async def add(self, charges: Sequence[SpendCharge]) -> None:
        """Add each charge to its minute's, hour's and day's bucket; StoreUnavailable when it cannot."""
        ...

    async def spent(self, subject: str, since: float, until: float) -> Spent:
        """What ``subject`` spent from ``since`` to ``until``, in whole buckets (``buckets``)."""
        ...

    async def close(self) -> None: ...


def buckets(since: float, until: float, *, now: float | None = None) -> list[tuple[int, int]]:
    """(size, start) of the fewest buckets that tile ``since`` to ``until``, each end taken to its whole minute.

    ``since`` goes back to the start of its minute, or of its hour or day where
    the finer buckets are no longer kept (``RETENTION_S``, counted from ``now``;
    nothing older than the days kept is read); ``until`` forward to the end of its minute.
    """
    now = time.time() if now is None else now
    start = int(max(since, now - RETENTION_S[DAY]) // MINUTE * MINUTE)
    for span, finer in ((HOUR, MINUTE), (DAY, HOUR)):
        if start < now - RETENTION_S[finer]:
            start = start // span * span
    end = int(until // MINUTE + 1) * MINUTE
    found: list[tuple[int, int]] = []
    while start < end:
        span = next(size for size in SPANS if start % size == 0 and start + size <= end)
        found.append((span, start))
        start += span
    return found


def _ranges(spans: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The buckets as (size, first start, last start) runs of one size."""
    runs: list[tuple[int, int, int]] = []
    for span, start in spans:
        if runs and runs[-1][0] == span and runs[-1][2] + span == start:
            runs[-1] = (span, runs[-1][1], start)
        else:
            runs.append((span, start, start))
    return runs


def _rows(charges: Sequence[SpendCharge]) -> dict[tuple[str, int, int, str], float]:
    """The charges summed into their buckets of every size: (subject, size, start, purpose) -> dollars."""
    rows: dict[tuple[str, int, int, str], float] = {}
    for charge in charges:
        for span in SPANS:
            key = (charge.subject, span, charge.minute // span * span, charge.purpose)
            rows[key] = rows.get(key, 0.0) + charge.usd
    return rows


_SCHEMA = """
CREATE TABLE IF NOT EXISTS spend (
    subject TEXT NOT NULL,
    span INTEGER NOT NULL,
    bucket INTEGER NOT NULL,
    purpose TEXT NOT NULL,
    usd REAL NOT NULL,
    PRIMARY KEY (subject, span, bucket, purpose)
) WITHOUT ROWID;
"""
_ADD = (
    "INSERT INTO spend (subject, span, bucket, purpose, usd) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (subject, span, bucket, purpose) DO UPDATE SET usd = usd + excluded.usd"
)
_READ = "SELECT purpose, SUM(usd) FROM spend WHERE subject = ? AND span = ? AND bucket BETWEEN ? AND ? GROUP BY purpose"
_PRUNE = "DELETE FROM spend WHERE span = ? AND bucket < ?"
_PRUNE_EVERY_S = 600.0


class SqliteSpendStore:
    """Spend in the ``spend`` table of a SQLite database (the record store's), on a thread of its own."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spend-store")
        self._db: sqlite3.Connection | None = None
        self._pruned_at = 0.0

    async def open(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._open)

    def _open(self) -> None:
        self._db = open_beside_records(self._path, _SCHEMA)

    async def _run(self, work: str, call: Callable[..., T], *args: Any) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, call, *args)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"spend {work} failed: {exc}") from exc

    async def add(self, charges: Sequence[SpendCharge]) -> None:
        rows = [(*key, usd) for key, usd in _rows(charges).items()]
        await self._run("write", self._write, rows)

    def _write(self, rows: list[tuple[str, int, int, str, float]]) -> None:
        db = self._db
        assert db is not None, "open() the store first"
        with db:
            db.executemany(_ADD, rows)
            now = time.time()
            if now - self._pruned_at >= _PRUNE_EVERY_S:
                self._pruned_at = now
                db.executemany(_PRUNE, [(span, now - RETENTION_S[span] - span) for span in SPANS])

    async def spent(self, subject: str, since: float, until: float) -> Spent:
        return await self._run("read", self._read, subject, _ranges(buckets(since, until)))

    def _read(self, subject: str, runs: list[tuple[int, int, int]]) -> Spent:
        db = self._db
        assert db is not None, "open() the store first"
        total: dict[str, float] = {}
        for span, first, last in runs:
            for purpose, usd in db.execute(_READ, (subject, span, first, last)):
                total[purpose] = total.get(purpose, 0.0) + usd
        return Spent.of(total)

    async def close(self) -> None:
        if self._db is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._db.close)
            self._db = None
        self._thread.shutdown(wait=True)


class RedisSpendStore:
    """Spend in Redis: one float counter per bucket (``INCRBYFLOAT``), expiring when its size is no longer kept."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix

    def _key(self, subject: str, span: int, bucket: int, purpose: str) -> str:
        return f"{self._prefix}{subject}:{purpose}:{span}:{bucket}"

    async def add(self, charges: Sequence[SpendCharge]) -> None:
        try:
            async with self._redis.pipeline(transaction=False) as pipe:
                for (subject, span, bucket, purpose), usd in _rows(charges).items():
                    key = self._key(subject, span, bucket, purpose)
                    pipe.incrbyfloat(key, usd)
                    pipe.expire(key, RETENTION_S[span] + span, nx=True)
                await pipe.execute()
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"spend write failed: {exc}") from exc

    async def spent(self, subject: str, since: float, until: float) -> Spent:
        spans = buckets(since, until)
        keys = [self._key(subject, span, start, purpose) for purpose in PURPOSES for span, start in spans]
        try:
            values = await self._redis.mget(keys)
        except (RedisError, OSError) as exc:
            raise StoreUnavailable(f"spend read failed: {exc}") from exc
        per_purpose = len(spans)
        return Spent.of(
            {
                purpose: sum(float(v) for v in values[i * per_purpose : (i + 1) * per_purpose] if v is not None)
                for i, purpose in enumerate(PURPOSES)
            }
        )

    async def close(self) -> None:
        """The Redis client is its opener's to close."""
