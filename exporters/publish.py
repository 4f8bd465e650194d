"""Publish a finished (or shed, or skipped) trust record to every exporter at once."""

from __future__ import annotations

from scoring import TrustRecord

from .alertmanager import AlertmanagerExporter
from .prometheus import GatewayMetrics
from .spend import SpendLedger
from .store import RecordStore

__all__ = ["RecordPublisher"]


class RecordPublisher:
    def __init__(
        self,
        store: RecordStore,
        metrics: GatewayMetrics,
        alerts: AlertmanagerExporter | None = None,
        spend: SpendLedger | None = None,
    ) -> None:
        self.store = store
        self._metrics = metrics
        self._alerts = alerts
        self._spend = spend  # where the record's scoring cost is added, for scoring's spend budget and the keys'

    def alert(self, record: TrustRecord) -> None:
        """An untrusted record, or one a low-trust policy acted on, to Alertmanager when one is configured."""
        if self._alerts is not None:
            self._alerts.notify(record)

    async def publish(self, record: TrustRecord) -> None:
        """Metrics first: they cannot fail, and a store outage must not hide them.

        Evaluation events are emitted where the job is scored (``proxy.trust.service.traced``),
        inside its scoring span and with the request's trace context.
        """
        self._metrics.observe_record(record)
        if self._spend is not None:
            self._spend.charge_scoring(record)
        self.alert(record)
        await self.store.put(record)
