"""Publish a finished (or shed, or skipped) trust record to every exporter at once."""

from __future__ import annotations

from scoring.types import TrustRecord

from .otel import Telemetry
from .prometheus import GatewayMetrics
from .store import RecordStore

__all__ = ["RecordPublisher"]


class RecordPublisher:
    def __init__(self, store: RecordStore, metrics: GatewayMetrics, telemetry: Telemetry) -> None:
        self.store = store
        self._metrics = metrics
        self._telemetry = telemetry

    async def publish(self, record: TrustRecord) -> None:
        """Metrics and events first: they cannot fail, and a store outage must not hide them."""
        self._metrics.observe_record(record)
        self._telemetry.emit_evaluations(record)
        await self.store.put(record)
