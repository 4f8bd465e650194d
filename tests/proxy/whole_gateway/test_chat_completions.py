"""The proxy through the official OpenAI client, over real sockets, on both upstream paths."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import openai
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

PATHS = ["passthrough", "litellm"]


@pytest.fixture(params=PATHS)
def any_gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    """The same config served by the pass-through path and by litellm's Router."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"passthrough": request.param == "passthrough"}
    return start_gateway(config)


def client(server: ServerThread, key: str = MASTER_KEY) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=20)


def test_non_streamed_completion_reaches_the_upstream(any_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    reply = client(any_gateway).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "hello there"}]
    )
    assert reply.choices[0].message.content == "You said: hello there"
    forwarded = fake_upstream.requests[-1]
    assert forwarded["model"] == "gpt-4o-mini"
    assert fake_upstream.headers[-1]["authorization"] == "Bearer sk-upstream-secret"


def test_streamed_completion_arrives_in_chunks(any_gateway: ServerThread) -> None:
    stream = client(any_gateway).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "one two three"}], stream=True
    )
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert "".join(pieces) == "You said: one two three"
    assert len([p for p in pieces if p]) >= 4


def test_stream_ends_with_done(any_gateway: ServerThread) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream(
        "POST", f"{any_gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {MASTER_KEY}"}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]"


def test_every_openai_parameter_is_passed_through(any_gateway: ServerThread, fake_upstream: FakeUpstream) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "look up",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    client(any_gateway).chat.completions.create(
        model="fake",
        messages=[{"role": "user", "content": "params"}],
        temperature=0.3,
        max_tokens=17,
        stop=["\n\n"],
        n=2,
        seed=7,
        tools=tools,
        tool_choice="auto",
        response_format={"type": "text"},
        logprobs=True,
        top_logprobs=3,
        user="user-1",
    )
    forwarded = fake_upstream.requests[-1]
    expected = {
        "temperature": 0.3,
        "max_tokens": 17,
        "stop": ["\n\n"],
        "n": 2,
        "seed": 7,
        "tools": tools,
        "tool_choice": "auto",
        "response_format": {"type": "text"},
        "logprobs": True,
        "top_logprobs": 3,
        "user": "user-1",
    }
    assert {k: forwarded.get(k) for k in expected} == expected


def test_max_completion_tokens_and_stream_options_are_passed_through(
    any_gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    stream = client(any_gateway).chat.completions.create(
        model="fake",
        messages=[{"role": "user", "content": "usage please"}],
        max_completion_tokens=9,
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = [chunk.usage for chunk in stream if chunk.usage]
    forwarded = fake_upstream.requests[-1]
    assert forwarded["max_completion_tokens"] == 9
    assert forwarded["stream_options"] == {"include_usage": True}
    assert usage and usage[-1].completion_tokens == 4


def test_logprobs_come_back_to_the_client(any_gateway: ServerThread) -> None:
    reply = client(any_gateway).chat.completions.create(
        model="fake", messages=[{"role": "user", "content": "x"}], logprobs=True, top_logprobs=2
    )
    content = reply.choices[0].logprobs.content
    assert [entry.token for entry in content] == ["You", "said:", "x"]
    assert len(content[0].top_logprobs) == 2


@pytest.mark.parametrize(
    "status, error",
    [
        (401, openai.AuthenticationError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_upstream_errors_keep_their_status(
    any_gateway: ServerThread, status: int, error: type[openai.APIStatusError]
) -> None:
    with pytest.raises(error) as caught:
        client(any_gateway).chat.completions.create(
            model="fake", messages=[{"role": "user", "content": f"[fail:{status}]"}]
        )
    assert caught.value.status_code == status
    assert set(caught.value.body) >= {"message", "type", "param", "code"}  # type: ignore[arg-type]


def test_upstream_secret_never_reaches_the_client(
    any_gateway: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture
) -> None:
    fake_upstream.api_key = "sk-the-right-one"  # the fake echoes the bad key it got into its message
    with pytest.raises(openai.AuthenticationError) as caught:
        client(any_gateway).chat.completions.create(model="fake", messages=[{"role": "user", "content": "x"}])
    assert "sk-upstream-secret" in fake_upstream.headers[-1]["authorization"]
    assert "sk-upstream-secret" not in caught.value.response.text
    assert "sk-upstream-secret" not in caplog.text and MASTER_KEY not in caplog.text


def test_upstream_timeout_is_504(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"][0]["litellm_params"]["timeout"] = 0.5
    server = start_gateway(config)
    with pytest.raises(openai.APIStatusError) as caught:
        client(server).chat.completions.create(model="fake", messages=[{"role": "user", "content": "[stall:3]"}])
    assert caught.value.status_code == 504
    assert caught.value.body["type"] == "timeout_error"  # type: ignore[index]


def test_client_disconnect_mid_stream_cancels_the_upstream_call(
    gateway: ServerThread, fake_upstream: FakeUpstream
) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "[stall-stream] a b c"}], "stream": True}
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", json=body, headers={"authorization": f"Bearer {MASTER_KEY}"}
    ) as response:
        first = next(response.iter_raw())
        assert first.startswith(b"data: ")
    deadline = time.monotonic() + 10
    while fake_upstream.stream_disconnects == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert fake_upstream.stream_disconnects == 1


def test_failed_deployment_is_retried_on_the_next_one(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    dead = {
        "model_name": "fake",
        "litellm_params": {"model": "openai/fake-model", "api_base": "http://127.0.0.1:9/v1", "timeout": 2},
    }
    config["model_list"].insert(0, dead)
    config["router_settings"]["num_retries"] = 1
    server = start_gateway(config)
    for _ in range(4):  # round-robin starts on each deployment in turn; every call still succeeds
        reply = client(server).chat.completions.create(model="fake", messages=[{"role": "user", "content": "r"}])
        assert reply.choices[0].message.content == "You said: r"


@pytest.mark.parametrize("path", PATHS)
def test_fallback_group_serves_when_the_primary_is_down(
    fake_upstream: FakeUpstream, path: str, start_gateway: Callable[..., ServerThread]
) -> None:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["model_list"].append(
        {
            "model_name": "primary",
            "litellm_params": {
                "model": "openai/fake-model",
                "api_base": "http://127.0.0.1:9/v1",
                "api_key": "x",
                "timeout": 2,
            },
        }
    )
    config["router_settings"]["fallbacks"] = [{"primary": ["fake"]}]
    config["trustgate"] = {"passthrough": path == "passthrough"}
    server = start_gateway(config)
    reply = client(server).chat.completions.create(model="primary", messages=[{"role": "user", "content": "f"}])
    assert reply.choices[0].message.content == "You said: f"


def test_unreachable_upstream_is_502(fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]) -> None:
    config = gateway_config("http://127.0.0.1:9")
    server = start_gateway(config)
    with pytest.raises(openai.APIStatusError) as caught:
        client(server).chat.completions.create(model="fake", messages=[{"role": "user", "content": "x"}])
    assert caught.value.status_code == 502
