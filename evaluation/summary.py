"""From item outcomes to the report's numbers. Pure functions; the result is plain JSON.

Items are grouped by who wrote the answer (MixedQA's flan / llama / gpt, or the
model group that answered), because that is how the paper's Table 1 reads and
because pooling answers of different models would mix their base rates.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from .metrics import Metric, auprc, auroc, bootstrap_ci, cohen_kappa, expected_calibration_error, pearson, spearman
from .outcome import SIGNALS, ItemOutcome, Signal, by_answerer, signal_values

__all__ = ["RANK_METRICS", "metric_with_ci", "summarise", "summarise_group", "summarise_signal"]

RANK_METRICS: dict[str, Metric] = {"pearson": pearson, "spearman": spearman, "auroc": auroc, "auprc": auprc}
COUNTED_COMPONENTS = ("answer", "verbal", "bc", "fc", "sc")


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(value, 4)


def metric_with_ci(
    metric: Metric, scores: Sequence[float], labels: Sequence[int], resamples: int, seed: int
) -> dict[str, Any]:
    s, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    ci = bootstrap_ci(metric, s, y, resamples=resamples, seed=seed)
    return {
        "value": _number(metric(s, y)),
        "ci95": [_number(ci.low), _number(ci.high)],
        "defined_resamples": ci.resamples,
    }


def summarise_signal(signal: Signal, outcomes: list[ItemOutcome], resamples: int, seed: int) -> dict[str, Any] | None:
    scores, labels = signal_values(signal, outcomes)
    if not scores:
        return None
    summary: dict[str, Any] = {
        "title": signal.title,
        "n": len(scores),
        "positives": int(sum(labels)),
        "probability": signal.probability,
        "paper_row": signal.paper_row,
        "mean": _number(float(np.mean(scores))),
    }
    for name, metric in RANK_METRICS.items():
        summary[name] = metric_with_ci(metric, scores, labels, resamples, seed)
    summary["ece"] = (
        metric_with_ci(expected_calibration_error, scores, labels, resamples, seed) if signal.probability else None
    )
    return summary


def _calls_per_item(outcomes: list[ItemOutcome]) -> dict[str, float]:
    calls: dict[str, float] = {}
    for component in COUNTED_COMPONENTS:
        counts = [o.components[component].upstream_calls for o in outcomes if component in o.components]
        if counts:
            calls[component] = round(sum(counts) / len(counts), 3)
    return calls


def _label_agreement(outcomes: list[ItemOutcome]) -> dict[str, Any] | None:
    """How often gold-answer matching agrees with the dataset's own labels, where both exist."""
    pairs = [
        (o.label, int(o.gold_match)) for o in outcomes if o.gold_match is not None and o.label_source != "gold-match"
    ]
    if not pairs:
        return None
    given, matched = zip(*pairs, strict=True)
    return {
        "items": len(pairs),
        "accuracy": _number(float(np.mean(np.equal(given, matched)))),
        "kappa": _number(cohen_kappa(given, matched)),
        "matched_correct_rate": _number(float(np.mean(matched))),
    }


def summarise_group(outcomes: list[ItemOutcome], resamples: int, seed: int) -> dict[str, Any]:
    signals = {s.key: found for s in SIGNALS if (found := summarise_signal(s, outcomes, resamples, seed))}
    return {
        "items": len(outcomes),
        "correct": int(sum(o.label for o in outcomes)),
        "accuracy": _number(float(np.mean([o.label for o in outcomes]))),
        "label_sources": dict(Counter(o.label_source for o in outcomes)),
        "calls_per_item": _calls_per_item(outcomes),
        "label_agreement": _label_agreement(outcomes),
        "signals": signals,
    }


def summarise(outcomes: list[ItemOutcome], *, resamples: int = 1000, seed: int = 0) -> dict[str, dict[str, Any]]:
    """Per answerer: counts, accuracy, calls per item per component, and every signal's metrics."""
    return {name: summarise_group(group, resamples, seed) for name, group in by_answerer(outcomes).items()}
