"""The one request pipeline, driven without HTTP: a gateway's real parts, the request handed over as data.

``serve`` takes the gateway and an ``Incoming`` (headers, body, a guard for a
client that leaves); here they come from a test instead of a socket, against
the real fake upstream, so each endpoint's description (``endpoints``) is
checked on its own: the same pipeline answers chat, legacy completions, the
Responses API and embeddings, streams, scores in sync mode, and refuses before
any upstream call.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Mapping
from pathlib import Path
from typing import Any, TypeVar

import orjson
import pytest
from fastapi import Response
from fastapi.responses import StreamingResponse
from prometheus_client import CollectorRegistry

from proxy import create_app, settings_from_dict
from proxy.base.errors import AuthenticationFailed, ClientDisconnected, InvalidRequest
from proxy.endpoints.pipeline import EndpointSpec, serve
from proxy.endpoints.specs import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES
from proxy.server.event_stream import EventStream
from proxy.server.gateway import Gateway
from tests.conftest import MASTER_KEY
from tests.fake_upstream import FakeUpstream
from tests.proxy.scored_gateway import AskingScorer, scoring_config

pytestmark = pytest.mark.integration

T = TypeVar("T")
SYNC = {"authorization": f"Bearer {MASTER_KEY}", "x-trustgate-mode": "sync"}


class Given:
    """A request as data: its headers and body; ``leaves``: the client is gone before its answer."""

    def __init__(self, body: dict[str, Any], headers: Mapping[str, str] = SYNC, *, leaves: bool = False) -> None:
        self.headers = headers
        self._body = orjson.dumps(body)
        self._leaves = leaves

    async def body(self, limit: int) -> bytes:
        if len(self._body) > limit:
            raise InvalidRequest("too large", code="body_too_large", status_code=413)
        return self._body

    async def unless_client_leaves(self, call: Awaitable[T]) -> T:
        if self._leaves:
            task = asyncio.ensure_future(call)
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            raise ClientDisconnected("gone", code="client_disconnected")
        return await call


@contextlib.asynccontextmanager
async def gateway_parts(fake_upstream: FakeUpstream, tmp_path: Path, **section: Any) -> AsyncIterator[Gateway]:
    """The gateway's parts as its app's lifespan builds them; a scorer that re-asks the upstream, clients choose
    the mode."""
    config = scoring_config(fake_upstream.url)
    config["trustgate"] = {**config["trustgate"], "store": {"path": str(tmp_path / "records.sqlite3")}, **section}
    app = create_app(settings_from_dict(config, {}), registry=CollectorRegistry(), scorers=[AskingScorer("bc", 0.9)])
    async with app.router.lifespan_context(app):
        yield app.state.gateway


def served(spec: EndpointSpec, request: Given, fake_upstream: FakeUpstream, tmp_path: Path) -> Response:
    async def run() -> Response:
        async with gateway_parts(fake_upstream, tmp_path) as gateway:
            response = await serve(gateway, spec, request)
            if isinstance(response, StreamingResponse | EventStream):  # read while the parts are open
                chunks = [chunk async for chunk in response.body_iterator]
                response.body = b"".join(c if isinstance(c, bytes) else c.encode() for c in chunks)
            return response

    return asyncio.run(run())


def events(body: bytes) -> list[Any]:
    return [
        orjson.loads(line[5:]) if line[5:].strip() != b"[DONE]" else "[DONE]"
        for line in body.split(b"\n")
        if line.startswith(b"data:")
    ]


def test_a_chat_request_is_answered_and_scored_in_sync_mode(fake_upstream: FakeUpstream, tmp_path: Path) -> None:
    response = served(
        CHAT,
        Given({"model": "fake", "messages": [{"role": "user", "content": "Who said hi?"}]}),
        fake_upstream,
        tmp_path,
    )
    assert response.status_code == 200
    assert orjson.loads(response.body)["choices"][0]["message"]["content"] == "You said: Who said hi?"
    assert response.headers["x-trustgate-model-group"] == "fake"
    assert response.headers["x-trust-status"] == "done" and response.headers["x-trust-score"]
    assert fake_upstream.requests[0]["model"] == "gpt-4o-mini"


def test_a_legacy_completions_stream_ends_with_the_trust_on_its_final_chunk(
    fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    response = served(
        COMPLETIONS, Given({"model": "fake", "prompt": "Who streams this?", "stream": True}), fake_upstream, tmp_path
    )
    sent = events(response.body)
    assert sent[-1] == "[DONE]"
    assert "".join(e["choices"][0]["text"] for e in sent[:-1] if e["choices"]) == "You said: Who streams this?"
    assert sent[-2]["trust"]["status"] == "done"


def test_a_responses_request_reads_its_answer_from_the_output_items(
    fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    response = served(RESPONSES, Given({"model": "fake", "input": "who?"}), fake_upstream, tmp_path)
    output = orjson.loads(response.body)["output"]
    assert output[0]["content"][0]["text"] == "You said: who?"
    assert response.headers["x-trust-status"] == "done"


def test_embeddings_are_forwarded_and_never_scored(fake_upstream: FakeUpstream, tmp_path: Path) -> None:
    response = served(EMBEDDINGS, Given({"model": "fake", "input": "vector"}), fake_upstream, tmp_path)
    assert orjson.loads(response.body)["data"][0]["embedding"]
    assert "x-trust-status" not in response.headers


@pytest.mark.parametrize(
    "request_, error",
    [
        (
            Given({"model": "fake", "messages": [{"role": "user", "content": "hi"}]}, {"authorization": "Bearer no"}),
            AuthenticationFailed,
        ),
        (Given({"model": "fake", "messages": []}), InvalidRequest),
    ],
)
def test_a_refused_request_raises_before_any_upstream_call(
    request_: Given, error: type[Exception], fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    with pytest.raises(error):
        served(CHAT, request_, fake_upstream, tmp_path)
    assert fake_upstream.requests == []


def test_a_client_that_leaves_gets_no_answer_and_its_key_slot_is_free(
    fake_upstream: FakeUpstream, tmp_path: Path
) -> None:
    team = {"authorization": "Bearer sk-team"}
    one_at_a_time = [{"key": "sk-team", "name": "team", "max_parallel_requests": 1}]

    async def run() -> None:
        async with gateway_parts(fake_upstream, tmp_path, keys=one_at_a_time) as gateway:
            for _ in range(2):  # a slot still held would refuse the next request (429)
                with pytest.raises(ClientDisconnected):
                    await serve(
                        gateway,
                        CHAT,
                        Given({"model": "fake", "messages": [{"role": "user", "content": "bye"}]}, team, leaves=True),
                    )
            answered = await serve(
                gateway, CHAT, Given({"model": "fake", "messages": [{"role": "user", "content": "back"}]}, team)
            )
            assert orjson.loads(answered.body)["choices"][0]["message"]["content"] == "You said: back"

    asyncio.run(run())
