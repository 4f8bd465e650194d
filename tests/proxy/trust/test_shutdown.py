"""Shutdown with scoring jobs queued in memory: drained for a grace period, the rest recorded as failed, none lost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from scoring.queue import SHUTDOWN_ERROR
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AUTH, AskingScorer, chat, scoring_config
from tests.servers import ServerThread

pytestmark = pytest.mark.integration


def test_jobs_queued_at_shutdown_are_scored_or_failed_never_lost(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    config = scoring_config(fake_upstream.url, mode="async")  # type: ignore[attr-defined]
    config["trustgate"]["scoring"]["queue"].update({"concurrency": 1, "shutdown_grace_s": 0.8})
    config["trustgate"]["store"] = {"path": str(tmp_path / "records.sqlite3")}
    gateway = start_gateway(config, scorers=[AskingScorer("bc", 0.9, delay=0.3)])
    ids = [chat(gateway, f"What is question {i}?").headers["x-trust-id"] for i in range(10)]
    gateway.stop()  # the lifespan's exit, as on SIGTERM

    restarted = start_gateway(config, scorers=[])
    records = [httpx.get(f"{restarted.url}/v1/trust/{record_id}", headers=AUTH) for record_id in ids]
    assert [r.status_code for r in records] == [200] * 10
    statuses = [(r.json()["status"], r.json()["error"]) for r in records]
    assert set(statuses) <= {("done", None), ("failed", SHUTDOWN_ERROR)}, statuses
    assert ("done", None) in statuses  # the grace period scored what it could
    assert ("failed", SHUTDOWN_ERROR) in statuses  # and recorded why the rest has no score
