"""TrustService: the proxy's side of scoring — decide, hand the job over, report the record.

The request path only decides and enqueues; the queue's workers run the
scorers; finished records are published to the store, Prometheus and
OpenTelemetry. Nothing here can fail the user's request except an invalid
``x-trustgate-mode`` header (a 400, before any upstream call). A valid header
the operator's policy does not allow is ignored and counted.

Each record carries the name of the key that asked; reads are scoped to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Callable, Coroutine, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

from exporters import GatewayMetrics, RecordPublisher, Telemetry
from exporters.record_query import RecordPage, RecordQuery
from exporters.record_summary import LabelCount, TrustSummary
from scoring import (
    FEEDBACK_STATUSES,
    Applicability,
    CallCost,
    ContentKind,
    Decision,
    Feedback,
    FeedbackRefused,
    JobPolicy,
    JobQueue,
    Labelled,
    LowTrust,
    PolicySettings,
    Process,
    RagRequest,
    RecordCost,
    RecordScope,
    SamplingParams,
    ScoringJob,
    ScoringMode,
    ScoringPipeline,
    ScoringSettings,
    ShedReason,
    StoreUnavailable,
    SubmitResult,
    ThrottledLog,
    TrustAction,
    TrustRecord,
    TrustStatus,
    applicability_of,
    decide,
    describe,
    last_question,
    logprob_component,
    low_trust,
    scored_kinds,
    scoring_job,
    skip_reason,
)

from ..base.errors import InvalidRequest, ServiceUnavailable
from ..base.request_ids import REQUEST_ID_HEADER, valid_request_id
from ..base.sdk_params import Endpoint
from ..upstream.logprobs import RESPONSES_LOGPROBS, LogprobsAdded, ask_for_logprobs
from ..upstream.replies import Answer
from .sampling import request_sampling

__all__ = ["TrustPlan", "TrustService", "sampling_secret", "traced"]

log = logging.getLogger("trustgate.trust")

MODE_HEADER = "x-trustgate-mode"
_MODES = ("sync", "async", "off")
# store_errors' operation label: its words
_READS = {"get": "look-up", "list": "listing", "summary": "summary", "feedback": "label", "labels": "label count"}


# How the user's call was asked for the answer's log-probabilities: on it (by the gateway or the client), not
# (nothing to score them, or the request cannot ask without changing what the client gets), or not at all
# because the model's provider returns none (litellm does not pass ``logprobs`` to it: Anthropic, say).
LogprobsAsk = Literal["asked", "not_asked", "provider_gives_none"]
# Why a scored answer has no ``lp`` (LPDetails.reason), by how its call was asked.
_LOGPROBS_ABSENT = {
    "asked": "upstream_returned_none",
    "not_asked": "not_asked",
    "provider_gives_none": "provider_gives_none",
}


# A job the queue did not accept: its record's shed reason and error.
_NOT_ACCEPTED: dict[SubmitResult, tuple[ShedReason, str]] = {
    "shed": ("queue_full", "scoring queue full"),
    "key_share": ("key_share", "this key holds its share of the scoring queue (queue.key_share)"),
    "unavailable": ("queue_unavailable", "scoring queue unavailable"),
}


@dataclass(frozen=True)
class TrustPlan:
    record_id: str  # of the trust record the answer gets; empty when it gets none (``decision.sampled`` false)
    model: str
    owner: str  # the name of the key that asked
    decision: Decision
    rag: RagRequest | None = None
    traceparent: str | None = None  # the request span's, carried by the scoring job
    logprobs: LogprobsAsk = "not_asked"  # set by TrustService.upstream_body
    request_id: str | None = None  # the request's x-request-id, carried to the record
    asked_model: str | None = None  # the group the client asked for, when a fallback group answered
    sampling: SamplingParams | None = None  # how the request was sampled, for ``sc``'s re-asks
    # The kinds of answer scored for the key on the model (scoring.policy.scored_kinds); None: triage is off (or the
    # request is not sampled), so no answer is triaged.
    score_kinds: frozenset[ContentKind] | None = None

    def answered_by(self, group: str) -> TrustPlan:
        """The plan for the answer ``group`` gave: scored and booked as that group's, naming the one asked.

        Scoring re-asks the group that answered (its consistency is the answer's),
        and the record says which group the client asked for.
        """
        if group == self.model:
            return self
        return replace(self, model=group, asked_model=self.asked_model or self.model)

    def record(self, status: TrustStatus, **fields: Any) -> TrustRecord:
        """A record of this plan's answer that needs no scoring job: its id, model, owner and correlation."""
        return TrustRecord(
            id=self.record_id,
            status=status,
            model=self.model,
            owner=self.owner,
            request_id=self.request_id,
            asked_model=self.asked_model,
            **fields,
        )


def sampling_secret(secrets: Iterable[str]) -> bytes:
    """The key of the sampling hash: shared by replicas of one config, unknown to clients.

    Derived from the configured secrets so that every replica samples a
    request alike; random per process when there are none (an open gateway).
    """
    material = "\0".join(sorted(secrets))
    if not material:
        return os.urandom(32)
    return hashlib.blake2b(material.encode(), digest_size=32, person=b"tg-sampling").digest()


def traced(pipeline: ScoringPipeline, telemetry: Telemetry) -> Process:
    """The queue's job processor: the pipeline inside a scoring span, then its evaluation events."""

    async def process(job: ScoringJob) -> TrustRecord:
        with telemetry.scoring_span(job) as span:
            record = await pipeline.run(job)
            span.set_attribute("trustgate.trust.status", record.status)
            if record.score is not None:
                span.set_attribute("trustgate.trust.score", record.score)
            telemetry.emit_evaluations(record, job)
            return record

    return process


# Triage of one answer: the request's messages and the answer as the gateway has them, to what triage says of it.
Triage = Callable[[list[dict[str, Any]], Answer], Applicability]


def _triage() -> Triage:
    """Triage's reader, its rules compiled now: only a gateway that triages pays for them (scoring.triage)."""
    from scoring.triage import Exchange, triage

    def read(messages: list[dict[str, Any]], answer: Answer) -> Applicability:
        verdict = triage(Exchange.from_messages(messages, answer.text or "", has_tool_calls=answer.has_tool_calls))
        return Applicability(kind=verdict.kind, reason=verdict.reason)

    return read


class TrustService:
    def __init__(
        self,
        settings: ScoringSettings,
        queue: JobQueue,
        publisher: RecordPublisher,
        metrics: GatewayMetrics,
        *,
        has_scorers: bool,
        sample_secret: bytes,
        answer_logprobs: bool = False,
    ) -> None:
        self._settings = settings
        self._answer_logprobs = answer_logprobs
        self._triage = _triage() if has_scorers and settings.applicability.enabled else None
        self._queue = queue
        self._publisher = publisher
        self._metrics = metrics
        self._has_scorers = has_scorers
        self._sample_secret = sample_secret
        self._refusals = ThrottledLog(log)
        self._store_log = ThrottledLog(log, interval_s=30)
        self._background: set[asyncio.Task[None]] = set()
        # Records handed to a client and still on their way to the store: a look-up finds them here.
        self._unstored: dict[str, TrustRecord] = {}
        self._low_trust_policies: dict[tuple[str, str], LowTrust] = {}  # by (model group, key name)
        self._score_kinds: dict[tuple[str, str], frozenset[ContentKind] | None] = {}  # likewise

    @property
    def scores(self) -> bool:
        """Whether this gateway's requests are decided at all (scorers run here or in workers); where not, every
        request's mode is off."""
        return self._has_scorers

    async def start(self) -> None:
        await self._queue.start()

    async def stop(self) -> None:
        await self._queue.stop()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    def plan(
        self,
        *,
        model: str,
        key_name: str,
        headers: Mapping[str, str],
        body: bytes,
        rag: RagRequest | None = None,
        traceparent: str | None = None,
        request: Mapping[str, Any] | None = None,
        key_policy: PolicySettings | None = None,
    ) -> TrustPlan:
        """How the request is scored: ``key_name``'s policy on ``model`` (``key_policy``: the one a key made at run
        time carries), within which the client's ``x-trustgate-mode`` may choose."""
        mode_header = headers.get(MODE_HEADER)
        if mode_header is not None:  # spelled as the client likes (SYNC, Off); the policy below still decides
            mode_header = mode_header.strip().lower()
        if mode_header is not None and mode_header not in _MODES:
            raise InvalidRequest(
                f"{MODE_HEADER} must be one of {', '.join(_MODES)}", param=MODE_HEADER, code="invalid_trust_mode"
            )
        if not self._has_scorers:
            decision = Decision(mode="off", sync_timeout_s=self._settings.sync_timeout_s, sampled=False)
        else:
            decision = decide(
                self._settings,
                model=model,
                key_name=key_name,
                request_key=lambda: self._sample_key(key_name, headers.get(REQUEST_ID_HEADER, ""), body),
                mode_header=cast("ScoringMode | None", mode_header),
                on_low_trust=self._low_trust(model, key_name, key_policy),
                key_policy=key_policy,
            )
        if decision.refused_mode is not None:
            self._metrics.client_overrides_refused.labels(setting="mode", requested=decision.refused_mode).inc()
            self._refusals.debug(
                ("mode", key_name, model),
                "ignored %s: %s for key %s on %s is not allowed by "
                "allow_client_mode or an on_low_trust action; scoring in %s mode",
                MODE_HEADER,
                decision.refused_mode,
                key_name,
                model,
                decision.mode,
            )
        # 128 random bits, as uuid4 at a third of its cost; a system call, made only for a record that will be.
        record_id = f"trust-{secrets.token_hex(16)}" if decision.sampled else ""
        return TrustPlan(
            record_id=record_id,
            model=model,
            owner=key_name,
            decision=decision,
            rag=rag,
            traceparent=traceparent,
            request_id=headers.get(REQUEST_ID_HEADER),
            sampling=request_sampling(request) if request is not None and decision.sampled else None,
            score_kinds=self._kinds(model, key_name) if decision.sampled else None,
        )

    def _kinds(self, model: str, key_name: str) -> frozenset[ContentKind] | None:
        """The kinds of answer scored for the key on a model group, resolved once: the settings do not change."""
        key = (model, key_name)
        if key not in self._score_kinds:
            self._score_kinds[key] = scored_kinds(self._settings, model=model, key_name=key_name)
        return self._score_kinds[key]

    def _low_trust(self, model: str, key_name: str, key_policy: PolicySettings | None) -> LowTrust:
        """The key's ``on_low_trust`` policy on a model group, resolved once for configured keys, whose settings do
        not change; a key made at run time carries its own policy, which may, and is resolved each time."""
        if key_policy is not None:
            return low_trust(self._settings, model=model, key_name=key_name, key_policy=key_policy)
        policy = self._low_trust_policies.get((model, key_name))
        if policy is None:
            policy = self._low_trust_policies[(model, key_name)] = low_trust(
                self._settings, model=model, key_name=key_name
            )
        return policy

    def upstream_body(
        self, plan: TrustPlan, body: dict[str, Any], endpoint: Endpoint, *, gives_logprobs: bool
    ) -> tuple[TrustPlan, dict[str, Any], LogprobsAdded | None]:
        """The body to send upstream, what to strip from the response (None: nothing), and the plan knowing
        how the call was asked (so that a record without ``lp`` says why).

        A scored request (not a RAG one: its scorers read documents, not
        tokens) asks for the answer's log-probabilities when an ``lp`` scorer
        runs, at no extra upstream call; the client still gets only what it
        asked for. Only deployments that take the parameter
        (``gives_logprobs``: OpenAI-compatible ones, and providers litellm
        says accept it) are asked: scoring must never fail the user's call.
        A client's own chat ``logprobs`` without ``top_logprobs`` loses the
        alternatives the upstream client may add for a server that needs them.
        """
        wanted = self._answer_logprobs and gives_logprobs and plan.decision.sampled and plan.rag is None
        sent, added = ask_for_logprobs(body, endpoint, wanted=wanted)
        asks = sent.get("logprobs") not in (None, False) or RESPONSES_LOGPROBS in (sent.get("include") or ())
        how: LogprobsAsk = "asked" if asks else "not_asked" if gives_logprobs else "provider_gives_none"
        return (plan if how == plan.logprobs else replace(plan, logprobs=how)), sent, added

    def _sample_key(self, key_name: str, client_id: str, body: bytes) -> str:
        """What sampling hashes: a client's retry (same x-request-id, same body) is decided alike; a request
        without an id of its own, at random.

        Keyed with a secret and bound to the body, so that a client can neither
        compute nor reuse request ids that are always sampled: the fraction
        scored stays the configured sample rate.
        """
        if not valid_request_id(client_id):
            return secrets.token_hex(16)
        digest = hashlib.blake2b(key=self._sample_secret, digest_size=16)
        for part in (key_name.encode(), client_id.encode(), body):
            digest.update(len(part).to_bytes(8, "big") + part)
        return digest.hexdigest()

    async def score(
        self, plan: TrustPlan, messages: list[dict[str, Any]], answer: Answer, cost: CallCost | None = None
    ) -> TrustRecord:
        """Submit, and in sync mode wait; never raises, so scoring cannot break the user's response.

        ``cost``: what the answer's call cost (None: not priced), carried to the record."""
        try:
            return await self.settle(plan, await self.submit(plan, messages, answer, cost))
        except Exception as exc:
            log.exception("scoring hand-off failed for %s", plan.record_id)
            return plan.record("failed", error=type(exc).__name__, cost=RecordCost.of(cost))

    async def submit(
        self, plan: TrustPlan, messages: list[dict[str, Any]], answer: Answer, cost: CallCost | None = None
    ) -> TrustRecord:
        """Hand a sampled request's answer to scoring; returns the record as it stands now.

        Triage runs first, here in the serving process (a fraction of a
        millisecond, no upstream call): an answer of a kind the operator does
        not score is recorded ``not_applicable`` at once, with no job, no queue
        slot and no scoring call, so even an async response says so. A request
        with documents is not triaged: its RAG scorers read the documents.
        ``cost``: what the answer's call cost (None: not priced), carried to the record.
        """
        applicability = self._triaged(plan, messages, answer)
        if applicability is not None and applicability_of(applicability.kind, plan.score_kinds) == "not_applicable":
            return self._publish_later(self._not_applicable(plan, messages, answer, applicability, cost))
        reason = skip_reason(answer.text, has_tool_calls=answer.has_tool_calls)
        if reason is not None:  # no content: only tool calls, or nothing at all
            return self._publish_later(
                plan.record(
                    "skipped", error=f"skipped: {reason}", applicability=applicability, cost=RecordCost.of(cost)
                )
            )
        policy = JobPolicy(
            mode="sync" if plan.decision.mode == "sync" else "async",
            rag=plan.rag.labels if plan.rag is not None else None,
        )
        absent = None if answer.logprobs or plan.rag is not None else _LOGPROBS_ABSENT[plan.logprobs]
        job = scoring_job(
            plan.record_id,
            plan.model,
            messages,
            answer.text or "",
            answer.logprobs,
            policy=policy,
            logprobs_absent=absent,
            documents=plan.rag.job_documents() if plan.rag is not None else None,
            owner=plan.owner,
            completion_id=answer.completion_id,
            traceparent=plan.traceparent,
            request_id=plan.request_id,
            asked_model=plan.asked_model,
            sampling=plan.sampling,
            applicability=applicability,
            answer_cost=cost,
        )
        outcome = await self._queue.submit(job)
        if outcome != "accepted":
            reason, error = _NOT_ACCEPTED[outcome]
            return self._publish_later(TrustRecord.for_job(job, "shed", shed_reason=reason, error=error))
        return TrustRecord.for_job(job, "pending")

    def _triaged(self, plan: TrustPlan, messages: list[dict[str, Any]], answer: Answer) -> Applicability | None:
        """What triage says of the answer, counted by kind; None where triage does not run (off, or documents)."""
        if self._triage is None or plan.score_kinds is None or plan.rag is not None:
            return None
        applicability = self._triage(messages, answer)
        self._metrics.observe_applicability(plan.model, applicability.kind)
        return applicability

    def _not_applicable(
        self,
        plan: TrustPlan,
        messages: list[dict[str, Any]],
        answer: Answer,
        applicability: Applicability,
        cost: CallCost | None,
    ) -> TrustRecord:
        """The record of an answer of a kind that is not scored: its kind and why, the exchange for a reader to
        see, and ``lp`` where the answer came with log-probabilities (free: no upstream call)."""
        lp = logprob_component(answer.logprobs) if self._answer_logprobs and answer.logprobs else None
        return plan.record(
            "not_applicable",
            applicability=applicability,
            components={lp.component: lp} if lp is not None and lp.value is not None else {},
            question=last_question(messages),
            answer=answer.text,
            finished_at=time.time(),
            cost=RecordCost.of(cost),
        )

    async def settle(self, plan: TrustPlan, record: TrustRecord) -> TrustRecord:
        """In sync mode, wait for the finished record up to the timeout; otherwise return it as is."""
        if record.status != "pending" or plan.decision.mode != "sync":
            return record
        finished = await self._queue.wait(record.id, plan.decision.sync_timeout_s)
        if finished is None:
            self._metrics.observe_sync_timeout(plan.model)
            return record
        return finished

    def mark(self, record: TrustRecord, action: TrustAction | None, **links: str) -> TrustRecord:
        """The record as a low-trust policy acted on it (``action``, counted; None: only linked to another):
        stored again in the background so that its readers see the action and the escalation's link. A record
        still pending (its answer went out past the sync wait) gets them once it is scored: its worker's
        record would otherwise replace the one that says what was done."""
        update = {"action": action or record.action, **links}
        marked = record.model_copy(update=update)
        if action is not None:
            self._metrics.trust_actions.labels(model=record.model or "unknown", action=action).inc()
            self._publisher.alert(marked)
        if record.status != "pending":
            self._put_later(marked)
        else:
            self._in_background(self._mark_when_scored(record.id, update))
        return marked

    async def _mark_when_scored(self, record_id: str, update: dict[str, Any]) -> None:
        """Store the action on a pending record once its job finishes (for up to twice the scorers' timeout;
        one that finished meanwhile is read from the store)."""
        finished = await self._queue.wait(record_id, 2 * self._settings.queue.scorer_timeout_s)
        if finished is None:
            with contextlib.suppress(StoreUnavailable):
                finished = await self._publisher.store.get(record_id, scope=RecordScope.everyone())
        if finished is None or finished.status == "pending":
            self._store_log.warning(
                "unmarked",
                "trust record %s was not scored in time to carry the action taken on its answer",
                record_id,
            )
            return
        await self._put_quietly(finished.model_copy(update=update))

    async def queue_depth(self) -> int:
        """Jobs waiting to be scored: this process's queue, or the Redis stream's backlog."""
        return await self._queue.depth()

    async def lookup(self, record_id: str, scope: RecordScope) -> TrustRecord | None:
        """The record if ``scope`` may read it; a record of another key reads as missing (no oracle for ids).

        A store that cannot answer is a 503 (counted, logged once in a while), never a 404.
        """
        pending = self._unstored.get(record_id) or await self._queue.pending(record_id)
        if pending is not None:
            return scope.shown(pending) if scope.allows(pending) else None
        with self._store_read("get"):
            found = await self._publisher.store.get(record_id, scope=scope)
        return scope.shown(found) if found is not None else None

    async def label(self, record_id: str, feedback: Feedback, scope: RecordScope) -> Labelled | None:
        """Keep a user's label on a record ``scope`` may read, with the label it replaced; None when there is
        none it may read (a 404).

        Raises FeedbackRefused, storing nothing, for a record that takes no label: one still being scored
        (which may not be in the store yet) or one never scored. Each label is counted.
        """
        current = await self.lookup(record_id, scope)
        if current is None:
            return None
        if current.status not in FEEDBACK_STATUSES:
            raise FeedbackRefused(current.status)
        with self._store_read("feedback"):
            labelled = await self._publisher.store.set_feedback(record_id, feedback, scope=scope)
        if labelled is not None:
            self._metrics.observe_feedback(labelled.record)
        return labelled

    async def list_records(self, query: RecordQuery, scope: RecordScope) -> RecordPage:
        """A page of the stored records ``scope`` may read (a pending one is listed once it is stored)."""
        with self._store_read("list"):
            page = await self._publisher.store.list_records(query, scope=scope)
        return page.model_copy(update={"data": [scope.shown(record) for record in page.data]})

    async def summarize(self, scope: RecordScope, *, since: float, until: float, buckets: int) -> TrustSummary:
        with self._store_read("summary"):
            return await self._publisher.store.summary(scope=scope, since=since, until=until, buckets=buckets)

    async def label_counts(self, *, by: frozenset[str] | None = None) -> list[LabelCount]:
        """Every model group's labelled records in the store, and how many say correct (every key's; with ``by``,
        those labelled by one of these names)."""
        with self._store_read("labels"):
            return await self._publisher.store.label_counts(by=by)

    @contextlib.contextmanager
    def _store_read(self, operation: str) -> Iterator[None]:
        """A store that cannot answer is a 503 (counted, logged once in a while), never a 404 or an empty list."""
        try:
            yield
        except StoreUnavailable as exc:
            self._metrics.store_errors.labels(operation=operation).inc()
            self._store_log.warning("store-unavailable", "trust record %s failed: %s", _READS[operation], exc)
            raise ServiceUnavailable(
                "The trust record store is unavailable; retry later", code="trust_store_unavailable"
            ) from None

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` beside the request; ``stop`` waits for it."""
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _publish_later(self, record: TrustRecord) -> TrustRecord:
        self._unstored[record.id] = record
        self._in_background(self._publish_quietly(record))
        return record

    def _put_later(self, record: TrustRecord) -> None:
        """Store a record again (already published, so not counted twice); readers find it meanwhile."""
        self._unstored[record.id] = record
        self._in_background(self._put_quietly(record))

    async def _put_quietly(self, record: TrustRecord) -> None:
        try:
            await self._publisher.store.put(record)
        except Exception as exc:  # the store's own metrics count it; never raised to users
            log.warning("could not store the action on trust record %s: %s", record.id, describe(exc))
        finally:
            self._unstored.pop(record.id, None)

    async def _publish_quietly(self, record: TrustRecord) -> None:
        try:
            await self._publisher.publish(record)
        except Exception as exc:  # e.g. the store is down: counted in metrics already, never raised to users
            log.warning("could not store trust record %s: %s", record.id, describe(exc))
        finally:
            self._unstored.pop(record.id, None)
