"""OpenAI's routes also without ``/v1`` (as LiteLLM serves them), and CORS only where configured."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import openai
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
ORIGIN = "https://app.example"
PREFLIGHT = {
    "origin": ORIGIN,
    "access-control-request-method": "POST",
    "access-control-request-headers": "authorization, content-type, x-trustgate-mode",
}


@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_an_sdk_pointed_at_the_root_reaches_every_route(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"passthrough": path == "passthrough"}
    server = start_gateway(config)
    root = openai.OpenAI(base_url=server.url, api_key=MASTER_KEY, max_retries=0, timeout=30)  # no /v1
    chat = root.chat.completions.create(model="fake", messages=[{"role": "user", "content": "root"}])
    assert chat.choices[0].message.content == "You said: root"
    streamed = root.chat.completions.create(model="fake", messages=[{"role": "user", "content": "s"}], stream=True)
    assert "".join(c.choices[0].delta.content or "" for c in streamed) == "You said: s"
    assert root.completions.create(model="fake", prompt="legacy").choices[0].text == "You said: legacy"
    assert root.responses.create(model="fake", input="resp").output_text == "You said: resp"
    assert len(root.embeddings.create(model="fake", input=["a"]).data) == 1
    assert [m.id for m in root.models.list()] == ["fake"] and root.models.retrieve("fake").id == "fake"
    assert httpx.post(f"{server.url}/chat/completions", json={"model": "fake", "messages": []}).status_code == 401


def test_cors_is_closed_by_default(gateway: ServerThread) -> None:
    preflight = httpx.options(f"{gateway.url}/v1/chat/completions", headers=PREFLIGHT)
    assert preflight.status_code == 405 and "access-control-allow-origin" not in preflight.headers
    call = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        headers={**AUTH, "origin": ORIGIN},
        json={"model": "fake", "messages": [{"role": "user", "content": "x"}]},
    )
    assert call.status_code == 200 and "access-control-allow-origin" not in call.headers


def test_allowed_origins_answer_preflights_and_expose_the_gateways_headers(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"server": {"allowed_origins": [ORIGIN]}}
    server = start_gateway(config)
    for route in ("/v1/chat/completions", "/chat/completions"):
        preflight = httpx.options(f"{server.url}{route}", headers=PREFLIGHT)
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == ORIGIN
        assert "POST" in preflight.headers["access-control-allow-methods"]
        assert "x-trustgate-mode" in preflight.headers["access-control-allow-headers"].lower()
        assert "access-control-allow-credentials" not in preflight.headers  # keys travel in headers, not cookies
    other = httpx.options(f"{server.url}/v1/chat/completions", headers={**PREFLIGHT, "origin": "https://evil.example"})
    assert other.status_code == 400 and "access-control-allow-origin" not in other.headers
    call = httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "origin": ORIGIN},
        json={"model": "fake", "messages": [{"role": "user", "content": "x"}]},
    )
    assert call.status_code == 200 and call.headers["access-control-allow-origin"] == ORIGIN
    assert call.headers["access-control-expose-headers"] == "*"  # a page reads x-request-id and x-trust-*


def test_the_post_endpoints_refuse_other_methods_in_openais_shape(gateway: ServerThread) -> None:
    """They are the app's first routes, with their own handler: another method still gets the app's 405."""
    for path in ("/v1/chat/completions", "/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings"):
        answer = httpx.get(f"{gateway.url}{path}", headers=AUTH)
        assert answer.status_code == 405
        assert answer.json()["error"] == {
            "message": "Method Not Allowed",
            "type": "invalid_request_error",
            "param": None,
            "code": None,
        }
