"""``lp`` on an upstream that returns no log-probabilities for ``logprobs: true`` alone (as llama.cpp's server):
the gateway learns per deployment to add ``top_logprobs: 1``, knows it from the start for the embedded server,
and a client still sees only what it asked for (whole replies and streams)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from proxy.config.settings import settings_from_dict
from proxy.upstream.client import UpstreamClient
from proxy.upstream.logprobs import LogprobAsking
from scoring.logprob import LogprobScorer
from tests.conftest import gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.logprob_replies import lp_absent_because, lp_config, visible_logprobs
from tests.proxy.scored_gateway import AUTH, AskingScorer, scoring_config
from tests.servers import ServerThread

QUESTION = [{"role": "user", "content": "Who built the first temple?"}]


@pytest.fixture(params=["passthrough", "litellm"])
def llama_like(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    """A gateway in front of an upstream that needs top_logprobs, over either upstream path."""
    fake_upstream.logprobs_need_top = True
    return start_gateway(
        lp_config(fake_upstream.url, request.param),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), LogprobScorer()],
    )


def ask(server: ServerThread, *, stream: bool, **extra: Any) -> tuple[httpx.Headers, list[Any]]:
    """A sync-scored chat call: its headers (a stream's trust arrives in-band) and its JSON payloads."""
    with httpx.stream(
        "POST",
        f"{server.url}/v1/chat/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        timeout=20,
        json={"model": "fake", "messages": QUESTION, "stream": stream, **extra},
    ) as r:
        assert r.status_code == 200, r.read()
        body, headers = r.read().decode(), r.headers
    if not stream:
        return headers, [json.loads(body)]
    return headers, [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: {")]


def lp_of(headers: httpx.Headers, payloads: list[Any]) -> float | None:
    """``x-trust-lp``, or a stream's in-band trust summary's ``lp``."""
    if "x-trust-lp" in headers:
        return float(headers["x-trust-lp"])
    trust = next((p["trust"] for p in payloads if isinstance(p, dict) and "trust" in p), None)
    return trust["components"].get("lp") if trust else None


def user_calls(fake: FakeUpstream) -> list[dict[str, Any]]:
    """The upstream requests of users' calls (the bc scorer's re-asks start with "check:")."""
    return [r for r in fake.requests if not r["messages"][-1]["content"].startswith("check:")]


@pytest.mark.integration
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_the_gateway_learns_to_ask_with_top_logprobs(
    llama_like: ServerThread, fake_upstream: FakeUpstream, stream: bool
) -> None:
    first_headers, first = ask(llama_like, stream=stream)
    assert lp_of(first_headers, first) is None  # the deployment answered logprobs: true with none
    headers, later = ask(llama_like, stream=stream)
    lp = lp_of(headers, later)
    assert lp is not None and 0 < lp <= 1
    sent = user_calls(fake_upstream)
    assert [(r.get("logprobs"), r.get("top_logprobs")) for r in sent] == [(True, None), (True, 1)]
    assert visible_logprobs(first) == visible_logprobs(later) == []  # the client asked for none


@pytest.mark.integration
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_a_client_that_asked_for_logprobs_gets_no_alternatives_it_did_not_ask(
    llama_like: ServerThread, fake_upstream: FakeUpstream, stream: bool
) -> None:
    ask(llama_like, stream=stream, logprobs=True)  # teaches the gateway the deployment needs top_logprobs
    _, payloads = ask(llama_like, stream=stream, logprobs=True)
    assert user_calls(fake_upstream)[-1]["top_logprobs"] == 1
    entries = [
        entry for found in visible_logprobs(payloads) if isinstance(found, dict) for entry in found.get("content") or []
    ]
    assert entries and all(entry["top_logprobs"] == [] for entry in entries)  # tokens yes, alternatives no
    assert all(isinstance(entry["logprob"], float) for entry in entries)


@pytest.mark.integration
def test_a_client_that_asked_for_alternatives_gets_them_untouched(
    llama_like: ServerThread, fake_upstream: FakeUpstream
) -> None:
    _, (reply,) = ask(llama_like, stream=False, logprobs=True, top_logprobs=3)
    assert user_calls(fake_upstream)[0]["top_logprobs"] == 3
    assert all(len(entry["top_logprobs"]) == 3 for entry in reply["choices"][0]["logprobs"]["content"])


@pytest.mark.integration
def test_an_upstream_that_gives_them_for_logprobs_alone_is_never_sent_top_logprobs(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[LogprobScorer()],
    )
    for _ in range(2):
        headers, _ = ask(server, stream=False)
        assert "x-trust-lp" in headers
    assert all("top_logprobs" not in r for r in user_calls(fake_upstream))


@pytest.mark.integration
def test_the_embedded_server_is_asked_with_top_logprobs_from_the_first_call(fake_upstream: FakeUpstream) -> None:
    """The local upstream the gateway starts is llama.cpp's: its very first scored answer has log-probabilities."""
    fake_upstream.logprobs_need_top = True
    port = int(fake_upstream.url.rsplit(":", 1)[1])  # type: ignore[attr-defined]
    config = gateway_config(
        fake_upstream.url,
        trustgate={  # type: ignore[attr-defined]
            "local_upstream": {"enabled": True, "host": "127.0.0.1", "port": port}
        },
    )
    config["model_list"][0]["litellm_params"]["model"] = "openai/smollm2-135m-instruct"

    async def first_call() -> Any:
        async with httpx.AsyncClient() as http:
            upstream = UpstreamClient(settings_from_dict(config), http)
            completion = await upstream.complete("fake", {"model": "fake", "messages": QUESTION, "logprobs": True})
            await upstream.aclose()
            return completion

    completion = asyncio.run(first_call())
    assert fake_upstream.requests[0]["top_logprobs"] == 1
    assert completion.reply.first is not None and completion.reply.first.chosen_logprobs()


@pytest.mark.integration
def test_a_call_that_could_not_ask_says_so(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """A legacy completion with ``echo``: asking would mix the prompt's tokens into what the client gets."""
    server = start_gateway(
        scoring_config(fake_upstream.url),  # type: ignore[attr-defined]
        scorers=[AskingScorer("bc", 0.9), LogprobScorer()],
    )
    reply = httpx.post(
        f"{server.url}/v1/completions",
        headers={**AUTH, "x-trustgate-mode": "sync"},
        timeout=20,
        json={"model": "fake", "prompt": "Who built it?", "echo": True},
    )
    assert reply.status_code == 200 and "x-trust-lp" not in reply.headers
    assert "logprobs" not in fake_upstream.requests[0]
    record = httpx.get(f"{server.url}/v1/trust/{reply.headers['x-trust-id']}", headers=AUTH, timeout=10).json()
    assert lp_absent_because(record) == "not_asked"


@pytest.mark.unit
def test_what_a_deployment_answered_is_remembered() -> None:
    """Learnt once either way: a deployment that needed top_logprobs keeps it, one that did not is not watched."""
    asking = LogprobAsking()
    plain, needy, body = ("http://a/v1", "m"), ("http://b/v1", "m"), {"logprobs": True}
    assert asking.learning(plain, body) and asking.learning(needy, body)
    asking.observe(plain, body, text=True, logprobs=True)
    asking.observe(needy, body, text=True, logprobs=False)
    assert not asking.learning(plain, body) and asking.body_for(plain, body) == body
    assert not asking.learning(needy, body) and asking.body_for(needy, body) == {"logprobs": True, "top_logprobs": 1}
    asking.observe(("http://c/v1", "m"), body, text=False, logprobs=False)  # a tool call teaches nothing
    assert asking.learning(("http://c/v1", "m"), body)
    assert asking.body_for(needy, {"logprobs": True, "top_logprobs": 4})["top_logprobs"] == 4
    assert "top_logprobs" not in asking.body_for(needy, {"messages": []})  # no logprobs asked: none added
