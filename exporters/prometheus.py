"""Every Prometheus metric the gateway and its scoring workers export, built on a registry passed in.

Labels are bounded: model group, HTTP status, endpoint, component, trust label,
scoring purpose, and the *name* of the key that asked (from the config, so an
operator can attribute traffic and spend; ``master`` for the master key,
``unknown`` before a key was recognised) — never a key itself or a user id.
LLM latencies routinely exceed the default buckets' 10 s ceiling, hence the
explicit buckets. The standard ``process_*`` series (CPU, memory, open files)
come with every registry built here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import TypeVar, get_args

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector
from prometheus_client.metrics import MetricWrapperBase

from scoring import CallCost, ComponentResult, RAGDetails, TrustRecord
from scoring.types import FAILURE_REASONS, ShedReason, TrustAction, TrustStatus

from .metric_labels import ConfiguredLabels
from .record_query import TrustLabel

__all__ = [
    "LATENCY_BUCKETS",
    "SCORE_BUCKETS",
    "WORKER_OUTCOMES",
    "GatewayMetrics",
    "LabelledChildren",
    "WorkerMetrics",
    "build_metrics",
    "build_worker_metrics",
]

NAMESPACE = "trustgate"
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)
SCORE_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
# The closed label sets the series below start at zero with (``GatewayMetrics.start_at_zero``).
MODES = ("unary", "stream")
TOKEN_KINDS = ("prompt", "completion")
TRY_OUTCOMES = ("success", "failure")
ALERT_OUTCOMES = ("sent", "failed", "dropped")
# A scoring job's outcomes as records count them: "pending" is never published as a record's end.
JOB_STATUSES = tuple(status for status in get_args(TrustStatus) if status != "pending")
WORKER_OUTCOMES = ("done", "duplicate", "retry", "dead_letter")  # scoring.redis_queue's JobOutcome
# Why a scorer's call was not made: the upstream client's (rate_limited, retry_budget) and the scoring budget's.
SCORING_CALL_SHED_REASONS = (
    "rate_limited",
    "retry_budget",
    "call_budget",
    "token_budget",
    "key_call_budget",
    "key_token_budget",
)
RAG_METRICS = tuple(RAGDetails().metrics())


M = TypeVar("M", bound=MetricWrapperBase)


class LabelledChildren:
    """Each metric's child for given label values, looked up once and then kept.

    ``labels()`` checks its arguments, converts each value and takes the
    metric's lock on every call; the few series every request updates went
    through it seven times per request. Label values are bounded (see above),
    so what is kept is bounded too. Values are given in the metric's label
    order, as ``labels(*values)`` takes them.
    """

    def __init__(self) -> None:
        self._children: dict[tuple[MetricWrapperBase, tuple[str, ...]], MetricWrapperBase] = {}

    def __call__(self, metric: M, *values: str) -> M:
        child = self._children.get((metric, values))
        if child is None:
            child = self._children[(metric, values)] = metric.labels(*values)
        return child  # type: ignore[return-value]  # a metric's child is of its own class


@dataclass(frozen=True)
class GatewayMetrics:
    registry: CollectorRegistry
    requests: Counter
    request_duration: Histogram
    time_to_first_token: Histogram
    trust_score: Histogram
    low_trust_responses: Counter
    trust_labels: Counter
    scoring_jobs: Counter
    scoring_duration: Histogram
    scoring_queue_depth: Gauge
    scoring_async_overtaken: Counter
    scoring_shed_jobs: Counter
    scorer_errors: Counter
    upstream_calls: Counter
    dead_letters: Counter
    queue_errors: Counter
    rag_metric: Histogram
    rag_refusals: Counter
    client_overrides_refused: Counter
    fallbacks_skipped: Counter
    fallbacks: Counter
    readiness_probes: Counter
    store_shed_writes: Counter
    store_errors: Counter
    accept_errors: Counter
    sync_timeouts: Counter
    scoring_calls_shed: Counter
    scoring_upstream_tokens: Counter
    user_upstream_tokens: Counter
    feedback: Counter
    feedback_refused: Counter
    upstream_tries: Counter
    upstream_try_duration: Histogram
    trust_actions: Counter
    alert_pushes: Counter
    scoring_applicability: Counter
    spend: Counter
    unpriced_answers: Counter
    child: LabelledChildren = field(default_factory=LabelledChildren)  # the series each request updates

    def observe_request(
        self, *, model: str, status: int, stream: bool, seconds: float, endpoint: str, key: str
    ) -> None:
        mode = "stream" if stream else "unary"
        self.child(self.requests, model, str(status), mode, endpoint, key).inc()
        self.child(self.request_duration, model, mode, endpoint).observe(seconds)

    def observe_first_token(self, *, model: str, endpoint: str, seconds: float) -> None:
        """A stream's first chunk went out ``seconds`` after its request came in."""
        self.child(self.time_to_first_token, model, endpoint).observe(seconds)

    def count_user_call(self, model: str) -> None:
        """One call made upstream for a user's answer (not for scoring)."""
        self.child(self.upstream_calls, model, "user").inc()

    def observe_applicability(self, model: str, kind: str) -> None:
        """One answer triaged: its kind (scored or not), so that operators see their traffic's mix."""
        self.child(self.scoring_applicability, model, kind).inc()

    def observe_record(self, record: TrustRecord) -> None:
        """A finished, shed, skipped or not-applicable answer: its outcome, scores, label and errors.

        A not-applicable answer is counted by outcome only: its free ``lp`` is
        no trust score, and must not move the score histograms.
        """
        model = record.model or "unknown"
        self.scoring_jobs.labels(model=model, status=record.status).inc()
        if record.status == "shed":
            self.scoring_shed_jobs.labels(model=model, reason=record.shed_reason or "unknown").inc()
        if record.status == "not_applicable":
            return
        for component in record.components.values():
            if component.value is not None:
                self.trust_score.labels(model=model, component=component.component).observe(component.value)
            self._observe_failures(model, component)
        if record.label is not None:
            self.trust_labels.labels(model=model, label=record.label).inc()
            if record.label == "untrusted":
                self.low_trust_responses.labels(model=model).inc()
        rag = record.components.get("rag")
        if rag is not None and isinstance(rag.details, RAGDetails):
            self._observe_rag(model, rag.details)
        if "scoring_s" in record.timings:
            self.scoring_duration.labels(model=model).observe(record.timings["scoring_s"])
        if record.cost is not None:
            for name, part in record.cost.by_component.items():
                if part.usd:
                    self.spend.labels(model=model, key=record.owner or "unknown", purpose=name).inc(part.usd)

    def observe_answer_cost(self, *, model: str, key: str, cost: CallCost) -> None:
        """What a user's answer cost: its dollars, or, where they are unknown, one more unpriced answer."""
        if cost.usd is None:
            self.child(self.unpriced_answers, model).inc()
        elif cost.usd:
            self.child(self.spend, model, key, "answer").inc(cost.usd)

    def observe_scoring_usage(self, *, model: str, component: str, prompt_tokens: int, completion_tokens: int) -> None:
        """The tokens one scoring call used (as its upstream reported them): scoring's share of the bill."""
        self.scoring_upstream_tokens.labels(model=model, component=component, kind="prompt").inc(prompt_tokens)
        self.scoring_upstream_tokens.labels(model=model, component=component, kind="completion").inc(completion_tokens)

    def observe_user_usage(self, *, model: str, key: str, prompt_tokens: int, completion_tokens: int) -> None:
        """The tokens one user call used (as its upstream reported them): the bill scoring's share sits beside,
        by the key that ran it up."""
        self.child(self.user_upstream_tokens, model, "prompt", key).inc(prompt_tokens)
        self.child(self.user_upstream_tokens, model, "completion", key).inc(completion_tokens)

    def observe_try(self, model: str, deployment: str, succeeded: bool, seconds: float) -> None:
        """One try at one deployment of a model group (a retry or a fallback is a try of its own)."""
        self.child(self.upstream_tries, model, deployment, "success" if succeeded else "failure").inc()
        self.child(self.upstream_try_duration, model, deployment).observe(seconds)

    def observe_feedback(self, record: TrustRecord) -> None:
        """A label a user sent for a record's answer (the record as labelled)."""
        if record.feedback is not None:
            self.feedback.labels(model=record.model or "unknown", correct=str(record.feedback.correct).lower()).inc()

    def observe_sync_timeout(self, model: str) -> None:
        """A sync-mode response that went out ``pending`` because scoring outlasted ``sync_timeout_s``."""
        self.sync_timeouts.labels(model=model).inc()

    def start_at_zero(self, labels: ConfiguredLabels) -> None:
        """Create, at zero, every series whose label values the config names (``metric_labels`` says why).

        An HTTP status other than 200 and a model the config does not name
        (``unknown``) still appear with their first event: they are not known
        before it. So do the series labelled by a store or queue operation or
        by a client's refused override, which no panel or alert reads. Per-key
        series start for the groups each key may use.
        """
        for model in labels.models:
            self._start_model(model, labels)
        for key, model in labels.callers:
            for mode, endpoint in self._served(labels):
                self.requests.labels(model, "200", mode, endpoint, key)
            for kind in TOKEN_KINDS:
                self.user_upstream_tokens.labels(model, kind, key)
            for purpose in ("answer", *labels.scorers):  # a share of spend is a number before the first answer
                self.spend.labels(model, key, purpose)
        for model, deployment in labels.deployments:
            self.upstream_try_duration.labels(model, deployment)
            for outcome in TRY_OUTCOMES:
                self.upstream_tries.labels(model, deployment, outcome)
        for asked, answered in labels.fallbacks:
            self.fallbacks.labels(asked, answered)
            self.fallbacks_skipped.labels(asked, answered)
        for outcome in ALERT_OUTCOMES:
            self.alert_pushes.labels(outcome)

    @staticmethod
    def _served(labels: ConfiguredLabels) -> list[tuple[str, str]]:
        """(mode, endpoint) of every kind of request the gateway answers."""
        return [("unary", endpoint) for endpoint in labels.endpoints] + [
            ("stream", endpoint) for endpoint in labels.streamed_endpoints
        ]

    def _start_model(self, model: str, labels: ConfiguredLabels) -> None:
        for mode, endpoint in self._served(labels):
            self.request_duration.labels(model, mode, endpoint)
        for endpoint in labels.streamed_endpoints:
            self.time_to_first_token.labels(model, endpoint)
        for metric in (
            self.low_trust_responses,
            self.scoring_duration,
            self.dead_letters,
            self.sync_timeouts,
            self.unpriced_answers,
        ):
            metric.labels(model)
        for label in get_args(TrustLabel):
            self.trust_labels.labels(model, label)
        for status in JOB_STATUSES:
            self.scoring_jobs.labels(model, status)
        for reason in get_args(ShedReason):
            self.scoring_shed_jobs.labels(model, reason)
        for reason in SCORING_CALL_SHED_REASONS:
            self.scoring_calls_shed.labels(model, reason)
        for action in get_args(TrustAction):
            self.trust_actions.labels(model, action)
        for kind in labels.kinds:
            self.scoring_applicability.labels(model, kind)
        for correct in ("true", "false"):
            self.feedback.labels(model, correct)
        for component in labels.components:
            self.trust_score.labels(model, component)
        for component, reason in product(labels.components, FAILURE_REASONS):
            self.scorer_errors.labels(model, component, reason)
        for purpose in ("user", *labels.scorers):
            self.upstream_calls.labels(model, purpose)
        for scorer, kind in product(labels.scorers, TOKEN_KINDS):
            self.scoring_upstream_tokens.labels(model, scorer, kind)
        if "rag" in labels.scorers:
            self.rag_refusals.labels(model)
            for name in RAG_METRICS:
                self.rag_metric.labels(model, name)

    def _observe_failures(self, model: str, component: ComponentResult) -> None:
        """Each failure by its reason; an error that names none (a record built elsewhere) counts as internal."""
        reasons = [f.reason for f in component.failures]
        if component.error is not None and not reasons:
            reasons = ["internal"]
        for reason in reasons:
            self.scorer_errors.labels(model=model, component=component.component, reason=reason).inc()

    def _observe_rag(self, model: str, details: RAGDetails) -> None:
        for name, value in details.metrics().items():
            if value is not None:
                self.rag_metric.labels(model=model, metric=name).observe(value)
        if details.refusal:
            self.rag_refusals.labels(model=model).inc()


