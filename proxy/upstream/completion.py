"""What an upstream call gives back, whichever backend made it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import orjson

from ..base.sdk_params import Endpoint
from .errors import UpstreamErrors
from .replies import ChatCompletion, MalformedReply, WholeReply, check_reply, parse_completion
from .reserved import stripped_reply

__all__ = [
    "DONE_EVENT",
    "Completion",
    "Forwarded",
    "UpstreamStream",
    "bounded_chunks",
    "checked_completion",
    "checked_forwarded",
    "sse_event",
]

DONE_EVENT = b"data: [DONE]\n\n"  # the last event of a chat-completions stream


def sse_event(payload: Any, *, name: str | None = None) -> bytes:
    """One server-sent event carrying ``payload`` as JSON: how every chunk the gateway writes is framed.

    ``name`` gives the event an ``event:`` line, as the Responses API's gateway events carry.
    """
    head = f"event: {name}\n".encode() if name else b""
    return head + b"data: " + orjson.dumps(payload) + b"\n\n"


@dataclass(frozen=True)
class Completion:
    """A non-streamed completion: the upstream's bytes, and the same bytes checked as a chat completion.

    The pass-through path forwards ``raw`` untouched but for an upstream's
    ``trust`` field, which is stripped (``reserved``); ``reply`` exists only
    because the body was validated (``replies.parse_completion``) before anyone
    sees it, so a 200 that is not a chat completion never reaches a client or a scorer.
    """

    raw: bytes
    reply: ChatCompletion
    model_group: str
    deployment: int = 0  # which of the group's entries in model_list answered (its price is the answer's)

    def at(self, deployment: int) -> Completion:
        return replace(self, deployment=deployment)

    @cached_property
    def data(self) -> dict[str, Any]:
        """The body as plain JSON (the evaluation cache stores it)."""
        parsed: dict[str, Any] = orjson.loads(self.raw)
        return parsed


def checked_completion(raw: bytes, model_group: str, *, max_bytes: int, errors: UpstreamErrors) -> Completion:
    """``raw`` as a Completion once it is within ``max_bytes`` and parses as a chat completion; else the 502."""
    if len(raw) > max_bytes:
        raise errors.too_large(max_bytes)
    raw = stripped_reply(raw)  # an upstream's ``trust`` field is never the gateway's (``reserved``)
    try:
        reply = parse_completion(raw)
    except MalformedReply as exc:
        raise errors.malformed(str(exc)) from exc
    return Completion(raw=raw, reply=reply, model_group=model_group)


@dataclass(frozen=True)
class Forwarded:
    """A whole reply of an endpoint besides chat (legacy completions, embeddings, Responses).

    Checked for what the endpoint's clients read first — within
    ``max_response_bytes``, a JSON object with the endpoint's fields
    (``replies.check_reply``: a 200 whose fields are all null is refused) —
    while the rest of the shape is the client's to read; ``reply`` is the same
    reply read as the endpoint's model, whose answer fields read as absent
    when they have another shape.
    """

    raw: bytes
    data: dict[str, Any]
    reply: WholeReply
    model_group: str
    deployment: int = 0  # as a Completion's

    def at(self, deployment: int) -> Forwarded:
        return replace(self, deployment=deployment)


def checked_forwarded(
    raw: bytes, model_group: str, endpoint: Endpoint, *, max_bytes: int, errors: UpstreamErrors
) -> Forwarded:
    if len(raw) > max_bytes:
        raise errors.too_large(max_bytes)
    raw = stripped_reply(raw)
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.malformed(f"reply is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise errors.malformed("reply is not a JSON object")
    try:
        reply = check_reply(data, endpoint)
    except MalformedReply as exc:
        raise errors.malformed(str(exc)) from exc
    return Forwarded(raw=raw, data=data, reply=reply, model_group=model_group)


@dataclass
class UpstreamStream:
    """An opened upstream stream: SSE-framed byte chunks, ending with ``data: [DONE]``.

    It is opened (status checked, first chunk read) before the client's response
    starts, so that upstream errors still reach the client as a proper HTTP
    error rather than as a broken 200 stream.
    """

    chunks: AsyncIterator[bytes]
    close: Callable[[], Awaitable[None]]
    model_group: str
    first: list[bytes] = field(default_factory=list)
    deployment: int = 0  # as a Completion's

    def at(self, deployment: int) -> UpstreamStream:
        self.deployment = deployment
        return self

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            for chunk in self.first:
                yield chunk
            async for chunk in self.chunks:
                yield chunk
        finally:
            await self.close()


async def bounded_chunks(
    chunks: AsyncIterator[bytes], limit: int, errors: UpstreamErrors, *, seconds: float, started: float | None = None
) -> AsyncGenerator[bytes, None]:
    """``chunks`` until their total passes ``limit`` bytes or ``seconds`` have passed, then the upstream's error.

    ``seconds`` counts from ``started`` (the event loop's clock when the call
    began; default now) and is a timer, not a check on arrival: a stream dripped
    slowly, one that stalls, and one whose bytes trickle in too slowly to make
    an event all end at the deadline.
    """
    loop = asyncio.get_running_loop()
    ends = (loop.time() if started is None else started) + seconds
    total = 0
    while True:
        try:
            async with asyncio.timeout_at(ends):
                chunk = await anext(chunks)
        except StopAsyncIteration:
            return
        except TimeoutError as exc:
            raise errors.timed_out(f"stream still running after {seconds:g}s") from exc
        total += len(chunk)
        if total > limit:
            raise errors.too_large(limit)
        yield chunk
