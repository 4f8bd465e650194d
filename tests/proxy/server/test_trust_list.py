"""GET /v1/trust and /v1/trust/summary over HTTP: pages, filters, owners, and 400s in OpenAI's error shape."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scoring.types import TrustRecord
from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.redis_server import RedisServer
from tests.servers import ServerThread
from tests.stored_records import KEYS, stored, stored_in_redis

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(params=["sqlite", "redis"])
def listing_gateway(
    request: pytest.FixtureRequest,
    fake_upstream: FakeUpstream,
    start_gateway: Callable[..., ServerThread],
    tmp_path: Path,
) -> ServerThread:
    """A gateway over 20 stored records (odd ones alice's, even ones bob's), on either store."""
    now = time.time()
    records = [
        TrustRecord(
            id=f"t{i:02d}",
            status="done",
            model="fake",
            owner="alice" if i % 2 else "bob",
            score=i / 20,
            label="untrusted" if i < 6 else "trusted",
            created_at=now - 100 + i,
        )
        for i in range(20)
    ]
    section: dict[str, Any] = {"keys": KEYS}
    if request.param == "sqlite":
        path = tmp_path / "listing.sqlite3"
        stored(path, records)
        section["store"] = {"path": str(path)}
    else:
        url = request.getfixturevalue("redis_url")
        stored_in_redis(url, records)
        section["scoring"] = {"queue": {"backend": "redis", "redis_url": url}}
    server = start_gateway(gateway_config(fake_upstream.url, trustgate=section))  # type: ignore[attr-defined]
    server.records_at = now  # type: ignore[attr-defined]
    return server


def get(server: ServerThread, path: str, key: str = MASTER_KEY, **params: Any) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", params=params, headers={"authorization": f"Bearer {key}"}, timeout=10)


def test_pages_through_every_record_for_the_master_key(listing_gateway: ServerThread) -> None:
    seen, cursor = [], None
    for _ in range(10):
        body = get(listing_gateway, "/v1/trust", limit=7, **({"cursor": cursor} if cursor else {})).json()
        assert body["object"] == "list"
        seen += [r["id"] for r in body["data"]]
        cursor = body["next_cursor"]
        assert body["has_more"] == (cursor is not None)
        if cursor is None:
            break
    assert seen == [f"t{i:02d}" for i in range(19, -1, -1)]


def test_a_key_lists_only_its_own_records(listing_gateway: ServerThread) -> None:
    alice = get(listing_gateway, "/v1/trust", key="sk-alice", limit=200).json()["data"]
    assert {r["owner"] for r in alice} == {"alice"} and len(alice) == 10
    untrusted = get(listing_gateway, "/v1/trust", key="sk-bob", label="untrusted").json()["data"]
    assert [r["id"] for r in untrusted] == ["t04", "t02", "t00"]
    summary = get(listing_gateway, "/v1/trust/summary", key="sk-bob").json()
    assert summary["total"] == 10 and summary["by_label"] == {"untrusted": 3, "trusted": 7}
    assert get(listing_gateway, "/v1/trust/t01", key="sk-bob").status_code == 404  # alice's


def test_an_admin_key_lists_every_record(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    path = tmp_path / "admin.sqlite3"
    stored(
        path,
        [
            TrustRecord(id=f"a{i}", status="done", model="fake", owner=owner)
            for i, owner in enumerate(["alice", "bob", None])
        ],
    )  # None: written before records had owners
    config = gateway_config(
        fake_upstream.url,
        trustgate={  # type: ignore[attr-defined]
            "keys": [*KEYS, {"key": "sk-auditor", "name": "auditor", "admin": True}],
            "store": {"path": str(path)},
        },
    )
    server = start_gateway(config)
    assert {r["id"] for r in get(server, "/v1/trust", key="sk-auditor").json()["data"]} == {"a0", "a1", "a2"}
    assert [r["id"] for r in get(server, "/v1/trust", key="sk-bob").json()["data"]] == ["a1"]


def test_summary_window_and_buckets(listing_gateway: ServerThread) -> None:
    now = listing_gateway.records_at  # type: ignore[attr-defined]
    summary = get(listing_gateway, "/v1/trust/summary", since=now - 90.5, until=now + 1, buckets=3).json()
    assert summary["total"] == 10 and len(summary["low_trust"]) == 3
    assert summary["models"]["fake"]["histogram"][0] == 0  # t00, t01 (scores 0, 0.05) are outside the window


@pytest.mark.parametrize(
    ("path", "params", "param"),
    [
        ("/v1/trust", {"label": "bad"}, "label"),
        ("/v1/trust", {"limit": "1000"}, "limit"),
        ("/v1/trust", {"min_score": "x"}, "min_score"),
        ("/v1/trust", {"cursor": "zzz"}, "cursor"),
        ("/v1/trust", {"colour": "red"}, "colour"),
        ("/v1/trust", {"label": ["trusted", "untrusted"]}, "label"),
        ("/v1/trust/summary", {"buckets": "0"}, "buckets"),
        ("/v1/trust/summary", {"since": "2030-01-01T00:00:00", "until": "2029-01-01T00:00:00"}, None),
    ],
)
def test_bad_filters_are_400_in_openai_shape(
    listing_gateway: ServerThread, path: str, params: dict[str, Any], param: str | None
) -> None:
    response = get(listing_gateway, path, **params)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_filter"
    assert error["param"] == param


def test_listing_needs_a_key(listing_gateway: ServerThread) -> None:
    response = httpx.get(f"{listing_gateway.url}/v1/trust")
    assert response.status_code == 401 and response.json()["error"]["code"] == "missing_api_key"
    assert get(listing_gateway, "/v1/trust/summary", key="sk-wrong").status_code == 401


def test_a_record_by_id_still_resolves(listing_gateway: ServerThread) -> None:
    assert get(listing_gateway, "/v1/trust/t03").json()["id"] == "t03"


def test_redis_down_makes_listings_503(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], tmp_path: Path
) -> None:
    redis_server = RedisServer(tmp_path).start()
    section = {
        "keys": KEYS,
        "scoring": {"queue": {"backend": "redis", "redis_url": redis_server.url, "redis_timeout_s": 0.5}},
    }
    gateway = start_gateway(gateway_config(fake_upstream.url, trustgate=section))  # type: ignore[attr-defined]
    assert get(gateway, "/v1/trust").json()["data"] == []
    redis_server.stop()
    for path in ("/v1/trust", "/v1/trust/summary"):
        response = get(gateway, path, key="sk-alice")
        assert response.status_code == 503 and response.json()["error"]["code"] == "trust_store_unavailable"
    errors = samples(gateway)
    assert errors[("trustgate_store_errors_total", frozenset({"operation": "list"}.items()))] == 1
    assert errors[("trustgate_store_errors_total", frozenset({"operation": "summary"}.items()))] == 1


PARAMS = [
    "model",
    "label",
    "status",
    "score_of",
    "min_score",
    "max_score",
    "since",
    "until",
    "has_error",
    "limit",
    "cursor",
    "buckets",
    "other",
]
param_values = (
    st.text(max_size=12)
    | st.integers(-(2**70), 2**70).map(str)
    | st.floats(allow_nan=True, allow_infinity=True).map(str)
    | st.sampled_from(["untrusted", "done", "bc", "true", "2026-11-23T10:00:00", "WzEsIngiXQ"])
)


@given(params=st.dictionaries(st.sampled_from(PARAMS), param_values, max_size=5))
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_query_string_makes_a_listing_fail(listing_gateway: ServerThread, params: dict[str, str]) -> None:
    """Any query: a page, a summary or a 400 in OpenAI's shape, never a 5xx."""
    for path in ("/v1/trust", "/v1/trust/summary"):
        response = get(listing_gateway, path, **params)
        assert response.status_code in (200, 400), response.text
        if response.status_code == 400:
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}
