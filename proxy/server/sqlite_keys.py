"""Keys made at run time in SQLite: a table of the record store's database, owned by one gateway.

One gateway process writes its SQLite file (``trustgate keys`` goes through
its API), so the version that tells its cache a key changed lives in its
memory and costs a request nothing to read; a key is read from the file the
first time it is used, on the store's own thread. Replicas keep their keys in
Redis (``redis_keys``).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from scoring import StoreUnavailable, open_beside_records

from .key_store import KeyConflict, StoredKey

__all__ = ["SqliteKeyTable"]

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS generated_keys (
    token TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at REAL NOT NULL,
    key TEXT NOT NULL
);
"""
_INSERT = "INSERT INTO generated_keys (token, name, created_at, key) VALUES (?, ?, ?, ?)"


class SqliteKeyTable:
    """``KeyTable`` in the ``generated_keys`` table of a SQLite file, on a thread of its own."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="key-store")
        self._db: sqlite3.Connection | None = None
        self._version = 0  # raised on the store's thread by every write, read there with each key

    async def open(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._open)

    def _open(self) -> None:
        self._db = open_beside_records(self._path, _SCHEMA)

    def _connection(self) -> sqlite3.Connection:
        if self._db is None:
            raise StoreUnavailable("the key store is not open")
        return self._db

    async def _run(self, work: str, call: Callable[..., T], *args: Any) -> T:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, call, *args)
        except sqlite3.Error as exc:
            raise StoreUnavailable(f"key {work} failed: {exc}") from exc

    async def version(self) -> int:
        return self._version

    async def read(self, token: str) -> tuple[int, StoredKey | None]:
        return await self._run("read", self._read, token)

    def _read(self, token: str) -> tuple[int, StoredKey | None]:
        row = self._connection().execute("SELECT key FROM generated_keys WHERE token = ?", (token,)).fetchone()
        return self._version, StoredKey.model_validate_json(row[0]) if row else None

    async def by_name(self, name: str) -> StoredKey | None:
        return await self._run("read", self._by_name, name)

    def _by_name(self, name: str) -> StoredKey | None:
        row = self._connection().execute("SELECT key FROM generated_keys WHERE name = ?", (name,)).fetchone()
        return StoredKey.model_validate_json(row[0]) if row else None

    async def all(self) -> list[StoredKey]:
        return await self._run("listing", self._all)

    def _all(self) -> list[StoredKey]:
        rows = self._connection().execute("SELECT key FROM generated_keys ORDER BY created_at, token").fetchall()
        return [StoredKey.model_validate_json(row[0]) for row in rows]

    async def add(self, key: StoredKey, max_keys: int) -> None:
        await self._run("write", self._add, key, max_keys)

    def _add(self, key: StoredKey, max_keys: int) -> None:
        db = self._connection()
        with db:
            if db.execute("SELECT 1 FROM generated_keys WHERE token = ?", (key.token,)).fetchone():
                raise KeyConflict("token")
            if db.execute("SELECT 1 FROM generated_keys WHERE name = ?", (key.name,)).fetchone():
                raise KeyConflict("name")
            if db.execute("SELECT COUNT(*) FROM generated_keys").fetchone()[0] >= max_keys:
                raise KeyConflict("full")
            db.execute(_INSERT, (key.token, key.name, key.created_at, key.model_dump_json()))
        self._version += 1

    async def replace(self, key: StoredKey) -> bool:
        return await self._run("write", self._replace, key)

    def _replace(self, key: StoredKey) -> bool:
        db = self._connection()
        with db:
            changed = db.execute(
                "UPDATE generated_keys SET key = ? WHERE token = ? AND name = ?",
                (key.model_dump_json(), key.token, key.name),
            ).rowcount
        self._version += 1
        return changed > 0

    async def remove(self, keys: Sequence[StoredKey]) -> list[str]:
        return await self._run("write", self._remove, [key.token for key in keys])

    def _remove(self, tokens: list[str]) -> list[str]:
        db = self._connection()
        removed: list[str] = []
        with db:
            for token in tokens:
                if db.execute("DELETE FROM generated_keys WHERE token = ?", (token,)).rowcount:
                    removed.append(token)
        self._version += 1
        return removed

    async def close(self) -> None:
        if self._db is not None:
            await asyncio.get_running_loop().run_in_executor(self._thread, self._db.close)
            self._db = None
        self._thread.shutdown(wait=True)
