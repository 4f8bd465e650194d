"""Misbehaving upstreams, over real sockets, on both upstream paths: the client always gets a bounded,
OpenAI-shaped answer, and the same one whichever path served the request."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest

from scoring.types import Ask, ComponentResult, Scorer, ScoringJob
from tests.conftest import MASTER_KEY
from tests.fake_upstream import NOT_A_COMPLETION, SERVER_PATH, FakeUpstream
from tests.proxy.scored_gateway import AskingScorer
from tests.proxy.upstream.both_paths import PATHS, openai_error, path_config
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def any_gateway(path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> ServerThread:
    return start_gateway(path_config(fake_upstream, path))


def chat(server: ServerThread, content: str, *, timeout: float = 20, **extra: Any) -> httpx.Response:
    body = {"model": "fake", "messages": [{"role": "user", "content": content}], **extra}
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, headers=AUTH, timeout=timeout)


def stream_events(server: ServerThread, content: str, *, timeout: float = 20) -> list[str]:
    body = {"model": "fake", "messages": [{"role": "user", "content": content}], "stream": True}
    with httpx.stream(
        "POST", f"{server.url}/v1/chat/completions", json=body, headers=AUTH, timeout=timeout
    ) as response:
        assert response.status_code == 200
        return [line for line in response.iter_lines() if line.startswith("data: ")]


def requests_counted(server: ServerThread, status: int) -> float:
    text = httpx.get(f"{server.url}/metrics").text
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("trustgate_requests_total{") and f'status="{status}"' in line
    )


@pytest.mark.parametrize("kind", sorted(NOT_A_COMPLETION))
def test_a_200_that_is_not_a_chat_completion_is_502(any_gateway: ServerThread, kind: str) -> None:
    error = openai_error(chat(any_gateway, f"[reply:{kind}]"), 502)
    assert error["code"] == "upstream_malformed_reply" and error["type"] == "api_error"
    assert "html" not in error["message"]
    assert requests_counted(any_gateway, 502) == 1


@pytest.mark.parametrize("sent", ["", "[unsized]"], ids=["content-length", "chunked"])
def test_a_reply_over_max_response_bytes_is_502(
    path: str, sent: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(path_config(fake_upstream, path, upstream={"max_response_bytes": 200_000}))
    assert chat(server, f"[big:100000] {sent}").status_code == 200  # under the cap: answered
    error = openai_error(chat(server, f"[big:1000000] {sent}"), 502)
    assert error["code"] == "upstream_reply_too_large"


def test_a_stream_over_max_response_bytes_ends_with_an_error_event(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(path_config(fake_upstream, path, upstream={"max_response_bytes": 200_000}))
    events = stream_events(server, "[big:1000000]")
    assert sum(len(e) for e in events) < 300_000
    assert '"upstream_reply_too_large"' in events[-1] and "[DONE]" not in events[-1]


def test_a_dripped_body_is_cut_at_the_deployment_timeout(
    path: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """The fake sends a valid completion one byte every 0.2 s (about a minute); the deadline is 1 s.

    The client gives up after 10 s, so only a gateway that bounds the whole call answers in time.
    """
    server = start_gateway(path_config(fake_upstream, path, timeout=1))
    error = openai_error(chat(server, "[drip:0.2]", timeout=10), 504)
    assert error["type"] == "timeout_error"


@pytest.mark.parametrize("bound", ["timeout", "stream_timeout"])
def test_a_dripped_stream_is_cut_at_its_deadline(
    path: str, bound: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """The first event at once, then one byte every 0.2 s (minutes), against a 1 s deadline: the
    deployment's ``timeout``, or its ``stream_timeout`` where set (then ``timeout`` is 5 s).

    litellm yields nothing until a whole event has arrived, so only a timer, not a check as events
    arrive, ends it; the client gives up after 10 s without a byte.
    """
    config = path_config(fake_upstream, path, timeout=1 if bound == "timeout" else 5)
    if bound == "stream_timeout":
        config["model_list"][0]["litellm_params"]["stream_timeout"] = 1
    events = stream_events(start_gateway(config), "[drip:0.2] one two", timeout=10)
    assert len(events) == 2 and "[DONE]" not in events[-1]
    error = orjson.loads(events[-1][6:])["error"]
    assert error["code"] == "upstream_timeout" and error["type"] == "timeout_error"


def test_a_connection_reset_mid_body_is_502(any_gateway: ServerThread) -> None:
    error = openai_error(chat(any_gateway, "[reset]"), 502)
    assert error["code"] == "upstream_unreachable"


def test_client_leaving_a_non_streamed_request_cancels_the_upstream_call(
    any_gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    with pytest.raises(httpx.ReadTimeout):
        chat(any_gateway, "[stall:4]", timeout=0.5)
    deadline = time.monotonic() + 3  # well before the fake's 4 s answer and the 5 s deployment timeout
    while fake_upstream.disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert fake_upstream.disconnects == 1


@pytest.mark.parametrize("status", [401, 404])
def test_a_client_error_does_not_bench_the_deployment(any_gateway: ServerThread, status: int) -> None:
    assert chat(any_gateway, f"[fail:{status}]").status_code == status
    for _ in range(3):  # litellm would cool the deployment down for every client: 502 "No deployments available"
        assert chat(any_gateway, "next client").status_code == 200


@pytest.mark.parametrize(
    "status, kind",
    [
        (400, "invalid_request_error"),
        (401, "authentication_error"),
        (404, "invalid_request_error"),
        (429, "rate_limit_error"),
        (500, "api_error"),
        (503, "api_error"),
    ],
)
def test_upstream_error_text_stays_in_the_log(
    any_gateway: ServerThread, caplog: pytest.LogCaptureFixture, status: int, kind: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="trustgate.upstream"):
        error = openai_error(chat(any_gateway, f"[fail:{status}]"), status)
    assert error["type"] == kind and f"HTTP {status}" in error["message"]
    assert SERVER_PATH not in error["message"] and "fake upstream" not in error["message"]
    assert "model_group" not in error["message"] and "hash" not in error["message"].lower()
    logged = [r.getMessage() for r in caplog.records if r.name == "trustgate.upstream"]
    assert len(logged) == 1 and SERVER_PATH in logged[0]


def test_the_upstream_key_is_masked_in_the_log(
    any_gateway: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    fake_upstream.api_key = "sk-the-right-one"  # the fake echoes the wrong key it got into its message
    with caplog.at_level(logging.WARNING, logger="trustgate.upstream"):
        openai_error(chat(any_gateway, "x"), 401)
    logged = [r.getMessage() for r in caplog.records if r.name == "trustgate.upstream"]
    assert len(logged) == 1 and "Incorrect API key" in logged[0]
    assert "sk-upstream-secret" not in caplog.text and "***" in logged[0]


class MalformedReplyScorer(Scorer):
    """A scorer whose own upstream call gets a 200 that is not a chat completion."""

    name = "fc"

    def __init__(self, kind: str) -> None:
        self.kind = kind

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult:
        reply = await ask([{"role": "user", "content": f"[reply:{self.kind}] check: {job.answer}"}])
        return ComponentResult(
            component=self.name, value=0.4 if not reply.text else 0.9, label="neutral", upstream_calls=1
        )


@pytest.mark.parametrize("kind", ["html", "empty", "array"])
def test_a_scoring_call_answered_with_garbage_fails_the_component(
    path: str, kind: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    server = start_gateway(
        path_config(
            fake_upstream, path, scoring={"mode": "sync", "sync_timeout_s": 10, "queue": {"scorer_timeout_s": 8}}
        ),
        scorers=[MalformedReplyScorer(kind)],
    )
    response = chat(server, "who?")
    assert response.status_code == 200
    record = httpx.get(f"{server.url}/v1/trust/{response.headers['x-trust-id']}", headers=AUTH).json()
    component = record["components"]["fc"]
    assert component["value"] is None and "not an answer of this endpoint" in component["error"]
    assert record["score"] is None


BAD_CHUNKS = {"delta-str": ("[bad-chunk]", '"delta":"str"'), "not-json": ("[bad-chunk:not-json]", "{not json")}


@pytest.mark.parametrize("kind", sorted(BAD_CHUNKS))
def test_a_malformed_stream_chunk_never_cuts_a_scored_stream(
    path: str, kind: str, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    """Pass-through forwards the bad chunk, the tap skips it, scoring and [DONE] follow.

    litellm re-serialises each chunk from what it parsed and its Router ends the
    stream at one it cannot read: that stream ends cleanly after the good chunks
    before it, with one OpenAI-shaped error event naming the malformed reply.
    """
    directive, forwarded = BAD_CHUNKS[kind]
    server = start_gateway(
        path_config(
            fake_upstream, path, scoring={"mode": "sync", "sync_timeout_s": 10, "queue": {"scorer_timeout_s": 8}}
        ),
        scorers=[AskingScorer("bc", 0.9)],
    )
    events = stream_events(server, f"{directive} one two")  # read to its end: a cut body would raise here
    assert '"content":"You"' in events[1]  # the good chunks before the bad one reached the client
    if path == "litellm":
        assert sum(e.startswith('data: {"error"') for e in events) == 1 and "[DONE]" not in "".join(events)
        assert orjson.loads(events[-1][6:])["error"]["code"] == "upstream_malformed_reply"
        return
    assert events[-1] == "data: [DONE]"
    assert any(forwarded in e for e in events)  # forwarded as the upstream sent it
    assert any('"trust"' in e for e in events[:-1])  # the tap read the good chunks and scored them
    assert not any(e.startswith('data: {"error"') for e in events)
    chunks = [orjson.loads(e[6:]) for e in events[:-1] if forwarded not in e]
    text = "".join(
        c["choices"][0]["delta"].get("content") or ""
        for c in chunks
        if c.get("choices") and isinstance(c["choices"][0].get("delta"), dict)
    )
    assert text == f"You said: {directive} one two"
