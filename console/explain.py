"""A trust record, read for a person: each component's details turned into rows a template can show.

Each known component's details arrive as their typed model (``scoring.types``:
``BCDetails``, ``FCDetails``, ``OVDetails``, ``LPDetails``, ``RAGDetails``);
this module reads their attributes, so a renamed field fails type checking
here rather than showing as a silently empty table cell. A record whose
details do not fit their model (written by another version) shows the
component's summary with empty details, never an error page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from scoring import (
    BCCheck,
    BCDetails,
    ClaimResult,
    ComponentResult,
    EVDetails,
    FCDetails,
    FCEvidence,
    LPDetails,
    OVDetails,
    RAGDetails,
    RAGStatement,
    TrustRecord,
)

__all__ = [
    "AnswerPiece",
    "CheckRow",
    "ClaimView",
    "ConsistencyView",
    "EvidenceRow",
    "FactCheckView",
    "LogprobView",
    "OverallView",
    "RagView",
    "RecordView",
    "explain",
]

D = TypeVar("D", bound=BaseModel)

LETTERS = "ABCDE"
CLAIM_CHECKS = ("bc", "fc", "ev")  # the checks a claim gets of its own


@dataclass(frozen=True)
class Option:
    letter: str
    text: str
    original: bool
    chosen: bool


@dataclass(frozen=True)
class CheckRow:
    number: int
    options: list[Option]
    chosen: str | None
    consistent: bool
    original_probability: float | None
    reply: str


@dataclass(frozen=True)
class Component:
    """What every component shows: its value, label, cost and error."""

    name: str
    value: float | None
    label: str | None
    upstream_calls: int
    duration_s: float
    error: str | None

    @classmethod
    def of(cls, result: ComponentResult) -> Component:
        return cls(result.component, result.value, result.label, result.upstream_calls, result.duration_s, result.error)


@dataclass(frozen=True)
class ConsistencyView:
    summary: Component
    mode: str | None
    binary: float | None
    graded: float | None
    stop_reason: str | None
    checks: list[CheckRow]
    distractor_sources: dict[str, int]
    procedure: str | None = None  # "paper" or "debiased"; None in records written before either existed
    debiased: float | None = None  # agreement beyond the letter prior: 0.5 is no information
    kappa: float | None = None
    observed_agreement: float | None = None
    expected_agreement: float | None = None
    letter_prior: dict[str, float] = field(default_factory=dict)  # the model's own letter habit, by letter
    lowest_claim: int | None = None  # checked claim by claim: the number of the claim whose value this is


@dataclass(frozen=True)
class EvidenceRow:
    id: str
    title: str
    snippet: str | None
    score: float


@dataclass(frozen=True)
class FactCheckView:
    summary: Component
    query: str | None
    evidence: list[EvidenceRow]
    judge: str | None
    verdict: str | None
    probabilities: dict[str, float]
    probabilities_from: str | None
    judge_reply: str | None
    raw_probabilities: dict[str, float] = field(default_factory=dict)  # the choice judge's, before debiasing
    judge_prior: dict[str, float] = field(default_factory=dict)  # its answer to the content-free probe
    lowest_claim: int | None = None  # checked claim by claim: the number of the claim whose verdict this is


@dataclass(frozen=True)
class FittedInput:
    """One input of a fitted Trust_OV: the feature, its value on this answer and its weight."""

    name: str
    value: float
    weight: float | None


@dataclass(frozen=True)
class OverallView:
    summary: Component
    source: str | None
    table3: float | None
    graded: float | None
    consistent: bool | None
    fc_label: str | None
    method: str | None = None  # "paper" (Table 3) or "fitted"
    sources: list[str] = field(default_factory=list)  # the components that fed it
    inputs: list[FittedInput] = field(default_factory=list)
    fitted_missing: list[str] = field(default_factory=list)  # why a fitted combination fell back to Table 3


@dataclass(frozen=True)
class LogprobView:
    """``lp``: the answer's own token probabilities, mean and least likely."""

    summary: Component
    mean_probability: float | None
    min_probability: float | None
    mean_logprob: float | None
    min_logprob: float | None
    tokens: int
    reason: str | None


@dataclass(frozen=True)
class StatementRow:
    text: str
    citations: list[str]
    refusal: bool
    judged: bool
    grounding: str | None
    recall: float | None
    precision: list[int] | None  # (precise citations, judged citations)


