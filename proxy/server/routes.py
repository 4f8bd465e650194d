"""HTTP handlers that read state: trust records, models, health, metrics (OpenAI's endpoints: ``endpoint_routes``;
LiteLLM's model information: ``model_info``)."""

from __future__ import annotations

import logging
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from redis.exceptions import RedisError

from ..base.errors import NotFound
from ..upstream.client import DeploymentHealth
from .auth import Caller
from .request_context import gateway_of

__all__ = ["router"]

router = APIRouter()
log = logging.getLogger("trustgate")


@router.get("/v1/trust/{record_id}")
async def get_trust_record(record_id: str, request: Request) -> Response:
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    record = await gateway.trust.lookup(record_id, caller.record_scope)
    if record is None:  # missing, or another key's: the same answer, so ids cannot be probed
        raise NotFound(f"No trust record with id `{record_id}`", param="id", code="trust_record_not_found")
    return Response(record.model_dump_json(), media_type="application/json")


@router.get("/v1/models")
@router.get("/models")
async def list_models(request: Request) -> JSONResponse:
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
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
    if await gateway.keys.is_master(request.headers.get("authorization")):
        deployments = [
            {"model": d.model, "address": d.address, "state": d.state, **({"reason": d.reason} if d.reason else {})}
            for d in report.deployments
        ]
        body.update(mode=report.mode, models=report.groups, deployments=deployments, checked_at=report.checked_at)
    return JSONResponse(body, status_code=200 if report.ready else 503)


@router.get("/health")
async def health(request: Request) -> JSONResponse:
    """LiteLLM's ``/health``: a one-token call to every deployment the key may use, healthy when it answers.

    It costs upstream calls, so a run's result is reused for ``health.check_cache_s`` however often any key asks
    (``CachedProbe``). ``?model=`` narrows it to one model group (or alias), 503 when none of its deployments
    answered. Where a deployment lives (``api_base``) and why it failed are the master's and admin keys' to read.
    """
    gateway = gateway_of(request)
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    asked = request.query_params.get("model")
    group = gateway.upstream.require_group(asked) if asked is not None else None
    if asked is not None:
        caller.require_model(asked, group)
    results = [
        result
        for result in await gateway.health.result()
        if (result.group == group if group is not None else caller.may_use(result.group))
    ]
    healthy = [_endpoint(result, caller) for result in results if result.error is None]
    unhealthy = [_endpoint(result, caller) for result in results if result.error is not None]
    body = {
        "healthy_endpoints": healthy,
        "unhealthy_endpoints": unhealthy,
        "healthy_count": len(healthy),
        "unhealthy_count": len(unhealthy),
    }
    return JSONResponse(body, status_code=503 if group is not None and not healthy else 200)


def _endpoint(result: DeploymentHealth, caller: Caller) -> dict[str, Any]:
    """One deployment as LiteLLM's ``/health`` lists it."""
    shown: dict[str, Any] = {"model": result.deployment.provider_model, "model_id": result.model_id}
    if caller.admin:
        shown["api_base"] = result.deployment.api_base
        if result.error is not None:
            shown["error"] = result.error
    elif result.error is not None:
        shown["error"] = "the deployment did not answer"
    return shown


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    gateway = gateway_of(request)
    try:  # read at scrape time: in Redis mode the backlog is the shared stream's, not this process's
        gateway.metrics.scoring_queue_depth.set(await gateway.trust.queue_depth())
    except RedisError as exc:
        log.warning("scoring queue depth unavailable: %s", type(exc).__name__)
    return Response(generate_latest(gateway.metrics.registry), media_type=CONTENT_TYPE_LATEST)
