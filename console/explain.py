"""A trust record, read for a person: each component's details turned into rows a template can show.

Scorers write their details as JSON objects; this module is the one place in
the console that knows their keys, so a template reads attributes and a
renamed key shows up here, not as a silently empty table cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from scoring.types import ComponentResult, TrustRecord

__all__ = ["CheckRow", "ConsistencyView", "EvidenceRow", "FactCheckView", "OverallView", "RagView", "RecordView",
           "explain"]

LETTERS = "ABCDE"


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
        return cls(result.component, result.value, result.label, result.upstream_calls, result.duration_s,
                   result.error)


@dataclass(frozen=True)
class ConsistencyView:
    summary: Component
    mode: str | None
    binary: float | None
    graded: float | None
    stop_reason: str | None
    checks: list[CheckRow]
    distractor_sources: dict[str, int]


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


@dataclass(frozen=True)
class OverallView:
    summary: Component
    source: str | None
    table3: float | None
    graded: float | None
    consistent: bool | None
    fc_label: str | None


@dataclass(frozen=True)
class StatementRow:
    text: str
    citations: list[str]
    refusal: bool
    judged: bool
    grounding: str | None
    recall: float | None
    precision: list[Any] | None


@dataclass(frozen=True)
class RagView:
    summary: Component
    kind: str | None
    statements: list[StatementRow]
    metrics: dict[str, float | None]
    skipped: str | None


@dataclass(frozen=True)
class RecordView:
    record: TrustRecord
    consistency: ConsistencyView | None = None
    factcheck: FactCheckView | None = None
    overall: OverallView | None = None
    rag: RagView | None = None
    others: list[Component] = field(default_factory=list)


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fields(result: ComponentResult) -> Mapping[str, Any]:
    """A component's details as JSON fields (typed models for known components, a dict for others):
    the views read the record as the API serves it, so an unknown component still renders."""
    details = result.details
    return details.model_dump(mode="json") if isinstance(details, BaseModel) else details


def _check(number: int, raw: Mapping[str, Any]) -> CheckRow:
    options = [str(o) for o in raw.get("options", [])]
    original, chosen = raw.get("original"), raw.get("chosen")
    return CheckRow(number=number,
                    options=[Option(LETTERS[i], text, LETTERS[i] == original, LETTERS[i] == chosen)
                             for i, text in enumerate(options[:len(LETTERS)])],
                    chosen=chosen, consistent=bool(raw.get("consistent")),
                    original_probability=_float(raw.get("original_probability")), reply=str(raw.get("reply", "")))


def _consistency(result: ComponentResult) -> ConsistencyView:
    details = _fields(result)
    return ConsistencyView(summary=Component.of(result), mode=details.get("mode"), binary=_float(details.get("binary")),
                           graded=_float(details.get("graded")),
                           stop_reason=details.get("stop_reason") or details.get("reason"),
                           checks=[_check(i + 1, c) for i, c in enumerate(details.get("checks", []))],
                           distractor_sources=dict(details.get("distractor_sources_shown") or {}))


def _factcheck(result: ComponentResult) -> FactCheckView:
    details = _fields(result)
    evidence = [EvidenceRow(id=str(e.get("id", "")), title=str(e.get("title", "")), snippet=e.get("snippet"),
                            score=float(e.get("score", 0.0))) for e in details.get("evidence", [])]
    return FactCheckView(summary=Component.of(result), query=details.get("query"), evidence=evidence,
                         judge=details.get("judge"), verdict=details.get("label") or result.label,
                         probabilities={str(k): float(v) for k, v in (details.get("label_probs") or {}).items()},
                         probabilities_from=details.get("probs_from"), judge_reply=details.get("judge_reply"))


def _overall(result: ComponentResult) -> OverallView:
    details = _fields(result)
    consistent = details.get("consistent")
    return OverallView(summary=Component.of(result), source=details.get("source"),
                       table3=_float(details.get("table3")), graded=_float(details.get("graded")),
                       consistent=consistent if isinstance(consistent, bool) else None,
                       fc_label=details.get("fc_label"))


def _rag(result: ComponentResult) -> RagView:
    details = _fields(result)
    statements = [StatementRow(text=str(s.get("text", "")), citations=[str(c) for c in s.get("citations", [])],
                               refusal=bool(s.get("refusal")), judged=bool(s.get("judged")),
                               grounding=s.get("grounding"), recall=_float(s.get("recall")),
                               precision=s.get("precision")) for s in details.get("statements", [])]
    metrics = {name: _float(details.get(name)) for name in
               ("citation_recall", "citation_precision", "citation_f1", "groundedness", "refusal_grounded",
                "claim_correctness")}
    return RagView(summary=Component.of(result), kind=details.get("kind"), statements=statements,
                   metrics=metrics, skipped=details.get("skipped"))


def explain(record: TrustRecord) -> RecordView:
    """The record with each known component read into its view; unknown components keep their summary."""
    parts = record.components
    known = {"bc", "fc", "ov", "rag"}
    return RecordView(
        record=record,
        consistency=_consistency(parts["bc"]) if "bc" in parts else None,
        factcheck=_factcheck(parts["fc"]) if "fc" in parts else None,
        overall=_overall(parts["ov"]) if "ov" in parts else None,
        rag=_rag(parts["rag"]) if "rag" in parts else None,
        others=[Component.of(r) for name, r in parts.items() if name not in known],
    )
