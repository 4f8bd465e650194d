"""A stream either arrives whole, ending in one ``[DONE]``, or ends in one error event and no ``[DONE]``.

The fake upstream drops its connection mid-body, once before and once after
sending ``[DONE]`` (llama.cpp's server did the latter to every request it
interrupted). Nothing may follow ``[DONE]``, and a cut stream is counted as an
error in the gateway's request metrics.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx
import orjson
import pytest

from tests.conftest import MASTER_KEY, gateway_config
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer
from tests.servers import ServerThread

pytestmark = pytest.mark.integration

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def stream_events(server: ServerThread, content: str, mode: str = "off") -> list[str]:
    body = {"model": "fake", "messages": [{"role": "user", "content": content}], "stream": True}
    with httpx.stream(
        "POST", f"{server.url}/v1/chat/completions", json=body, timeout=20, headers={**AUTH, "x-trustgate-mode": mode}
    ) as response:
        assert response.status_code == 200
        return [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]


def streamed_errors(server: ServerThread, status: int) -> float:
    text = httpx.get(f"{server.url}/metrics").text
    prefix = "trustgate_requests_total{"
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(prefix) and f'status="{status}"' in line and 'mode="stream"' in line
    )


@pytest.fixture(params=["passthrough", "litellm"])
def gateway(
    request: pytest.FixtureRequest, fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread]
) -> ServerThread:
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {
        "passthrough": request.param == "passthrough",
        "scoring": {"mode": "off", "queue": {"scorer_timeout_s": 1.0}},
    }
    return start_gateway(config, scorers=[AskingScorer("bc", 0.9)])


@pytest.mark.parametrize("mode", ["off", "async", "sync"])
def test_a_stream_cut_mid_body_ends_in_one_error_event_and_no_done(gateway: ServerThread, mode: str) -> None:
    events = stream_events(gateway, "[reset-stream] one two three", mode)
    assert "[DONE]" not in events
    errors = [orjson.loads(e) for e in events if e != "[DONE]" and "error" in orjson.loads(e)]
    assert len(errors) == 1 and events[-1] == orjson.dumps(errors[0]).decode()
    assert errors[0]["error"]["type"] == "api_error"
    assert streamed_errors(gateway, 502) == 1


@pytest.mark.parametrize("mode", ["off", "async", "sync"])
def test_nothing_follows_done_when_the_upstream_breaks_after_it(
    fake_upstream: FakeUpstream, start_gateway: Callable[..., ServerThread], mode: str
) -> None:
    """On the pass-through path the gateway sees the bytes after ``[DONE]``; litellm ends its stream at ``[DONE]``."""
    config = gateway_config(fake_upstream.url)  # type: ignore[attr-defined]
    config["trustgate"] = {"scoring": {"mode": "off", "queue": {"scorer_timeout_s": 1.0}}}
    server = start_gateway(config, scorers=[AskingScorer("bc", 0.9)])
    events = stream_events(server, "[done-then-reset] one two three", mode)
    assert "[DONE]" not in events
    assert "error" in orjson.loads(events[-1])
    assert sum("error" in orjson.loads(e) for e in events) == 1
    assert streamed_errors(server, 502) == 1


@pytest.mark.parametrize("mode", ["off", "sync"])
def test_a_whole_stream_ends_in_exactly_one_done(gateway: ServerThread, mode: str) -> None:
    events = stream_events(gateway, "one two three", mode)
    assert events.count("[DONE]") == 1 and events[-1] == "[DONE]"
    assert streamed_errors(gateway, 502) == 0
