"""Build the parts of a process — shared by the gateway (create_app), ``trustgate worker`` and ``trustgate eval``.

Each function takes what it needs and registers clean-up on the given exit
stack, so every entry point assembles the same parts the same way;
``open_parts`` opens, in one order, the ones a gateway and a worker both run on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
from redis.asyncio import Redis

from exporters import (
    ExportConfigError,
    GatewayMetrics,
    RecordPublisher,
    RedisRecordStore,
    RedisSpendStore,
    SpendLedger,
    SpendStore,
    SqliteRecordStore,
    SqliteSpendStore,
    Telemetry,
    configure_telemetry,
    disabled_telemetry,
    export_choice,
)
from exporters.alertmanager import AlertmanagerExporter, AlertmanagerSettings
from scoring import (
    COMBINED,
    CalibrationError,
    Calibrator,
    FitStore,
    Process,
    RedisFitStore,
    Scorer,
    ScorerAssetsError,
    ScoringPipeline,
    ScoringSettings,
    SqliteFitStore,
    Teachers,
    ThrottledLog,
    combiner_for,
    fitted_components,
    lane_of,
    load_calibration,
    open_scorers,
    own_fit_allowed,
    scoring_configured,
    scoring_reachable,
)

from .base.limits import Counters, Limiter, MemoryCounters, RedisCounters
from .config.settings import ConfigError, GatewaySettings
from .server.key_store import KeyTable
from .server.redis_keys import RedisKeyTable
from .server.sqlite_keys import SqliteKeyTable
from .trust.ask import UpstreamAsk
from .trust.scoring_budget import ScoringBudget
from .trust.service import traced
from .upstream.client import OnFallbackSkipped, OnTry, UpstreamClient
from .upstream.local_model import run_local_upstream
from .upstream.prices import PriceList
from .upstream.retries import OnScoringShed
from .upstream.slots import PrioritySlots

__all__ = [
    "Parts",
    "Role",
    "build_processor",
    "build_publisher",
    "build_record_store",
    "build_scorers",
    "build_teachers",
    "build_telemetry",
    "http_client",
    "load_calibrator",
    "open_fit_store",
    "open_key_table",
    "open_parts",
    "open_redis",
    "open_spend_ledger",
    "open_upstream_client",
    "records_path",
    "scores_in_child",
]

log = logging.getLogger("trustgate.assembly")

RECORDS_FILE = "trust-records.sqlite3"  # under data_dir, where trustgate.store.path names no file


def http_client() -> httpx.AsyncClient:
    # One pooled client for all upstream traffic; timeouts are set per request.
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=200, keepalive_expiry=30)
    return httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0, connect=5.0))


async def open_upstream_client(
    settings: GatewaySettings,
    stack: contextlib.AsyncExitStack,
    *,
    start_local: bool = True,
    on_fallback_skipped: OnFallbackSkipped = lambda group, fallback: None,
    on_scoring_shed: OnScoringShed = lambda group, reason: None,
    limiter: Limiter | None = None,
    telemetry: Telemetry | None = None,
    on_try: OnTry = lambda group, deployment, succeeded, seconds: None,
    local_slots: PrioritySlots | None = None,
) -> UpstreamClient:
    """The upstream client on a pooled HTTP client, after the embedded model server when the config asks for it.

    ``start_local=False`` for a process that uses the model server a gateway
    on the same host started (a worker).
    """
    if start_local and settings.trustgate.local_upstream.enabled:
        await stack.enter_async_context(run_local_upstream(settings.trustgate.local_upstream))
    http = await stack.enter_async_context(http_client())
    upstream = UpstreamClient(
        settings,
        http,
        on_fallback_skipped=on_fallback_skipped,
        on_scoring_shed=on_scoring_shed,
        limiter=limiter,
        tracer=telemetry.tracer if telemetry is not None else None,
        on_try=on_try,
        local_slots=local_slots,
    )
    stack.push_async_callback(upstream.aclose)
    return upstream


def build_telemetry(settings: GatewaySettings, stack: contextlib.AsyncExitStack) -> Telemetry:
    """OpenTelemetry as the OTEL_* variables and the config's overrides choose (off when neither asks)."""
    section = settings.trustgate.telemetry
    headers = {k: v.get_secret_value() for k, v in section.headers.items()} if section.headers else None
    try:
        choice = export_choice(
            os.environ,
            enabled=section.enabled,
            traces=section.traces_exporter,
            logs=section.logs_exporter,
            protocol=section.protocol,
            endpoint=section.endpoint,
            headers=headers,
        )
    except ExportConfigError as exc:
        raise ConfigError(str(exc)) from None
    if not choice.enabled:
        return disabled_telemetry()
    telemetry, providers = configure_telemetry(choice, section.service_name)
    for provider in providers:
        stack.callback(provider.shutdown)  # type: ignore[attr-defined]
    return telemetry


