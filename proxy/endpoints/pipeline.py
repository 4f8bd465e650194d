"""The one request pipeline of every OpenAI endpoint: authenticate, validate, plan, call, score, act, answer.

Chat completions, legacy completions, the Responses API and embeddings differ
only in what ``EndpointSpec`` says of them (``endpoints``): how the request is
parsed, how a whole reply is fetched (and so read: ``replies.WholeReply``),
and which tap reads their stream — none for an endpoint with nothing to score.
``serve`` takes its collaborators as arguments: the ``Gateway``'s parts, and
the request as ``Incoming`` (headers, body, a guard for a client that leaves),
so it runs without HTTP as well (``request_context.HttpIncoming`` is the HTTP
side).

On the way: the key's models and limits, the trust plan (``TrustService``),
log-probabilities asked for scoring and hidden again (``logprobs``), the
metrics and span of the request (``RequestMeter``), the group that answered
when a fallback did (``answered_by``), low-trust actions (``low_trust``) and
held streams (``low_trust_stream``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from fastapi import Response

from scoring import CallCost
from scoring.rag import RagRequest

from ..base.errors import GatewayError
from ..base.limits import Slot
from ..base.sdk_params import Endpoint
from ..server.auth import Caller
from ..server.event_stream import EventStream, FinalEvents
from ..server.gateway import Gateway
from ..server.spending import asking_for_usage, response_cost_headers
from ..trust.service import TrustPlan
from ..upstream.client import ModelFilter, UpstreamClient
from ..upstream.completion import UpstreamStream, sse_event
from ..upstream.logprobs import LogprobsAdded
from ..upstream.replies import Answer, TokenUsage, WholeReply
from ..upstream.taps import StreamTap
from .low_trust import Asked, Call, act_on, asker
from .low_trust_stream import held_response, holds, read_whole
from .request_meter import RequestMeter

__all__ = ["FALLBACK_HEADER", "MODEL_GROUP_HEADER", "EndpointSpec", "Fetched", "Incoming", "Parsed", "serve"]

log = logging.getLogger("trustgate")

T = TypeVar("T")

MODEL_GROUP_HEADER = "x-trustgate-model-group"  # the model group that answered
FALLBACK_HEADER = "x-trustgate-fallback"  # the group asked for, when a fallback group answered instead


class Incoming(Protocol):
    """A request as the pipeline reads it, whatever carried it."""

    @property
    def headers(self) -> Mapping[str, str]: ...

    async def body(self, limit: int) -> bytes:
        """The body, or a 413 once it passes ``limit`` bytes."""
        ...

    async def unless_client_leaves(self, call: Awaitable[T]) -> T:
        """``call``'s result; cancelled, and ``ClientDisconnected`` raised, if the client leaves first."""
        ...


@dataclass(frozen=True)
class Parsed:
    """A validated request of any endpoint: what goes upstream, and the conversation scoring reads."""

    model: str
    stream: bool
    body: dict[str, Any]  # what goes upstream: the client's body less TrustGate's extension fields
    messages: list[dict[str, Any]]  # the conversation as chat messages; [] when there is none to score
    rag: RagRequest | None = None  # documents came with the request: RAG trust applies


class Answered(Protocol):
    """Where an answer came from: its model group, and which of the group's deployments (its price)."""

    @property
    def model_group(self) -> str: ...

    @property
    def deployment(self) -> int: ...


class Fetched(Answered, Protocol):
    """A whole upstream reply (``completion.Completion``, ``completion.Forwarded``): bytes, JSON, where it came
    from."""

    @property
    def raw(self) -> bytes: ...

    @property
    def data(self) -> dict[str, Any]: ...

    @property
    def reply(self) -> WholeReply: ...


# A whole reply of the endpoint from a group: (upstream, group, body, the models the key may use).
Fetch = Callable[[UpstreamClient, str, dict[str, Any], ModelFilter], Awaitable[Fetched]]


