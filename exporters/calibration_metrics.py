"""Each model's calibration report as Prometheus gauges: what its labels say about its scores.

Set whenever this process learns of a report (its own refit, a read of the
fit store for ``GET /v1/trust/calibration`` or the console), so a replica that
did not refit shows the shared figures once anyone asks it. The ``score`` label
is bounded: Trust_OV (``ov``, the default combination), ``fitted``, and the
features of ``scoring.learning.features``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

__all__ = ["CalibrationFigures", "CalibrationMetrics", "build_calibration_metrics"]

NAMESPACE = "trustgate"


class ScoreFigures(Protocol):
    @property
    def auroc(self) -> float | None: ...
    @property
    def ece(self) -> float | None: ...


class CalibrationFigures(Protocol):
    """What the gauges read of a report (``scoring.learning.report.CalibrationReport`` has it): exporters
    take scoring's public types only, so the shape is stated here."""

    @property
    def model(self) -> str: ...
    @property
    def key(self) -> str | None: ...
    @property
    def labels(self) -> int: ...
    @property
    def combination(self) -> str: ...
    @property
    def informative(self) -> bool | None: ...
    @property
    def scores(self) -> Mapping[str, ScoreFigures]: ...
    @property
    def held(self) -> object | None: ...


@dataclass(frozen=True)
class CalibrationMetrics:
    labels: Gauge
    auroc: Gauge
    ece: Gauge
    informative: Gauge
    fitted: Gauge
    held: Gauge
    refits: Counter
    refit_failures: Counter
    fits_held: Counter

    def observe(self, report: CalibrationFigures) -> None:
        """A model's shared fit's figures (a key's own fit, ``feedback.scope: key``, is not a model's)."""
        if report.key is not None:
            return
        self.labels.labels(model=report.model).set(report.labels)
        if report.informative is not None:
            self.informative.labels(model=report.model).set(int(report.informative))
        self.fitted.labels(model=report.model).set(int(report.combination == "fitted"))
        self.held.labels(model=report.model).set(int(report.held is not None))
        for score, quality in report.scores.items():
            if quality.auroc is not None:
                self.auroc.labels(model=report.model, score=score).set(quality.auroc)
            if quality.ece is not None:
                self.ece.labels(model=report.model, score=score).set(quality.ece)


def build_calibration_metrics(registry: CollectorRegistry) -> CalibrationMetrics:
    def gauge(name: str, doc: str, labels: list[str]) -> Gauge:
        return Gauge(name, doc, labels, namespace=NAMESPACE, registry=registry)

    return CalibrationMetrics(
        labels=gauge("calibration_labels", "Labelled answers the model's last refit read.", ["model"]),
        auroc=gauge(
            "calibration_auroc",
            "AUROC of each score on the model's labels (cross-validated where "
            "fitted), by score (ov: the default Trust_OV, fitted: the learned one, or a feature).",
            ["model", "score"],
        ),
        ece=gauge(
            "calibration_ece", "Expected calibration error of each score on the model's labels.", ["model", "score"]
        ),
        informative=gauge(
            "calibration_informative",
            "1 when some score separates the model's right answers "
            "from its wrong ones (AUROC's 95% interval above 0.5), else 0.",
            ["model"],
        ),
        fitted=gauge(
            "calibration_fitted",
            "1 when the model's new records get its learned Trust_OV, 0 when the default combination.",
            ["model"],
        ),
        held=gauge(
            "calibration_held",
            "1 while a new fit of the model waits for the operator: the refit guard held it (it flips a "
            "component's sign, or ranks the labelled answers against the combination in use); else 0.",
            ["model"],
        ),
        refits=Counter(
            "calibration_refits",
            "Refits this gateway made of a model's shared learned Trust_OV (each from the labels of the keys "
            "trusted to label), whether their fit was served or held.",
            ["model"],
            namespace=NAMESPACE,
            registry=registry,
        ),
        refit_failures=Counter(
            "refit_failures",
            "Refits of a model's learned Trust_OV that failed (the previous combination stayed).",
            namespace=NAMESPACE,
            registry=registry,
        ),
        fits_held=Counter(
            "calibration_fits_held",
            "New fits the refit guard held for the operator instead of serving them, by model.",
            ["model"],
            namespace=NAMESPACE,
            registry=registry,
        ),
    )
