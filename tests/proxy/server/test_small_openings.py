"""Small openings closed, over real sockets: redirects never follow the Host header, modes read in any case
(within the operator's policy), and anonymous readiness says only ready or not."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import pytest

from proxy.server.relative_redirects import same_origin_location
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer
from tests.proxy.tenants import KEYS, bearer, chat, operator_config
from tests.servers import ServerThread


@pytest.mark.integration
@pytest.mark.parametrize("query", ["", "?limit=5"])
def test_a_trailing_slash_redirect_stays_on_the_gateway(gateway: ServerThread, query: str) -> None:
    response = httpx.get(
        f"{gateway.url}/v1/trust/{query}",
        headers={**bearer(MASTER_KEY), "host": "evil.example"},
        follow_redirects=False,
        timeout=10,
    )
    assert response.is_redirect
    assert response.headers["location"] == f"/v1/trust{query}"
    followed = httpx.get(f"{gateway.url}{response.headers['location']}", headers=bearer(MASTER_KEY), timeout=10)
    assert followed.status_code == 200 and followed.json()["object"] == "list"


@pytest.mark.unit
@pytest.mark.parametrize(
    "location, path",
    [
        ("http://evil.example/v1/trust", "/v1/trust"),
        ("http://gw//evil.example/x?a=1", "/evil.example/x?a=1"),  # never a protocol-relative //host
        ("https://gw/\\\\evil.example", "/evil.example"),
        ("/v1/trust", "/v1/trust"),
    ],
)
def test_same_origin_location(location: str, path: str) -> None:
    assert same_origin_location(location) == path


@pytest.mark.integration
def test_modes_are_read_in_any_case_within_the_policy(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """SYNC is sync where the key may choose it; for a key configured off it stays off (ignored, not a 400)."""
    config = operator_config(
        fake_upstream.url,
        mode="async",  # type: ignore[attr-defined]
        per_key={"team-a": {"allow_client_mode": "any"}, "team-b": {"mode": "off"}},
    )
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    raised = chat(server, "sk-team-a", headers={"x-trustgate-mode": "SYNC"})
    assert raised.status_code == 200 and raised.headers["x-trust-status"] == "done"
    kept_off = chat(server, "sk-team-b", headers={"x-trustgate-mode": "Sync"})
    assert kept_off.status_code == 200 and not [h for h in kept_off.headers if h.startswith("x-trust-")]
    lowered = chat(server, "sk-team-a", headers={"x-trustgate-mode": "OFF"})
    assert lowered.status_code == 200 and "x-trust-id" not in lowered.headers
    assert chat(server, "sk-team-a", headers={"x-trustgate-mode": "loud"}).status_code == 400


@pytest.mark.integration
def test_anonymous_readiness_says_only_ready_or_not(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = operator_config(fake_upstream.url)  # type: ignore[attr-defined]
    server = start_gateway(config)
    url = f"{server.url}/health/readiness"
    for headers in ({}, bearer(KEYS[0]["key"]), bearer(KEYS[2]["key"]), bearer("sk-wrong")):
        reply = httpx.get(url, headers=headers, timeout=10)
        assert (reply.status_code, reply.json()) == (200, {"status": "ok"}), headers
    detailed = httpx.get(url, headers=bearer(MASTER_KEY), timeout=10).json()
    assert detailed["status"] == "ok" and detailed["models"] == {"fake": "ok"} and detailed["mode"] == "any"
