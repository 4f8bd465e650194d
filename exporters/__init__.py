"""Exporters: functions of what the gateway and scorers produce; they never compute scores."""

from .headers import sse_trust_chunk, trust_headers, trust_summary
from .otel import Telemetry, configure_telemetry, disabled_telemetry
from .prometheus import GatewayMetrics, build_metrics
from .publish import RecordPublisher
from .redis_store import RedisRecordStore
from .store import RecordStore, SqliteRecordStore, StoreUnavailable

__all__ = [
    "GatewayMetrics",
    "RecordPublisher",
    "RecordStore",
    "RedisRecordStore",
    "SqliteRecordStore",
    "StoreUnavailable",
    "Telemetry",
    "build_metrics",
    "configure_telemetry",
    "disabled_telemetry",
    "sse_trust_chunk",
    "trust_headers",
    "trust_summary",
]