def build_metrics(registry: CollectorRegistry, labels: ConfiguredLabels | None = None) -> GatewayMetrics:
    """The gateway's series on ``registry``, those ``labels`` name at zero.

    A local scoring worker passes none: what it counts reaches the gateway's
    series as gains (``metric_deltas``), and a zero gains nothing.
    """
    ProcessCollector(registry=registry)

    def counter(name: str, doc: str, labels: list[str]) -> Counter:
        return Counter(name, doc, labels, namespace=NAMESPACE, registry=registry)

    def histogram(name: str, doc: str, labels: list[str], buckets: tuple[float, ...], unit: str = "") -> Histogram:
        return Histogram(name, doc, labels, namespace=NAMESPACE, unit=unit, buckets=buckets, registry=registry)

    metrics = GatewayMetrics(
        registry=registry,
        requests=counter(
            "requests",
            "Requests to the OpenAI endpoints (chat, completions, responses, "
            "embeddings), by final HTTP status, stream or unary, and the name of the key that asked.",
            ["model", "status", "mode", "endpoint", "key"],
        ),
        request_duration=histogram(
            "request_duration",
            "Time from an OpenAI-endpoint request received to the last byte of its answer sent.",
            ["model", "mode", "endpoint"],
            LATENCY_BUCKETS,
            unit="seconds",
        ),
        time_to_first_token=histogram(
            "time_to_first_token",
            "Streamed answers: time from the request received to the first chunk of the answer sent.",
            ["model", "endpoint"],
            LATENCY_BUCKETS,
            unit="seconds",
        ),
        trust_score=histogram(
            "trust_score",
            "Trust scores of scored responses, per component (bc, fc, lp, sc, ev, ov).",
            ["model", "component"],
            SCORE_BUCKETS,
        ),
        low_trust_responses=counter("low_trust_responses", "Scored responses labelled untrusted.", ["model"]),
        trust_labels=counter(
            "trust_labels",
            "Scored responses by trust label (trusted, uncertain, untrusted; unknown: the model's labels show its "
            "scores carry no information, so no verdict either way).",
            ["model", "label"],
        ),
        scoring_jobs=counter(
            "scoring_jobs",
            "Answers handed to scoring, by outcome (done, failed, shed, skipped, not_applicable).",
            ["model", "status"],
        ),
        scoring_duration=histogram(
            "scoring_duration",
            "Time spent scoring one answer, all its components.",
            ["model"],
            LATENCY_BUCKETS,
            unit="seconds",
        ),
        scoring_queue_depth=Gauge(
            "scoring_queue_depth", "Scoring jobs waiting in the queue.", namespace=NAMESPACE, registry=registry
        ),
        scoring_async_overtaken=counter(
            "scoring_async_overtaken",
            "Async scoring jobs passed by a sync one: each "
            "sync job taken for scoring adds the async jobs then waiting in the "
            "queue (they are delayed, never dropped).",
            [],
        ),
        scoring_shed_jobs=counter(
            "scoring_shed_jobs",
            "Scoring jobs not scored, by reason: the queue was full "
            "or unreachable (queue_full, queue_unavailable), or the model group's scoring "
            "budget was spent (call_budget, token_budget).",
            ["model", "reason"],
        ),
        scorer_errors=counter(
            "scorer_errors",
            "Scoring failures, per component and reason (timeout, upstream, parse, knowledge_graph, judge, internal).",
            ["model", "component", "reason"],
        ),
        upstream_calls=counter(
            "upstream_calls",
            "Upstream calls the gateway made, by purpose: a user's request (user) or a scorer's re-ask (bc, fc, rag).",
            ["model", "purpose"],
        ),
        dead_letters=counter(
            "scoring_dead_letters", "Scoring jobs moved to the dead-letter stream after failing repeatedly.", ["model"]
        ),
        queue_errors=counter(
            "scoring_queue_errors",
            "Errors of the Redis scoring queue, by operation (submit: "
            "the job was not queued; wait: a sync request answered pending; consume: a worker "
            "retries).",
            ["operation"],
        ),
        rag_metric=histogram(
            "rag_metric",
            "RAG answers' Trust-Eval metrics (citation recall and precision, groundedness, claim correctness).",
            ["model", "metric"],
            SCORE_BUCKETS,
        ),
        rag_refusals=counter("rag_refusals", "RAG answers that refused to answer.", ["model"]),
        client_overrides_refused=counter(
            "client_overrides_refused",
            "Client requests to change scoring that the operator's policy does not "
            "allow (ignored: the configured setting applied).",
            ["setting", "requested"],
        ),
        fallbacks_skipped=counter(
            "fallbacks_skipped",
            "Fallback model groups skipped because the caller's key may not use them.",
            ["model", "fallback"],
        ),
        fallbacks=counter(
            "fallbacks",
            "User requests answered by a fallback model group instead of the group "
            "asked for (the request's other metrics are booked to the group that answered).",
            ["asked", "answered"],
        ),
        readiness_probes=counter(
            "readiness_probes", "Upstream probes made for /health/readiness (cached between probes).", []
        ),
        store_shed_writes=counter(
            "store_shed_writes", "Trust records not stored because the store's write queue was full.", []
        ),
        store_errors=counter(
            "store_errors",
            "Record store operations that failed (store unreachable or unreadable), by operation.",
            ["operation"],
        ),
        accept_errors=counter(
            "accept_errors", "Failed accept() calls of the server socket (out of file descriptors or buffers).", []
        ),
        sync_timeouts=counter(
            "scoring_sync_timeouts",
            "Sync-mode responses sent with a pending trust record because scoring took longer than sync_timeout_s.",
            ["model"],
        ),
        scoring_calls_shed=counter(
            "scoring_calls_shed",
            "Scorers' upstream calls or retries not made: the group "
            "was rate limited (rate_limited), scoring's retry budget was spent "
            "(retry_budget), or the group's scoring budget was (call_budget, "
            "token_budget).",
            ["model", "reason"],
        ),
        scoring_upstream_tokens=counter(
            "scoring_upstream_tokens",
            "Tokens the scorers' upstream calls used, as "
            "the upstream reported them, by component and kind (prompt, "
            "completion).",
            ["model", "component", "kind"],
        ),
        user_upstream_tokens=counter(
            "user_upstream_tokens",
            "Tokens the users' own upstream calls used, as the "
            "upstream reported them (a stream only when it reported usage), by kind "
            "(prompt, completion) and the name of the key that asked.",
            ["model", "kind", "key"],
        ),
        upstream_tries=counter(
            "upstream_tries",
            "Tries at an upstream deployment, users' and scorers' (each "
            "retry and each fallback group is a try of its own), by deployment (the model "
            "group and the deployment's place among the group's entries in model_list, "
            "`gpt-4o:0`) and outcome "
            "(success, failure).",
            ["model", "deployment", "outcome"],
        ),
        upstream_try_duration=histogram(
            "upstream_try_duration",
            "Time one try at an upstream deployment took (a stream: until it opened).",
            ["model", "deployment"],
            LATENCY_BUCKETS,
            unit="seconds",
        ),
        feedback=counter(
            "feedback",
            "Labels users sent for scored answers (POST /v1/trust/{id}/feedback), by "
            "whether the answer was correct (true, false).",
            ["model", "correct"],
        ),
        feedback_refused=counter(
            "feedback_refused",
            "Labels refused because their key sent more than trustgate.scoring.feedback.labels_per_minute "
            "(answered 429), by key name.",
            ["key"],
        ),
        trust_actions=counter(
            "trust_actions",
            "Answers a low-trust policy acted on, by action (blocked, escalated, kept, escalation_failed).",
            ["model", "action"],
        ),
        scoring_applicability=counter(
            "scoring_applicability",
            "Answers triaged before scoring, by kind (factual, creative, code, conversation, opinion, rewrite, "
            "summary, math, refusal; tool_call and empty for answers without content): every triaged answer, "
            "whether its kind is scored or not_applicable.",
            ["model", "kind"],
        ),
        alert_pushes=counter(
            "alert_pushes",
            "Per-answer alerts pushed to Alertmanager, by outcome (sent; failed "
            "after its retries; dropped: too many pushes in flight).",
            ["outcome"],
        ),
        spend=Counter(
            "spend",
            "US dollars spent upstream, from each deployment's price and each call's usage, by the name of the key "
            "that asked and purpose: the users' answers (answer) or the scoring of them, by component (bc, fc, sc, "
            "rag). Answers and calls of unknown price are not in it (trustgate_unpriced_answers_total).",
            ["model", "key", "purpose"],
            namespace=NAMESPACE,
            unit="usd",
            registry=registry,
        ),
        unpriced_answers=counter(
            "unpriced_answers",
            "Users' answers whose cost is unknown: their deployment has no price (in its config or litellm's cost "
            "map), or the upstream reported no usage (a stream that does not report it).",
            ["model"],
        ),
    )
    if labels is not None:
        metrics.start_at_zero(labels)
    return metrics


