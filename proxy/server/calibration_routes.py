"""GET /v1/trust/calibration: what each model's labels say about its trust scores (the master key only).

Per model group (and, under ``feedback.scope: key``, per key with a fit of its
own): how many labels, which combination its new records get and why,
cross-validated AUROC and ECE of Trust_OV and of each component and free
signal, whether any score is informative at all, and a new fit the refit guard
held for the operator, with why (``held``). The reports are those of the last
refit (``scoring.learning``), read from the fit store beside the records;
reading them also sets the calibration gauges, so every replica's ``/metrics``
shows the shared figures.

POST /v1/trust/calibration/accept (the master key only): the operator accepts
a held fit, naming the model, the key (for a key's own fit) and the fit's id,
so that a fit held after they looked is never served in its place.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from scoring import CalibrationReport, Combination, HeldFitMismatch, LearnedFit, StoreUnavailable, accept_held

from ..base.errors import InvalidRequest, NotFound, PermissionDenied, ServiceUnavailable
from .auth import Caller
from .gateway import Gateway
from .request_context import read_body

__all__ = ["HeldCalibration", "ModelCalibration", "accept_fit", "calibration_reports", "router"]

router = APIRouter()

MAX_ACCEPT_BODY = 4 * 1024


class HeldCalibration(BaseModel):
    """A new fit the refit guard held: why, the fit, and what it was learned from."""

    reason: str
    fit: LearnedFit | None
    labels: int
    auroc: dict[str, float | None]
    fitted_at: float


class ModelCalibration(BaseModel):
    """One model's entry: its labels (and how many say correct), the combination in use and why, fit and metrics."""

    model: str
    key: str | None  # None: the model's shared fit; a key's name: that key's own (feedback.scope: key)
    labels: int
    positives: int
    combination: Combination
    reason: str
    informative: bool | None  # None: too few labels of each kind to say
    fit: LearnedFit | None
    auroc: dict[str, float | None]
    ece: dict[str, float | None]
    fitted_at: float
    held: HeldCalibration | None  # a new fit held for the operator, not served

    @classmethod
    def of(cls, report: CalibrationReport) -> ModelCalibration:
        held = report.held
        return cls(
            model=report.model,
            key=report.key,
            labels=report.labels,
            positives=report.positives,
            combination=report.combination,
            reason=report.reason,
            informative=report.informative,
            fit=report.fit,
            auroc=report.auroc(),
            ece=report.ece(),
            fitted_at=report.fitted_at,
            held=None
            if held is None
            else HeldCalibration(
                reason=held.reason,
                fit=held.report.fit,
                labels=held.report.labels,
                auroc=held.report.auroc(),
                fitted_at=held.report.fitted_at,
            ),
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
    if gateway.fits is None:
        return []
    try:
        reports = await gateway.fits.all()
    except StoreUnavailable as exc:
        raise ServiceUnavailable("The fit store is unavailable; try again") from exc
    for report in reports:
        gateway.calibration_metrics.observe(report)
    return reports


class AcceptFit(BaseModel):
    """Which held fit the operator accepts: the model, the key of a key's own fit (None: the model's), its id."""

    model_config = ConfigDict(extra="forbid")

    model: str
    key: str | None = None
    fit_id: str


async def accept_fit(gateway: Gateway, caller: Caller, chosen: AcceptFit) -> CalibrationReport:
    """Serve the held fit ``chosen`` names from now on; 404 when no such fit is held (none, or a newer one)."""
    _require_operator(gateway, caller)
    if gateway.fits is None:
        raise NotFound("The gateway does not learn from feedback (feedback.learn: false)", code="learning_off")
    try:
        accepted = accept_held(await gateway.fits.get(chosen.model, chosen.key), chosen.fit_id)
        await gateway.fits.put(accepted)
    except HeldFitMismatch as exc:
        raise NotFound(str(exc), param="fit_id", code="held_fit_not_found") from None
    except StoreUnavailable as exc:
        raise ServiceUnavailable("The fit store is unavailable; try again") from exc
    gateway.calibration_metrics.observe(accepted)
    return accepted


@router.post("/v1/trust/calibration/accept")
async def post_accept(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    _require_operator(gateway, caller)
    try:
        chosen = AcceptFit.model_validate(orjson.loads(await read_body(request, MAX_ACCEPT_BODY)))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise InvalidRequest(
            "The body must be a JSON object naming `model`, `fit_id` and, for a key's own fit, `key`",
            code="invalid_accept",
        ) from exc
    accepted = await accept_fit(gateway, caller, chosen)
    return Response(ModelCalibration.of(accepted).model_dump_json(), media_type="application/json")


@router.get("/v1/trust/calibration")
async def get_calibration(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = gateway.keys.authenticate(request.headers.get("authorization"))
    reports = await calibration_reports(gateway, caller)
    body = CalibrationList(data=[ModelCalibration.of(report) for report in reports])
    return Response(body.model_dump_json(), media_type="application/json")