@dataclass(frozen=True)
class EndpointSpec:
    """One endpoint, as data: its request model, how its whole reply is fetched and read, and its stream tap.

    ``parse`` validates the raw body against the endpoint's request model
    (``request.ChatRequest`` and its siblings), given whether the key may send
    account references. ``fetch`` returns the reply read as the endpoint's
    reply model (``replies.REPLY_MODELS``), whose answer (``WholeReply``) is
    what is scored. ``tap`` builds the stream tap for the request's headers;
    None marks an endpoint that is never scored nor streamed (embeddings).
    """

    name: Endpoint
    parse: Callable[[bytes, bool], Parsed]
    fetch: Fetch
    tap: Callable[[Mapping[str, str]], StreamTap] | None = None


async def serve(gateway: Gateway, spec: EndpointSpec, incoming: Incoming) -> Response:
    """The response to one request of ``spec``'s endpoint: a whole reply, or a stream."""
    meter = RequestMeter(gateway.metrics, gateway.telemetry.start_request(incoming.headers), spec.name)
    slot = None
    try:
        caller = await gateway.keys.authenticate(incoming.headers.get("authorization"))
        meter.authenticated(caller.name)
        raw = await incoming.body(gateway.settings.trustgate.server.max_body_bytes)
        parsed = spec.parse(raw, caller.account_references)
        group = gateway.upstream.require_group(parsed.model)
        meter.named(group, parsed.stream)
        caller.require_model(parsed.model, group)
        await gateway.spending.admit(caller)
        plan, body, added = _planned(gateway, spec, caller, group, incoming.headers, raw, parsed, meter)
        slot = await gateway.limits.admit(caller.name, caller.limits)
        gateway.metrics.count_user_call(group)
        if parsed.stream and spec.tap is not None and plan is not None:  # an unscored endpoint never streams
            asks = gateway.spending.prices.priced(group) and gateway.upstream.streams_usage_when_asked(group, spec.name)
            body, hides_usage = asking_for_usage(body, asks)
            tap = spec.tap(incoming.headers)
            if hides_usage:
                tap.hiding_usage()
            opened = await gateway.upstream.open_stream(group, body, may_use=caller.may_use, endpoint=spec.name)
            if holds(plan, spec.name):  # streams: hold: read whole, scored and acted on before a byte goes out
                held = await incoming.unless_client_leaves(read_whole(opened, tap, added))
                cost = await settle_usage(gateway, meter, slot, opened, held.tap.usage)
                return await held_response(
                    gateway,
                    caller,
                    held,
                    plan,
                    spec.name,
                    parsed.body,
                    parsed.messages,
                    meter,
                    _call(gateway, caller, spec),
                    added,
                    cost,
                )
            return stream_response(gateway, opened, plan, parsed.messages, meter, tap, slot, added=added)
        fetched = await incoming.unless_client_leaves(spec.fetch(gateway.upstream, group, body, caller.may_use))
    except BaseException as exc:
        await failed_request(exc, slot, meter)
        raise
    return await _whole_response(gateway, spec, caller, parsed, group, plan, fetched, meter, slot, added)


def _planned(
    gateway: Gateway,
    spec: EndpointSpec,
    caller: Caller,
    group: str,
    headers: Mapping[str, str],
    raw: bytes,
    parsed: Parsed,
    meter: RequestMeter,
) -> tuple[TrustPlan | None, dict[str, Any], LogprobsAdded | None]:
    """The request's trust plan (None: an endpoint never scored), the body to send, the log-probabilities added."""
    if spec.tap is None:
        return None, parsed.body, None
    plan = gateway.trust.plan(
        model=group,
        key_name=caller.name,
        key_policy=caller.policy,
        headers=headers,
        body=raw,
        rag=parsed.rag,
        traceparent=meter.traced.traceparent,
        request=parsed.body,
    )
    return gateway.trust.upstream_body(
        plan, parsed.body, spec.name, gives_logprobs=gateway.upstream.gives_logprobs(group, spec.name)
    )


