"""Exporters: functions of what the gateway and scorers produce; they never compute scores."""

from .headers import (
    TRUST_EVENT,
    TRUST_FIELD,
    TRUST_HEADER_PREFIX,
    trust_chunk,
    trust_event,
    trust_headers,
    trust_summary,
)
from .metric_labels import ConfiguredLabels
from .otel import RequestTrace, Telemetry, configure_telemetry, disabled_telemetry, place_upstream_span, upstream_span
from .otel_export import ExportChoice, ExportConfigError, export_choice
from .prometheus import (
    GatewayMetrics,
    WorkerMetrics,
    build_metrics,
    build_worker_metrics,
)
from .publish import RecordPublisher
from .redis_store import RedisRecordStore
from .spend import SpendLedger, key_subject, model_subject
from .spend_store import RedisSpendStore, SpendStore, Spent, SqliteSpendStore
from .store import RecordStore, SqliteRecordStore, StoreUnavailable

__all__ = [
    "TRUST_EVENT",
    "TRUST_FIELD",
    "TRUST_HEADER_PREFIX",
    "ConfiguredLabels",
    "ExportChoice",
    "ExportConfigError",
    "GatewayMetrics",
    "RecordPublisher",
    "RecordStore",
    "RedisRecordStore",
    "RedisSpendStore",
    "RequestTrace",
    "SpendLedger",
    "SpendStore",
    "Spent",
    "SqliteRecordStore",
    "SqliteSpendStore",
    "StoreUnavailable",
    "Telemetry",
    "WorkerMetrics",
    "build_metrics",
    "build_worker_metrics",
    "configure_telemetry",
    "disabled_telemetry",
    "export_choice",
    "key_subject",
    "model_subject",
    "place_upstream_span",
    "trust_chunk",
    "trust_event",
    "trust_headers",
    "trust_summary",
    "upstream_span",
]
