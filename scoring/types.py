"""The seams between scoring and its neighbours: jobs in, component results and trust records out.

Every exporter and the result API read a ``TrustRecord``; it is the same JSON
shape in memory, in SQLite and in Redis. Scorers see only a ``ScoringJob`` and
an ``Ask`` callable, never HTTP types, so they run the same in the gateway, in
a worker process and in tests.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, Protocol, get_args, runtime_checkable

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictStr,
    model_serializer,
    model_validator,
)
from pydantic.dataclasses import dataclass as pydantic_dataclass

from .answer_kinds import AnswerKind

__all__ = [
    "BASES",
    "FAILURE_REASONS",
    "FEEDBACK_STATUSES",
    "MAX_FEEDBACK_COMMENT",
    "SC_CLEARLY_CONSISTENT",
    "UNKNOWN_LABEL",
    "AgreementVerdict",
    "Applicability",
    "Ask",
    "BCCheck",
    "BCDetails",
    "Basis",
    "BudgetSpent",
    "CallCost",
    "ChecksClaims",
    "Claim",
    "ClaimResult",
    "ComponentCost",
    "ComponentDetails",
    "ComponentResult",
    "EVDetails",
    "EVStatement",
    "FCDetails",
    "FCEvidence",
    "FactLabel",
    "Failure",
    "FailureReason",
    "Feedback",
    "FeedbackRefused",
    "JobPolicy",
    "LPDetails",
    "Labelled",
    "MissingReason",
    "OVDetails",
    "RAGCitationCheck",
    "RAGClaim",
    "RAGDetails",
    "RAGStatement",
    "RagLabels",
    "RecordCost",
    "RecordScope",
    "Reply",
    "RunsAfter",
    "SCDetails",
    "SCSample",
    "SamplingParams",
    "Scorer",
    "ScoringFailure",
    "ScoringJob",
    "ShedReason",
    "SplitsClaims",
    "StoreUnavailable",
    "TellsEarly",
    "TrustAction",
    "TrustRecord",
    "TrustStatus",
    "UnreadableReply",
    "UpstreamFailure",
]

# not_applicable: triage found nothing a trust score could check (a poem, code, "thanks"): no score, no label, no
# upstream scoring call (scoring.triage; which kinds are scored is the operator's choice).
TrustStatus = Literal["pending", "done", "failed", "shed", "skipped", "not_applicable"]
# What a score rests on (x-trust-basis): default, a combination the gateway was given (the shipped prior, or the
# paper's or a calibration file's as configured); learned, this model's own fit from its labels (scoring.learning).
Basis = Literal["default", "learned"]
BASES: tuple[Basis, ...] = get_args(Basis)
# Why a component that should have run has no value (x-trust-missing): it ran out of time, it failed, or the model
# group's scoring budget was spent before it could ask.
MissingReason = Literal["timeout", "error", "budget"]
# The label of a score whose model's labels show it carries no information: neither trusted nor untrusted.
UNKNOWN_LABEL = "unknown"
# What an ``on_low_trust`` policy did with the answer: blocked (the client got the policy's message), escalated
# (the client got the escalation's answer), kept (escalated, but this first answer scored higher and was
# returned), escalation_failed (the escalation timed out or failed: this answer was returned).
TrustAction = Literal["blocked", "escalated", "kept", "escalation_failed"]
# Why a job was shed, not scored: the bounded label of trustgate_scoring_shed_jobs_total. queue_full and
# queue_unavailable: at hand-off; key_share: its key held its share of the queue already; call_budget and
# token_budget: the model group's scoring budget was spent; key_call_budget and key_token_budget: its key's share
# of that budget was; spend_share and spend_per_hour: what scoring spent on the group's answers this past hour
# reached its share of what the answers cost, or its dollars per hour.
ShedReason = Literal[
    "queue_full",
    "queue_unavailable",
    "key_share",
    "call_budget",
    "token_budget",
    "key_call_budget",
    "key_token_budget",
    "spend_share",
    "spend_per_hour",
]
FactLabel = Literal["support", "contradict", "neutral"]  # the fact-check judge's verdict on an answer
# Why a scorer (or a part of one) failed: the bounded label set of trustgate_scorer_errors_total.
# worker: a scoring CPU worker process died mid-job; cpu_time: the job used more than its CPU time (scoring.cpu_pool).
FailureReason = Literal[
    "timeout", "upstream", "parse", "knowledge_graph", "judge", "budget", "worker", "cpu_time", "store", "internal"
]
FAILURE_REASONS: tuple[FailureReason, ...] = get_args(FailureReason)


class ScoringFailure(Exception):
    """A failure whose reason is known where it is raised."""

    reason: ClassVar[FailureReason] = "internal"


class UpstreamFailure(ScoringFailure):
    """An ``Ask`` whose upstream call failed (refused, unreachable, timed out, malformed): ``Ask`` raises this."""

    reason = "upstream"


class BudgetSpent(ScoringFailure):
    """An ``Ask`` not made: the model group's scoring budget for this minute is spent (``Ask`` raises this)."""

    reason = "budget"


