"""GET /v1/trust/calibration: what each model's labels say about its trust scores (the master key only).

Per model group: how many labels, which combination its new records get and
why, cross-validated AUROC and ECE of Trust_OV and of each component and free
signal, and whether any score is informative at all. The reports are those of
the last refit (``scoring.learning``), read from the fit store every replica
shares; reading them also sets the calibration gauges, so every replica's
``/metrics`` shows the shared figures.
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel

from scoring import CalibrationReport, Combination, LearnedFit, StoreUnavailable

from ..base.errors import PermissionDenied, ServiceUnavailable
from .auth import Caller
from .gateway import Gateway

__all__ = ["ModelCalibration", "calibration_reports", "router"]

router = APIRouter()


class ModelCalibration(BaseModel):
    """One model's entry: its labels (and how many say correct), the combination in use and why, fit and metrics."""

    model: str
    labels: int
    positives: int
    combination: Combination
    reason: str
    informative: bool | None  # None: too few labels of each kind to say
    fit: LearnedFit | None
    auroc: dict[str, float | None]
    ece: dict[str, float | None]
    fitted_at: float

    @classmethod
    def of(cls, report: CalibrationReport) -> ModelCalibration:
        return cls(
            model=report.model,
            labels=report.labels,
            positives=report.positives,
            combination=report.combination,
            reason=report.reason,
            informative=report.informative,
            fit=report.fit,
            auroc=report.auroc(),
            ece=report.ece(),
            fitted_at=report.fitted_at,
        )


class CalibrationList(BaseModel):
    object: str = "list"
    data: list[ModelCalibration]


def _require_operator(gateway: Gateway, caller: Caller) -> None:
    if not (caller.master or gateway.keys.open):
        raise PermissionDenied("Only the master key may read the calibration of the models", code="master_key_required")


async def calibration_reports(gateway: Gateway, caller: Caller) -> list[CalibrationReport]:
    """Every model's last report (the console reads them through this too); 503 when the fit store cannot answer."""
    _require_operator(gateway, caller)
    if gateway.learning is None:
        return []
    try:
        reports = await gateway.learning.fits.all()
    except StoreUnavailable as exc:
        raise ServiceUnavailable("The fit store is unavailable; try again") from exc
    for report in reports:
        gateway.calibration_metrics.observe(report)
    return reports


@router.get("/v1/trust/calibration")
async def get_calibration(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    reports = await calibration_reports(gateway, caller)
    body = CalibrationList(data=[ModelCalibration.of(report) for report in reports])
    return Response(body.model_dump_json(), media_type="application/json")
