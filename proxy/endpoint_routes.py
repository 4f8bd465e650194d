"""OpenAI's endpoints besides chat completions, under the same rules: auth, the key's models, policy, metrics.

Legacy completions and the Responses API are scored like chat (trust headers;
in a sync stream the trust object on the stream's end, ``taps``); embeddings
are forwarded and counted, with nothing to score. ``GET /v1/models/{id}``
answers as the listing does: a model the key may not use reads as missing.
Every route is served with and without the ``/v1`` prefix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from .errors import ModelNotFound
from .low_trust import Asked, Call, act_on, asker
from .low_trust_stream import held_response, holds, read_whole
from .request import parse_endpoint_request
from .request_context import gateway_of, read_body
from .request_meter import RequestMeter
from .routes import answered_by, failed_request, settle_usage, stream_response, unless_client_leaves
from .sdk_params import Endpoint
from .taps import ResponsesTap, StreamTap, TextCompletionTap
from .trust import Answer

if TYPE_CHECKING:
    from .app import Gateway
    from .auth import Caller

__all__ = ["router"]

router = APIRouter()

# A Responses client that wants the trust object as its own event too (before the terminal event) says so.
TRUST_EVENT_HEADER = "x-trustgate-trust-event"


def _responses_tap(headers: Mapping[str, str]) -> StreamTap:
    return ResponsesTap(send_trust_event=headers.get(TRUST_EVENT_HEADER, "").strip().lower() == "true")


@dataclass(frozen=True)
class _Scored:
    """How an endpoint's answer is read for scoring: from a whole reply, and from its stream."""

    tap: Callable[[Mapping[str, str]], StreamTap]  # from the request's headers


_SCORED: dict[Endpoint, _Scored] = {
    "completions": _Scored(lambda headers: TextCompletionTap()),
    "responses": _Scored(_responses_tap),
}


@router.post("/v1/completions")
@router.post("/completions")
async def completions(request: Request) -> Response:
    return await _serve(request, "completions")


@router.post("/v1/responses")
@router.post("/responses")
async def responses(request: Request) -> Response:
    return await _serve(request, "responses")


@router.post("/v1/embeddings")
@router.post("/embeddings")
async def embeddings(request: Request) -> Response:
    return await _serve(request, "embeddings")


@router.get("/v1/models/{model_id:path}")
@router.get("/models/{model_id:path}")
async def retrieve_model(model_id: str, request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    if model_id not in gateway.upstream.listed_names or not (
            caller.may_use(model_id) or caller.may_use(gateway.upstream.require_group(model_id))):
        raise ModelNotFound(f"The model `{model_id}` does not exist", param="model", code="model_not_found")
    return JSONResponse({"id": model_id, "object": "model", "created": 0, "owned_by": "trustgate"})


async def _serve(request: Request, endpoint: Endpoint) -> Response:
    gateway = gateway_of(request)
    meter = RequestMeter(gateway.metrics, gateway.telemetry.start_request(request.headers), endpoint)
    slot = None
    scored = _SCORED.get(endpoint)
    try:
        caller = gateway.keys.authenticate(request.headers.get("authorization"))
        meter.authenticated(caller.name)
        raw = await read_body(request, gateway.settings.trustgate.server.max_body_bytes)
        parsed = parse_endpoint_request(raw, endpoint, account_references=caller.account_references)
        group = gateway.upstream.require_group(parsed.model)
        meter.named(group, parsed.stream)
        caller.require_model(parsed.model, group)
        plan = (gateway.trust.plan(model=group, key_name=caller.name, headers=request.headers, body=raw,
                                   traceparent=meter.traced.traceparent, request=parsed.body)
                if scored is not None else None)
        plan, body, added = (gateway.trust.upstream_body(plan, parsed.body, endpoint,
                                                         gives_logprobs=gateway.upstream.gives_logprobs(group,
                                                                                                        endpoint))
                             if plan is not None else (plan, parsed.body, None))
        slot = await gateway.limits.admit(caller.name, caller.limits)
        gateway.metrics.upstream_calls.labels(model=group, purpose="user").inc()
        if parsed.stream and scored is not None and plan is not None:  # embeddings never stream (refused as unknown)
            opened = await gateway.upstream.open_stream(group, body, may_use=caller.may_use, endpoint=endpoint)
            if holds(plan, endpoint):  # streams: hold: read whole, scored and acted on before a byte goes out
                held = await unless_client_leaves(request, read_whole(opened, scored.tap(request.headers), added))
                await settle_usage(meter, slot, held.tap.usage)
                return await held_response(gateway, caller, held, plan, endpoint, parsed.body, parsed.messages,
                                           meter, _call(gateway, caller, endpoint, scored), added)
            return stream_response(gateway, opened, plan, parsed.messages, meter, scored.tap(request.headers),
                                   slot, added=added)
        reply = await unless_client_leaves(
            request, gateway.upstream.forward(group, body, endpoint, may_use=caller.may_use))
    except BaseException as exc:
        await failed_request(exc, slot, meter)
        raise
    headers = answered_by(gateway, meter, group, reply.model_group)
    await settle_usage(meter, slot, reply.reply.usage)
    record_id = None
    content = added.body(reply.raw) if added is not None else reply.raw
    if scored is not None and plan is not None and plan.decision.sampled:
        answer = Answer.from_reply(reply.reply) if parsed.messages else Answer(text=None)
        record = await gateway.trust.score(plan.answered_by(reply.model_group), parsed.messages, answer)
        first = Asked(content, reply.data, answer, reply.reply.usage)
        served = await act_on(gateway, caller, plan, record, first, endpoint, parsed.messages,
                              asker(gateway, plan, parsed.body, endpoint, _call(gateway, caller, endpoint, scored)))
        content = served.content
        headers.update(served.headers)
        record_id = plan.record_id
    meter.traced.answered(str(reply.data.get("id") or "") or None, record_id)
    meter.end(200)
    return Response(content, media_type="application/json", headers=headers)


def _call(gateway: Gateway, caller: Caller, endpoint: Endpoint, scored: _Scored) -> Call:
    """A whole reply of ``endpoint`` from a group, as the key may ask it (an escalation's call)."""
    async def call(group: str, body: dict[str, Any]) -> Asked:
        reply = await gateway.upstream.forward(group, body, endpoint, may_use=caller.may_use)
        return Asked(reply.raw, reply.data, Answer.from_reply(reply.reply), reply.reply.usage)

    return call
