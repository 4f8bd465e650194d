"""create_app(settings): the FastAPI application, assembled from its parts.

Nothing here lives at module level: each call builds a new app whose lifespan
opens the shared HTTP client, the upstream client and (when configured) the
local model server, and closes them on shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Sequence

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry
from redis.asyncio import Redis
from starlette.exceptions import HTTPException as StarletteHTTPException

from exporters import GatewayMetrics, SpendLedger, Telemetry, build_metrics
from exporters.calibration_metrics import CalibrationMetrics, build_calibration_metrics
from scoring import (
    JobQueue,
    MemoryJobQueue,
    RedisJobQueue,
    RefitOutcome,
    Scorer,
    ScoringSettings,
    StoreUnavailable,
    ThrottledLog,
    scoring_reachable,
)

from .assembly import build_teachers, load_calibrator, open_key_table, open_parts
from .base.errors import GatewayError, error_body
from .base.log_format import configured_log_format
from .base.request_ids import RequestIds, request_id_headers
from .config.settings import GatewaySettings
from .endpoints.endpoint_routes import add_endpoint_routes
from .endpoints.endpoint_routes import router as endpoint_router
from .endpoints.request_meter import UNKNOWN
from .metric_labels import configured_labels
from .server.auth import KeyRing, generated_caller
from .server.cached_probe import CachedProbe
from .server.calibration_routes import router as calibration_router
from .server.connections import BodyDeadline, quiet_accept_errors
from .server.gateway import Gateway
from .server.key_management import KeyManager
from .server.key_routes import router as key_router
from .server.key_store import KeyCache, KeyHash, KeyTable
from .server.model_info import router as model_info_router
from .server.readiness import ReadinessCheck
from .server.relative_redirects import RelativeRedirects
from .server.routes import router
from .server.spending import Spending
from .server.trust_feedback import router as trust_feedback_router
from .server.trust_list import router as trust_list_router
from .trust.local_scoring import GatewayShares, local_scoring_worker
from .trust.refits import Refits
from .trust.service import TrustService, sampling_secret
from .upstream.litellm_backend import check_providers
from .upstream.prices import PriceList

__all__ = ["Gateway", "Mount", "create_app"]

log = logging.getLogger("trustgate")

# An app built on the gateway (the trust console) adds its routes through one of these; the gateway never
# imports such an app, whoever builds the gateway (``trustgate serve``, a test) hands it over.
Mount = Callable[[FastAPI], None]


def create_app(
    settings: GatewaySettings,
    *,
    registry: CollectorRegistry | None = None,
    scorers: Sequence[Scorer] | None = None,
    telemetry: Telemetry | None = None,
    mounts: Sequence[Mount] = (),
    clock: Callable[[], float] = time.time,
) -> FastAPI:
    """Build the app; ``scorers`` and ``telemetry`` replace the configured ones (tests, embedding).

    Given either, the memory backend scores in this process whatever ``scoring.worker`` says: they are
    objects of this process, which a local worker process could not use.

    ``mounts`` add the routes of apps built on the gateway (the console), after the gateway's own.
    ``clock`` dates what the gateway spends, and so the keys' budget windows (tests move it on).
    """
    metrics = build_metrics(registry if registry is not None else CollectorRegistry(), configured_labels(settings))
    calibration_metrics = build_calibration_metrics(metrics.registry)
    scoring = settings.trustgate.scoring
    calibrator = load_calibrator(settings)
    translated = [d for d in settings.model_list if not (settings.trustgate.passthrough and d.is_openai_compatible)]
    if translated:
        check_providers(translated)
    skipped_log = ThrottledLog(log)

    def fallback_skipped(group: str, fallback: str) -> None:
        metrics.fallbacks_skipped.labels(model=group, fallback=fallback).inc()
        skipped_log.debug(
            (group, fallback), "skipped fallback %s of %s: the caller's key may not use it", fallback, group
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(quiet_accept_errors(asyncio.get_running_loop(), metrics.accept_errors.inc))
            parts = await open_parts(
                settings,
                "gateway",
                stack,
                metrics=metrics,
                calibrator=calibrator,
                scorers=scorers,
                telemetry=telemetry,
                on_fallback_skipped=fallback_skipped,
                clock=clock,
            )
            redis, limiter, tracing, upstream, publisher, fits = (
                parts.redis,
                parts.limiter,
                parts.telemetry,
                parts.upstream,
                parts.publisher,
                parts.fits,
            )
            refits = None if fits is None else _refits(settings, calibration_metrics, stack)
            queue: JobQueue
            has_scorers = parts.has_scorers
            if redis is not None:  # workers score; this process only needs to know whether anything will
                queue = RedisJobQueue(
                    redis,
                    publisher.store,
                    scoring.queue,
                    on_error=lambda operation: metrics.queue_errors.labels(operation=operation).inc(),
                )
            else:
                process, publish = parts.process, publisher.publish
                if process is None:  # its local scoring worker scores (scoring.worker: child, the default)
                    local = await stack.enter_async_context(
                        local_scoring_worker(
                            settings,
                            metrics,
                            publisher,
                            GatewayShares(upstream.local_slots, limiter.counters),
                            configured_log_format(),
                        )
                    )
                    process, publish, has_scorers = local.process, local.publish, local.has_scorers
                queue = MemoryJobQueue(
                    process,
                    publish,
                    max_size=scoring.queue.max_size,
                    concurrency=scoring.queue.concurrency,
                    key_share=scoring.queue.key_share,
                    grace_s=scoring.queue.shutdown_grace_s,
                    on_depth=metrics.scoring_queue_depth.set,
                    on_overtaken=metrics.scoring_async_overtaken.inc,
                )
            trust = TrustService(
                scoring,
                queue,
                publisher,
                metrics,
                has_scorers=has_scorers,
                sample_secret=sampling_secret(settings.secrets()),
                answer_logprobs=_scores_answer_logprobs(scoring, scorers),
            )
            await trust.start()
            stack.push_async_callback(trust.stop)
            health = settings.trustgate.health
            readiness = ReadinessCheck(
                lambda: upstream.check_ready(health.readiness_probe_timeout_s),
                health,
                on_probe=metrics.readiness_probes.inc,
            )
            await stack.enter_async_context(readiness.start())
            scoring_live = has_scorers and (scorers is not None or scoring_reachable(scoring))
            keys, key_manager = await _key_ring(settings, redis, metrics, scoring_live, stack)
            app.state.gateway = Gateway(
                settings,
                keys,
                upstream,
                metrics,
                trust,
                tracing,
                readiness,
                limiter,
                calibration_metrics,
                CachedProbe(lambda: upstream.check_health(health.check_timeout_s), health.check_cache_s),
                _spending(parts.prices, parts.spend, metrics),
                fits,
                refits,
                key_manager,
            )
            yield

    # FastAPI's own OpenTelemetry spans off: the gateway's spans are its own (``exporters.otel``), and FastAPI
    # otherwise asks OpenTelemetry's global providers on every request whether they are configured.
    app = FastAPI(
        title="TrustGate",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    add_endpoint_routes(app)  # first: the gateway's traffic is matched before any other route
    app.include_router(trust_list_router)  # before /v1/trust/{record_id}, which would take "summary" for an id
    app.include_router(calibration_router)  # likewise "calibration"
    app.include_router(router)
    app.include_router(trust_feedback_router)
    app.include_router(key_router)
    app.include_router(model_info_router)
    app.include_router(endpoint_router)
    app.add_middleware(BodyDeadline, timeout_s=settings.trustgate.server.body_timeout_s)
    app.add_middleware(RelativeRedirects)
    for mount in mounts:
        mount(app)
    _add_cors(app, settings.trustgate.server.allowed_origins)
    app.add_middleware(
        RequestIds,
        on_rejected=lambda: metrics.observe_request(  # outermost: every response
            model=UNKNOWN, status=400, stream=False, seconds=0.0, endpoint=UNKNOWN, key=UNKNOWN
        ),
    )
    app.add_exception_handler(GatewayError, _gateway_error)  # type: ignore[arg-type]
    app.add_exception_handler(StarletteHTTPException, _http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, _unexpected_error)
    return app


def _refits(settings: GatewaySettings, metrics: CalibrationMetrics, stack: contextlib.AsyncExitStack) -> Refits:
    """The gateway's refits, each in a process of its own; what they store is counted and set on the gauges."""

    def made(outcome: RefitOutcome) -> None:
        metrics.observe(outcome.report)
        if outcome.report.key is not None:  # a key's own fit (feedback.scope: key): no model's figure
            return
        metrics.refits.labels(model=outcome.report.model).inc()
        if outcome.held is not None:
            metrics.fits_held.labels(model=outcome.report.model).inc()

    refits = Refits(
        settings,
        build_teachers(settings),
        configured_log_format(),
        on_outcome=made,
        on_failure=metrics.refit_failures.inc,
    )
    stack.push_async_callback(refits.stop)
    return refits


