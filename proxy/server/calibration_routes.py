"""GET /v1/trust/calibration: what each model's labels say about its trust scores (the master key only).

Per model group with a label: how many labels (now, in the record store), which
combination its new records get and why, cross-validated AUROC and ECE of
Trust_OV and of each component and free signal, and whether any score is
informative at all. A model is listed from its first label, before any refit:
its records rest on the default combination, and the reason says how many
labels a fit needs. The figures are those of the last refit
(``scoring.learning``), read from the fit store every replica shares; reading
them also sets the calibration gauges, so every replica's ``/metrics`` shows
the shared figures.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field

from scoring import CalibrationReport, Combination, LearnedFit, Standing, StoreUnavailable

from ..base.errors import PermissionDenied, ServiceUnavailable
from .auth import Caller
from .gateway import Gateway

__all__ = ["ModelCalibration", "calibration_standings", "router"]

router = APIRouter()


class ModelCalibration(BaseModel):
    """One model's entry: its labels (and how many say correct), the combination in use and why, fit and metrics."""

    model: str
    labels: int  # labelled records in the store now
    positives: int
    combination: Combination
    reason: str
    informative: bool | None  # None: too few labels of each kind to say (or no refit yet)
    # What the last refit measured; before any refit: no fit, no figures, no time, no count.
    fit: LearnedFit | None = None
    auroc: dict[str, float | None] = Field(default_factory=dict)
    ece: dict[str, float | None] = Field(default_factory=dict)
    fitted_at: float | None = None
    refit_labels: int | None = None  # the labels it read

    @classmethod
    def of(cls, standing: Standing) -> ModelCalibration:
        report = standing.report
        refit = (
            {}
            if report is None
            else {
                "fit": report.fit,
                "auroc": report.auroc(),
                "ece": report.ece(),
                "fitted_at": report.fitted_at,
                "refit_labels": report.labels,
            }
        )
        return cls(
            model=standing.model,
            labels=standing.labels,
            positives=standing.positives,
            combination=standing.combination,
            reason=standing.reason,
            informative=standing.informative,
            **refit,
        )


class CalibrationList(BaseModel):
    object: str = "list"
    data: list[ModelCalibration]


def _require_operator(gateway: Gateway, caller: Caller) -> None:
    if not (caller.master or gateway.keys.open):
        raise PermissionDenied("Only the master key may read the calibration of the models", code="master_key_required")


async def _reports(gateway: Gateway) -> dict[str, CalibrationReport]:
    """Every model's last report; 503 when the fit store cannot answer."""
    if gateway.learning is None:
        return {}
    try:
        reports = await gateway.learning.fits.all()
    except StoreUnavailable as exc:
        raise ServiceUnavailable("The fit store is unavailable; try again") from exc
    for report in reports:
        gateway.calibration_metrics.observe(report)
    return {report.model: report for report in reports}


async def calibration_standings(gateway: Gateway, caller: Caller) -> list[Standing]:
    """Every model with a label or a report, by name, as it stands (the console reads them through this too);
    503 when the record store or the fit store cannot answer."""
    _require_operator(gateway, caller)
    reports = await _reports(gateway)
    counts = {count.model: count for count in await gateway.trust.label_counts()}
    feedback = gateway.settings.trustgate.scoring.feedback
    return [
        Standing(
            model=model,
            labels=counts[model].labels if model in counts else 0,
            positives=counts[model].correct if model in counts else 0,
            report=reports.get(model),
            min_labels=feedback.min_labels,
            refit_every=feedback.refit_every,
            learns=gateway.learning is not None,
        )
        for model in sorted(counts.keys() | reports.keys())
    ]


@router.get("/v1/trust/calibration")
async def get_calibration(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    standings = await calibration_standings(gateway, caller)
    body = CalibrationList(data=[ModelCalibration.of(standing) for standing in standings])
    return Response(body.model_dump_json(), media_type="application/json")
