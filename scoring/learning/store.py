"""Where each model's calibration report lives: a file under data_dir (embedded), or Redis (shared by replicas).

A report is small (a fit's few weights and the points of two charts per
score) and changes once per refit, so the file keeps every model's in one JSON
document, rewritten atomically; a reader notices a newer file (``trustgate
calibrate`` run beside a gateway) by its modification time. In Redis the
reports are fields of one hash, so every gateway and worker on that Redis
reads the same fit; it carries no TTL, because a fit is not traffic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Protocol, cast

from pydantic import ValidationError
from redis.asyncio import Redis

from ..private_files import private_file
from ..redis_reachable import redis_reachable
from .report import CalibrationReport

__all__ = ["FileFitStore", "FitStore", "RedisFitStore"]

log = logging.getLogger("trustgate.learning")


class FitStore(Protocol):
    async def get(self, model: str) -> CalibrationReport | None: ...
    async def put(self, report: CalibrationReport) -> None: ...
    async def all(self) -> list[CalibrationReport]: ...


def _parse(model: str, text: str) -> CalibrationReport | None:
    """A stored report, or None (logged) when it cannot be read: a bad entry must not stop scoring."""
    try:
        return CalibrationReport.model_validate_json(text)
    except ValidationError:
        log.warning("the stored calibration report of %s is unreadable; its default combination is used", model)
        return None


class FileFitStore:
    """Every model's report in ``path`` (0600), cached in memory and reread when the file changes."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._reports: dict[str, CalibrationReport] = {}
        self._seen: float | None = None
        self._lock = asyncio.Lock()

    def _modified(self) -> float | None:
        with contextlib.suppress(FileNotFoundError):
            return os.stat(self._path).st_mtime_ns / 1e9
        return None

    def _reload_if_changed(self) -> None:
        modified = self._modified()
        if modified == self._seen:
            return
        self._seen = modified
        try:
            stored = json.loads(self._path.read_text(encoding="utf-8")) if modified is not None else {}
        except (OSError, json.JSONDecodeError):
            log.warning("cannot read %s; default combinations are used until it is rewritten", self._path)
            stored = {}
        parsed = (
            {model: _parse(model, json.dumps(entry)) for model, entry in stored.items()}
            if isinstance(stored, dict)
            else {}
        )
        self._reports = {model: report for model, report in parsed.items() if report is not None}

    async def get(self, model: str) -> CalibrationReport | None:
        self._reload_if_changed()
        return self._reports.get(model)

    async def all(self) -> list[CalibrationReport]:
        self._reload_if_changed()
        return sorted(self._reports.values(), key=lambda report: report.model)

    def _write(self, reports: dict[str, CalibrationReport]) -> None:
        partial = private_file(self._path.with_name(self._path.name + ".partial"))
        partial.write_text(json.dumps({m: r.model_dump(mode="json") for m, r in reports.items()}), encoding="utf-8")
        partial.replace(self._path)

    async def put(self, report: CalibrationReport) -> None:
        async with self._lock:
            self._reload_if_changed()
            reports = {**self._reports, report.model: report}
            await asyncio.to_thread(self._write, reports)
            self._reports, self._seen = reports, self._modified()


class RedisFitStore:
    """Every model's report as a field of the hash ``<prefix>:calibration``."""

    def __init__(self, redis: Redis, *, prefix: str) -> None:
        self._redis = redis
        self._key = f"{prefix}:calibration"

    async def get(self, model: str) -> CalibrationReport | None:
        with redis_reachable():
            text = cast(str | None, await self._redis.hget(self._key, model))  # decode_responses
        return None if text is None else _parse(model, text)

    async def put(self, report: CalibrationReport) -> None:
        with redis_reachable():
            await self._redis.hset(self._key, report.model, report.model_dump_json())

    async def all(self) -> list[CalibrationReport]:
        with redis_reachable():
            stored = cast(dict[str, str], await self._redis.hgetall(self._key))  # decode_responses
        parsed = [_parse(model, text) for model, text in sorted(stored.items())]
        return [report for report in parsed if report is not None]