@dataclass(frozen=True)
class WorkerMetrics:
    """A scoring worker's own work, beside the records it publishes (which ``GatewayMetrics`` counts).

    Implements ``scoring.redis_queue.WorkerEvents``; dead letters go to the
    gateway-wide ``trustgate_scoring_dead_letters_total`` so one series counts them, and
    async jobs passed by sync ones to ``trustgate_scoring_async_overtaken_total``.
    """

    jobs: Counter
    in_flight: Gauge
    reclaimed: Counter
    job_duration: Histogram
    dead_letters: Counter
    overtaken: Counter

    def job_started(self) -> None:
        self.in_flight.inc()

    def job_finished(self, outcome: str, seconds: float) -> None:
        self.in_flight.dec()
        self.jobs.labels(outcome=outcome).inc()
        self.job_duration.labels(outcome=outcome).observe(seconds)

    def jobs_reclaimed(self, count: int) -> None:
        self.reclaimed.inc(count)

    def dead_lettered(self, model: str) -> None:
        self.dead_letters.labels(model=model).inc()

    def async_overtaken(self, count: int) -> None:
        self.overtaken.inc(count)


def build_worker_metrics(registry: CollectorRegistry, gateway: GatewayMetrics) -> WorkerMetrics:
    """The worker's series, on the registry that already holds ``gateway``'s, each outcome's at zero."""
    metrics = WorkerMetrics(
        jobs=Counter(
            "worker_jobs",
            "Job deliveries a worker finished, by outcome (done, duplicate: already "
            "scored, retry: failed and left for another attempt, dead_letter).",
            ["outcome"],
            namespace=NAMESPACE,
            registry=registry,
        ),
        in_flight=Gauge(
            "worker_jobs_in_flight", "Jobs this worker is scoring now.", namespace=NAMESPACE, registry=registry
        ),
        reclaimed=Counter(
            "worker_jobs_reclaimed",
            "Jobs taken over from a worker that held them too long (died or stalled).",
            namespace=NAMESPACE,
            registry=registry,
        ),
        job_duration=Histogram(
            "worker_job_duration",
            "Time one job delivery took, from read to acknowledgement.",
            ["outcome"],
            namespace=NAMESPACE,
            unit="seconds",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        ),
        dead_letters=gateway.dead_letters,
        overtaken=gateway.scoring_async_overtaken,
    )
    for outcome in WORKER_OUTCOMES:
        metrics.jobs.labels(outcome)
        metrics.job_duration.labels(outcome)
    return metrics