async def _key_ring(
    settings: GatewaySettings,
    redis: Redis | None,
    metrics: GatewayMetrics,
    scoring_live: bool,
    stack: contextlib.AsyncExitStack,
) -> tuple[KeyRing, KeyManager | None]:
    """The gateway's keys: the configured ones, and those made at run time where ``generated_keys`` is on and a
    secret to hash them with exists (``hash_secret``, or the master key)."""
    section = settings.trustgate.generated_keys
    hasher = KeyHash.of(
        section.hash_secret.get_secret_value() if section.hash_secret else None,
        settings.master_key.get_secret_value() if settings.master_key else None,
    )
    if not section.enabled or hasher is None:
        return KeyRing(settings), None
    table = await open_key_table(settings, redis, stack)
    await _warn_of_taken_names(table, settings)
    lookups_failed = ThrottledLog(log, interval_s=30)

    def store_error(error: StoreUnavailable) -> None:
        metrics.store_errors.labels(operation="key_lookup").inc()
        lookups_failed.warning("key-store", "a key made at run time could not be looked up: %s", error)

    ring = KeyRing(settings, KeyCache(table, generated_caller, section.max_keys), hasher, on_store_error=store_error)
    return ring, KeyManager(table, hasher, settings, scoring_live=scoring_live)


