"""Publish a finished (or shed, or skipped) trust record to every exporter at once."""

from __future__ import annotations

from scoring.types import TrustRecord

from .prometheus import GatewayMetrics
from .store import RecordStore

__all__ = ["RecordPublisher"]


class RecordPublisher:
    def __init__(self, store: RecordStore, metrics: GatewayMetrics) -> None:
        self.store = store
        self._metrics = metrics

    async def publish(self, record: TrustRecord) -> None:
        """Metrics first: they cannot fail, and a store outage must not hide them.

        Evaluation events are emitted where the job is scored (``proxy.trust.traced``),
        inside its scoring span and with the request's trace context.
        """
        self._metrics.observe_record(record)
        await self.store.put(record)