@dataclass(frozen=True)
class RagView:
    summary: Component
    kind: str | None
    statements: list[StatementRow]
    metrics: dict[str, float | None]
    skipped: str | None


@dataclass(frozen=True)
class AgreementRow:
    """A clause of the evidence that ``ev`` read, what it says fills the relation, and whether that is the claim's."""

    evidence_id: str
    text: str
    filler: str
    agrees: bool


@dataclass(frozen=True)
class ClaimView:
    """One claim of the answer: its span and verdict, its own checks, and the evidence each read."""

    number: int  # 1, 2, ... in answer order: its anchor on the page
    text: str
    start: int
    end: int
    statement: str | None  # what the checks read, where it is not the text (a pronoun resolved)
    checked: bool
    score: float | None
    label: str | None
    checks: list[Component]
    evidence: list[EvidenceRow]  # Trust_FC's passages for this claim
    judge_verdict: str | None
    agreement_verdict: str | None  # ev's: agree, contradict, abstain
    agreement_reason: str | None
    agreement_entity: str | None
    agreement_statements: list[AgreementRow]
    agreement_evidence: list[EvidenceRow]  # the passages ev read


@dataclass(frozen=True)
class AnswerPiece:
    """A stretch of the answer: inside one claim (highlighted by its verdict) or between claims."""

    text: str
    claim: ClaimView | None = None


@dataclass(frozen=True)
class RecordView:
    record: TrustRecord
    consistency: ConsistencyView | None = None
    factcheck: FactCheckView | None = None
    overall: OverallView | None = None
    logprob: LogprobView | None = None
    rag: RagView | None = None
    others: list[Component] = field(default_factory=list)
    claims: list[ClaimView] = field(default_factory=list)
    answer_pieces: list[AnswerPiece] = field(default_factory=list)  # the answer, its claims marked


def _details(result: ComponentResult, model: type[D]) -> D:
    """The component's details as ``model``: the typed model the record carries, or empty when they do not fit."""
    details = result.details
    if isinstance(details, model):
        return details
    try:
        return model.model_validate(details if isinstance(details, dict) else {})
    except ValidationError:
        return model()


def _check(number: int, check: BCCheck) -> CheckRow:
    return CheckRow(
        number=number,
        options=[
            Option(LETTERS[i], text, LETTERS[i] == check.original, LETTERS[i] == check.chosen)
            for i, text in enumerate(check.options[: len(LETTERS)])
        ],
        chosen=check.chosen,
        consistent=check.consistent,
        original_probability=check.original_probability,
        reply=check.reply,
    )


def _consistency(result: ComponentResult) -> ConsistencyView:
    details = _details(result, BCDetails)
    return ConsistencyView(
        summary=Component.of(result),
        mode=details.mode,
        binary=details.binary,
        graded=details.graded,
        stop_reason=details.stop_reason or details.reason,
        checks=[_check(i + 1, c) for i, c in enumerate(details.checks)],
        distractor_sources=dict(details.distractor_sources_shown),
        procedure=details.procedure,
        debiased=details.debiased,
        kappa=details.kappa,
        observed_agreement=details.observed_agreement,
        expected_agreement=details.expected_agreement,
        letter_prior=dict(sorted((details.letter_prior or {}).items())),
        lowest_claim=None if details.claim is None else details.claim + 1,
    )


def _factcheck(result: ComponentResult) -> FactCheckView:
    details = _details(result, FCDetails)
    return FactCheckView(
        summary=Component.of(result),
        query=details.query or None,
        evidence=_evidence_rows(details.evidence),
        judge=details.judge,
        verdict=details.label or result.label,
        probabilities=dict(details.label_probs),
        probabilities_from=details.probs_from,
        judge_reply=details.judge_reply,
        raw_probabilities=dict(details.raw_label_probs or {}),
        judge_prior=dict(details.judge_prior or {}),
        lowest_claim=None if details.claim is None else details.claim + 1,
    )


def _overall(result: ComponentResult) -> OverallView:
    details = _details(result, OVDetails)
    weights = details.weights or {}
    inputs = [FittedInput(name, value, weights.get(name)) for name, value in (details.features or {}).items()]
    return OverallView(
        summary=Component.of(result),
        source=details.source,
        table3=details.table3,
        graded=details.graded,
        consistent=details.consistent,
        fc_label=details.fc_label,
        method=details.method,
        sources=details.source.split("+") if details.source else [],
        inputs=inputs,
        fitted_missing=list(details.fitted_missing or []),
    )