async def open_redis(settings: GatewaySettings, stack: contextlib.AsyncExitStack) -> Redis | None:
    """The shared Redis client when the queue backend is Redis, else None."""
    queue = settings.trustgate.scoring.queue
    if queue.backend != "redis":
        return None
    redis = Redis.from_url(
        queue.redis_url,
        decode_responses=True,
        socket_timeout=queue.redis_timeout_s,
        socket_connect_timeout=queue.redis_timeout_s,
        health_check_interval=10,
    )
    stack.push_async_callback(redis.aclose)
    return redis


async def open_key_table(settings: GatewaySettings, redis: Redis | None, stack: contextlib.AsyncExitStack) -> KeyTable:
    """Where keys made at run time live: beside the trust records, in Redis when they are (every replica must
    know a key at once), else in the record store's SQLite database."""
    if redis is not None:
        return RedisKeyTable(redis, settings.trustgate.scoring.queue.redis_prefix)
    config = settings.trustgate.store
    table = SqliteKeyTable(config.path or settings.trustgate.scoring.data_dir / RECORDS_FILE)
    await table.open()
    stack.push_async_callback(table.close)
    return table


def records_path(settings: GatewaySettings) -> Path:
    """The embedded store's SQLite file: the trust records, and beside them the learned fits and the spend
    ledger."""
    return settings.trustgate.store.path or settings.trustgate.scoring.data_dir / RECORDS_FILE


def limits_redis(
    settings: GatewaySettings, queue_redis: Redis | None, stack: contextlib.AsyncExitStack
) -> Redis | None:
    """Where rate limits and spend are counted, so that replicas share them: ``limits.redis_url``, else the
    queue's Redis; None: in this process (limits) and beside the records (spend)."""
    url = settings.trustgate.limits.redis_url
    if url is None:
        return queue_redis
    redis = Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
    stack.push_async_callback(redis.aclose)
    return redis


async def open_spend_ledger(
    settings: GatewaySettings,
    metrics: GatewayMetrics,
    redis: Redis | None,
    stack: contextlib.AsyncExitStack,
    clock: Callable[[], float] = time.time,
) -> SpendLedger:
    """The process's spend ledger, flushing every second to Redis (``redis``: shared by every replica and worker)
    or to the record store's SQLite database; flushed a last time when ``stack`` closes."""
    store: SpendStore
    if redis is not None:
        store = RedisSpendStore(redis, prefix=f"{settings.trustgate.scoring.queue.redis_prefix}:spend:")
    else:
        sqlite = SqliteSpendStore(records_path(settings))
        await sqlite.open()
        stack.push_async_callback(sqlite.close)
        store = sqlite
    ledger = SpendLedger(
        store, clock=clock, on_error=lambda operation: metrics.store_errors.labels(operation=f"spend_{operation}").inc()
    )
    await ledger.start()
    stack.push_async_callback(ledger.close)
    return ledger


