"""GET /v1/trust/calibration: what each model's labels say about its trust scores (the master key only).

Per model group with a label that teaches its shared fit (the master key's
and the labellers'), and under ``feedback.scope: key`` per key with a fit of
its own: how many labels (now, in the record store), which combination its new
records get and why, cross-validated AUROC and ECE of Trust_OV and of each
component and free signal, whether any score is informative at all, and a new
fit the refit guard held for the operator, with why (``held``). A model is
listed from its first such label, before any refit: its records rest on the
default combination, and the reason says how many labels a fit needs. The
figures are those of the last refit (``scoring.learning``), read from the fit
store beside the records; reading them also sets the calibration gauges, so
every replica's ``/metrics`` shows the shared figures.

POST /v1/trust/calibration/accept (the master key only): the operator accepts
a held fit, naming the model, the key (for a key's own fit) and the fit's id,
so that a fit held after they looked is never served in its place.
"""

from __future__ import annotations

import orjson
from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from scoring import (
    CalibrationReport,
    Combination,
    FitKey,
    HeldFit,
    HeldFitMismatch,
    LearnedFit,
    Standing,
    StoreUnavailable,
    accept_held,
)

from ..base.errors import InvalidRequest, NotFound, PermissionDenied, ServiceUnavailable
from .auth import Caller
from .gateway import Gateway
from .request_context import read_body

__all__ = ["HeldCalibration", "ModelCalibration", "accept_fit", "calibration_standings", "router"]

router = APIRouter()

MAX_ACCEPT_BODY = 4 * 1024


class HeldCalibration(BaseModel):
    """A new fit the refit guard held: why, the fit, and what it was learned from."""

    reason: str
    fit: LearnedFit | None
    labels: int
    auroc: dict[str, float | None]
    fitted_at: float

    @classmethod
    def of(cls, held: HeldFit) -> HeldCalibration:
        report = held.report
        return cls(
            reason=held.reason, fit=report.fit, labels=report.labels, auroc=report.auroc(), fitted_at=report.fitted_at
        )


class ModelCalibration(BaseModel):
    """One model's entry: its labels (and how many say correct), the combination in use and why, fit and metrics."""

    model: str
    key: str | None = None  # None: the model's shared fit; a key's name: that key's own (feedback.scope: key)
    labels: int  # labelled records in the store now that teach this fit (a key's own: those its last refit read)
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
    held: HeldCalibration | None = None  # a new fit held for the operator, not served

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
                "held": None if report.held is None else HeldCalibration.of(report.held),
            }
        )
        return cls(
            model=standing.model,
            key=standing.key,
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


async def _reports(gateway: Gateway) -> dict[FitKey, CalibrationReport]:
    """Every fit's last report; 503 when the fit store cannot answer."""
    if gateway.fits is None:
        return {}
    try:
        reports = await gateway.fits.all()
    except StoreUnavailable as exc:
        raise ServiceUnavailable("The fit store is unavailable; try again") from exc
    for report in reports:
        gateway.calibration_metrics.observe(report)
    return {FitKey(report.model, report.key): report for report in reports}


def _standing(gateway: Gateway, fit: FitKey, report: CalibrationReport | None, labels: int, positives: int) -> Standing:
    feedback = gateway.settings.trustgate.scoring.feedback
    return Standing(
        model=fit.model,
        key=fit.key,
        labels=labels,
        positives=positives,
        report=report,
        min_labels=feedback.min_labels,
        refit_every=feedback.refit_every,
        learns=gateway.fits is not None,
    )


async def calibration_standings(gateway: Gateway, caller: Caller) -> list[Standing]:
    """Every model with a label that teaches its shared fit, or a report, by name, as it stands, each followed by
    its keys' own fits (the console reads them through this too); 503 when the record store or the fit store
    cannot answer.

    A shared fit counts only its teachers' labels (the master key's and the labellers'), so that labels another
    key gave, which teach it nothing, never read as labels a refit will use. A key's own fit counts the labels
    its last refit read.
    """
    _require_operator(gateway, caller)
    reports = await _reports(gateway)
    counts = {count.model: count for count in await gateway.trust.label_counts(by=gateway.settings.labellers())}
    standings = [
        _standing(
            gateway,
            FitKey(model),
            reports.get(FitKey(model)),
            counts[model].labels if model in counts else 0,
            counts[model].correct if model in counts else 0,
        )
        for model in counts.keys() | {fit.model for fit in reports if fit.key is None}
    ]
    standings += [
        _standing(gateway, fit, report, report.labels, report.positives)
        for fit, report in reports.items()
        if fit.key is not None
    ]
    return sorted(standings, key=lambda standing: (standing.model, standing.key is not None, standing.key or ""))


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
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    _require_operator(gateway, caller)
    try:
        chosen = AcceptFit.model_validate(orjson.loads(await read_body(request, MAX_ACCEPT_BODY)))
    except (orjson.JSONDecodeError, ValidationError) as exc:
        raise InvalidRequest(
            "The body must be a JSON object naming `model`, `fit_id` and, for a key's own fit, `key`",
            code="invalid_accept",
        ) from exc
    accepted = await accept_fit(gateway, caller, chosen)
    standing = _standing(gateway, FitKey(accepted.model, accepted.key), accepted, accepted.labels, accepted.positives)
    return Response(ModelCalibration.of(standing).model_dump_json(), media_type="application/json")


@router.get("/v1/trust/calibration")
async def get_calibration(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    caller = await gateway.keys.authenticate(request.headers.get("authorization"))
    standings = await calibration_standings(gateway, caller)
    body = CalibrationList(data=[ModelCalibration.of(standing) for standing in standings])
    return Response(body.model_dump_json(), media_type="application/json")
