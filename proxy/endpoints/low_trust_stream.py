"""``streams: hold``: a stream (chat, legacy completions, Responses) is read whole, scored and acted on before the
client sees a byte.

The client then gets the kept, blocked or escalated answer as an ordinary
stream of its endpoint — the headers (``x-trust-action`` among them) first, chunks whose
``choices`` are never empty, the trust object on the last chunk and
``data: [DONE]`` — so an OpenAI SDK's plain loop reads it like any other. A
kept answer is the upstream's own events replayed; a blocked or escalated one
is a whole reply cut into chunks. ``streams: pass`` (the default) streams as
ever and only annotates.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import orjson
from fastapi.responses import StreamingResponse

from exporters import TRUST_FIELD, trust_summary
from exporters import trust_event as trust_event_payload
from scoring import CallCost, TrustRecord

from ..base.sdk_params import Endpoint
from ..server.auth import Caller
from ..server.gateway import Gateway
from ..server.spending import response_cost_headers
from ..trust.service import TrustPlan
from ..upstream.completion import DONE_EVENT, UpstreamStream, sse_event
from ..upstream.logprobs import LogprobsAdded
from ..upstream.taps import StreamTap
from .low_trust import Asked, Call, act_on, asker
from .request_meter import RequestMeter

__all__ = ["HELD_ENDPOINTS", "Held", "held_response", "holds", "read_whole", "reply_chunks", "response_events"]

_STREAM_ONLY = ("stream", "stream_options")
HELD_ENDPOINTS: tuple[Endpoint, ...] = ("chat", "completions", "responses")
_CHUNK_OBJECT = {"chat": "chat.completion.chunk", "completions": "text_completion"}


def holds(plan: TrustPlan, endpoint: Endpoint) -> bool:
    """Whether this stream is held until its verdict: sync, sampled, and a policy that acts and holds."""
    policy = plan.decision.on_low_trust
    return (
        endpoint in HELD_ENDPOINTS
        and plan.decision.mode == "sync"
        and plan.decision.sampled
        and policy.acts
        and policy.streams == "hold"
    )


def _delta(endpoint: Endpoint, choice: dict[str, Any]) -> dict[str, Any]:
    """A whole reply's choice as one stream chunk's choice (its content, no finish reason yet)."""
    if endpoint == "completions":
        return {
            "index": choice.get("index", 0),
            "text": choice.get("text") or "",
            "logprobs": None,
            "finish_reason": None,
        }
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{**call, "index": number} for number, call in enumerate(message["tool_calls"])]
    return {"index": choice.get("index", 0), "delta": delta, "logprobs": None, "finish_reason": None}


def reply_chunks(endpoint: Endpoint, data: dict[str, Any], record: TrustRecord) -> list[bytes]:
    """A whole reply as stream events: one chunk per choice, then a closing chunk with each choice's
    ``finish_reason`` (carrying the usage and the trust object), then ``[DONE]``."""
    base = {
        "id": data.get("id") or "held",
        "object": _CHUNK_OBJECT[endpoint],
        "created": data.get("created") or int(time.time()),
        "model": data.get("model") or "",
    }
    choices = data.get("choices") or [{"index": 0}]
    events = [sse_event({**base, "choices": [_delta(endpoint, choice)]}) for choice in choices]
    empty: dict[str, Any] = {"text": ""} if endpoint == "completions" else {"delta": {}}
    closing = {
        **base,
        "choices": [
            {
                "index": choice.get("index", 0),
                **empty,
                "logprobs": None,
                "finish_reason": choice.get("finish_reason") or "stop",
            }
            for choice in choices
        ],
        TRUST_FIELD: trust_summary(record),
    }
    if data.get("usage"):
        closing["usage"] = data["usage"]
    return [*events, sse_event(closing), DONE_EVENT]


def response_events(data: dict[str, Any], record: TrustRecord, *, trust_event: bool = False) -> list[bytes]:
    """A whole Responses object as the events a Responses stream sends for one message, its text in one
    delta; ``response.completed`` carries the response (its status as it is: ``incomplete`` when blocked)
    with the trust object, after the ``trustgate.trust`` event where the client asked for it (``trust_event``)."""
    texts = [
        part.get("text") or ""
        for item in data.get("output") or []
        if isinstance(item, dict)
        for part in item.get("content") or []
        if isinstance(part, dict) and part.get("type") == "output_text"
    ]
    text = "".join(texts)
    item_id = f"msg_{data.get('id', 'held')}"
    part = {"type": "output_text", "text": "", "annotations": []}
    item = {
        "type": "message",
        "id": item_id,
        "status": "completed",
        "role": "assistant",
        "content": [{**part, "text": text}],
    }
    started = {**data, "status": "in_progress", "output": []}
    at = {"item_id": item_id, "output_index": 0, "content_index": 0}
    payloads: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **at, "part": part},
        {"type": "response.output_text.delta", **at, "delta": text, "logprobs": []},
        {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
        {"type": "response.content_part.done", **at, "part": {**part, "text": text}},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        *([trust_event_payload(record, sequence_number=0)] if trust_event else []),
        {"type": "response.completed", "response": {**data, "output": [item], TRUST_FIELD: trust_summary(record)}},
    ]
    return [
        sse_event({**payload, "sequence_number": number}, name=payload["type"])
        for number, payload in enumerate(payloads)
    ]


def _answered(endpoint: Endpoint, tap: StreamTap, body: dict[str, Any]) -> dict[str, Any]:
    """The stream's answer as the whole reply it stands for (what a block keeps the envelope of)."""
    text = tap.answer().text
    if endpoint == "responses":
        return {
            "id": tap.completion_id,
            "object": "response",
            "created_at": int(time.time()),
            "model": body.get("model", ""),
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "id": "msg_held",
                    "status": "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text or "", "annotations": []}],
                }
            ],
        }
    choice: dict[str, Any] = (
        {"index": 0, "text": text, "finish_reason": "stop"}
        if endpoint == "completions"
        else {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    )
    reply: dict[str, Any] = {
        "id": tap.completion_id,
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [choice],
    }
    if tap.usage is not None:  # a block keeps the envelope's usage: what the client's key was charged
        usage = tap.usage
        reply["usage"] = {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total,
        }
    return reply


@dataclass(frozen=True)
class Held:
    """A chat stream read whole: its events (without log-probabilities the gateway added) and its tap."""

    tap: StreamTap
    events: list[bytes]


async def read_whole(opened: UpstreamStream, tap: StreamTap, added: LogprobsAdded | None) -> Held:
    """Every event of the upstream stream; its failures raise here, before any byte went to the client."""
    events: list[bytes] = []
    async for chunk in opened:
        events += [added.event(event) if added is not None else event for event in tap.feed(chunk)]
    if tap.rest():
        events.append(tap.rest())
    return Held(tap, events)


async def held_response(
    gateway: Gateway,
    caller: Caller,
    held: Held,
    plan: TrustPlan,
    endpoint: Endpoint,
    body: dict[str, Any],
    messages: list[dict[str, Any]],
    meter: RequestMeter,
    call: Call,
    added: LogprobsAdded | None,
    cost: CallCost,
) -> StreamingResponse:
    """Score the held answer, act on it, and answer with the chosen answer as a stream (``cost``: the held
    answer's, in the headers: the stream is whole before they go).

    A kept answer is the upstream's events as they came; its final chunk (or a Responses stream's
    ``response.completed``), which the tap held back, carries the trust (``StreamTap.closing``)."""
    tap = held.tap
    answer = tap.answer()
    record = await gateway.trust.score(plan, messages, answer, cost)
    first = Asked(b"", _answered(endpoint, tap, body), answer, tap.usage, cost)
    plain = {name: value for name, value in body.items() if name not in _STREAM_ONLY}
    served = await act_on(
        gateway, caller, plan, record, first, endpoint, messages, asker(gateway, plan, plain, endpoint, call)
    )
    if served.replaced:  # blocked or escalated: a whole reply, sent as a stream
        data = orjson.loads(served.content)
        sent = (
            response_events(data, served.record, trust_event=tap.trust_event_asked)
            if endpoint == "responses"
            else reply_chunks(endpoint, data, served.record)
        )
    else:  # the upstream's own answer
        closing = tap.closing(served.record)
        sent = [*held.events, added.event(closing) if added is not None else closing]
    meter.traced.answered(tap.completion_id, plan.record_id)
    meter.end(200)
    headers = {
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        **served.headers,
        **response_cost_headers(served.cost or cost),
    }
    return StreamingResponse(_replay(sent), media_type="text/event-stream", headers=headers)


async def _replay(events: list[bytes]) -> AsyncIterator[bytes]:
    for event in events:
        yield event