async def build_publisher(
    settings: GatewaySettings,
    metrics: GatewayMetrics,
    redis: Redis | None,
    stack: contextlib.AsyncExitStack,
    spend: SpendLedger | None = None,
) -> RecordPublisher:
    """Records go to Redis when jobs do (every replica must see them), else to the embedded SQLite; a record's
    scoring cost to ``spend``."""
    alerts = await build_alerts(settings.trustgate.alerting, metrics, stack)
    shed_log = ThrottledLog(log)

    def shed() -> None:
        metrics.store_shed_writes.inc()
        shed_log.warning(
            "store-shed",
            "trust store write queue full (%d records waiting): new records are not "
            "stored (trustgate_store_shed_writes_total counts them)",
            settings.trustgate.store.max_pending_writes,
        )

    return RecordPublisher(await build_record_store(settings, redis, stack, on_shed=shed), metrics, alerts, spend)


async def build_record_store(
    settings: GatewaySettings,
    redis: Redis | None,
    stack: contextlib.AsyncExitStack,
    *,
    on_shed: Callable[[], None] = lambda: None,
) -> RedisRecordStore | SqliteRecordStore:
    """The record store, opened and closed by ``stack``: in Redis when jobs go there, else the embedded SQLite
    (``on_shed``: a write shed because its queue was full)."""
    queue = settings.trustgate.scoring.queue
    config = settings.trustgate.store
    if redis is not None:
        return RedisRecordStore(
            redis,
            prefix=queue.redis_prefix,
            ttl_s=queue.record_ttl_s,
            max_record_bytes=config.max_record_bytes,
            max_records=config.max_records,
        )
    store = SqliteRecordStore(
        records_path(settings),
        max_age_s=config.max_age_s,
        max_records=config.max_records,
        max_record_bytes=config.max_record_bytes,
        max_pending_writes=config.max_pending_writes,
        on_shed=on_shed,
    )
    await store.open()
    stack.push_async_callback(store.close)
    return store


async def build_alerts(
    settings: AlertmanagerSettings, metrics: GatewayMetrics, stack: contextlib.AsyncExitStack
) -> AlertmanagerExporter | None:
    """Per-answer alerts, when ``trustgate.alerting.alertmanager_url`` is set; closed before their client."""
    if settings.alertmanager_url is None:
        return None
    client = await stack.enter_async_context(httpx.AsyncClient(timeout=settings.timeout_s))
    exporter = AlertmanagerExporter(settings, client, metrics.alert_pushes)
    stack.push_async_callback(exporter.close)
    return exporter


async def build_scorers(scoring: ScoringSettings, stack: contextlib.AsyncExitStack) -> list[Scorer]:
    """The configured scorers; what they cannot load is a config error, so the process refuses to start."""
    try:
        return list((await open_scorers(scoring, stack)).values())
    except ScorerAssetsError as exc:
        raise ConfigError(str(exc)) from exc


async def build_processor(
    settings: GatewaySettings,
    upstream: UpstreamClient,
    metrics: GatewayMetrics,
    telemetry: Telemetry,
    scorers: Sequence[Scorer] | None,
    calibrator: Calibrator | None,
    stack: contextlib.AsyncExitStack,
    limiter: Limiter,
    spend: SpendLedger,
    prices: PriceList,
    fits: FitStore | None = None,
) -> tuple[Process, bool]:
    """The job processor (scorers → record, calibrated, traced) and whether any scorer is active.

    Jobs and their calls are held to the scoring budget, counted on ``limiter`` and ``spend`` (shared through
    Redis when it is, so a gateway and its workers spend one budget); each call is priced from ``prices``.
    ``fits``: each model's learned combination.
    """
    scoring = settings.trustgate.scoring
    active = list(scorers) if scorers is not None else await build_scorers(scoring, stack)
    if calibrator is not None:
        _warn_if_fitted_on_other_scorers(calibrator, active)
    try:
        combine = combiner_for(active, scoring, calibrator)
    except ScorerAssetsError as exc:
        raise ConfigError(str(exc)) from exc
    budget = ScoringBudget(
        scoring.budget,
        limiter,
        spend,
        on_call_refused=lambda group, reason: metrics.scoring_calls_shed.labels(model=group, reason=reason).inc(),
    )
    pipeline = ScoringPipeline(
        active,
        lambda model, purpose, job: UpstreamAsk(
            upstream, metrics, model, purpose, prices=prices, budget=budget, lane=lane_of(job), owner=job.owner
        ),
        scoring,
        combine=combine,
        calibrator=calibrator,
        learned=fits,
    )
    return budget.gate(traced(pipeline, telemetry)), pipeline.has_scorers


