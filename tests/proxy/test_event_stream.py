"""The gateway's own streamed response (``proxy.server.event_stream``): a stream read to its end, and a client
that leaves."""

from __future__ import annotations

import logging
import time

import httpx
import pytest

from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.test_service_endpoints import samples
from tests.servers import ServerThread

AUTH = {"authorization": f"Bearer {MASTER_KEY}"}


def _counted(server: ServerThread, status: str) -> float:
    return sum(value for (name, labels), value in samples(server).items()
               if name == "trustgate_requests_total" and dict(labels).get("status") == status
               and dict(labels).get("mode") == "stream")


def test_a_stream_is_an_event_stream_that_ends_with_done(gateway: ServerThread) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "a b c"}], "stream": True}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert response.headers["cache-control"] == "no-cache"
    assert response.text.endswith("data: [DONE]\n\n")
    assert _counted(gateway, "200") == 1


def test_a_client_leaving_mid_stream_is_counted_499_and_logs_no_error(
        gateway: ServerThread, fake_upstream: FakeUpstream, caplog: pytest.LogCaptureFixture) -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "[stall-stream] a b c"}], "stream": True}
    with caplog.at_level(logging.ERROR):
        with httpx.stream("POST", f"{gateway.url}/v1/chat/completions", json=body, headers=AUTH) as response:
            assert next(response.iter_raw()).startswith(b"data: ")
        deadline = time.monotonic() + 10
        while (fake_upstream.stream_disconnects == 0 or _counted(gateway, "499") == 0) and time.monotonic() < deadline:
            time.sleep(0.05)
    assert fake_upstream.stream_disconnects == 1  # the upstream read was cancelled
    assert _counted(gateway, "499") == 1
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
    after = httpx.post(f"{gateway.url}/v1/chat/completions", headers=AUTH,
                       json={"model": "fake", "messages": [{"role": "user", "content": "next"}], "stream": True})
    assert after.status_code == 200 and after.text.endswith("data: [DONE]\n\n")
