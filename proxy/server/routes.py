"""HTTP handlers that read state: trust records, models, health, metrics (OpenAI's endpoints: ``endpoint_routes``)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError

from ..base.errors import NotFound
from .request_context import gateway_of

__all__ = ["router"]

router = APIRouter()
log = logging.getLogger("trustgate")


@router.get("/v1/trust/{record_id}")
async def get_trust_record(record_id: str, request: Request) -> Response:
    gateway = gateway_of(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    record = await gateway.trust.lookup(record_id, caller.record_scope)
    if record is None:  # missing, or another key's: the same answer, so ids cannot be probed
        raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
    return Response(record.model_dump_json(), media_type="application/json")


@router.get("/v1/models")
@router.get("/models")
async def list_models(request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    data = [
        {"id": name, "object": "model", "created": 0, "owned_by": "trustgate"}
        for name in gateway.upstream.listed_names
        if caller.may_use(name) or caller.may_use(gateway.upstream.require_group(name))
    ]
    return JSONResponse({"object": "list", "data": data})


@router.get("/health/liveness")
@router.get("/health/liveliness")  # LiteLLM's spelling, which copied probes use
async def liveness() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/health/readiness")
async def readiness(request: Request) -> JSONResponse:
    """Open to probes without a key; upstream checks come from ReadinessCheck's cache, not from each call.

    Anyone learns only ready or not: the model groups and their states, and each deployment's address and
    state, are the master key's to read, not a map of the deployment for whoever asks.
    """
    gateway = gateway_of(request)
    report = await gateway.readiness.report()
    body: dict[str, Any] = {"status": "ok" if report.ready else "unavailable"}
    if gateway.keys.is_master(request.headers.get("authorization")):
        deployments = [
            {"model": d.model, "address": d.address, "state": d.state, **({"reason": d.reason} if d.reason else {})}
            for d in report.deployments
        ]
        body.update(mode=report.mode, models=report.groups, deployments=deployments, checked_at=report.checked_at)
    return JSONResponse(body, status_code=200 if report.ready else 503)


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    gateway = gateway_of(request)
    try:  # read at scrape time: in Redis mode the backlog is the shared stream's, not this process's
        gateway.metrics.scoring_queue_depth.set(await gateway.trust.queue_depth())
    except RedisError as exc:
        log.warning("scoring queue depth unavailable: %s", type(exc).__name__)
    return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)
