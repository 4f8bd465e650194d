"""Per-answer alerts: each untrusted record, and each answer a low-trust policy acted on, as an Alertmanager alert.

Alertmanager (the one deploy/ runs) does the routing, grouping, silencing and
receivers; the gateway only posts alerts to its v2 API. A push runs beside the
request, never in its way: it is bounded (attempts, backoff, a timeout per
attempt, pushes in flight), and a push that fails is counted
(``trustgate_alert_pushes_total{outcome="failed"|"dropped"}``) and logged
once per outage (the first failure after a success, or the first ever).
Alerts carry no question or answer text unless ``include_text``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
from prometheus_client import Counter
from pydantic import BaseModel, ConfigDict, Field

from scoring import TrustRecord

__all__ = [
    "ALERT_NAME",
    "DEFAULT_RUNBOOKS_URL",
    "AlertmanagerExporter",
    "AlertmanagerSettings",
    "alert_for",
    "console_link",
    "runbook_link",
]

log = logging.getLogger("trustgate.alertmanager")

ALERT_NAME = "TrustGateLowTrustAnswer"
# The runbooks page of the published docs site (docs/runbooks.md built by MkDocs, one section per alert).
DEFAULT_RUNBOOKS_URL = "https://trustgate.readthedocs.io/en/latest/runbooks/"


class AlertmanagerSettings(BaseModel):
    """``trustgate.alerting``: where per-answer alerts go (None: nowhere) and how hard to try."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    alertmanager_url: str | None = Field(default=None, pattern=r"^https?://")
    """Alertmanager's base URL, whose v2 API the alerts are posted to; None: no alerts."""
    console_url: str = ""
    """Where people open the gateway or its console (``https://gw.example.com`` or ``https://gw.example.com/ui``,
    either works), for each alert's link to its record in the console; "" (the default) makes the link a path
    relative to the gateway."""
    runbooks_url: str = Field(default=DEFAULT_RUNBOOKS_URL, pattern=r"^https?://")
    """The runbooks page each alert's ``runbook_url`` links into (its section is ``#trustgatelowtrustanswer``): the
    published docs by default; set it where your copy of the docs (docs/runbooks.md) is served."""
    include_text: bool = False
    """Put question and answer excerpts in the annotations."""
    excerpt_chars: int = Field(default=200, ge=10, le=2000)
    """The longest excerpt, in characters, cut with a visible "…"."""
    timeout_s: float = Field(default=2.0, gt=0)
    """Seconds one attempt may take."""
    max_attempts: int = Field(default=3, ge=1, le=10)
    """Attempts per alert before it is counted as failed."""
    backoff_s: float = Field(default=0.5, ge=0)
    """Seconds before the second attempt, doubled for each further one."""
    max_pending: int = Field(default=1000, ge=1)
    """Pushes in flight; beyond them an alert is dropped (counted)."""
    resolve_after_s: float = Field(default=3600.0, gt=0)
    """Seconds after which an answer's alert ends (it is an event, not a condition that clears)."""


def _excerpt(text: str | None, limit: int) -> str:
    text = (text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _rfc3339(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).isoformat()


def console_link(console_url: str, record_id: str) -> str:
    """The console's page of a record, under ``console_url`` given as the gateway's address or the console's
    own (``…/ui``), with or without a trailing slash: operators copy either from their browser."""
    base = console_url.rstrip("/").removesuffix("/ui").rstrip("/")
    return f"{base}/ui/records/{quote(record_id, safe='')}"


def runbook_link(runbooks_url: str, alert_name: str) -> str:
    """The alert's section of the runbooks page (MkDocs' anchor of its heading: the name in lower case)."""
    return f"{runbooks_url.split('#', 1)[0]}#{alert_name.lower()}"


def alert_for(record: TrustRecord, settings: AlertmanagerSettings) -> dict[str, Any] | None:
    """The record as one alert of Alertmanager's v2 API; None when it calls for none."""
    if record.label != "untrusted" and record.action is None:
        return None
    link = console_link(settings.console_url, record.id)
    annotations = {
        "summary": f"Low-trust answer from model {record.model or 'unknown'}"
        + (f" ({record.action})" if record.action else ""),
        "console_url": link,
        "runbook_url": runbook_link(settings.runbooks_url, ALERT_NAME),
    }
    if record.score is not None:
        annotations["score"] = f"{record.score:.4f}"
    if settings.include_text:
        annotations["question"] = _excerpt(record.question, settings.excerpt_chars)
        annotations["answer"] = _excerpt(record.answer, settings.excerpt_chars)
    started = record.finished_at or record.created_at
    return {
        "labels": {
            "alertname": ALERT_NAME,
            "severity": "warning",
            "model": record.model or "unknown",
            "key": record.owner or "unknown",
            "action": record.action or "annotate",
            "trust_id": record.id,
        },
        "annotations": annotations,
        "startsAt": _rfc3339(started),
        "endsAt": _rfc3339(max(started, time.time()) + settings.resolve_after_s),
        "generatorURL": link,
    }


class AlertmanagerExporter:
    """Posts alerts in the background; ``notify`` never waits and never raises."""

    def __init__(self, settings: AlertmanagerSettings, client: httpx.AsyncClient, pushes: Counter) -> None:
        self._settings = settings
        self._url = f"{(settings.alertmanager_url or '').rstrip('/')}/api/v2/alerts"
        self._client = client
        self._pushes = pushes
        self._failing = False  # logged once when pushes start failing, once when they work again
        self._pending: set[asyncio.Task[None]] = set()

    def notify(self, record: TrustRecord) -> None:
        alert = alert_for(record, self._settings)
        if alert is None:
            return
        if len(self._pending) >= self._settings.max_pending:
            self._pushes.labels(outcome="dropped").inc()
            self._failed(f"alert for trust record {record.id} dropped: {len(self._pending)} pushes in flight")
            return
        task = asyncio.create_task(self._push(alert, record.id))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def close(self) -> None:
        """Pushes still in flight are cancelled: at shutdown nothing waits on Alertmanager."""
        for task in list(self._pending):
            task.cancel()
        await asyncio.gather(*self._pending, return_exceptions=True)

    async def _push(self, alert: dict[str, Any], record_id: str) -> None:
        problem = ""
        for attempt in range(self._settings.max_attempts):
            if attempt:
                await asyncio.sleep(self._settings.backoff_s * 2 ** (attempt - 1))
            try:
                response = await self._client.post(self._url, json=[alert], timeout=self._settings.timeout_s)
            except httpx.HTTPError as exc:
                problem = type(exc).__name__
                continue
            if response.is_success:
                self._pushes.labels(outcome="sent").inc()
                if self._failing:
                    self._failing = False
                    log.info("alerts reach Alertmanager again")
                return
            problem = f"HTTP {response.status_code}"
            if response.status_code < 500 and response.status_code != 429:
                break  # Alertmanager refused the alert itself: sending it again will not help
        self._pushes.labels(outcome="failed").inc()
        self._failed(f"alert for trust record {record_id} not delivered to Alertmanager: {problem}")

    def _failed(self, message: str) -> None:
        if not self._failing:
            self._failing = True
            log.warning(
                "%s (further failures are only counted in trustgate_alert_pushes_total until one succeeds)", message
            )
