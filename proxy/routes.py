"""HTTP handlers: authenticate, validate, call the upstream, record, return. Nothing more."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError

from .completion import UpstreamStream, sse_event
from .errors import ClientDisconnected, GatewayError, NotFound
from .limits import Slot
from .logprobs import LogprobsAdded
from .low_trust import Asked, Call, act_on, asker
from .low_trust_stream import held_response, holds, read_whole
from .replies import TokenUsage
from .request import parse_chat_request
from .request_context import gateway_of as _gateway
from .request_context import read_body as _read_body
from .request_meter import RequestMeter
from .taps import ChatTap, StreamTap
from .trust import Answer, TrustPlan

if TYPE_CHECKING:
    from .app import Gateway
    from .auth import Caller

__all__ = ["FALLBACK_HEADER", "MODEL_GROUP_HEADER", "answered_by", "router", "stream_response",
           "unless_client_leaves"]

router = APIRouter()
log = logging.getLogger("trustgate")

T = TypeVar("T")

MODEL_GROUP_HEADER = "x-trustgate-model-group"  # the model group that answered
FALLBACK_HEADER = "x-trustgate-fallback"  # the group asked for, when a fallback group answered instead


@router.post("/v1/chat/completions")
@router.post("/chat/completions")  # OpenAI's routes also without /v1, as LiteLLM serves them
async def chat_completions(request: Request) -> Response:
    gateway = _gateway(request)
    meter = RequestMeter(gateway.metrics, gateway.telemetry.start_request(request.headers), "chat")
    slot = None
    try:
        caller = gateway.keys.authenticate(request.headers.get("authorization"))
        meter.authenticated(caller.name)
        raw = await _read_body(request, gateway.settings.trustgate.server.max_body_bytes)
        parsed = parse_chat_request(raw, account_references=caller.account_references)
        chat, body = parsed.chat, parsed.body
        group = gateway.upstream.require_group(chat.model)
        meter.named(group, chat.stream)
        caller.require_model(chat.model, group)
        plan = gateway.trust.plan(model=group, key_name=caller.name, headers=request.headers, body=raw,
                                  rag=parsed.rag, traceparent=meter.traced.traceparent, request=parsed.body)
        plan, body, added = gateway.trust.upstream_body(plan, body, "chat",
                                                  gives_logprobs=gateway.upstream.gives_logprobs(group, "chat"))
        slot = await gateway.limits.admit(caller.name, caller.limits)
        gateway.metrics.upstream_calls.labels(model=group, purpose="user").inc()
        if chat.stream:
            opened = await gateway.upstream.open_stream(group, body, may_use=caller.may_use)
            if holds(plan, "chat"):  # streams: hold: read whole, then scored and acted on before a byte goes out
                held = await unless_client_leaves(request, read_whole(opened, ChatTap(), added))
                await settle_usage(meter, slot, held.tap.usage)
                return await held_response(gateway, caller, held, plan, "chat", parsed.body, parsed.messages, meter,
                                           _chat_call(gateway, caller), added)
            return stream_response(gateway, opened, plan, parsed.messages, meter, ChatTap(), slot, added=added)
        completion = await unless_client_leaves(
            request, gateway.upstream.complete(group, body, may_use=caller.may_use))
    except BaseException as exc:
        await failed_request(exc, slot, meter)
        raise
    headers = answered_by(gateway, meter, group, completion.model_group)
    plan = plan.answered_by(completion.model_group)
    await settle_usage(meter, slot, completion.reply.usage)
    answer = Answer.from_reply(completion.reply)
    content = added.body(completion.raw) if added is not None else completion.raw
    if plan.decision.sampled:
        record = await gateway.trust.score(plan, parsed.messages, answer)
        first = Asked(content, completion.data, answer, completion.reply.usage)
        served = await act_on(gateway, caller, plan, record, first, "chat", parsed.messages,
                              asker(gateway, plan, parsed.body, "chat", _chat_call(gateway, caller)))
        content = served.content
        headers.update(served.headers)
    meter.traced.answered(answer.completion_id, plan.record_id if plan.decision.sampled else None)
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


def _chat_call(gateway: Gateway, caller: Caller) -> Call:
    """A chat completion from a group, as the key may ask it (an escalation's call)."""
    async def call(group: str, body: dict[str, Any]) -> Asked:
        completion = await gateway.upstream.complete(group, body, may_use=caller.may_use)
        return Asked(completion.raw, completion.data, Answer.from_reply(completion.reply), completion.reply.usage)

    return call


async def settle_usage(meter: RequestMeter, slot: Slot, usage: TokenUsage | None) -> None:
    """An answer ended: its reported tokens count on the key's ``tpm`` and the user-traffic token counter
    (beside scoring's), and the key's parallel slot is free again."""
    if usage is not None:
        meter.used(usage)
    await slot.done(usage.total if usage is not None else 0)


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


async def unless_client_leaves(request: Request, call: Awaitable[T]) -> T:
    """``call``'s result; if the client disconnects first, ``call`` is cancelled (closing its upstream call).

    uvicorn does not cancel a handler whose client went away, so without this an
    abandoned non-streamed request would hold its upstream call until the timeout.
    """
    work = asyncio.ensure_future(call)
    watcher = asyncio.ensure_future(_client_gone(request))
    try:
        await asyncio.wait((work, watcher), return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        work.cancel()
        raise
    finally:
        watcher.cancel()
    if work.done():
        return work.result()
    work.cancel()
    with contextlib.suppress(asyncio.CancelledError, GatewayError):
        await work
    raise ClientDisconnected("The client closed the connection before the answer was ready",
                             code="client_disconnected")


async def _client_gone(request: Request) -> None:
    """Returns when the client disconnects (the body has been read already, so nothing else arrives)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def stream_response(gateway: Gateway, opened: UpstreamStream, plan: TrustPlan, messages: list[dict[str, Any]],
                    meter: RequestMeter, tap: StreamTap, slot: Slot, *,
                    added: LogprobsAdded | None = None) -> StreamingResponse:
    """The client's stream of ``opened``: booked, scored and named after the group that answered it."""
    headers = {"cache-control": "no-cache", "x-accel-buffering": "no",
               **answered_by(gateway, meter, plan.model, opened.model_group)}
    plan = plan.answered_by(opened.model_group)
    if plan.decision.sampled:
        headers.update({"x-trust-id": plan.record_id, "x-trust-status": "pending"})
        chunks = _scored_stream(gateway, opened, tap, plan, messages, added)
    else:
        chunks = _plain_stream(opened, tap)
    return StreamingResponse(_metered_stream(gateway, chunks, plan, tap, meter, slot),
                             media_type="text/event-stream", headers=headers)


async def _scored_stream(gateway: Gateway, opened: UpstreamStream, tap: StreamTap, plan: TrustPlan,
                         messages: list[dict[str, Any]], added: LogprobsAdded | None) -> AsyncIterator[bytes]:
    """Forward events; once the answer is complete, score it and send the held-back end (sync: with the trust).

    With ``added`` the events lose the log-probabilities the gateway asked for (the tap has read them).
    """
    async for event in _forwarded(opened, tap):
        yield added.event(event) if added is not None else event
    record = await gateway.trust.score(plan, messages, tap.answer())
    closing = tap.closing(record if plan.decision.mode == "sync" else None)
    yield added.event(closing) if added is not None else closing


async def _plain_stream(opened: UpstreamStream, tap: StreamTap) -> AsyncIterator[bytes]:
    """An unscored stream: the upstream's events, its end (``[DONE]``) only once the upstream closed cleanly."""
    async for event in _forwarded(opened, tap):
        yield event
    yield tap.closing(None)


async def _forwarded(opened: UpstreamStream, tap: StreamTap) -> AsyncIterator[bytes]:
    """The upstream's events as whole events, its end (``[DONE]``, the final chunk) held back by the tap.

    ``[DONE]`` goes to the client only after the upstream closed its stream
    cleanly: a stream that breaks after it (llama.cpp's server used to send
    ``[DONE]`` and drop the connection when interrupted) ends in one error event
    instead, so a client never reads a cut answer as a whole one.
    """
    async for chunk in opened:
        for event in tap.feed(chunk):
            yield event
    if tap.rest():
        yield tap.rest()


async def _metered_stream(gateway: Gateway, chunks: AsyncIterator[bytes], plan: TrustPlan, tap: StreamTap,
                          meter: RequestMeter, slot: Slot) -> AsyncIterator[bytes]:
    """Forward the stream; a failure mid-stream becomes a final error event. The request span and the key's
    parallel slot end here."""
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
        status, error = (499, "cancelled") if isinstance(exc, asyncio.CancelledError | GeneratorExit) \
            else (500, type(exc).__name__)
        raise
    finally:
        await settle_usage(meter, slot, tap.usage)
        meter.traced.answered(tap.completion_id, plan.record_id if plan.decision.sampled else None)
        meter.end(status, error)


@router.get("/v1/trust/{record_id}")
async def get_trust_record(record_id: str, request: Request) -> Response:
    gateway = _gateway(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    record = await gateway.trust.lookup(record_id, caller.record_scope)
    if record is None:  # missing, or another key's: the same answer, so ids cannot be probed
        raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
    return Response(record.model_dump_json(), media_type="application/json")


@router.get("/v1/models")
@router.get("/models")
async def list_models(request: Request) -> JSONResponse:
    gateway = _gateway(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "trustgate"}
            for name in gateway.upstream.listed_names
            if caller.may_use(name) or caller.may_use(gateway.upstream.require_group(name))]
    return JSONResponse({"object": "list", "data": data})


@router.get("/health/liveness")
@router.get("/health/liveliness")  # LiteLLM's spelling, which copied probes use
async def liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/health/readiness")
async def readiness(request: Request) -> JSONResponse:
    """Open to probes without a key; upstream checks come from ReadinessCheck's cache, not from each call.

    Anyone learns only ready or not: the model groups and their states are the
    master key's to read, not a map of the deployment for whoever asks.
    """
    gateway = _gateway(request)
    report = await gateway.readiness.report()
    body: dict[str, Any] = {"status": "ok" if report.ready else "unavailable"}
    if gateway.keys.is_master(request.headers.get("authorization")):
        body.update(mode=report.mode, models=report.groups, checked_at=report.checked_at)
    return JSONResponse(body, status_code=200 if report.ready else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    gateway = _gateway(request)
    try:  # read at scrape time: in Redis mode the backlog is the shared stream's, not this process's
        gateway.metrics.scoring_queue_depth.set(await gateway.trust.queue_depth())
    except RedisError as exc:
        log.warning("scoring queue depth unavailable: %s", type(exc).__name__)
    return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)
