"""HTTP handlers: authenticate, validate, call the upstream, record, return. Nothing more."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import orjson
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from .completion import UpstreamStream
from .errors import GatewayError, InvalidRequest
from .request import parse_chat_request

if TYPE_CHECKING:
    from .app import Gateway

__all__ = ["router"]

router = APIRouter()


def _gateway(request: Request) -> Gateway:
    return request.app.state.gateway  # type: ignore[no-any-return]


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise InvalidRequest(f"Request body exceeds {limit} bytes", code="body_too_large", status_code=413)
    body = bytearray()
    async for part in request.stream():
        body += part
        if len(body) > limit:
            raise InvalidRequest(f"Request body exceeds {limit} bytes", code="body_too_large", status_code=413)
    return bytes(body)


@router.post("/v1/chat/completions")
async def chat_completions(request: Request) -> Response:
    gateway = _gateway(request)
    started = time.perf_counter()
    model_label, stream = "unknown", False
    try:
        caller = gateway.keys.authenticate(request.headers.get("authorization"))
        chat, body = parse_chat_request(await _read_body(request, gateway.settings.trustgate.server.max_body_bytes))
        stream = chat.stream
        gateway.upstream.require_group(chat.model)
        model_label = chat.model
        caller.require_model(chat.model)
        if stream:
            opened = await gateway.upstream.open_stream(chat.model, body)
            return StreamingResponse(_metered_stream(gateway, opened, model_label, started),
                                     media_type="text/event-stream",
                                     headers={"cache-control": "no-cache", "x-accel-buffering": "no"})
        completion = await gateway.upstream.complete(chat.model, body)
    except GatewayError as exc:
        gateway.metrics.observe_request(model=model_label, status=exc.status_code, stream=stream,
                                        seconds=time.perf_counter() - started)
        raise
    gateway.metrics.observe_request(model=model_label, status=200, stream=False,
                                    seconds=time.perf_counter() - started)
    return Response(completion.raw, media_type="application/json")


async def _metered_stream(gateway: Gateway, opened: UpstreamStream, model: str,
                          started: float) -> AsyncIterator[bytes]:
    """Forward the upstream's SSE bytes; a failure mid-stream becomes a final error event."""
    status = 200
    try:
        async for chunk in opened:
            yield chunk
    except GatewayError as exc:
        status = exc.status_code
        yield b"data: " + orjson.dumps(exc.body()) + b"\n\n"
    finally:
        gateway.metrics.observe_request(model=model, status=status, stream=True,
                                        seconds=time.perf_counter() - started)


@router.get("/v1/models")
async def list_models(request: Request) -> JSONResponse:
    gateway = _gateway(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    data = [{"id": name, "object": "model", "created": 0, "owned_by": "trustgate"}
            for name in gateway.upstream.model_groups
            if caller.models is None or name in caller.models]
    return JSONResponse({"object": "list", "data": data})


@router.get("/health/liveness")
async def liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/health/readiness")
async def readiness(request: Request) -> JSONResponse:
    groups = await _gateway(request).upstream.check_ready()
    ready = all(state != "unreachable" for state in groups.values())
    return JSONResponse({"status": "ok" if ready else "unavailable", "models": groups},
                        status_code=200 if ready else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    return Response(generate_latest(_gateway(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)
