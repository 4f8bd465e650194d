"""The on-disk memory of an evaluation run: upstream replies and per-item component results (SQLite).

An evaluation over hundreds of questions on a slow upstream takes hours and
gets interrupted. Everything it learns is written here as soon as it is known,
keyed by (dataset, item id, component, model):

* ``replies``: each upstream completion, further keyed by a hash of the exact
  request body, so a rerun that asks the same thing reads the reply instead of
  calling the upstream again (the harness seeds every random choice, so a
  rerun does ask the same things);
* ``results``: each finished component result, with a fingerprint of the
  settings it was computed under; a result whose fingerprint no longer
  matches is recomputed (from cached replies where the requests are unchanged).

Each write commits at once: a killed run loses at most the call in flight.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from scoring import ComponentResult, private_file

__all__ = ["CallSite", "EvalCache", "request_hash"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    dataset TEXT NOT NULL, item_id TEXT NOT NULL, component TEXT NOT NULL, model TEXT NOT NULL,
    request_hash TEXT NOT NULL, response BLOB NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (dataset, item_id, component, model, request_hash));
CREATE TABLE IF NOT EXISTS results (
    dataset TEXT NOT NULL, item_id TEXT NOT NULL, component TEXT NOT NULL, model TEXT NOT NULL,
    fingerprint TEXT NOT NULL, result BLOB NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (dataset, item_id, component, model));
"""


@dataclass(frozen=True)
class CallSite:
    """Who asks: one component of one item, against one model group."""

    dataset: str
    item_id: str
    component: str
    model: str

    def key(self) -> tuple[str, str, str, str]:
        return self.dataset, self.item_id, self.component, self.model


def request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


class EvalCache:
    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(private_file(path))  # cached replies are traffic: 0600 in a 0700 directory
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> EvalCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reply(self, site: CallSite, body: dict[str, Any]) -> dict[str, Any] | None:
        row = self._db.execute(
            "SELECT response FROM replies WHERE dataset=? AND item_id=? AND component=? AND model=? AND request_hash=?",
            (*site.key(), request_hash(body)),
        ).fetchone()
        return orjson.loads(row[0]) if row else None

    def store_reply(self, site: CallSite, body: dict[str, Any], response: dict[str, Any]) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO replies VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*site.key(), request_hash(body), orjson.dumps(response), time.time()),
            )

    def result(self, site: CallSite, fingerprint: str) -> ComponentResult | None:
        row = self._db.execute(
            "SELECT result FROM results WHERE dataset=? AND item_id=? AND component=? AND model=? AND fingerprint=?",
            (*site.key(), fingerprint),
        ).fetchone()
        return ComponentResult.model_validate_json(row[0]) if row else None

    def store_result(self, site: CallSite, fingerprint: str, result: ComponentResult) -> None:
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO results VALUES (?, ?, ?, ?, ?, ?, ?)",
                (*site.key(), fingerprint, result.model_dump_json().encode(), time.time()),
            )
