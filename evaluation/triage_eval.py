"""How well triage tells checkable answers from the rest, on a labelled set of requests with answers.

Each line of a set is one exchange as the gateway sees it (the request's
messages, the answer's text, whether it came with tool calls) and its gold
label: the answer's kind and whether it makes checkable claims. The report
gives the checkable/not-checkable accuracy (what acceptance counts), precision
and recall per kind and for "checkable", the confusion of kinds, and triage's
time per answer. Pure functions of the cases and verdicts, apart from reading
the file and the clock.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from scoring.triage import ANSWER_KINDS, AnswerKind, Exchange, Verdict, triage

from .datasets import DatasetError

__all__ = [
    "TRIAGE_SETS",
    "KindScore",
    "TriageCase",
    "TriageOutcome",
    "TriageReport",
    "load_triage_cases",
    "packaged_set",
    "render_triage_markdown",
    "run_triage",
    "triage_report",
]

# The committed sets: `triage` the rules were written against; `triage-holdout` and `triage-holdout-2`, each written
# after the rules of its time were frozen, and first run blind (docs/eval/triage.md).
TRIAGE_SETS = ("triage", "triage-holdout", "triage-holdout-2")


def packaged_set(name: str) -> Path:
    return Path(str(resources.files("evaluation") / "data" / f"{name}.jsonl"))


@dataclass(frozen=True)
class TriageCase:
    id: str
    messages: list[dict[str, Any]]
    answer: str
    kind: AnswerKind
    checkable: bool
    has_tool_calls: bool = False
    lang: str = "en"

    def exchange(self) -> Exchange:
        return Exchange.from_messages(self.messages, self.answer, has_tool_calls=self.has_tool_calls)


def load_triage_cases(path: Path) -> list[TriageCase]:
    """A set's cases; a malformed line is a DatasetError naming the file and the line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise DatasetError(f"cannot read {path}: {exc}") from exc
    return [_case(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]


def _case(path: Path, number: int, line: str) -> TriageCase:
    try:
        row = json.loads(line)
        case = TriageCase(
            id=str(row["id"]),
            messages=list(row["messages"]),
            answer=str(row["answer"]),
            kind=row["kind"],
            checkable=bool(row["checkable"]),
            has_tool_calls=bool(row.get("tool_calls", False)),
            lang=str(row.get("lang", "en")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise DatasetError(f"{path}:{number}: not a triage case ({exc})") from exc
    if case.kind not in ANSWER_KINDS:
        raise DatasetError(f"{path}:{number}: unknown kind {case.kind!r}")
    if case.checkable != (case.kind == "factual"):
        raise DatasetError(f"{path}:{number}: checkable must be true exactly for factual answers")
    return case


@dataclass(frozen=True)
class TriageOutcome:
    case: TriageCase
    verdict: Verdict
    seconds: float  # triage's time on this answer (the median of the repeats)

    @property
    def checkable_right(self) -> bool:
        return self.verdict.checkable == self.case.checkable


def run_triage(cases: Sequence[TriageCase], *, repeat: int = 5) -> list[TriageOutcome]:
    """Triage every case ``repeat`` times; each answer's time is its median over the repeats."""
    outcomes = []
    for case in cases:
        exchange = case.exchange()
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            verdict = triage(exchange)
            times.append(time.perf_counter() - started)
        outcomes.append(TriageOutcome(case, verdict, statistics.median(times)))
    return outcomes


@dataclass(frozen=True)
class KindScore:
    support: int  # gold cases of the kind
    predicted: int  # cases triage gave the kind
    right: int

    @property
    def precision(self) -> float | None:
        return self.right / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.right / self.support if self.support else None


@dataclass(frozen=True)
class TriageReport:
    cases: int
    checkable_accuracy: float
    kind_accuracy: float
    checkable: KindScore  # "checkable" as the positive class
    kinds: dict[str, KindScore]
    confusion: dict[tuple[str, str], int]  # (gold kind, triage's kind) -> cases
    by_language: dict[str, tuple[int, int]]  # language -> (cases, checkable right)
    latency_ms: dict[str, float]  # p50, p95, p99, max, mean of per-answer times
    wrong: list[TriageOutcome] = field(default_factory=list)  # checkable decided wrong


def triage_report(outcomes: Sequence[TriageOutcome]) -> TriageReport:
    if not outcomes:
        raise DatasetError("the set has no cases")
    confusion: Counter[tuple[str, str]] = Counter((o.case.kind, o.verdict.kind) for o in outcomes)
    kinds = sorted({kind for pair in confusion for kind in pair}, key=ANSWER_KINDS.index)
    languages: dict[str, list[bool]] = {}
    for outcome in outcomes:
        languages.setdefault(outcome.case.lang, []).append(outcome.checkable_right)
    times = sorted(o.seconds * 1000 for o in outcomes)
    return TriageReport(
        cases=len(outcomes),
        checkable_accuracy=sum(o.checkable_right for o in outcomes) / len(outcomes),
        kind_accuracy=sum(o.case.kind == o.verdict.kind for o in outcomes) / len(outcomes),
        checkable=_score(outcomes, lambda kind: kind == "factual"),
        kinds={kind: _score(outcomes, lambda k, kind=kind: k == kind) for kind in kinds},
        confusion=dict(confusion),
        by_language={lang: (len(right), sum(right)) for lang, right in sorted(languages.items())},
        latency_ms={
            "p50": _quantile(times, 0.50),
            "p95": _quantile(times, 0.95),
            "p99": _quantile(times, 0.99),
            "max": times[-1],
            "mean": statistics.fmean(times),
        },
        wrong=[o for o in outcomes if not o.checkable_right],
    )


def _score(outcomes: Sequence[TriageOutcome], positive: Any) -> KindScore:
    return KindScore(
        support=sum(positive(o.case.kind) for o in outcomes),
        predicted=sum(positive(o.verdict.kind) for o in outcomes),
        right=sum(positive(o.case.kind) and positive(o.verdict.kind) for o in outcomes),
    )


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank quantile: a value some answer actually took."""
    return ordered[min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))]


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def render_triage_markdown(report: TriageReport, *, title: str, command: str) -> str:
    lines = [f"## {title}", "", "```bash", command, "```", ""]
    lines += [
        f"- cases: {report.cases}",
        f"- checkable vs not checkable decided right: **{report.checkable_accuracy:.1%}** "
        f"({report.cases - len(report.wrong)} of {report.cases})",
        f"- checkable: precision {_fmt(report.checkable.precision)}, recall {_fmt(report.checkable.recall)} "
        f"({report.checkable.support} checkable answers)",
        f"- kind decided right: {report.kind_accuracy:.1%}",
        "- time per answer (ms, median of repeats): "
        + ", ".join(f"{name} {value:.3f}" for name, value in report.latency_ms.items()),
        "",
        "| kind | cases | precision | recall |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {kind} | {score.support} | {_fmt(score.precision)} | {_fmt(score.recall)} |"
        for kind, score in report.kinds.items()
    ]
    kinds = list(report.kinds)
    lines += ["", "Confusion (rows: gold kind, columns: triage's kind):", ""]
    lines += ["| gold \\ triage | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for gold in kinds:
        cells = [str(report.confusion.get((gold, predicted), "")) for predicted in kinds]
        lines.append(f"| {gold} | " + " | ".join(cells) + " |")
    lines += ["", "| language | cases | checkable right |", "|---|---:|---:|"]
    lines += [f"| {lang} | {n} | {right} |" for lang, (n, right) in report.by_language.items()]
    if report.wrong:
        lines += ["", "Checkable decided wrong:", ""]
        lines += [
            f"- `{o.case.id}` gold {o.case.kind}, triage {o.verdict.kind}: "
            f"{_one_line(o.case.exchange().question)} → {o.verdict.reason}"
            for o in report.wrong
        ]
    return "\n".join(lines) + "\n"


def _one_line(text: Any, limit: int = 90) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
