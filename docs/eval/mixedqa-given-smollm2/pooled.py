"""The SUMMARY's pooled table: every score over the answers of all three models that Trust_BC and Trust_FC scored.

The report keeps each answering model apart (their base rates differ); with 12-13 scored answers per
model that leaves too few to read, so the summary pools them, as the fitted Trust_OV's cross-validation
already does. Reads results.json beside this file; no upstream call.

    PYTHONPATH=. .venv/bin/python docs/eval/mixedqa-given-smollm2/pooled.py
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import numpy as np

from evaluation.metrics import Metric, auroc, bootstrap_ci, expected_calibration_error, pearson

ROWS = [  # (score key in results.json, title, is a probability, oriented so that higher = more trusted)
    ("answer_words", "baseline: answer length (shorter = more trusted)", False, -1.0),
    ("bc_paper", "today's Trust_BC, paper procedure (random letter, binary)", True, 1.0),
    ("bc_graded", "today's Trust_BC scoring on the debiased run's checks", True, 1.0),
    ("bc_debiased", "debiased Trust_BC", True, 1.0),
    ("fc_text", "Trust_FC before: the paper's text judge", True, 1.0),
    ("fc", "Trust_FC after: constrained yes/no choice, debiased", True, 1.0),
    ("ov_paper_table3", "Trust_OV, Table 3 of today's BC and FC (paper preset)", True, 1.0),
    ("ov_graded", "Trust_OV, graded Table 3 of debiased BC and choice FC", True, 1.0),
    ("ov_fitted", "fitted Trust_OV (logistic over bc, fc; 5-fold cross-validated)", True, 1.0),
]
RESAMPLES = 1000


def cell(metric: Metric, scores: np.ndarray, labels: np.ndarray, digits: int = 3) -> str:
    """The metric with its 95% bootstrap interval; – where undefined (a constant score)."""
    value = metric(scores, labels)
    if math.isnan(value):
        return "–"
    ci = bootstrap_ci(metric, scores, labels, resamples=RESAMPLES, seed=0)
    return f"{value:.{digits}f} [{ci.low:.2f}, {ci.high:.2f}]"


def main() -> None:
    items = json.loads((Path(__file__).parent / "results.json").read_text())["items"]
    scored = [item for item in items if item["scores"]["bc_debiased"] is not None and item["scores"]["fc"] is not None]
    labels = np.array([item["label"] for item in scored], dtype=float)
    by_model = Counter(item["answerer"] for item in scored)
    print(f"{len(scored)} answers ({int(labels.sum())} correct by the human labels): {dict(by_model)}")
    print("| score | n | AUROC [95% CI] | Pearson r [95% CI] | ECE |\n|---|---|---|---|---|")
    for key, title, probability, sign in ROWS:
        scores = sign * np.array([item["scores"][key] for item in scored], dtype=float)
        ece = cell(expected_calibration_error, scores, labels) if probability else "–"
        print(f"| {title} | {len(scored)} | {cell(auroc, scores, labels)} | {cell(pearson, scores, labels)} | {ece} |")


if __name__ == "__main__":
    main()
