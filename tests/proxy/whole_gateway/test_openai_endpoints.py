"""Responses API, legacy completions, embeddings and models.retrieve through the real OpenAI SDK, on both paths.

Each runs against a real gateway and the fake upstream over loopback; the
Responses API also against an upstream without ``/responses`` (translated to
chat completions by litellm's bridge). Answers of completions and Responses
are scored like chat: trust headers, and in a sync stream the trust object on
the stream's end (the final chunk; ``response.completed``'s response), where
the SDK keeps it in ``model_extra``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from tests.conftest import MASTER_KEY, gateway_config, sdk_client
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer, scoring_config
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}
SYNC = {"x-trustgate-mode": "sync"}
# passthrough / litellm, and whether the upstream serves /responses itself
SETUPS = [("passthrough", True), ("passthrough", False), ("litellm", True), ("litellm", False)]


@pytest.fixture(params=SETUPS, ids=[f"{path}-{'native' if native else 'bridged'}" for path, native in SETUPS])
def gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    path, native = request.param
    fake_upstream.responses_supported = native
    config = scoring_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"]["passthrough"] = path == "passthrough"
    return start_gateway(config, scorers=[AskingScorer("bc", 0.9), AskingScorer("fc", 0.5)])


def sync_client(server: ServerThread, **headers: str) -> openai.OpenAI:
    return sdk_client(server, **headers)


def async_client(server: ServerThread, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=f"{server.url}/v1", api_key=MASTER_KEY, max_retries=0, timeout=30, default_headers=headers
    )


def test_responses_non_streamed_is_answered_and_scored(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    raw = sync_client(gateway, **SYNC).responses.with_raw_response.create(
        model="fake", input="Who built the first temple?", instructions="Be brief."
    )
    reply = raw.parse()
    assert reply.output_text == "You said: Who built the first temple?"
    assert raw.headers["x-trust-status"] == "done" and raw.headers["x-trust-score"] == "0.5800"
    forwarded = [r for r in fake_upstream.requests if "check:" not in str(r)][-1]
    assert forwarded["model"] == "gpt-4o-mini"
    if fake_upstream.responses_supported:
        assert forwarded["input"] == "Who built the first temple?" and forwarded["instructions"] == "Be brief."
    else:  # translated: the upstream saw a chat completion
        assert {"role": "user", "content": "Who built the first temple?"} in forwarded["messages"]


def test_responses_stream_carries_the_trust_on_response_completed(gateway: ServerThread) -> None:
    events = list(sync_client(gateway, **SYNC).responses.create(model="fake", input="Who streams?", stream=True))
    kinds = [event.type for event in events]
    text = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert text == "You said: Who streams?"
    assert kinds[-1] == "response.completed" and "trustgate.trust" not in kinds  # no event the SDK mistypes
    completed = events[-1]
    assert isinstance(completed, openai.types.responses.ResponseCompletedEvent)
    trust = (completed.response.model_extra or {})["trust"]
    assert trust["status"] == "done" and set(trust["components"]) == {"bc", "fc", "ov"}
    assert completed.response.output_text == "You said: Who streams?"


def test_responses_stream_helper_keeps_the_trust_on_the_final_response(gateway: ServerThread) -> None:
    with sync_client(gateway, **SYNC).responses.stream(model="fake", input="Who helps?") as stream:
        final = stream.get_final_response()
    assert final.output_text == "You said: Who helps?"
    assert (final.model_extra or {})["trust"]["status"] == "done"


def test_responses_trust_event_only_when_asked(gateway: ServerThread) -> None:
    """``x-trustgate-trust-event: true`` adds the ``trustgate.trust`` event before the terminal one."""
    asks = {**SYNC, "x-trustgate-trust-event": "true"}
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/responses",
        headers={**AUTH, **asks},
        json={"model": "fake", "input": "event please", "stream": True},
        timeout=30,
    ) as raw:
        names = [line[len("event: ") :] for line in raw.iter_lines() if line.startswith("event: ")]
    assert names[-2:] == ["trustgate.trust", "response.completed"]
    with sync_client(gateway, **asks).responses.stream(model="fake", input="Who helps with the event?") as stream:
        final = stream.get_final_response()  # the SDK's accumulator passes the extra event by
    assert final.output_text == "You said: Who helps with the event?" and "trust" in (final.model_extra or {})


def test_responses_async_client(gateway: ServerThread) -> None:
    async def ask() -> tuple[str, list[str]]:
        async with async_client(gateway) as client:
            reply = await client.responses.create(
                model="fake", input=[{"role": "user", "content": [{"type": "input_text", "text": "async hello"}]}]
            )
            stream = await client.responses.create(model="fake", input="async stream", stream=True)
            kinds = [event.type async for event in stream]
            return reply.output_text, kinds

    text, kinds = asyncio.run(ask())
    assert text == "You said: async hello"
    assert kinds[-1] == "response.completed" and "trustgate.trust" not in kinds  # async mode: no in-band trust


def test_completions_scored_like_chat(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    raw = sync_client(gateway, **SYNC).completions.with_raw_response.create(
        model="fake", prompt="Who wrote the legacy?", max_tokens=8
    )
    assert raw.parse().choices[0].text == "You said: Who wrote the legacy?"
    assert raw.headers["x-trust-status"] == "done" and raw.headers["x-trust-bc"] == "0.9000"
    chunks = list(
        sync_client(gateway, **SYNC).completions.create(model="fake", prompt="Who streams the legacy?", stream=True)
    )
    assert (
        "".join(c.choices[0].text or "" for c in chunks) == "You said: Who streams the legacy?"
    )  # a choice in every chunk
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert (chunks[-1].model_extra or {})["trust"]["status"] == "done"

    async def ask() -> str:
        async with async_client(gateway) as client:
            reply = await client.completions.create(model="fake", prompt="async legacy")
            return reply.choices[0].text

    assert asyncio.run(ask()) == "You said: async legacy"


def test_embeddings_forwarded(gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    reply = sync_client(gateway).embeddings.create(model="fake", input=["a", "bbb"])
    assert [item.embedding[0] for item in reply.data] == [1.0, 3.0]
    assert fake_upstream.requests[-1]["input"] == ["a", "bbb"]

    async def ask() -> int:
        async with async_client(gateway) as client:
            return len((await client.embeddings.create(model="fake", input="one")).data)

    assert asyncio.run(ask()) == 1


def test_models_retrieve(gateway: ServerThread) -> None:
    assert sync_client(gateway).models.retrieve("fake").id == "fake"
    with pytest.raises(openai.NotFoundError):
        sync_client(gateway).models.retrieve("no-such-model")


@pytest.mark.parametrize("path", ["passthrough", "litellm"])
def test_key_rules_hold_on_the_new_endpoints(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"].append({**config["model_list"][0], "model_name": "other"})
    config["trustgate"] = {
        "passthrough": path == "passthrough",
        "keys": [{"key": "sk-team", "name": "team", "models": ["fake"]}],
    }
    server = start_gateway(config)
    team = sdk_client(server, "sk-team")
    for call in (
        lambda: team.responses.create(model="other", input="x"),
        lambda: team.completions.create(model="other", prompt="x"),
        lambda: team.embeddings.create(model="other", input="x"),
    ):
        with pytest.raises(openai.PermissionDeniedError):
            call()
    with pytest.raises(openai.NotFoundError):
        team.models.retrieve("other")  # as the listing: a model the key may not use reads as missing
    assert team.models.retrieve("fake").id == "fake"
    with pytest.raises(openai.AuthenticationError):
        sdk_client(server, "sk-wrong").embeddings.create(model="fake", input="x")
    assert fake_upstream.requests == []


@pytest.mark.parametrize(
    "endpoint, body",
    [
        ("responses", {"model": "fake", "input": "x", "api_base": "http://evil.example"}),
        ("responses", {"model": "fake", "input": "x", "previous_response_id": "resp_someone_elses"}),
        ("completions", {"model": "fake", "prompt": "x", "custom_llm_provider": "openai"}),
        ("embeddings", {"model": "fake", "input": "x", "api_key": "sk-mine"}),
        ("embeddings", {"model": "fake", "input": "x", "stream": True}),
        ("responses", {"model": "fake", "input": 3}),
    ],
)
def test_refused_parameters(
    endpoint: str, body: dict[str, Any], fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]
    response = httpx.post(f"{server.url}/v1/{endpoint}", json=body, headers=AUTH)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert fake_upstream.requests == []


def test_upstream_errors_keep_their_status_on_new_endpoints(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(gateway_config(fake_upstream.url))  # type: ignore[attr-defined]
    fake_upstream.rate_limited = 1
    with pytest.raises(openai.RateLimitError):
        sync_client(server).embeddings.create(model="fake", input="x")