async def open_fit_store(
    settings: GatewaySettings, redis: Redis | None, stack: contextlib.AsyncExitStack
) -> FitStore | None:
    """Where learned fits live: beside the labels they come from (in Redis with the records, shared by replicas
    and workers; else in the SQLite record store's own database). None when learning is off
    (``trustgate.scoring.feedback.learn: false``)."""
    scoring = settings.trustgate.scoring
    if not scoring.feedback.learn:
        return None
    if redis is not None:
        return RedisFitStore(redis, prefix=scoring.queue.redis_prefix)
    fits = SqliteFitStore(records_path(settings))
    stack.push_async_callback(fits.close)
    await fits.open()
    return fits


def build_teachers(settings: GatewaySettings) -> Teachers:
    """Whose labels teach which fit: the config's labellers, and the configured keys that may have a fit of their
    own. A key made at run time never has one: the policy it carries is read where its requests are served, not
    where fits are made, so nothing here could tell whether a policy acts on its answers."""
    scoring = settings.trustgate.scoring
    configured = frozenset(key.name for key in settings.trustgate.keys)

    def own_fit(model: str, key: str) -> bool:
        return key in configured and own_fit_allowed(scoring, model=model, key_name=key)

    return Teachers(settings.labellers(), own_fit)


def _warn_if_fitted_on_other_scorers(calibrator: Calibrator, active: Sequence[Scorer]) -> None:
    """Trust_OV from Trust_FC alone is not Trust_OV from both: a mismatch is worth a line in the log."""
    fitted = fitted_components(calibrator)
    running = {s.name for s in active} & COMBINED
    if fitted is not None and fitted != running:
        log.warning(
            "the calibration was fitted on Trust_OV from %s, but this process scores with %s: "
            "records scored so get no x-trust-probability; refit with `trustgate eval run --components ...`",
            "+".join(sorted(fitted)),
            "+".join(sorted(running)) or "neither bc nor fc",
        )


def load_calibrator(settings: GatewaySettings) -> Calibrator | None:
    """The configured calibration, read before the server starts: a bad file is a config error, not a crash."""
    path = settings.trustgate.scoring.calibration_path
    if path is None:
        return None
    try:
        return load_calibration(path)
    except CalibrationError as exc:
        raise ConfigError(f"trustgate.scoring.calibration_path: {exc}") from exc


# gateway: serves users, starts the embedded model server; scores in-process only where neither Redis workers nor
#   its local scoring worker do (``scores_in_child``);
# worker: scores jobs from the Redis Stream, on the model server a gateway on its host started;
# local-worker: the gateway's own scoring child, on its gateway's model-server slots and rate-limit counters.
Role = Literal["gateway", "worker", "local-worker"]


@dataclass(frozen=True)
class Parts:
    """What a gateway and a worker both run on, opened by ``open_parts``."""

    redis: Redis | None  # the queue's Redis (backend: redis), else None
    limiter: Limiter
    spend: SpendLedger  # what this process spends, flushed where every replica and worker reads it
    prices: PriceList  # each deployment's, found once
    telemetry: Telemetry
    upstream: UpstreamClient
    publisher: RecordPublisher
    fits: FitStore | None  # None: no learning from feedback
    process: Process | None  # None: this process does not score (Redis workers or its local scoring worker do)
    # whether the scoring policy decides each request: jobs get a score from anyone (this process or its workers),
    # or scorers are configured while the policy turns every request off
    has_scorers: bool


