"""The refit of each model's learned Trust_OV, from the labels in the config's record store.

Run three ways, always the same refit (``scoring.learning.refit``) on the same
stores, so a gateway sharing them uses a new fit for its next records without
a restart:

- ``trustgate calibrate``: every model group (or those named) that has labels;
- ``trustgate calibrate --accept MODEL --fit FIT_ID``: the operator accepts a
  fit the refit guard held (``GET /v1/trust/calibration`` shows it and why);
- ``python -m proxy.calibrate --refit``: a running gateway's refit process
  (``proxy.trust.refits``), handed its order on stdin, one JSON line per fit on
  stdout, niced and held to ``feedback.max_refit_cpu_s`` of CPU time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pickle
import resource
import signal
import sys
from collections.abc import AsyncIterator

from scoring import (
    CalibrationReport,
    FitKey,
    FitStore,
    LabelSource,
    Refitter,
    ScorerAssetsError,
    accept_held,
    default_combination,
)
from scoring.learning.rule import LearningRule

from .assembly import build_record_store, build_teachers, load_calibrator, open_fit_store, open_redis
from .base.log_format import configure_logging
from .config.settings import ConfigError, GatewaySettings
from .trust.refits import RefitLine, RefitOrder

__all__ = ["accept", "calibrate", "describe_report", "main", "refit_lines"]

log = logging.getLogger("trustgate.learning")


@contextlib.asynccontextmanager
async def _opened(settings: GatewaySettings) -> AsyncIterator[tuple[LabelSource, FitStore]]:
    """The record store the labels are in, and the fit store beside it, for the block's duration."""
    async with contextlib.AsyncExitStack() as stack:
        redis = await open_redis(settings, stack)
        fits = await open_fit_store(settings, redis, stack)
        if fits is None:
            raise ConfigError("learning is off (trustgate.scoring.feedback.learn: false): nothing to calibrate")
        yield await build_record_store(settings, redis, stack), fits


def _refitter(settings: GatewaySettings, records: LabelSource, fits: FitStore) -> Refitter:
    scoring = settings.trustgate.scoring
    feedback = scoring.feedback
    try:
        default = default_combination(scoring, load_calibrator(settings))
    except ScorerAssetsError as exc:
        raise ConfigError(str(exc)) from exc
    rule = LearningRule(min_labels=feedback.min_labels, min_agreement=feedback.guard_min_agreement)
    return Refitter(records, fits, rule, build_teachers(settings), default=default, max_labels=feedback.max_labels)


async def calibrate(settings: GatewaySettings, models: list[str] | None = None) -> list[CalibrationReport]:
    """The report now in use for each model group (``models``, or every configured one) whose shared fit has
    labels (a held fit rides on it, ``CalibrationReport.held``)."""
    async with _opened(settings) as (records, fits):
        refitter = _refitter(settings, records, fits)
        reports = []
        for model in models or list(settings.model_groups()):
            if await refitter.teaching_records(FitKey(model)):
                reports.append((await refitter.refit(FitKey(model))).report)
        return reports


async def accept(settings: GatewaySettings, fit: FitKey, fit_id: str) -> CalibrationReport:
    """Serve the fit ``fit_id`` the refit guard held for ``fit``; ``HeldFitMismatch`` when it is not held."""
    async with _opened(settings) as (_, fits):
        accepted = accept_held(await fits.get(fit.model, fit.key), fit_id)
        await fits.put(accepted)
        log.warning("the held fit %s of %s was accepted by the operator and is served from now on", fit_id, fit)
        return accepted


async def refit_lines(order: RefitOrder) -> AsyncIterator[RefitLine]:
    """A refit process's work: each fit of the order refitted, its line as soon as it is made."""
    async with _opened(order.settings) as (records, fits):
        refitter = _refitter(order.settings, records, fits)
        for fit in order.fits:
            try:
                yield RefitLine(model=fit.model, key=fit.key, outcome=await refitter.refit(fit))
            except Exception as exc:  # the next fit is still made; this one keeps its fit in use
                log.exception("refit of %s failed", fit)
                yield RefitLine(model=fit.model, key=fit.key, error=type(exc).__name__)


def describe_report(report: CalibrationReport) -> str:
    """One line per model: labels, the combination its records get and why, the headline AUROCs, a held fit."""
    auroc = report.auroc()
    figures = ", ".join(f"{name} {value:.3f}" for name, value in auroc.items() if value is not None)
    informative = {True: "informative", False: "NOT informative", None: "too few labels to tell"}[report.informative]
    line = (
        f"{report.model}: {report.labels} labels ({report.positives} correct), {report.combination} combination "
        f"({report.reason}); {informative}; AUROC {figures or 'undefined'}"
    )
    held = report.held
    if held is not None and held.report.fit is not None:
        line += (
            f"\n  HELD for the operator: fit {held.report.fit.id} ({held.reason}); serve it with "
            f"`trustgate calibrate --accept {report.model} --fit {held.report.fit.id}`"
        )
    return line


async def _refit_process(order: RefitOrder) -> int:
    async for line in refit_lines(order):
        sys.stdout.write(line.model_dump_json() + "\n")
        sys.stdout.flush()
    return 0


def main() -> int:
    """A gateway's refit process (``python -m proxy.calibrate --refit``): its order on stdin, lines on stdout."""
    if sys.argv[1:] != ["--refit"]:
        print("python -m proxy.calibrate --refit is started by a gateway; run `trustgate calibrate`", file=sys.stderr)
        return 2
    order: RefitOrder = pickle.load(sys.stdin.buffer)  # from our own parent, over a pipe only it holds
    sys.stdin.close()
    configure_logging(order.log_format)
    for signum in (signal.SIGINT, signal.SIGTERM):  # the gateway stops it (or it dies with the gateway)
        signal.signal(signum, signal.SIG_IGN)
    feedback = order.settings.trustgate.scoring.feedback
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    limit = int(feedback.max_refit_cpu_s)
    resource.setrlimit(resource.RLIMIT_CPU, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # stopped for its CPU time, it dumps no core
    os.nice(order.settings.trustgate.scoring.cpu.nice)
    try:
        return asyncio.run(_refit_process(order))
    except Exception as exc:  # its order could not be carried out at all: the gateway reads the reason in the log
        log.exception("refit process failed: %s", type(exc).__name__)
        return 1


if __name__ == "__main__":
    sys.exit(main())
