"""OpenAI's endpoints besides chat completions, under the same rules: auth, the key's models, policy, metrics.

Legacy completions and the Responses API are scored like chat (trust headers;
in a sync stream a trust event before the end); embeddings are forwarded and
counted, with nothing to score. ``GET /v1/models/{id}`` answers as the listing
does: a model the key may not use reads as missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from exporters import trust_headers

from .errors import ModelNotFound
from .request import parse_endpoint_request
from .request_context import gateway_of, read_body
from .request_meter import RequestMeter
from .replies import reported_usage
from .routes import StreamTap, failed_request, settle_usage, stream_response, unless_client_leaves
from .sdk_params import Endpoint
from .taps import ResponsesTap, TextCompletionTap, answer_from_response, answer_from_text_completion
from .trust import Answer

__all__ = ["router"]

router = APIRouter()


@dataclass(frozen=True)
class _Scored:
    """How an endpoint's answer is read for scoring: from a whole reply, and from its stream."""

    answer: Callable[[dict[str, Any]], Answer]
    tap: Callable[[], StreamTap]


_SCORED: dict[Endpoint, _Scored] = {
    "completions": _Scored(answer_from_text_completion, TextCompletionTap),
    "responses": _Scored(answer_from_response, ResponsesTap),
}


@router.post("/v1/completions")
async def completions(request: Request) -> Response:
    return await _serve(request, "completions")


@router.post("/v1/responses")
async def responses(request: Request) -> Response:
    return await _serve(request, "responses")


@router.post("/v1/embeddings")
async def embeddings(request: Request) -> Response:
    return await _serve(request, "embeddings")


@router.get("/v1/models/{model_id:path}")
async def retrieve_model(model_id: str, request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    if model_id not in gateway.upstream.listed_names or not (
            caller.may_use(model_id) or caller.may_use(gateway.upstream.require_group(model_id))):
        raise ModelNotFound(f"The model `{model_id}` does not exist", param="model", code="model_not_found")
    return JSONResponse({"id": model_id, "object": "model", "created": 0, "owned_by": "trustgate"})


async def _serve(request: Request, endpoint: Endpoint) -> Response:
    gateway = gateway_of(request)
    meter = RequestMeter(gateway.metrics, gateway.telemetry.start_request(request.headers))
    slot = None
    scored = _SCORED.get(endpoint)
    try:
        caller = gateway.keys.authenticate(request.headers.get("authorization"))
        raw = await read_body(request, gateway.settings.trustgate.server.max_body_bytes)
        parsed = parse_endpoint_request(raw, endpoint)
        group = gateway.upstream.require_group(parsed.model)
        meter.named(group, parsed.stream)
        caller.require_model(parsed.model, group)
        plan = (gateway.trust.plan(model=group, key_name=caller.name, headers=request.headers, body=raw,
                                   traceparent=meter.traced.traceparent, request=parsed.body)
                if scored is not None else None)
        body, added = (gateway.trust.upstream_body(plan, parsed.body, endpoint,
                                                   gives_logprobs=gateway.upstream.gives_logprobs(group, endpoint))
                       if plan is not None else (parsed.body, None))
        slot = await gateway.limits.admit(caller.name, caller.limits)
        gateway.metrics.upstream_calls.labels(model=group, purpose="user").inc()
        if parsed.stream and scored is not None and plan is not None:  # embeddings never stream (refused as unknown)
            opened = await gateway.upstream.open_stream(group, body, may_use=caller.may_use, endpoint=endpoint)
            return stream_response(gateway, opened, plan, parsed.messages, meter, scored.tap(), slot,
                                   added=added)
        reply = await unless_client_leaves(
            request, gateway.upstream.forward(group, body, endpoint, may_use=caller.may_use))
    except BaseException as exc:
        await failed_request(exc, slot, meter)
        raise
    await settle_usage(gateway, group, slot, reported_usage(reply.data))
    headers: dict[str, str] = {}
    record_id = None
    if scored is not None and plan is not None and plan.decision.sampled:
        answer = scored.answer(reply.data) if parsed.messages else Answer(text=None)
        headers = trust_headers(await gateway.trust.score(plan, parsed.messages, answer))
        record_id = plan.record_id
    meter.traced.answered(str(reply.data.get("id") or "") or None, record_id)
    meter.end(200)
    content = added.body(reply.raw) if added is not None else reply.raw
    return Response(content, media_type="application/json", headers=headers)
