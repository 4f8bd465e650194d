"""create_app(settings): the FastAPI application, assembled from its parts.

Nothing here lives at module level: each call builds a new app whose lifespan
opens the shared HTTP client, the upstream client and (when configured) the
local model server, and closes them on shutdown.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry
from starlette.exceptions import HTTPException as StarletteHTTPException

from exporters import (
    GatewayMetrics,
    SqliteRecordStore,
    Telemetry,
    build_metrics,
    configure_telemetry,
    disabled_telemetry,
)
from scoring.pipeline import ScoringPipeline
from scoring.types import Scorer

from .auth import KeyRing
from .config import GatewaySettings
from .errors import GatewayError, error_body
from .ask import UpstreamAsk
from .local_upstream import run_local_upstream
from .routes import router
from .scorers import build_scorers, combiner
from .trust import TrustService
from .upstream import UpstreamClient

__all__ = ["Gateway", "create_app"]

log = logging.getLogger("trustgate")


@dataclass
class Gateway:
    """What a request handler needs, set on ``app.state.gateway`` by the lifespan."""

    settings: GatewaySettings
    keys: KeyRing
    upstream: UpstreamClient
    metrics: GatewayMetrics
    trust: TrustService
    telemetry: Telemetry


def _http_client() -> httpx.AsyncClient:
    # One pooled client for all upstream traffic; timeouts are set per request.
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=30)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0, connect=5.0))


def _telemetry(settings: GatewaySettings, stack: contextlib.AsyncExitStack) -> Telemetry:
    if not settings.trustgate.telemetry.enabled:
        return disabled_telemetry()
    telemetry, providers = configure_telemetry(settings.trustgate.telemetry.service_name)
    for provider in providers:
        stack.callback(provider.shutdown)  # type: ignore[attr-defined]
    return telemetry


async def _record_store(settings: GatewaySettings, stack: contextlib.AsyncExitStack) -> SqliteRecordStore:
    config = settings.trustgate.store
    store = SqliteRecordStore(config.path, max_age_s=config.max_age_days * 86400, max_records=config.max_records)
    await store.open()
    stack.push_async_callback(store.close)
    return store


def create_app(settings: GatewaySettings, *, registry: CollectorRegistry | None = None,
               scorers: Sequence[Scorer] | None = None, telemetry: Telemetry | None = None) -> FastAPI:
    """Build the app; ``scorers`` and ``telemetry`` replace the configured ones (tests, embedding)."""
    metrics = build_metrics(registry if registry is not None else CollectorRegistry())
    scoring = settings.trustgate.scoring

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if settings.trustgate.local_upstream.enabled:
                await stack.enter_async_context(run_local_upstream(settings.trustgate.local_upstream))
            http = await stack.enter_async_context(_http_client())
            upstream = UpstreamClient(settings, http)
            stack.push_async_callback(upstream.aclose)
            tracing = telemetry or _telemetry(settings, stack)
            active = list(scorers) if scorers is not None else await build_scorers(scoring, stack)
            pipeline = ScoringPipeline(active, lambda model, purpose: UpstreamAsk(upstream, metrics, model, purpose),
                                       scoring, combine=combiner(active))
            trust = TrustService(scoring, pipeline, await _record_store(settings, stack), metrics, tracing)
            await trust.start()
            stack.push_async_callback(trust.stop)
            app.state.gateway = Gateway(settings, KeyRing(settings), upstream, metrics, trust, tracing)
            yield

    app = FastAPI(title="TrustGate", lifespan=lifespan, docs_url=None, redoc_url=None)
    app.include_router(router)
    app.add_exception_handler(GatewayError, _gateway_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected_error)
    return app


async def _gateway_error(request: Request, exc: GatewayError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status_code)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    return JSONResponse(error_body(str(exc.detail), kind), status_code=exc.status_code)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s", request.url.path)
    return JSONResponse(error_body("Internal gateway error", "api_error"), status_code=500)
