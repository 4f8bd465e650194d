"""User traffic's tokens, as the upstream reported them: counted per model beside scoring's, and on a key's tpm.

Streams count only when the upstream reports usage (``stream_options.include_usage``
for chat, which the gateway asks for itself of a model group it prices; the
Responses API's terminal event always carries it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.metric_samples import samples
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def user_tokens(server: ServerThread, kind: str) -> float:
    labels = frozenset({("model", "fake"), ("kind", kind), ("key", "master")})
    return samples(server).get(("trustgate_user_upstream_tokens_total", labels), 0.0)


def post(server: ServerThread, path: str, body: dict[str, Any], key: str = MASTER_KEY) -> httpx.Response:
    return httpx.post(
        f"{server.url}{path}", headers={"authorization": f"Bearer {key}"}, timeout=20, json={"model": "fake", **body}
    )


CALLS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "one two three"}]}),
    "chat-stream": (
        "/v1/chat/completions",
        {
            "messages": [{"role": "user", "content": "one two three"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ),
    "completions": ("/v1/completions", {"prompt": "one two three"}),
    "responses": ("/v1/responses", {"input": "one two three"}),
    "responses-stream": ("/v1/responses", {"input": "one two three", "stream": True}),
    "embeddings": ("/v1/embeddings", {"input": ["a", "b"]}),
}


@pytest.mark.parametrize("passthrough", [True, False], ids=["passthrough", "litellm"])
@pytest.mark.parametrize("call", list(CALLS))
def test_user_tokens_are_counted_as_the_upstream_reported_them(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], call: str, passthrough: bool
) -> None:
    server = start_gateway(
        gateway_config(
            fake_upstream.url,  # type: ignore[attr-defined]
            trustgate={"scoring": {"mode": "off"}, "passthrough": passthrough},
        )
    )
    path, body = CALLS[call]
    for _ in range(2):
        assert post(server, path, body).status_code == 200

    usage = _reported(fake_upstream, call)
    assert usage[0] > 0
    assert (user_tokens(server, "prompt"), user_tokens(server, "completion")) == (2 * usage[0], 2 * usage[1])


def _reported(fake: FakeUpstream, call: str) -> tuple[int, int]:
    """What the fake upstream reported for its last answer, by its own usage rules (tests/fake_upstream.py).

    litellm sends a legacy completion upstream as a chat call, so the rule is
    chosen by what the upstream was asked, not by the client's endpoint.
    """
    asked = fake.requests[-1]
    if call == "embeddings":
        return len(asked["input"]), 0
    words = len(fake.responder([{"role": "user", "content": "one two three"}]).split(" "))
    if "messages" in asked and not asked.get("stream"):
        return sum(len(str(m["content"]).split()) for m in asked["messages"]), words
    return 1, words


def test_a_stream_without_usage_counts_nothing(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """A model group without a price is not asked for usage the client did not ask for: none is reported."""
    config = gateway_config(fake_upstream.url, trustgate={"scoring": {"mode": "off"}})  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["model"] = "openai/a-model-litellm-does-not-price"
    server = start_gateway(config)
    path, body = CALLS["chat-stream"]
    assert post(server, path, {**body, "stream_options": None}).status_code == 200
    assert fake_upstream.requests[-1].get("stream_options") is None
    assert user_tokens(server, "prompt") == user_tokens(server, "completion") == 0


def test_streamed_tokens_count_on_the_keys_tpm(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(
        fake_upstream.url,  # type: ignore[attr-defined]
        trustgate={"scoring": {"mode": "off"}, "keys": [{"key": "sk-team", "name": "team", "tpm": 3}]},
    )
    server = start_gateway(config)
    path, body = CALLS["chat-stream"]
    assert post(server, path, body, key="sk-team").status_code == 200  # reports more than 3 tokens
    refused = post(server, path, body, key="sk-team")
    assert refused.status_code == 429 and "tokens per minute" in refused.json()["error"]["message"]
