"""A record store that cannot answer: look-ups say 503 "retry later" (counted, no traceback), never 500 or 404."""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.proxy.redis_gateway import redis_config
from tests.proxy.scored_gateway import AskingScorer, chat, scoring_config, wait_for_record
from tests.redis_server import RedisServer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def test_redis_down_makes_record_lookups_503(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    redis_server = RedisServer(tmp_path).start()
    gateway = start_gateway(
        redis_config(
            fake_upstream.url,
            redis_server.url,  # type: ignore[attr-defined]
            redis_timeout_s=0.5,
        )
    )
    assert httpx.get(f"{gateway.url}/v1/trust/trust-missing", headers=AUTH).status_code == 404
    redis_server.stop()
    with caplog.at_level(logging.WARNING):
        replies = [httpx.get(f"{gateway.url}/v1/trust/trust-{i}", headers=AUTH, timeout=10) for i in range(3)]
    assert [r.status_code for r in replies] == [503, 503, 503]
    error = replies[0].json()["error"]
    assert error["type"] == "api_error" and error["code"] == "trust_store_unavailable"
    assert "unavailable" in error["message"] and "retry" in error["message"]
    errors = samples(gateway)[("trustgate_store_errors_total", frozenset({"operation": "get"}.items()))]
    assert errors == 3
    assert not [r for r in caplog.records if r.exc_info], "a store outage is no reason for a traceback"
    lines = [r for r in caplog.records if "look-up failed" in r.getMessage()]
    assert len(lines) == 1  # one line for the outage, not one per request


def test_a_shed_record_is_found_while_its_write_waits(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    """A record handed to a client (here: shed) is never a 404, not even while the store is slow to write it."""
    config = scoring_config(fake_upstream.url, queue={"max_size": 1, "concurrency": 1})  # type: ignore[attr-defined]
    path = tmp_path / "records.sqlite3"
    config["trustgate"]["store"] = {"path": str(path)}
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9, delay=1.0)])
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the store's writer waits for this lock
    try:
        responses = [chat(server, f"Who is q{i}?") for i in range(3)]
        assert responses[-1].headers["x-trust-status"] == "shed"
        shed_id = responses[-1].headers["x-trust-id"]
        found = httpx.get(f"{server.url}/v1/trust/{shed_id}", headers=AUTH)
        assert found.status_code == 200 and found.json()["status"] == "shed"
    finally:
        blocker.rollback()
        blocker.close()
    assert wait_for_record(server, shed_id)["status"] == "shed"


def test_a_store_that_cannot_keep_up_sheds_counts_and_warns_once(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    path = tmp_path / "records.sqlite3"
    config["trustgate"]["store"] = {"path": str(path), "max_pending_writes": 1}
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # the store's writer waits for this lock; the records pile up
    try:
        with caplog.at_level(logging.WARNING, logger="trustgate.assembly"):
            assert all(chat(server, f"Who is q{i}?").status_code == 200 for i in range(6))
            deadline = time.monotonic() + 10
            while samples(server).get(("trustgate_store_shed_writes_total", frozenset())) != 4:
                assert time.monotonic() < deadline, samples(server).get(
                    ("trustgate_store_shed_writes_total", frozenset())
                )
                time.sleep(0.05)
    finally:
        blocker.rollback()
        blocker.close()
    warnings = [r for r in caplog.records if "write queue full" in r.getMessage()]
    assert len(warnings) == 1  # one line for four shed records