class UnreadableReply(ScoringFailure):
    """An upstream reply without the shape a scorer needs (no choices, malformed log-probabilities)."""

    reason = "parse"


class Failure:
    """One failure met while scoring: its reason for the counter, its exception (and traceback) for the log.

    A scorer that absorbs a failure (a knowledge-graph outage, a judge call
    that failed) and still returns a result lists it here; the pipeline adds
    the exception of a scorer that raised or timed out.
    """

    __slots__ = ("error", "reason")

    def __init__(self, reason: FailureReason, error: BaseException) -> None:
        self.reason = reason
        self.error = error

    @classmethod
    def of(cls, error: BaseException) -> Failure:
        """The failure an exception stands for: its own reason, a timeout, or internal (a bug)."""
        if isinstance(error, ScoringFailure):
            return cls(error.reason, error)
        if isinstance(error, StoreUnavailable):  # the fit store cannot answer now: an outage, not a bug
            return cls("store", error)
        return cls("timeout" if isinstance(error, TimeoutError) else "internal", error)

    def __repr__(self) -> str:
        return f"Failure({self.reason!r}, {type(self.error).__name__})"


class CallCost(BaseModel):
    """What one upstream call cost: the tokens its upstream reported, and their price in US dollars.

    ``usd`` is None when the price is not known: the deployment that answered has none (in its config or in
    litellm's cost map), or the upstream reported no usage. An unknown price is never 0, so that no sum can
    pass it off as free.
    """

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    usd: float | None = Field(default=None, ge=0.0)

    def plus(self, other: CallCost) -> CallCost:
        """Both calls' cost: unknown when either's is."""
        return CallCost(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            usd=None if self.usd is None or other.usd is None else self.usd + other.usd,
        )


class ComponentCost(BaseModel):
    """What one component's upstream calls for a job cost, summed: ``usd`` None when any call's price was unknown."""

    calls: int = 0  # the calls that answered (a call that failed or was refused is billed nothing known)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float | None = 0.0

    def plus(self, call: CallCost | None) -> ComponentCost:
        """This cost and one more answered call's (None: a call whose cost nobody told)."""
        known = call or CallCost()
        return ComponentCost(
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + known.prompt_tokens,
            completion_tokens=self.completion_tokens + known.completion_tokens,
            usd=None if self.usd is None or known.usd is None else self.usd + known.usd,
        )


class RecordCost(BaseModel):
    """What an answer and its scoring cost, in US dollars: the user's own call, and the scorers' calls per component.

    A figure is None where a price was not known (never 0); ``scoring_usd`` is 0 for a job that made no call.
    Fields this version does not know are kept (records of other versions).
    """

    model_config = ConfigDict(extra="allow")

    answer_usd: float | None = None
    answer_tokens: int | None = None  # prompt and completion, as the upstream reported them; None: not reported
    scoring_usd: float | None = 0.0
    scoring_calls: int = 0
    by_component: dict[str, ComponentCost] = Field(default_factory=dict)

    @classmethod
    def of(cls, answer: CallCost | None, by_component: Mapping[str, ComponentCost] | None = None) -> RecordCost:
        """The cost of an answer (None: its call's cost unknown) and of the scoring calls made for it."""
        parts = dict(by_component or {})
        spent = [part.usd for part in parts.values()]
        return cls(
            answer_usd=answer.usd if answer is not None else None,
            answer_tokens=answer.prompt_tokens + answer.completion_tokens if answer is not None else None,
            scoring_usd=None if None in spent else sum(usd for usd in spent if usd is not None),
            scoring_calls=sum(part.calls for part in parts.values()),
            by_component=parts,
        )


class Reply(BaseModel):
    """One upstream answer as a scorer needs it."""

    text: str
    # Per generated token, its top alternatives as {token: logprob}; None when the
    # upstream returns no log-probabilities.
    top_logprobs: list[dict[str, float]] | None = None
    # What the call cost, where the Ask knows (the gateway's does); None: not told, and so unknown.
    cost: CallCost | None = None


class Ask(Protocol):
    """Ask the *same* deployment that produced the answer; each call is one upstream call.

    Raises ``UpstreamFailure`` when the upstream cannot answer and
    ``UnreadableReply`` when its reply has no usable shape. ``temperature=None``
    sends none (the upstream's default applies); ``seed`` asks for a reproducible sample.
    """

    def __call__(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int = 16,
        temperature: float | None = 0.0,
        logprobs: bool = False,
        top_logprobs: int | None = None,
        seed: int | None = None,
    ) -> Awaitable[Reply]: ...


