"""The report's figures: reliability diagrams and ROC curves, written as PNG files.

Matplotlib's object API with the Agg canvas, never ``pyplot``: no global
figure state and no display backend, so it runs on a headless machine and in
tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .metrics import auroc, reliability_bins, roc_points

__all__ = ["Curve", "reliability_diagram", "roc_curves"]

Curve = tuple[str, Sequence[float], Sequence[int]]  # (title, scores, labels)


def _save(figure: Figure, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(figure).print_png(str(path))
    return path


def reliability_diagram(curves: Sequence[Curve], path: Path, *, title: str, bins: int = 10) -> Path:
    """Accuracy against mean score per equal-width bin, marker size by item count; the diagonal is perfect."""
    figure = Figure(figsize=(6.4, 6.0), dpi=110)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfectly calibrated")
    total = max((len(scores) for _, scores, _ in curves), default=1)
    for name, scores, labels in curves:
        found = reliability_bins(scores, labels, bins)
        axes.plot(
            [b.mean_score for b in found],
            [b.accuracy for b in found],
            marker="o",
            linewidth=1.2,
            label=f"{name} (n={len(scores)})",
        )
        axes.scatter(
            [b.mean_score for b in found],
            [b.accuracy for b in found],
            s=[20 + 400 * b.count / total for b in found],
            alpha=0.25,
        )
    axes.set(xlim=(0, 1), ylim=(0, 1), xlabel="mean score in bin", ylabel="fraction correct in bin", title=title)
    axes.legend(loc="upper left", fontsize=8)
    return _save(figure, path)


def roc_curves(curves: Sequence[Curve], path: Path, *, title: str) -> Path:
    """One ROC curve per score, its AUROC in the legend; scores with a single label class are left out."""
    figure = Figure(figsize=(6.4, 6.0), dpi=110)
    axes = figure.add_subplot()
    axes.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="chance")
    for name, scores, labels in curves:
        fpr, tpr = roc_points(scores, labels)
        if fpr:
            axes.plot(fpr, tpr, linewidth=1.4, label=f"{name} (AUROC {auroc(scores, labels):.3f})")
    axes.set(xlim=(0, 1), ylim=(0, 1), xlabel="false positive rate", ylabel="true positive rate", title=title)
    axes.legend(loc="lower right", fontsize=8)
    return _save(figure, path)