async def _whole_response(
    gateway: Gateway,
    spec: EndpointSpec,
    caller: Caller,
    parsed: Parsed,
    group: str,
    plan: TrustPlan | None,
    fetched: Fetched,
    meter: RequestMeter,
    slot: Slot,
    added: LogprobsAdded | None,
) -> Response:
    """A whole reply, booked to the group that answered; scored and acted on when sampled."""
    headers = answered_by(gateway, meter, group, fetched.model_group)
    reply = fetched.reply
    cost = await settle_usage(gateway, meter, slot, fetched, reply.usage)
    content = added.body(fetched.raw) if added is not None else fetched.raw
    record_id = None
    if plan is not None and plan.decision.sampled:
        plan = plan.answered_by(fetched.model_group)
        answer = Answer.from_reply(reply) if parsed.messages else Answer(text=None)
        record = await gateway.trust.score(plan, parsed.messages, answer, cost)
        first = Asked(content, fetched.data, answer, reply.usage, cost)
        served = await act_on(
            gateway,
            caller,
            plan,
            record,
            first,
            spec.name,
            parsed.messages,
            asker(gateway, plan, parsed.body, spec.name, _call(gateway, caller, spec)),
        )
        content = served.content
        headers.update(served.headers)
        cost = served.cost or cost
        record_id = plan.record_id
    headers.update(response_cost_headers(cost))
    meter.traced.answered(reply.completion_id, record_id)
    meter.end(200)
    return Response(content, media_type="application/json", headers=headers)


def answered_by(gateway: Gateway, meter: RequestMeter, asked: str, answered: str) -> dict[str, str]:
    """The headers that name the group that answered, the fallback counted when it was not the one asked.

    The request's metrics are booked to the group that answered (``meter``);
    the caller books its usage and trust record there too (``TrustPlan.answered_by``).
    """
    headers = {MODEL_GROUP_HEADER: answered}
    if answered != asked:
        headers[FALLBACK_HEADER] = asked
        gateway.metrics.fallbacks.labels(asked=asked, answered=answered).inc()
        meter.answered_by(answered)
    return headers


def _call(gateway: Gateway, caller: Caller, spec: EndpointSpec) -> Call:
    """A whole reply of the endpoint from a group, as the key may ask it (an escalation's call)."""

    async def call(group: str, body: dict[str, Any]) -> Asked:
        fetched = await spec.fetch(gateway.upstream, group, body, caller.may_use)
        usage = fetched.reply.usage
        cost = gateway.spending.price(fetched.model_group, fetched.deployment, usage)
        return Asked(fetched.raw, fetched.data, Answer.from_reply(fetched.reply), usage, cost)

    return call


async def settle_usage(
    gateway: Gateway, meter: RequestMeter, slot: Slot, answered: Answered, usage: TokenUsage | None
) -> CallCost:
    """An answer ended: its reported tokens count on the key's ``tpm`` and the user-traffic token counter
    (beside scoring's), the key's parallel slot is free again, and what it cost is charged to the key."""
    if usage is not None:
        meter.used(usage)
    await slot.done(usage.total if usage is not None else 0)
    return gateway.spending.answered(meter.key, answered.model_group, answered.deployment, usage)


async def failed_request(exc: BaseException, slot: Slot | None, meter: RequestMeter) -> None:
    """Count and trace a request that did not get its answer; its key's parallel slot is free again."""
    if slot is not None:
        await slot.release()
    if isinstance(exc, GatewayError):
        meter.end(exc.status_code, exc.code or exc.error_type)
    elif isinstance(exc, Exception):  # answered 500 by the app's handler; counted and traced here
        meter.end(500, type(exc).__name__)
    else:  # the client went away (cancelled): the span must still end
        meter.traced.end(499, "cancelled")


def stream_response(
    gateway: Gateway,
    opened: UpstreamStream,
    plan: TrustPlan,
    messages: list[dict[str, Any]],
    meter: RequestMeter,
    tap: StreamTap,
    slot: Slot,
    *,
    added: LogprobsAdded | None = None,
) -> EventStream:
    """The client's stream of ``opened``: booked, scored and named after the group that answered it."""
    headers = {
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        **answered_by(gateway, meter, plan.model, opened.model_group),
    }
    plan = plan.answered_by(opened.model_group)
    if plan.decision.sampled:
        headers.update({"x-trust-id": plan.record_id, "x-trust-status": "pending"})
        chunks = _scored_stream(gateway, opened, tap, plan, messages, added)
    else:
        chunks = _plain_stream(opened, tap.unscored())
    return EventStream(_metered_stream(gateway, chunks, opened, plan, tap, meter, slot), headers)