def _logprob(result: ComponentResult) -> LogprobView:
    details = _details(result, LPDetails)
    return LogprobView(
        summary=Component.of(result),
        mean_probability=details.mean_probability,
        min_probability=details.min_probability,
        mean_logprob=details.mean_logprob,
        min_logprob=details.min_logprob,
        tokens=details.tokens,
        reason=details.reason,
    )


def _statement(statement: RAGStatement) -> StatementRow:
    return StatementRow(
        text=statement.text,
        citations=[str(c) for c in statement.citations],
        refusal=statement.refusal,
        judged=statement.judged,
        grounding=statement.grounding,
        recall=statement.recall,
        precision=statement.precision,
    )


def _rag(result: ComponentResult) -> RagView:
    details = _details(result, RAGDetails)
    metrics = {
        "citation_recall": details.citation_recall,
        "citation_precision": details.citation_precision,
        "citation_f1": details.citation_f1,
        "groundedness": details.groundedness,
        "refusal_grounded": details.refusal_grounded,
        "claim_correctness": details.claim_correctness,
    }
    return RagView(
        summary=Component.of(result),
        kind=details.kind,
        statements=[_statement(s) for s in details.statements],
        metrics=metrics,
        skipped=details.skipped,
    )


def _evidence_rows(passages: list[FCEvidence]) -> list[EvidenceRow]:
    return [EvidenceRow(id=e.id, title=e.title, snippet=e.snippet, score=e.score) for e in passages]


def _claim(number: int, claim: ClaimResult, answer_checks: Mapping[str, ComponentResult]) -> ClaimView:
    """``answer_checks``: the record's components, the checks of a claim that is the answer whole (it has none of
    its own)."""
    own = claim.components or answer_checks
    parts = {name: own[name] for name in CLAIM_CHECKS if name in own}
    fc = _details(parts["fc"], FCDetails) if "fc" in parts else FCDetails()
    ev = _details(parts["ev"], EVDetails) if "ev" in parts else EVDetails()
    return ClaimView(
        number=number,
        text=claim.text,
        start=claim.start,
        end=claim.end,
        statement=claim.statement,
        checked=claim.checked,
        score=claim.score,
        label=claim.label,
        checks=[Component.of(result) for result in parts.values()],
        evidence=_evidence_rows(fc.evidence),
        judge_verdict=fc.label or (parts["fc"].label if "fc" in parts else None),
        agreement_verdict=ev.verdict,
        agreement_reason=ev.reason,
        agreement_entity=ev.entity,
        agreement_statements=[AgreementRow(s.evidence_id, s.text, s.filler, s.agrees) for s in ev.statements],
        agreement_evidence=_evidence_rows(ev.evidence),
    )


def answer_pieces(answer: str, claims: list[ClaimView]) -> list[AnswerPiece]:
    """The answer cut at its claims' spans, each claim's stretch carrying the claim. A span that does not fit the
    answer or overlaps an earlier one (a record of another version) is left unmarked: the claim is still listed."""
    pieces: list[AnswerPiece] = []
    at = 0
    for claim in sorted(claims, key=lambda c: c.start):
        if claim.start < at or claim.end > len(answer) or answer[claim.start : claim.end] != claim.text:
            continue
        if claim.start > at:
            pieces.append(AnswerPiece(answer[at : claim.start]))
        pieces.append(AnswerPiece(claim.text, claim))
        at = claim.end
    if at < len(answer):
        pieces.append(AnswerPiece(answer[at:]))
    return pieces


def explain(record: TrustRecord) -> RecordView:
    """The record with each known component read into its view; unknown components keep their summary."""
    parts = record.components
    known = {"bc", "fc", "ov", "lp", "rag"}
    whole = parts if len(record.claims) == 1 else {}
    claims = [_claim(number, claim, whole) for number, claim in enumerate(record.claims, start=1)]
    return RecordView(
        record=record,
        consistency=_consistency(parts["bc"]) if "bc" in parts else None,
        factcheck=_factcheck(parts["fc"]) if "fc" in parts else None,
        overall=_overall(parts["ov"]) if "ov" in parts else None,
        logprob=_logprob(parts["lp"]) if "lp" in parts else None,
        rag=_rag(parts["rag"]) if "rag" in parts else None,
        others=[Component.of(r) for name, r in parts.items() if name not in known],
        claims=claims,
        answer_pieces=answer_pieces(record.answer or "", claims),
    )
