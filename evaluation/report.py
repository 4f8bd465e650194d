"""The evaluation report: markdown for people, JSON with every number, PNG figures beside them.

``render_markdown`` is a pure function of the run's context and summary; the
writer puts the three kinds of file in one folder. The JSON holds per-item
scores and labels by item id (never the dataset's questions or answers, which
stay in their own files; only answers the evaluated model wrote itself) so
that any figure can be recomputed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from .figures import Curve, reliability_diagram, roc_curves
from .outcome import SIGNALS, ItemOutcome, by_answerer, signal_values

__all__ = [
    "PAPER_MODELS",
    "PAPER_TABLE1",
    "ReportContext",
    "render_markdown",
    "render_mc_markdown",
    "render_rag_markdown",
    "write_json",
    "write_report",
]

PAPER_MODELS = ("FLAN-T5", "LLaMA", "GPT-3.5")
# TrustScore, Table 1: Pearson's r against human judgements on MixedQA.
PAPER_TABLE1 = {"bc": (0.313, 0.133, 0.353), "fc": (0.593, 0.533, 0.449), "ov": (0.613, 0.539, 0.484)}
PAPER_ROW_TITLES = {"bc": "Trust_BC", "fc": "Trust_FC", "ov": "Trust_OV"}
FEW_LABELS = 10  # below this many correct (or incorrect) answers, the figures rest on too few items


@dataclass(frozen=True)
class ReportContext:
    title: str
    command: str
    dataset: str
    mode: str
    model: str
    created_at: str
    git_commit: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"


def _with_ci(metric: dict[str, Any] | None) -> str:
    if metric is None:
        return "–"
    low, high = metric["ci95"]
    interval = f" [{_fmt(low)}, {_fmt(high)}]" if low is not None else ""
    return f"{_fmt(metric['value'])}{interval}"


def _paper_table(summary: dict[str, dict[str, Any]]) -> list[str]:
    answerers = list(summary)
    header = ["score", *(f"this run: {a}" for a in answerers), *(f"paper: {m}" for m in PAPER_MODELS)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row, paper in PAPER_TABLE1.items():
        ours = []
        for answerer in answerers:
            found = [s for s in summary[answerer]["signals"].values() if s["paper_row"] == row]
            ours.append(_with_ci(found[0]["pearson"]) if found else "not measured")
        lines.append(f"| {PAPER_ROW_TITLES[row]} | " + " | ".join([*ours, *map(_fmt, paper)]) + " |")
    return lines


def _metrics_table(group: dict[str, Any]) -> list[str]:
    lines = [
        "| score | n | correct | Pearson r | Spearman ρ | AUROC | AUPRC | ECE |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for signal in group["signals"].values():
        lines.append(
            f"| {signal['title']} | {signal['n']} | {signal['positives']} | "
            + " | ".join(_with_ci(signal[m]) for m in ("pearson", "spearman", "auroc", "auprc", "ece"))
            + " |"
        )
    return lines


def _group_section(answerer: str, group: dict[str, Any]) -> list[str]:
    sources = ", ".join(f"{name}: {count}" for name, count in group["label_sources"].items())
    lines = [
        f"### Answers by {answerer}",
        "",
        f"{group['items']} items, {group['correct']} correct ({_fmt(group['accuracy'])}); labels from {sources}.",
        "",
    ]
    fewer = min(group["correct"], group["items"] - group["correct"])
    if fewer < FEW_LABELS:
        lines += [
            f"**Only {fewer} {'correct' if fewer == group['correct'] else 'incorrect'} answer(s)**: every "
            "figure below turns on those few items, and the bootstrap intervals (drawn from the resamples "
            "where a figure is defined) understate the uncertainty. Read them as a smoke test, not a "
            "measurement.",
            "",
        ]
    lines += [*_metrics_table(group), ""]
    calls = ", ".join(f"{name} {count:g}" for name, count in group["calls_per_item"].items())
    lines += [f"Upstream calls per item, by component: {calls or 'none'}.", ""]
    agreement = group.get("label_agreement")
    if agreement:
        lines += [
            f"Gold-answer matching against the dataset's labels on these {agreement['items']} items: "
            f"accuracy {_fmt(agreement['accuracy'])}, Cohen's κ {_fmt(agreement['kappa'])} "
            f"(matching calls {_fmt(agreement['matched_correct_rate'])} of them correct).",
            "",
        ]
    return lines


def _combination_section(combination: dict[str, Any] | None) -> list[str]:
    if not combination:
        return []
    lines = ["## Fitted Trust_OV", ""]
    if combination.get("reason"):
        return [*lines, f"Not fitted: {combination['reason']}.", ""]
    fit = combination["combination"]
    weights = ", ".join(f"{name} {weight:+.3f}" for name, weight in zip(fit["features"], fit["weights"], strict=True))
    lines += [
        f"Logistic regression of correctness on {', '.join(combination['features'])} over the "
        f"{combination['items']} items that have them all. The row *Trust_OV (fitted, cross-validated)* above "
        f"gives each item the prediction of a fit on the other folds ({combination['folds']}-fold, stratified, "
        f"seed {combination['seed']}); the fit on all items: weights {weights}, intercept "
        f"{fit['intercept']:+.3f}.",
        "",
    ]
    if combination.get("path"):
        lines += [
            f"Saved to `{combination['path']}`: `trustgate.scoring.combine: fitted` with "
            "`calibration_path` naming it makes the gateway's Trust_OV this fit.",
            "",
        ]
    return lines


def _calibration_section(calibration: dict[str, Any] | None) -> list[str]:
    if not calibration:
        return []
    combination = _combination_section(calibration.get("fitted_combination"))
    lines = [*combination, "## Calibration of Trust_OV", ""]
    if calibration.get("reason"):
        return [*lines, f"Not fitted: {calibration['reason']}.", ""]
    figures = calibration["held_out"]
    lines += [
        f"{calibration['method'].capitalize()} calibration of the gateway's Trust_OV value, fitted on "
        f"{calibration['fit_items']} items (stratified, seed {calibration['seed']}) and measured on the other "
        f"{calibration['held_out_items']}:",
        "",
        "| held-out | raw Trust_OV | calibrated |",
        "|---|---|---|",
        f"| ECE | {_fmt(figures['ece_raw'])} | {_fmt(figures['ece_calibrated'])} |",
        f"| Brier score | {_fmt(figures['brier_raw'])} | {_fmt(figures['brier_calibrated'])} |",
        "",
    ]
    if calibration.get("path"):
        lines += [
            f"Saved to `{calibration['path']}`: the gateway reports `x-trust-probability` from it when "
            "`trustgate.scoring.calibration_path` names it.",
            "",
        ]
    return lines


def render_markdown(
    context: ReportContext,
    summary: dict[str, dict[str, Any]],
    run: dict[str, Any],
    calibration: dict[str, Any] | None,
    figures: Sequence[str],
) -> str:
    settings = "\n".join(f"- {name}: {value}" for name, value in context.settings.items())
    lines = [
        f"# {context.title}",
        "",
        "Produced by:",
        "",
        "```bash",
        context.command,
        "```",
        "",
        f"Dataset `{context.dataset}`, mode `{context.mode}`, model group `{context.model}`; "
        f"{context.created_at}" + (f", commit {context.git_commit}" if context.git_commit else "") + ".",
        "",
        settings,
        "",
    ]
    if context.notes:
        lines += ["## Read this first", "", *(f"- {note}" for note in context.notes), ""]
    lines += [
        "## Pearson r beside the paper's Table 1",
        "",
        "Pearson's r between each score and the correctness label, with a 95% bootstrap interval; the "
        "paper's figures are against human labels of FLAN-T5, LLaMA-7B and GPT-3.5 answers. – where r is "
        "undefined (a constant score, or a single label class).",
        "",
        *_paper_table(summary),
        "",
        "## All metrics",
        "",
        "Each cell: value [95% bootstrap interval]; – where undefined (a constant score, or a single label "
        "class). ECE only for scores meant as probabilities. Rows count the items where that score exists.",
        "",
    ]
    for answerer, group in summary.items():
        lines += _group_section(answerer, group)
    lines += _calibration_section(calibration)
    lines += [
        "## Run",
        "",
        f"This invocation: {run['items']} items scored, {len(run['failures'])} failed; upstream calls made "
        f"{run['calls_made']}, replies read from the cache {run['calls_cached']}, component results reused "
        f"from the cache {run['results_reused']} (computed by earlier runs on the same items and settings); "
        f"{run['duration_s']:.0f} s.",
        "",
    ]
    lines += ["## Figures", "", *(f"![{name}]({name})" for name in figures), ""]
    return "\n".join(lines)


def _curves(outcomes: list[ItemOutcome], probability_only: bool) -> list[Curve]:
    curves: list[Curve] = []
    for signal in SIGNALS:
        if probability_only and not signal.probability:
            continue
        scores, labels = signal_values(signal, outcomes)
        if scores:
            curves.append((signal.title, scores, labels))
    return curves


def write_figures(outcomes: list[ItemOutcome], calibration_curve: Curve | None, folder: Path) -> list[str]:
    """A reliability diagram and an ROC plot per answerer; file names relative to ``folder``."""
    names, groups = [], by_answerer(outcomes)
    for answerer, mine in groups.items():
        curves = _curves(mine, probability_only=True)
        if calibration_curve is not None and len(groups) == 1:  # fitted on the pooled answers of all groups
            curves.append(calibration_curve)
        reliability_diagram(curves, folder / f"reliability-{answerer}.png", title=f"Reliability: answers by {answerer}")
        roc_curves(
            _curves(mine, probability_only=False), folder / f"roc-{answerer}.png", title=f"ROC: answers by {answerer}"
        )
        names += [f"reliability-{answerer}.png", f"roc-{answerer}.png"]
    return names


def _item_rows(outcomes: list[ItemOutcome]) -> list[dict[str, Any]]:
    """Per item: ids, label, scores, calls; the answer text only where the evaluated model wrote it."""
    return [
        {
            "id": o.item_id,
            "answerer": o.answerer,
            "label": o.label,
            "label_source": o.label_source,
            "gold_match": o.gold_match,
            **({"answer": o.answer} if o.label_source == "gold-match" else {}),
            "calls": {name: r.upstream_calls for name, r in o.components.items() if r.upstream_calls},
            "errors": {name: r.error for name, r in o.components.items() if r.error},
            "scores": {s.key: s.read(o) for s in SIGNALS},
        }
        for o in outcomes
    ]


def write_report(
    folder: Path,
    context: ReportContext,
    outcomes: list[ItemOutcome],
    summary: dict[str, Any],
    run: dict[str, Any],
    calibration: dict[str, Any] | None,
    calibration_curve: Curve | None = None,
) -> Path:
    """``report.md``, ``results.json`` and the PNGs in ``folder``; returns the markdown's path."""
    folder.mkdir(parents=True, exist_ok=True)
    figures = write_figures(outcomes, calibration_curve, folder)
    write_json(
        folder / "results.json",
        {
            "context": context,
            "paper_table1": {"models": PAPER_MODELS, **PAPER_TABLE1},
            "summary": summary,
            "calibration": calibration,
            "run": run,
            "items": _item_rows(outcomes),
        },
    )
    markdown = folder / "report.md"
    markdown.write_text(render_markdown(context, summary, run, calibration, figures), encoding="utf-8")
    return markdown