class SamplingParams(BaseModel):
    """How the user's request was sampled, so that a scorer can ask it again alike (``sc``)."""

    temperature: float | None = None  # None: the request set none, so the upstream's default applied
    max_tokens: int | None = None
    stop: list[str] | None = None
    # The request to re-ask; None: the job's context and question (the gateway's case). ``trustgate eval``
    # sets it, because its answers come from a prompt around the question.
    messages: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Claim:
    """One claim of an answer: where it stands in the answer, and the statement its checks read.

    ``text`` is ``answer[start:end]``, so a reader can mark it in place. ``statement`` is what the checks
    read: the text itself, or the text with a leading pronoun resolved ("It lies on the Seine" checked as
    "Paris lies on the Seine") or a shared subject carried over, so that a check needs no other sentence.
    """

    start: int
    end: int
    text: str
    statement: str
    weight: float = 0.0  # how much it says (named entities, numbers, dates): which claims max_claims keeps
    selected: bool = True  # False: beyond max_claims, found but not checked


MAX_REFERENCE_CLAIMS = 50  # each costs a judge call per answer; a request with more is refused


@pydantic_dataclass(frozen=True)
class RagLabels:
    """What a RAG request may say about its own right answer: do its documents hold the answer (``answerable``),
    and claims a correct answer makes (``reference_claims``). Both come from the request's extension fields
    (``scoring.rag.request``) and turn refusal groundedness and claim correctness on."""

    answerable: StrictBool | None = None
    reference_claims: tuple[Annotated[StrictStr, Field(pattern=r"\S")], ...] = Field(
        default=(), max_length=MAX_REFERENCE_CLAIMS
    )


class JobPolicy(BaseModel):
    """How the gateway decided to score a job, carried with it (the queue and the Redis stream hold it as JSON).

    ``mode``: whether a request waits for this job's record ("sync") or not,
    which the queues read to put a waiting request's job first. ``rag``: the
    client's labels on a RAG request, None when it gave none. Malformed labels
    are refused where they arrive (a 400 for the client, a dead letter for a
    stream entry), never read as "not given".
    """

    mode: Literal["sync", "async"] = "async"
    rag: RagLabels | None = None


class Applicability(BaseModel):
    """What triage said of an answer (``scoring.triage``): its kind, and why, in a sentence a person reads.

    Carried by a scored answer's job to its record, and by a not-applicable or
    unscored answer's record, so that every record says what kind of answer it
    is about. Fields this version does not know are kept (records of other versions).
    """

    model_config = ConfigDict(frozen=True, extra="allow")

    kind: AnswerKind
    reason: str


class ScoringJob(BaseModel):
    id: str
    model: str
    owner: str | None = None  # the name of the key that asked, carried to the record (never the key)
    question: str
    answer: str
    context: list[dict[str, Any]] = Field(default_factory=list)  # the conversation before the answer
    answer_logprobs: list[float] | None = None
    # Why answer_logprobs is None, when the gateway knows (the record's lp then says so): the provider gives
    # none ("provider_gives_none"), it was asked and returned none ("upstream_returned_none"), or the call
    # could not ask ("not_asked").
    logprobs_absent: str | None = None
    documents: list[dict[str, Any]] | None = None
    policy: JobPolicy = Field(default_factory=JobPolicy)
    created_at: float = Field(default_factory=time.time)
    # Joins the scores to the request they score: the upstream's completion id (``chatcmpl-…``)
    # and the request span's W3C traceparent (None when tracing is off).
    completion_id: str | None = None
    traceparent: str | None = None
    # The request's ``x-request-id`` (the client's, or the gateway's own), and the model group the client asked
    # for when a fallback group answered (``model`` is then the group that answered): copied to the record.
    request_id: str | None = None
    asked_model: str | None = None
    sampling: SamplingParams = Field(default_factory=SamplingParams)
    # What triage said of the answer, copied to the record; None where triage did not run (it is off, or the
    # request carried documents).
    applicability: Applicability | None = None
    # What the user's own call cost, copied to the record; None: a job made by something that does not price.
    answer_cost: CallCost | None = None