def scores_in_child(
    settings: GatewaySettings, redis: Redis | None, scorers: Sequence[Scorer] | None, telemetry: Telemetry | None
) -> bool:
    """Whether a gateway's jobs go to its local scoring worker (``scoring.worker: child``, the memory backend's
    default). Scorers or telemetry handed in are objects of this process: with them it scores itself (tests,
    embedding), as it does when nothing is configured to score."""
    scoring = settings.trustgate.scoring
    return (
        redis is None
        and scoring.worker == "child"
        and scorers is None
        and telemetry is None
        and scoring_configured(scoring)
    )


async def open_parts(
    settings: GatewaySettings,
    role: Role,
    stack: contextlib.AsyncExitStack,
    *,
    metrics: GatewayMetrics,
    calibrator: Calibrator | None,
    scorers: Sequence[Scorer] | None = None,
    telemetry: Telemetry | None = None,
    on_fallback_skipped: OnFallbackSkipped = lambda group, fallback: None,
    local_slots: PrioritySlots | None = None,
    counters: Counters | None = None,
    clock: Callable[[], float] = time.time,
) -> Parts:
    """Open the parts in their one order, each closed by ``stack``: Redis, the rate-limit counters and the spend
    ledger (in Redis, a gateway's and its workers' one scoring budget), telemetry, the upstream client, the record
    publisher, the fit store and, where this process scores, the job processor.

    ``scorers`` and ``telemetry`` replace the configured ones (tests, embedding). A local worker borrows its
    gateway's model-server slots (``local_slots``) and rate-limit ``counters``, so both processes keep one count.
    ``clock`` dates spend (tests move it to a budget's next window).
    """
    scoring = settings.trustgate.scoring
    # Scorers are configured, but the policy turns every request off: each is still decided (a refused header is
    # counted), while no scorer is loaded and no scoring worker started, since no job can be made.
    unreachable = (
        role == "gateway" and scorers is None and scoring_configured(scoring) and not scoring_reachable(scoring)
    )
    if unreachable:
        log.info(
            "no request can be scored (scoring.mode is off for every key and model, and clients may not "
            "raise it): no scorer is loaded and no scoring worker started"
        )
        scorers = ()
    redis = await open_redis(settings, stack) if role != "local-worker" else None
    shared = limits_redis(settings, redis, stack)
    if counters is None:
        counters = RedisCounters(shared) if shared is not None else MemoryCounters()
    limiter = Limiter(counters)
    spend = await open_spend_ledger(settings, metrics, shared, stack, clock)
    prices = PriceList.of(settings)
    tracing = telemetry or build_telemetry(settings, stack)
    upstream = await open_upstream_client(
        settings,
        stack,
        start_local=role == "gateway",
        on_fallback_skipped=on_fallback_skipped,
        limiter=limiter,
        telemetry=tracing,
        on_try=metrics.observe_try,
        on_scoring_shed=lambda group, why: metrics.scoring_calls_shed.labels(model=group, reason=why).inc(),
        local_slots=local_slots,
    )
    publisher = await build_publisher(settings, metrics, redis, stack, spend)
    fits = await open_fit_store(settings, redis, stack)
    if role == "gateway" and (redis is not None or scores_in_child(settings, redis, scorers, telemetry)):
        has_scorers = bool(scorers) if scorers is not None else scoring_configured(scoring)
        return Parts(
            redis, limiter, spend, prices, tracing, upstream, publisher, fits, None, has_scorers or unreachable
        )
    process, has_scorers = await build_processor(
        settings, upstream, metrics, tracing, scorers, calibrator, stack, limiter, spend, prices, fits
    )
    return Parts(redis, limiter, spend, prices, tracing, upstream, publisher, fits, process, has_scorers or unreachable)
