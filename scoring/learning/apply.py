"""The learned Trust_OV of one record: the model's fit in place of the default combination, when it is in use.

Pure: the pipeline reads the model's report from the fit store and hands it
here with the default combination's result. The record then names what made
its score (``method``: the default's, or ``learned`` with the ``fit_id``), and
carries the default's value beside a learned one so the two can be compared on
the same answers later. A record whose answer lacks a feature the fit uses
keeps the default and lists what was missing. Where the model's labels show
no informative score, the record says so (``informative: false``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..types import ComponentResult, OVDetails
from .features import features_of
from .report import CalibrationReport

__all__ = ["learned_overall"]


def _with_default(default: ComponentResult, report: CalibrationReport, missing: list[str] | None) -> ComponentResult:
    details = default.details if isinstance(default.details, OVDetails) else OVDetails()
    update: dict[str, object] = {} if report.informative is None else {"informative": report.informative}
    if missing:
        update["fitted_missing"] = missing
    return default.model_copy(update={"details": details.model_copy(update=update)})


def learned_overall(
    report: CalibrationReport | None,
    default: ComponentResult,
    components: Mapping[str, ComponentResult],
    answer: str | None,
    claims: Sequence[Mapping[str, ComponentResult]] = (),
) -> ComponentResult:
    """Trust_OV for a record of ``report``'s model: the learned fit's when it is in use, else ``default``'s
    (``claims``: each checked claim's own components, when the answer was checked claim by claim)."""
    if report is None:
        return default
    fit = report.fit if report.combination == "fitted" else None
    if fit is None:
        return _with_default(default, report, None)
    values = features_of(components, answer, claims)
    missing = [name for name in fit.features if name not in values]
    if missing:
        return _with_default(default, report, missing)
    used = {name: values[name] for name in fit.features}
    source = "+".join(sorted({name.split("_")[0] for name in fit.features}))
    details = OVDetails(
        source=source,
        method="learned",
        fit_id=fit.id,
        features=used,
        weights=dict(zip(fit.features, fit.weights, strict=True)),
        default=default.value,
    )
    if report.informative is not None:
        details.informative = report.informative
    return ComponentResult(component="ov", value=fit.probability(used), label=None, details=details)
