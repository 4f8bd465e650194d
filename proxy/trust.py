"""TrustService: the proxy's side of scoring — decide, hand the job over, report the record.

The request path only decides and enqueues; the queue's workers run the
scorers; finished records are published to the store, Prometheus and
OpenTelemetry. Nothing here can fail the user's request except an invalid
``x-trustgate-mode`` header (a 400, before any upstream call).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any

from exporters import RecordPublisher, Telemetry
from scoring.jobs import scoring_job
from scoring.pipeline import ScoringPipeline
from scoring.policy import Decision, decide, skip_reason
from scoring.queue import JobQueue, Process
from scoring.rag import LABELS_KEY, RagRequest
from scoring.settings import ScoringSettings
from scoring.types import ScoringJob, TrustRecord

from .errors import InvalidRequest

__all__ = ["Answer", "TrustPlan", "TrustService", "traced"]

log = logging.getLogger("trustgate.trust")

MODE_HEADER = "x-trustgate-mode"
_MODES = ("sync", "async", "off")
_CLIENT_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@dataclass(frozen=True)
class TrustPlan:
    record_id: str
    model: str
    decision: Decision
    rag: RagRequest | None = None


@dataclass(frozen=True)
class Answer:
    text: str | None
    has_tool_calls: bool = False
    logprobs: list[float] | None = None

    @classmethod
    def from_completion(cls, data: dict[str, Any]) -> Answer:
        """The first choice's answer; an upstream body of another shape reads as an empty answer."""
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        logprobs = choice.get("logprobs") if isinstance(choice.get("logprobs"), dict) else {}
        entries = logprobs.get("content") if isinstance(logprobs.get("content"), list) else []
        content = message.get("content")
        return cls(text=content if isinstance(content, str) else None, has_tool_calls=bool(message.get("tool_calls")),
                   logprobs=[float(e["logprob"]) for e in entries if isinstance(e, dict) and "logprob" in e] or None)


def traced(pipeline: ScoringPipeline, telemetry: Telemetry) -> Process:
    """The queue's job processor: the pipeline, inside a scoring span."""
    async def process(job: ScoringJob) -> TrustRecord:
        with telemetry.scoring_span(job.id, job.model) as span:
            record = await pipeline.run(job)
            span.set_attribute("trustgate.trust.status", record.status)
            if record.score is not None:
                span.set_attribute("trustgate.trust.score", record.score)
            return record

    return process


class TrustService:
    def __init__(self, settings: ScoringSettings, queue: JobQueue, publisher: RecordPublisher, *,
                 has_scorers: bool) -> None:
        self._settings = settings
        self._queue = queue
        self._publisher = publisher
        self._has_scorers = has_scorers
        self._background: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        await self._queue.start()

    async def stop(self) -> None:
        await self._queue.stop()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    def plan(self, *, model: str, key_name: str, headers: Mapping[str, str],
             rag: RagRequest | None = None) -> TrustPlan:
        mode_header = headers.get(MODE_HEADER)
        if mode_header is not None and mode_header not in _MODES:
            raise InvalidRequest(f"{MODE_HEADER} must be one of {', '.join(_MODES)}", param=MODE_HEADER,
                                 code="invalid_trust_mode")
        record_id = f"trust-{uuid.uuid4().hex}"
        client_id = headers.get("x-request-id", "")
        request_key = client_id if _CLIENT_REQUEST_ID.match(client_id) else record_id
        decision = decide(self._settings, model=model, key_name=key_name, request_key=request_key,
                          mode_header=mode_header if self._has_scorers else "off")
        return TrustPlan(record_id=record_id, model=model, decision=decision, rag=rag)

    async def score(self, plan: TrustPlan, messages: list[dict[str, Any]], answer: Answer) -> TrustRecord:
        """Submit, and in sync mode wait; never raises, so scoring cannot break the user's response."""
        try:
            return await self.settle(plan, await self.submit(plan, messages, answer))
        except Exception as exc:
            log.exception("scoring hand-off failed for %s", plan.record_id)
            return TrustRecord(id=plan.record_id, status="failed", model=plan.model, error=type(exc).__name__)

    async def submit(self, plan: TrustPlan, messages: list[dict[str, Any]], answer: Answer) -> TrustRecord:
        """Hand a sampled request's answer to scoring; returns the record as it stands now."""
        reason = skip_reason(answer.text, has_tool_calls=answer.has_tool_calls)
        if reason is not None:
            return self._publish_later(TrustRecord(id=plan.record_id, status="skipped", model=plan.model,
                                                   error=f"skipped: {reason}"))
        policy: dict[str, Any] = {"mode": plan.decision.mode}
        if plan.rag is not None:
            policy[LABELS_KEY] = plan.rag.labels.as_policy()
        job = scoring_job(plan.record_id, plan.model, messages, answer.text or "", answer.logprobs, policy=policy,
                          documents=plan.rag.job_documents() if plan.rag is not None else None)
        outcome = await self._queue.submit(job)
        if outcome != "accepted":
            error = "scoring queue full" if outcome == "shed" else "scoring queue unavailable"
            return self._publish_later(TrustRecord(id=job.id, status="shed", model=job.model, error=error))
        return TrustRecord(id=job.id, status="pending", model=job.model, created_at=job.created_at)

    async def settle(self, plan: TrustPlan, record: TrustRecord) -> TrustRecord:
        """In sync mode, wait for the finished record up to the timeout; otherwise return it as is."""
        if record.status != "pending" or plan.decision.mode != "sync":
            return record
        return await self._queue.wait(record.id, plan.decision.sync_timeout) or record

    async def lookup(self, record_id: str) -> TrustRecord | None:
        return await self._queue.pending(record_id) or await self._publisher.store.get(record_id)

    def _publish_later(self, record: TrustRecord) -> TrustRecord:
        task = asyncio.create_task(self._publish_quietly(record))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return record

    async def _publish_quietly(self, record: TrustRecord) -> None:
        try:
            await self._publisher.publish(record)
        except Exception as exc:  # e.g. the store is down: counted in metrics already, never raised to users
            log.warning("could not store trust record %s: %s", record.id, type(exc).__name__)