async def _warn_of_taken_names(table: KeyTable, settings: GatewaySettings) -> None:
    """Name the keys made at run time whose names configured keys have taken since (they are refused)."""
    configured = {key.name for key in settings.trustgate.keys}
    try:
        taken = sorted(key.name for key in await table.all() if key.name in configured)
    except StoreUnavailable as exc:
        log.warning("the key store could not be read at start-up: %s", exc)
        return
    if taken:
        log.warning(
            "keys made at run time are refused, their names being configured keys' now: %s (delete them with "
            "trustgate keys delete --alias NAME)",
            ", ".join(taken),
        )


def _add_cors(app: FastAPI, origins: list[str]) -> None:
    """Let browser pages from ``origins`` call the gateway; with none (the default), browsers are refused.

    Closed by default because a browser would otherwise let any web page a
    user opens drive a gateway that user can reach (one on their machine or
    their network, open or behind keys a page could phish): CORS is what
    stops a page's JSON POST. Credentials (cookies) are never allowed: the
    gateway reads keys from the ``Authorization`` header only. Every response
    header is exposed, so pages read ``x-request-id`` and the trust headers.
    """
    if origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_credentials=False,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["*"],
        )


def _spending(prices: PriceList, ledger: SpendLedger, metrics: GatewayMetrics) -> Spending:
    """Answers priced and keys held to their budgets; the deployments without a price named once."""
    unpriced = prices.unpriced()
    if unpriced:
        log.info(
            "no price known for %s: the spend of their answers and scoring calls is null (unknown) and counts in "
            "no budget; set input_cost_per_token and output_cost_per_token in their litellm_params to price them",
            ", ".join(unpriced),
        )
    return Spending(prices, ledger, metrics)


def _scores_answer_logprobs(scoring: ScoringSettings, scorers: Sequence[Scorer] | None) -> bool:
    """Whether a scorer reads the answer's log-probabilities (the configured ones, or those given)."""
    if scorers is not None:
        return any(s.needs_answer_logprobs for s in scorers)
    return scoring.logprob.enabled


async def _gateway_error(request: Request, exc: GatewayError) -> JSONResponse:
    return JSONResponse(exc.body(), status_code=exc.status_code, headers=exc.headers())


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
    return JSONResponse(error_body(str(exc.detail), kind), status_code=exc.status_code)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error on %s", request.url.path)
    # Answered outside the middleware that sets the request id on every other response: set here.
    return JSONResponse(
        error_body("Internal gateway error", "api_error"), status_code=500, headers=request_id_headers()
    )