async def _scored_stream(
    gateway: Gateway,
    opened: UpstreamStream,
    tap: StreamTap,
    plan: TrustPlan,
    messages: list[dict[str, Any]],
    added: LogprobsAdded | None,
) -> AsyncIterator[bytes]:
    """Forward events; once the answer is complete, score it and send the held-back end, with the trust object
    once the record is settled: in sync mode, and in async mode when it needs no scoring (a not_applicable answer,
    one with nothing to score), so that the stream says so.

    With ``added`` the events lose the log-probabilities the gateway asked for (the tap has read them).
    """
    async for event in _forwarded(opened, tap):
        yield added.event(event) if added is not None else event
    cost = gateway.spending.price(opened.model_group, opened.deployment, tap.usage)
    record = await gateway.trust.score(plan, messages, tap.answer(), cost)
    closing = tap.closing(record if plan.decision.mode == "sync" or record.status != "pending" else None)
    yield FinalEvents(added.event(closing) if added is not None else closing)


async def _plain_stream(opened: UpstreamStream, tap: StreamTap) -> AsyncIterator[bytes]:
    """An unscored stream: the upstream's events, its end (``[DONE]``) only once the upstream closed cleanly.

    The events that came with the upstream's end marker wait for its close
    too, and go with the end in one write: an upstream sends its last events,
    the marker and its close together, and writing them before the close is
    read cost one more send, and one more wake-up of the client, per stream.
    Should the upstream break instead, they still go out, before the error.
    """
    ending = b""
    try:
        async for events in _forwarded(opened, tap):
            if tap.ended:
                ending += events
            else:
                yield events
    except Exception:
        if ending:
            yield ending
        raise
    yield FinalEvents(ending + tap.closing(None))


async def _forwarded(opened: UpstreamStream, tap: StreamTap) -> AsyncIterator[bytes]:
    """The upstream's events as whole events, its end (``[DONE]``, the final chunk) held back by the tap.

    The whole events of one upstream read go on together, in one write to the
    client: a write per event costs a system call each for bytes that arrived
    at once.

    ``[DONE]`` goes to the client only after the upstream closed its stream
    cleanly: a stream that breaks after it (llama.cpp's server, interrupted, can
    send ``[DONE]`` and drop the connection) ends in one error event
    instead, so a client never reads a cut answer as a whole one.
    """
    async for chunk in opened:
        events = b"".join(tap.feed(chunk))
        if events:
            yield events
    if tap.rest():
        yield tap.rest()


async def _metered_stream(
    gateway: Gateway,
    chunks: AsyncIterator[bytes],
    opened: UpstreamStream,
    plan: TrustPlan,
    tap: StreamTap,
    meter: RequestMeter,
    slot: Slot,
) -> AsyncIterator[bytes]:
    """Forward the stream; a failure mid-stream becomes a final error event. The request span and the key's
    parallel slot end here, and what the stream cost is charged."""
    status, error = 200, None
    try:
        async for chunk in chunks:
            meter.first_chunk()
            yield chunk
    except GatewayError as exc:
        status, error = exc.status_code, exc.code or exc.error_type
        log.warning("stream from model %s ended with an error: %s", plan.model, exc)
        yield sse_event(exc.body())
    except BaseException as exc:  # the client went away, or a bug: counted, and the span still ends
        status, error = (
            (499, "cancelled") if isinstance(exc, asyncio.CancelledError | GeneratorExit) else (500, type(exc).__name__)
        )
        raise
    finally:
        await settle_usage(gateway, meter, slot, opened, tap.usage)
        meter.traced.answered(tap.completion_id, plan.record_id if plan.decision.sampled else None)
        meter.end(status, error)