def _plain(value: Any) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return asdict(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Strict JSON (no NaN): undefined figures must already be None."""
    path.write_text(json.dumps(document, indent=1, allow_nan=False, default=_plain) + "\n", encoding="utf-8")


MC_METHOD = """Each reference answer is scored by a copy task: the model sees the question and the answer and is asked
to repeat the answer; the log-probabilities of the greedy tokens that spell it are summed (chat APIs return
log-probabilities only for generated tokens, so TruthfulQA's teacher-forced likelihood is out of reach). Where the
model strays, the answer's token there is read from the top alternatives (or bounded by the least likely one) and
the sum stops: an upper bound. MC1: the best answer beats every false answer. MC2: the normalised probability mass
of the true answers. This measures how readily the model reproduces each answer, a proxy for, not the same as,
TruthfulQA's likelihood given the question; "complete" rows keep only questions where every candidate was
reproduced exactly."""


def render_mc_markdown(context: ReportContext, summary: dict[str, Any], run: dict[str, Any]) -> str:
    rows = [
        f"| {name} | {part['mc1']['n']} | {_with_ci(part['mc1'])} | {_with_ci(part['mc2'])} |"
        for name, part in (
            ("all questions", summary["all"]),
            ("complete (every candidate reproduced)", summary["complete"]),
        )
    ]
    lines = [
        f"# {context.title}",
        "",
        "Produced by:",
        "",
        "```bash",
        context.command,
        "```",
        "",
        f"Model group `{context.model}`; {context.created_at}"
        + (f", commit {context.git_commit}" if context.git_commit else "")
        + ".",
        "",
    ]
    if context.notes:
        lines += ["## Read this first", "", *(f"- {note}" for note in context.notes), ""]
    lines += [
        "## Method and its limits",
        "",
        MC_METHOD,
        "",
        "## Results",
        "",
        "| questions | n | MC1 | MC2 |",
        "|---|---|---|---|",
        *rows,
        "",
        f"The model reproduced {_fmt(summary['reproduced_fraction'])} of the candidate answers (averaged per "
        f"question), and every candidate of a question on {_fmt(summary['complete_fraction'])} of questions. "
        f"This invocation: upstream calls made {run['calls_made']}, replies read from the cache "
        f"{run['calls_cached']}; {run['duration_s']:.0f} s.",
        "",
    ]
    return "\n".join(lines)


RAG_SECTIONS = {
    "Cases": (
        "num_samples",
        "skipped_num",
        "answered_num",
        "answered_ratio",
        "answerable_num",
        "labelled_num",
        "overlapped_num",
        "regular_length",
        "answered_length",
    ),
    "Refusal groundedness": (
        "reject_rec",
        "reject_prec",
        "reject_f1",
        "answerable_rec",
        "answerable_prec",
        "answerable_f1",
        "macro_avg",
        "macro_f1",
    ),
    "Citations": (
        "regular_citation_rec",
        "regular_citation_prec",
        "regular_citation_f1",
        "answered_citation_rec",
        "answered_citation_prec",
        "answered_citation_f1",
    ),
    "Claims and grounding": (
        "answered_claims_nli",
        "calib_answered_claims_nli",
        "calib_answerable_claims_nli",
        "calib_claims_nli_f1",
        "answered_groundedness",
    ),
    "Overall": ("trust_score", "judge_failures", "judge_calls"),
}


def _cell(value: Any) -> str:
    return _fmt(value) if value is None or isinstance(value, float) else str(value)


def render_rag_markdown(context: ReportContext, report: dict[str, Any], run: dict[str, Any]) -> str:
    """Trust-Eval's report, its metrics grouped as its paper groups them, fractions rather than percentages."""
    lines = [
        f"# {context.title}",
        "",
        "Produced by:",
        "",
        "```bash",
        context.command,
        "```",
        "",
        f"Cases `{context.dataset}`, judge {context.model}; {context.created_at}"
        + (f", commit {context.git_commit}" if context.git_commit else "")
        + ".",
        "",
    ]
    if context.notes:
        lines += ["## Read this first", "", *(f"- {note}" for note in context.notes), ""]
    for section, keys in RAG_SECTIONS.items():
        lines += [f"## {section}", "", "| metric | value |", "|---|---|"]
        lines += [f"| {key} | {_cell(report.get(key))} |" for key in keys]
        lines.append("")
    lines += [
        f"Metric names are Trust-Eval's; None (–) where no case could inform a metric. This invocation: "
        f"upstream calls made {run['calls_made']}, replies read from the cache {run['calls_cached']}; "
        f"{run['duration_s']:.0f} s.",
        "",
    ]
    return "\n".join(lines)
