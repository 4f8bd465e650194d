"""GET /v1/trust/calibration from a model's first label, before any refit, on both record stores: the labels
counted in the store, the default combination and why; the console's Calibration page says the same."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

import console
from exporters import RedisRecordStore
from scoring.types import RecordScope, TrustRecord
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.labels import calibration, label
from tests.proxy.redis_gateway import redis_config
from tests.proxy.scored_gateway import AUTH, AskingScorer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

STORES = ["sqlite", "redis"]


def scored_record(server: ServerThread, redis_url: str | None, question: str) -> str:
    """A scored answer's record id: scored in the gateway (SQLite), or as a worker stores it (Redis)."""
    if redis_url is None:
        response = httpx.post(
            f"{server.url}/v1/chat/completions",
            headers={**AUTH, "x-trustgate-mode": "sync"},
            json={"model": "fake", "messages": [{"role": "user", "content": question}]},
            timeout=20,
        )
        assert response.headers["x-trust-status"] == "done", response.headers
        return response.headers["x-trust-id"]
    record = TrustRecord(id=f"trust-{abs(hash(question))}", status="done", model="fake", owner="master", score=0.8)

    async def put() -> None:
        client = Redis.from_url(redis_url, decode_responses=True)
        try:
            store = RedisRecordStore(client, prefix="trustgate", ttl_s=3600)
            await store.put(record)
            assert await store.get(record.id, scope=RecordScope.everyone()) is not None
        finally:
            await client.aclose()

    asyncio.run(put())
    return record.id


@pytest.mark.parametrize("store", STORES)
def test_a_model_is_listed_from_its_first_label_with_the_default_combination_and_why(
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    store: str,
) -> None:
    redis_url = request.getfixturevalue("redis_server").url if store == "redis" else None
    config = redis_config(fake_upstream.url, redis_url) if redis_url else gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    scoring = config.setdefault("trustgate", {}).setdefault("scoring", {})
    scoring.update(allow_client_mode="any", data_dir=str(tmp_path / "data"), feedback={"min_labels": 50})
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.8)], mounts=[console.mount])
    assert calibration(server) == []  # no label yet: nothing to list

    label(server, scored_record(server, redis_url, "Who built the first temple?"), True)
    (entry,) = calibration(server)
    assert entry == {
        "model": "fake",
        "key": None,  # the model's shared fit
        "labels": 1,
        "positives": 1,
        "combination": "default",
        "reason": "1 label; a fit needs 50",
        "informative": None,
        "fit": None,
        "auroc": {},
        "ece": {},
        "fitted_at": None,
        "refit_labels": None,
        "held": None,
    }
    second = scored_record(server, redis_url, "Who built the second temple?")
    label(server, second, False)
    label(server, second, False)  # a relabel replaces the label: still one labelled record
    (entry,) = calibration(server)
    assert (entry["labels"], entry["positives"], entry["reason"]) == (2, 1, "2 labels; a fit needs 50")

    page = httpx.get(f"{server.url}/ui/partials/calibration", headers=AUTH, timeout=10)
    assert page.status_code == 200 and 'aria-label="Model fake"' in page.text
    assert "2 labels (1 correct)" in page.text and "2 labels; a fit needs 50" in page.text
    assert '<strong class="combination">default</strong>' in page.text