class _Details(BaseModel):
    """A component's details, or a part of them: what a user needs to understand its value.

    A scorer sets the fields that apply to what it measured (an unscored
    Trust_BC has no checks, a Trust_OV from one component only its source);
    the record's JSON carries exactly those, so that "not measured" reads as
    absent rather than as a null that looks like a measurement.

    Fields not declared here are kept, not refused: a record written by
    another version of the gateway (a worker upgraded before it, sharing
    Redis) still loads, and reads the same back.
    """

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _only_set_fields(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        kept = self.model_fields_set | set(self.model_extra or ())
        return {name: value for name, value in data.items() if name in kept}


class BCCheck(BaseModel):
    """One multiple-choice check of Trust_BC: the options shown and the letter the model chose."""

    options: list[str]
    original: str  # the letter of the original answer
    chosen: str | None  # the letter the model chose; None when its reply named none
    consistent: bool
    original_probability: float | None  # from the letter's log-probability, when the upstream gives them
    # Each letter's normalised probability where the model wrote it; None without log-probabilities.
    letter_probabilities: dict[str, float] | None = None
    reply: str

    @model_serializer(mode="wrap")
    def _letter_probabilities_only_when_given(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """No null beside original_probability's null, and records written before they were kept read back as
        they were written."""
        data: dict[str, Any] = handler(self)
        if data.get("letter_probabilities") is None:
            data.pop("letter_probabilities", None)
        return data


class BCDetails(_Details):
    """Trust_BC ("bc"): the checks asked and how the distractors were found."""

    mode: Literal["binary", "graded", "adaptive"] | None = None
    binary: float | None = None  # 1.0 when every check was consistent
    graded: float | None = None  # the share of consistent checks
    logprob: float | None = None  # mean probability of the original's letter
    checks_run: int = 0
    stop_reason: str | None = None
    distractor_sources_shown: dict[str, int] = Field(default_factory=dict)
    checks: list[BCCheck] = Field(default_factory=list)
    distractor_sources: dict[str, int] = Field(default_factory=dict)
    distractors_available: int = 0
    fewer_than_3_distractors: bool = False
    distractors_reused: bool = False
    substitution_level: int = 0
    generation_s: float = 0.0
    source_errors: list[str] = Field(default_factory=list)
    reason: str | None = None  # why nothing was scored ("no_distractors")
    procedure: Literal["paper", "debiased"] | None = None
    # Agreement beyond the model's letter prior (consistency/debias.py), whenever a check ran:
    debiased: float | None = None  # 0.5: no information; the value under ``procedure: debiased``
    kappa: float | None = None
    letter_prior: dict[str, float] | None = None
    observed_agreement: float | None = None
    expected_agreement: float | None = None
    letter_probabilities_used: bool | None = None  # False: some check's distribution was one-hot on its letter
    # An answer checked claim by claim: the claims this answer-level Trust_BC sums up, and the index (in the
    # record's claims) of the one whose value it is, the lowest. Each claim's checks are in its own components.
    claims: int | None = None
    claim: int | None = None

    # A clearly consistent answer: Trust_BC ended on its first CLEAR_CHECKS checks, each choosing the answer.
    CLEAR_CHECKS: ClassVar[int] = 3

    def clearly_consistent(self) -> bool:
        """Trust_BC ended on its first 3 checks, every one of them choosing the answer's own option (``sc``
        then asks no samples); checked claim by claim: every claim's checks chose the claim, at least 3 in all."""
        if self.claims is not None:
            return self.binary == 1.0 and self.checks_run >= self.CLEAR_CHECKS
        return self.checks_run == len(self.checks) == self.CLEAR_CHECKS and all(
            check.consistent for check in self.checks
        )


class FCEvidence(BaseModel):
    id: str
    title: str
    score: float  # BM25
    snippet: str | None = None  # the passage's opening, so a reader sees what the judge was shown

    @model_serializer(mode="wrap")
    def _snippet_only_when_kept(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Records written before snippets were kept read back as they were written: no null snippet."""
        data: dict[str, Any] = handler(self)
        if data.get("snippet") is None:
            data.pop("snippet", None)
        return data


class FCDetails(_Details):
    """Trust_FC ("fc"): the evidence retrieved and the judge's verdict on it."""

    query: str = ""
    evidence: list[FCEvidence] = Field(default_factory=list)
    # None: no evidence, so no judge was asked; "llm-choice": the yes/no choice judge (judge_procedure: choice)
    judge: Literal["llm", "llm-choice", "nli"] | None = None
    judge_reply: str | None = None  # the LLM judge's raw reply
    # The choice judge's yes/no probabilities before debiasing, and its answer to the content-free probe.
    raw_label_probs: dict[str, float] | None = None
    judge_prior: dict[str, float] | None = None
    label: FactLabel | None = None
    label_probs: dict[str, float] = Field(default_factory=dict)
    probs_from: Literal["logprobs", "nli", "label"] | None = None  # "label": one-hot on the parsed label
    # As BCDetails: on an answer checked claim by claim, the claims summed up and the one whose verdict this is.
    claims: int | None = None
    claim: int | None = None


AgreementVerdict = Literal["agree", "contradict", "abstain"]  # the evidence agreement check's verdict


class EVStatement(BaseModel):
    """A clause of the evidence that relates the question's subject, and what it says fills the relation."""

    evidence_id: str
    text: str  # the clause, cut at a few hundred characters
    filler: str  # what the clause says fills the relation ("Canberra")
    agrees: bool  # the filler is the answer's entity (under a name the evidence gives it)
    strong: bool  # firm enough to contradict on its own (the whole relation said, the subject named, close by)


class EVDetails(_Details):
    """Evidence agreement ("ev"): the question read as a relation of a subject, the answer's entity, and what the
    evidence retrieved for the question says fills that relation."""

    verdict: AgreementVerdict | None = None
    # agree / contradict, or why it abstained: no_frame (the question relates nothing to a subject), no_entity
    # (the claim names no answer), unstated (a long answer's claim past its first that does not state the asked
    # relation), denied (the claim denies the relation), silent (no statement in the evidence), conflicting
    # (statements for and against, neither side twice the other)
    reason: str | None = None
    claim: str | None = None  # the claim checked, when it is not the whole answer
    subject: str | None = None
    relation: list[str] = Field(default_factory=list)
    entity: str | None = None  # the answer's entity compared with the evidence
    entity_forms: list[str] = Field(default_factory=list)  # the names the evidence gives it (folded)
    queries: list[str] = Field(default_factory=list)  # what was searched: the question, then with the entity
    evidence: list[FCEvidence] = Field(default_factory=list)  # the passages read
    statements: list[EVStatement] = Field(default_factory=list)
    agreeing: int = 0  # passages that name the entity in the relation
    contradicting: int = 0  # passages that firmly name another entity there
    # An answer checked claim by claim: the claims this answer-level ev sums up, and the index (in the record's
    # claims) of the one whose value it is, the lowest that did not abstain; ``claim`` is that claim's statement.
    # Each claim's passages and statements are in its own components.
    claims: int | None = None
    claim_index: int | None = None


class OVDetails(_Details):
    """Trust_OV ("ov"): which components it combines and, with both, the Table 3 cell and graded value."""

    source: str | None = None  # "bc+fc", "bc", "fc", or None when neither scored
    table3: float | None = None
    graded: float | None = None
    consistent: bool | None = None
    bc_graded: float | None = None
    fc_label: FactLabel | None = None
    fc_label_probs: dict[str, float] | None = None
    # scoring.combine: the shipped prior (default), Table 3 (paper), or the fitted logistic; learned: the model's
    # fit from its labels (scoring.learning)
    method: Literal["default", "paper", "fitted", "learned"] | None = None
    fit_id: str | None = None  # the learned fit that gave the value (method "learned")
    default: float | None = None  # the default combination's value, kept beside a learned one
    # False: no score separated right from wrong answers on this model's labels (x-trust-informative: false)
    informative: bool | None = None
    fitted_missing: list[str] | None = None  # the features a fitted combination lacked, so the paper's was used
    features: dict[str, float] | None = None  # the fitted combination's inputs ...
    weights: dict[str, float] | None = None  # ... and its weights
    cross_validated: bool | None = None  # trustgate eval's fitted Trust_OV: each item predicted by a fit on the others
    # An answer checked claim by claim: the claims checked, the index of the lowest-scored one, and the soft-min
    # temperature that folded the claims' scores into this value (scoring/claims/aggregate.py).
    claims: int | None = None
    claim: int | None = None
    softmin_temperature: float | None = None


class LPDetails(_Details):
    """The answer's own token log-probabilities ("lp"): mean and minimum, as log-probabilities and probabilities."""

    reason: str | None = None  # why nothing was scored ("no_logprobs")
    mean_logprob: float | None = None
    min_logprob: float | None = None
    mean_probability: float | None = None  # exp(mean_logprob): the value
    min_probability: float | None = None  # the least likely token's probability
    tokens: int = 0


class SCSample(BaseModel):
    """One re-asked answer of ``sc`` and how far it agrees with the original."""

    text: str  # cut at SAMPLE_CHARS_KEPT characters
    agreement: float
    kind: Literal["short", "long", "empty"]  # which similarity measured it (scoring/sampling/similarity.py)


# SCDetails.reason of an sc that asked no samples because Trust_BC found the answer clearly consistent
# (scoring.sc.skip_when_consistent); the default Trust_OV reads it as full agreement (scoring.combine).
SC_CLEARLY_CONSISTENT = "bc_clearly_consistent"


class SCDetails(_Details):
    """Sampled-answer agreement ("sc"): the request asked again, and how far those answers agree with the original."""

    reason: str | None = None  # why nothing was scored ("no_samples", SC_CLEARLY_CONSISTENT)
    samples_asked: int = 0
    samples_answered: int = 0
    temperature: float | None = None  # None: the upstream's default (the request set none, or sampled greedily)
    samples: list[SCSample] = Field(default_factory=list)


class RAGCitationCheck(_Details):
    """ALCE's two questions on one citation of a supported statement that cites several: is it enough alone,
    and is the statement still supported without it?"""

    id: int  # the document's number, as cited
    alone: FactLabel | None = None  # the judge's verdict on this document alone; None: the judge failed
    without: FactLabel | None = None  # on the others without it, asked only when it was not enough alone
    relevant: bool | None = None  # needed by the statement; None: unknown


class RAGStatement(_Details):
    """One statement (sentence) of a RAG answer: what it cites and, when it was judged, the judge's verdicts."""

    text: str = ""
    citations: list[int] = Field(default_factory=list)  # in-range document numbers, in the order first cited
    out_of_range: list[int] = Field(default_factory=list)  # cited numbers that name no document
    refusal: bool = False  # it declines to answer
    judged: bool = False  # the fields below are set only on a judged statement
    checked: list[int] | None = None  # the citations judged (at most max_citations)
    joint: FactLabel | None = None  # do its citations together entail it
    grounding: FactLabel | None = None  # do the documents entail it at all
    recall: float | None = None
    precision: list[int] | None = None  # (precise citations, judged citations); None: a needed verdict failed
    citation_checks: list[RAGCitationCheck] | None = None  # set when it cites several and is supported


class RAGClaim(_Details):
    """One reference claim of the client's and whether the answer makes it."""

    claim: str
    label: FactLabel | None = None  # the judge's verdict with the answer as premise; None: the judge failed


class RAGDetails(_Details):
    """RAG trust ("rag", Trust-Eval): refusal, citation recall and precision, groundedness, claims."""

    skipped: str | None = None  # why nothing was judged ("no documents", "empty answer")
    documents: int = 0
    judge: Literal["llm", "nli"] | None = None
    kind: Literal["answer", "partial", "refusal"] | None = None
    refusal: bool | None = None  # the whole answer refuses
    partial_refusal: bool = False
    statements: list[RAGStatement] = Field(default_factory=list)
    statements_judged: int = 0
    citations_judged: int = 0
    citation_recall: float | None = None
    citation_precision: float | None = None
    citation_f1: float | None = None
    groundedness: float | None = None
    answerable: bool | None = None
    answerable_from: Literal["label", "claims"] | None = None
    refusal_grounded: float | None = None
    reference_claims: int = 0
    claims: list[RAGClaim] = Field(default_factory=list)
    claim_correctness: float | None = None
    words: int = 0
    judge_errors: list[str] = Field(default_factory=list)
    trust_parts: dict[str, float | None] = Field(default_factory=dict)

    def metrics(self) -> dict[str, float | None]:
        """Trust-Eval's metrics by name, as the exporters publish them (Prometheus, OpenTelemetry)."""
        return {
            "citation_recall": self.citation_recall,
            "citation_precision": self.citation_precision,
            "groundedness": self.groundedness,
            "claim_correctness": self.claim_correctness,
        }


# The typed details of the gateway's components; any other component (the evaluation's "answer") keeps a dict.
DETAILS_BY_COMPONENT: dict[str, type[_Details]] = {
    "bc": BCDetails,
    "fc": FCDetails,
    "ov": OVDetails,
    "rag": RAGDetails,
    "lp": LPDetails,
    "sc": SCDetails,
    "ev": EVDetails,
}
ComponentDetails = dict[str, Any] | BCDetails | FCDetails | OVDetails | RAGDetails | LPDetails | SCDetails | EVDetails


class ComponentResult(BaseModel):
    """One scorer's verdict: a value in [0, 1] (None when it could not score) and why."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    component: str
    value: float | None = Field(default=None, ge=0.0, le=1.0)
    label: str | None = None
    # dict first: a dict stays a dict; _typed_details has already made a known component's details its model.
    details: ComponentDetails = Field(default_factory=dict, union_mode="left_to_right")
    upstream_calls: int = 0
    duration_s: float = 0.0
    error: str | None = None
    # What went wrong while scoring, for the log and the error counter; not part of the record's JSON.
    failures: list[Failure] = Field(default_factory=list, exclude=True)

    @model_validator(mode="before")
    @classmethod
    def _typed_details(cls, data: Any) -> Any:
        """A known component's details as its model, also when read back from a record's JSON."""
        if isinstance(data, dict) and (model := DETAILS_BY_COMPONENT.get(data.get("component", ""))) is not None:
            details = data.get("details", {})
            if isinstance(details, dict):
                return {**data, "details": model.model_validate(details)}
        return data


class ClaimResult(BaseModel):
    """One claim of a checked answer in its record: its span, its verdict, and the checks made of it.

    ``text`` is ``answer[start:end]`` (character offsets). ``statement`` is set where the checks read another
    text (a pronoun resolved). ``components`` holds the checks made for this claim alone (Trust_BC, Trust_FC);
    an answer checked as a whole (one claim) has none of its own: its checks are the record's components, and
    its one claim carries the answer's score and label. A claim found beyond ``max_claims`` is listed with
    ``checked`` false and no score. Fields this version does not know are kept (records of other versions).
    """

    model_config = ConfigDict(extra="allow")

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    statement: str | None = None
    checked: bool = True
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    label: str | None = None
    components: dict[str, ComponentResult] = Field(default_factory=dict)


class Scorer(Protocol):
    """A scoring component: ``score(job, ask)`` for one job, whatever the transport behind ``ask``.

    Subclass it to inherit the defaults of ``judge_model`` and ``handles_documents``.
    """

    name: str  # the component it produces: "bc", "fc", "rag"
    # The model group its ``ask`` reaches; None: the deployment that answered.
    judge_model: str | None = None
    # True: it scores the jobs that carry documents (RAG), instead of the closed-book scorers.
    handles_documents: ClassVar[bool] = False
    # True: it reads the answer's own log-probabilities, so the pipeline skips it for a job that has none.
    needs_answer_logprobs: ClassVar[bool] = False

    async def score(self, job: ScoringJob, ask: Ask) -> ComponentResult: ...


class SplitsClaims(Protocol):
    """Splits an answer into its claims (``scoring.claims``): one whole-answer claim for a short answer."""

    async def split(self, job: ScoringJob) -> list[Claim]: ...


@runtime_checkable
class ChecksClaims(Protocol):
    """A scorer that can check a long answer claim by claim (Trust_BC, Trust_FC; the pipeline finds it by this).

    ``score_claims`` gives one result per claim, in the claims' order, each as ``score`` would give it had the
    claim's statement been the whole answer; it may share upstream calls between claims (one judge call for
    several) and says so in each result's ``upstream_calls``. ``claim_splitter`` is the splitter the claim
    checkers of one process share (``scoring.assembly`` opens it with them), so whatever runs these scorers
    checks claims without wiring of its own; None: answers are checked whole.
    """

    name: str
    claim_splitter: SplitsClaims | None

    async def score_claims(self, job: ScoringJob, claims: Sequence[Claim], ask: Ask) -> list[ComponentResult]: ...


@runtime_checkable
class RunsAfter(Protocol):
    """A scorer that reads another component's result before it runs, and may be spared by it.

    ``sc`` waits for Trust_BC and asks no samples for a clearly consistent answer; ``after`` None: it runs
    beside the others (its switch is off). When the one it waits for ``TellsEarly``, it starts as soon as
    that one tells it will not end clearly consistent.
    """

    @property
    def after(self) -> str | None: ...

    def spared(self, earlier: ComponentResult) -> ComponentResult | None:
        """The component to record instead of running, given ``after``'s result; None: run."""


@runtime_checkable
class TellsEarly(Protocol):
    """A scorer that can tell, before its result, that it will not end clearly consistent (Trust_BC: a check
    chose another option, or it goes on past its first 3), so that a scorer waiting on it starts at once."""

    async def score_telling(
        self, job: ScoringJob, ask: Ask, not_clearly_consistent: Callable[[], None]
    ) -> ComponentResult: ...


class StoreUnavailable(Exception):
    """A record store cannot answer now (Redis down, database unreadable): "try again", never "no such record"."""


# Feedback labels a scored answer: records whose scoring ran (done, or failed part-way) take one; a pending record
# has no verdict yet, and a skipped or shed one was never scored, so a label on it would teach nothing.
FEEDBACK_STATUSES: tuple[TrustStatus, ...] = ("done", "failed")
MAX_FEEDBACK_COMMENT = 1000  # characters: a short note beside the label, not a document


class Feedback(BaseModel):
    """A user's label on a scored answer: was it right? The latest label is the one a record keeps."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    correct: StrictBool  # a JSON boolean only: "false" or 0 would read as a label nobody gave
    # A graded label, if any: a JSON number (not true, not "0.5") in [0, 1].
    score: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False, strict=True)
    comment: str | None = Field(default=None, max_length=MAX_FEEDBACK_COMMENT)
    labelled_at: float  # Unix seconds, set by the gateway when the label arrived
    # The name of the key that gave the label (never the key), set by the gateway: whether a label teaches a fit
    # is decided from it when the fit is made (``scoring.learning.teachers``). None on labels kept before the
    # gateway recorded who gave them: they teach nothing, since nobody can say who gave them.
    by: str | None = None


class FeedbackRefused(Exception):
    """Feedback on a record that takes none (still pending, or skipped or shed): its status says why."""

    def __init__(self, status: TrustStatus) -> None:
        super().__init__(f"a {status} trust record takes no feedback")
        self.status = status


class TrustRecord(BaseModel):
    id: str
    status: TrustStatus
    model: str | None = None
    # The name of the key that asked (never the key): only that key, or an admin, may read the record.
    # None on records written before owners were kept; those are for admins only.
    owner: str | None = None
    components: dict[str, ComponentResult] = Field(default_factory=dict)
    score: float | None = None  # Trust_OV (or the best available component)
    probability: float | None = None  # calibrated, when a calibration file is loaded
    # trusted / uncertain / untrusted; unknown (UNKNOWN_LABEL) while the model's labels show its scores carry no
    # information (``informative`` false): the score is still given, but it is no verdict either way.
    label: str | None = None
    error: str | None = None
    shed_reason: ShedReason | None = None  # set on a "shed" record
    created_at: float = Field(default_factory=time.time)
    finished_at: float | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    # What was scored, so that a reader of the record (the console) can see the score's subject.
    question: str | None = None
    answer: str | None = None
    # The latest label a user sent for the answer (POST /v1/trust/{id}/feedback); stores keep it beside the
    # record, so a record written again (a redelivered job) keeps its label.
    feedback: Feedback | None = None
    # Correlation: the request's ``x-request-id``, and the group asked for when a fallback answered
    # (``model`` is the group that answered, whose answer was scored); None when the asked group answered.
    request_id: str | None = None
    asked_model: str | None = None
    # What the low-trust policy did (None: nothing), and the records of an escalation, each naming the other.
    action: TrustAction | None = None
    escalated_from: str | None = None
    escalated_to: str | None = None
    # The answer's claims, each with its span in ``answer``, its score and label (scoring.claims); empty on
    # records written before claims were kept, and on records nothing was checked for.
    claims: list[ClaimResult] = Field(default_factory=list)
    # What triage said of the answer: set on a scored record (its kind) as on a not_applicable or unscored one; None
    # where triage did not run (off, a request with documents) and on records written before it did.
    applicability: Applicability | None = None
    # What the score rests on, set on every scored record: ``basis`` (the combination given, or this model's fit),
    # ``informative`` (do this model's labels show its scores separate right from wrong answers? None: too few
    # labels to say), and ``missing``: each component that should have run and has no value, with why.
    basis: Basis | None = None
    informative: bool | None = None
    missing: dict[str, MissingReason] = Field(default_factory=dict)
    # What the answer and its scoring cost; None on records written before costs were kept.
    cost: RecordCost | None = None

    @classmethod
    def for_job(cls, job: ScoringJob, status: TrustStatus, **fields: Any) -> TrustRecord:
        """A record of ``job``: its id, model, owner, correlation, creation time and the answer's cost carried
        over, so none is lost (``cost`` given: the scoring's too)."""
        fields.setdefault("cost", RecordCost.of(job.answer_cost))
        return cls(
            id=job.id,
            status=status,
            model=job.model,
            owner=job.owner,
            created_at=job.created_at,
            request_id=job.request_id,
            asked_model=job.asked_model,
            applicability=job.applicability,
            **fields,
        )

    @property
    def upstream_calls(self) -> int:
        return sum(c.upstream_calls for c in self.components.values())


@dataclass(frozen=True)
class Labelled:
    """A record as a store labelled it, and the label it carried before (None: its first label), so that a
    relabel is told from a new label: only a record's first label from a teacher counts toward a refit."""

    record: TrustRecord
    previous: Feedback | None


@dataclass(frozen=True)
class RecordScope:
    """Whose trust records a reader may see: one key's (by name), or everyone's (master and admin keys).

    Every record read — by id today, a listing later — goes through a scope, so
    a store can filter by owner itself (SQLite: ``WHERE owner = ?``) rather than
    leave the check to each endpoint.
    """

    owner: str | None  # None: every record
    # Set for an admin key other than the master key: it reads every record, but the original of a blocked
    # answer only of its own (a block keeps it for the key that asked and the master key).
    reader: str | None = None

    @classmethod
    def everyone(cls, reader: str | None = None) -> RecordScope:
        return cls(owner=None, reader=reader)

    @classmethod
    def owned_by(cls, name: str) -> RecordScope:
        return cls(owner=name)

    def allows(self, record: TrustRecord) -> bool:
        return self.owner is None or record.owner == self.owner

    def shown(self, record: TrustRecord) -> TrustRecord:
        """The record as this reader sees it: another key's blocked answer without its text (the answer, and
        the components, whose details quote it); its score, label, action and links stay."""
        if self.reader is None or record.action != "blocked" or record.owner == self.reader:
            return record
        return record.model_copy(update={"answer": None, "components": {}})
